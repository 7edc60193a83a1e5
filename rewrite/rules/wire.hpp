// allreduce.wire in the lowering (docs/compressed-wire.md): which wire a collective takes, the refusals,
// and the encode/decode around a copy. Internal to rewrite/rules.
#pragma once

#include <string_view>

#include "core/algorithm.hpp"
#include "core/settings.hpp"
#include "core/wire_format.hpp"
#include "rewrite/uop.hpp"

namespace ringrt {

// The wire of a collective of `dtype` reduced with `op` under s.wire: native when s.wire is native; else
// the format, for float32 and bfloat16 (any op for bfloat16, ADD only for FP8). Throws ConfigError naming
// the collective, dtype, op and setting where it cannot apply (other dtypes; FP8 with another op), and
// for FP8, which the lowering does not build yet.
WireFormat wire_for(Collective collective, DType dtype, Ops op, const AllreduceSettings& s);
// The dtype a value crosses in: bfloat16 for the bfloat16 wire; the accumulation is float32.
DType wire_dtype(WireFormat w);
// x (float32) encoded, copied as settled_copy(enc(x), device, arg) does, and decoded to float32.
UOp wire_copy(WireFormat w, const UOp& x, const DeviceSpec& device, const Arg& arg = Arg());
// dec(enc(x)): x's value as its peers receive it (every device keeps the same bits).
UOp wire_round(WireFormat w, const UOp& x);

}  // namespace ringrt
