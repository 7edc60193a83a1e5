// allreduce.wire in the lowering (docs/compressed-wire.md): which wire a collective takes, the refusals,
// and the encode/decode around a copy. Internal to rewrite/rules.
#pragma once

#include <optional>
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
// A value encoded for the wire where it lies (one device, or each device of a tuple): the codes (n, bfloat16 or
// fp8, realized: a buffer of their own) and, for FP8, the scale bytes (ceil(n/32), uint8); decoded it is
// float32 in `shape`.
struct WireValue {
  UOp codes;
  std::optional<UOp> scales;
  Shape shape;
};
// x (float32, or bfloat16 widened) encoded where it lies, blocks of 32 from its flat start.
WireValue wire_encode(WireFormat w, const UOp& x);
// Device i's encoding of a value encoded on a device tuple (settled_mselect of each part).
WireValue wire_select(const WireValue& v, int64_t i);
// Elements [begin, end) of a flat encoding; begin on a block edge (a multiple of 32) for FP8, so the piece's
// blocks are the whole's. InternalError otherwise.
WireValue wire_piece(const WireValue& v, int64_t begin, int64_t end);
// The encoding copied to `device` (settled_copy of each part, COPY arg `arg`).
WireValue wire_send(const WireValue& v, const DeviceSpec& device, const Arg& arg = Arg());
// The float32 value, where the encoding lies.
UOp wire_decode(const WireValue& v);

// x (float32, or bfloat16 widened) encoded on its device, copied as settled_copy(enc(x), device, arg) does,
// and decoded to float32 there: bfloat16, one CAST each way; FP8, the codes and a scale byte per block of
// 32 (from x's flat start) cross as two copies. Shape of x.
UOp wire_copy(WireFormat w, const UOp& x, const DeviceSpec& device, const Arg& arg = Arg());
// dec(enc(x)) in float32: x's value as its peers receive it (every device keeps the same bits). dec(enc(.))
// is idempotent, so a value it made crosses again exactly.
UOp wire_round(WireFormat w, const UOp& x);

}  // namespace ringrt
