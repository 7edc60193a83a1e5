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
// the collective, dtype, op and setting where it cannot apply (other dtypes; FP8 with another op).
WireFormat wire_for(Collective collective, DType dtype, Ops op, const AllreduceSettings& s);
// Whether values of `dtype` already are the wire's codes (bfloat16 data on the bfloat16 wire): they cross
// as they are, and their owner's value is what its peers receive.
bool on_the_wire(WireFormat w, DType dtype);
// x (float32, or bfloat16 widened) encoded on its device, copied as settled_copy(enc(x), device, arg) does,
// and decoded to float32 there: bfloat16, one CAST each way; FP8, the codes and a scale byte per block of
// 32 (from x's flat start) cross as two copies. Shape of x.
UOp wire_copy(WireFormat w, const UOp& x, const DeviceSpec& device, const Arg& arg = Arg());
// dec(enc(x)) in float32: x's value as its peers receive it (every device keeps the same bits). dec(enc(.))
// is idempotent, so a value it made crosses again exactly.
UOp wire_round(WireFormat w, const UOp& x);

}  // namespace ringrt
