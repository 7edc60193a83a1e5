// allreduce.wire in the lowering (wire.hpp; docs/compressed-wire.md).
#include "rewrite/rules/wire.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "rewrite/rules/allreduce_blocks.hpp"

namespace ringrt {

WireFormat wire_for(Collective collective, DType dtype, Ops op, const AllreduceSettings& s) {
  WireFormat w = parse_wire_format(s.wire);
  if (w == WireFormat::native) return w;
  auto refuse = [&](std::string_view why) {  // the op as experiment.op names it
    return ConfigError(fmt::format("{} of {} ({}): allreduce.wire {} {}", collective_name(collective),
                                   dtype_name(dtype), reduce_op_name(reduce_op_of(op)), s.wire, why));
  };
  if (dtype != DType::float32 && dtype != DType::bfloat16)
    throw refuse("applies to float32 and bfloat16 only; set allreduce.wire: native");
  if (w != WireFormat::bfloat16 && op != Ops::ADD)
    throw refuse(
        "applies to sum only (a block's shared scale bounds a sum's error, not a product's); use bfloat16 or native");
  if (w != WireFormat::bfloat16)
    throw refuse(
        "is not lowered yet (docs/compressed-wire.md: the FP8 wire needs 8-bit float IR); use bfloat16 or native");
  return w;
}

DType wire_dtype(WireFormat w) {
  if (w == WireFormat::bfloat16) return DType::bfloat16;
  throw InternalError(fmt::format("wire_dtype: no IR dtype for the {} wire", wire_format_name(w)));
}

UOp wire_copy(WireFormat w, const UOp& x, const DeviceSpec& device, const Arg& arg) {
  UOp one = x;  // the source device's value encoded there, not every device's
  if (x.device().tuple()) one = settled_mselect(x, std::holds_alternative<int64_t>(arg) ? std::get<int64_t>(arg) : 0);
  return settled_copy(one.cast(wire_dtype(w)), device).cast(DType::float32);
}

UOp Allreduce::send(const UOp& x, int64_t d, const Arg& arg) const {
  if (!wired()) return settled_copy(x, to(d), arg);
  if (x.dtype() == wire_dtype(wire)) return settled_copy(x, to(d), arg).cast(DType::float32);  // already encoded
  return wire_copy(wire, x, to(d), arg);
}

UOp Allreduce::finish(const UOp& value) const {
  if (!wired()) return value;
  return dtype == wire_dtype(wire) ? value.cast(dtype) : wire_round(wire, value).cast(dtype);
}

UOp wire_round(WireFormat w, const UOp& x) { return x.cast(wire_dtype(w)).cast(DType::float32); }

}  // namespace ringrt
