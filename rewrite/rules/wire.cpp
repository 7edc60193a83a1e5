// allreduce.wire in the lowering (wire.hpp; docs/compressed-wire.md).
#include "rewrite/rules/wire.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "core/errors.hpp"
#include "rewrite/rules/allreduce_blocks.hpp"
#include "rewrite/rules/multi.hpp"

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
    throw refuse("applies to sum only (the error bound of a block's shared scale is a sum's); use bfloat16 or native");
  return w;
}

bool on_the_wire(WireFormat w, DType dtype) { return w == WireFormat::bfloat16 && dtype == DType::bfloat16; }

namespace {

// ---- FP8: codes and one E8M0 scale byte per block of 32 (core/wire_format.hpp, the same arithmetic) ----

DType fp8_dtype(WireFormat w) { return w == WireFormat::fp8_e4m3 ? DType::fp8e4m3 : DType::fp8e5m2; }

// A constant of `dtype` in the shape of `like` (on no device, as const_like makes them).
UOp constant(DType dtype, double value, const UOp& like) {
  return broadcast_to(const_uop(dtype, value, &like.graph()), like.shape());
}

// A per-block value (nb) as a per-element one (n): block b's value at elements 32b .. 32b+31.
UOp per_element(const UOp& blocks, int64_t n) {
  int64_t nb = blocks.shape().at(0);
  return blocks.reshape({nb, 1}).expand({nb, kWireBlock}).reshape({nb * kWireBlock}).shrink(spans({{0, n}}));
}

// The scale 2^k of each block from its byte k + 127: the float32 whose exponent field is the byte.
UOp scale_of(const UOp& bytes) {
  UOp wide = bytes.cast(DType::int32);
  return (wide * constant(DType::int32, 0x1p23, wide)).bitcast(DType::float32);
}

// The block scale exponent of core/wire_format.cpp block_scale_exponent: amax = 1.f x 2^E (the largest
// finite |x| of the block), max = 1.m x 2^emax; the smallest k with amax <= max 2^k is E - emax, or one
// more when f > m; clamped below at wire_min_scale_exponent.
UOp scale_bytes(WireFormat w, const UOp& x, int64_t n) {
  ElementFormat f = element_format(w);
  int emax = std::ilogb(f.max);
  double frac_max = (f.max / std::ldexp(1.0, emax) - 1) * 0x1p23;
  // |x|'s bits, which order finite magnitudes as the values do (an integer max, associative: it vectorizes);
  // NaN and Inf (bits >= 0x7f800000) count as 0
  UOp bits = x.bitcast(DType::int32).alu(Ops::AND, {constant(DType::int32, 0x7fffffff, x)});
  UOp finite = bits.alu(Ops::CMPLT, {constant(DType::int32, 0x7f800000, bits)});
  bits = finite.where(bits, constant(DType::int32, 0, bits));
  int64_t nb = (n + kWireBlock - 1) / kWireBlock;
  bits = bits.pad(spans({{0, nb * kWireBlock - n}})).reshape({nb, kWireBlock}).r(Ops::MAX, {1}).reshape({nb});
  UOp exponent = bits.alu(Ops::IDIV, {constant(DType::int32, 0x1p23, bits)});
  UOp frac = bits.alu(Ops::SUB, {exponent * constant(DType::int32, 0x1p23, bits)});
  UOp over = constant(DType::int32, frac_max, frac).alu(Ops::CMPLT, {frac});
  UOp k = exponent + over.where(constant(DType::int32, -126 - emax, frac), constant(DType::int32, -127 - emax, frac));
  k = k.alu(Ops::MAX, {constant(DType::int32, wire_min_scale_exponent(w), k)});
  // a buffer of its own: read through an expand, the block reduce would be fused into every element's kernel
  return (k + constant(DType::int32, 127, k)).cast(DType::uint8).contiguous();
}

UOp flat_float32(const UOp& x) {
  UOp f = x.dtype() == DType::float32 ? x : x.cast(DType::float32);
  return f.reshape({prod(x.shape())});
}

// x encoded; `realized`: the codes a buffer of their own (what crosses, and is cut into pieces, is computed
// once), else left to fuse into their reader (a dec(enc(.)) in place)
WireValue encode(WireFormat w, const UOp& x, bool realized) {
  UOp flat = flat_float32(x);
  auto done = [&](const UOp& codes) { return realized ? codes.contiguous() : codes; };
  if (w == WireFormat::bfloat16) return {done(flat.cast(DType::bfloat16)), std::nullopt, x.shape()};
  int64_t n = flat.shape().at(0);
  UOp scales = scale_bytes(w, flat, n);
  // x / 2^k is exact (a power of two) wherever it matters: a quotient below float32's normal range rounds
  // to a signed zero in FP8 either way
  return {done(flat.alu(Ops::FDIV, {per_element(scale_of(scales), n)}).cast(fp8_dtype(w))), scales, x.shape()};
}

}  // namespace

WireValue wire_encode(WireFormat w, const UOp& x) { return encode(w, x, true); }

WireValue wire_select(const WireValue& v, int64_t i) {
  return {settled_mselect(v.codes, i), v.scales ? std::optional(settled_mselect(*v.scales, i)) : std::nullopt, v.shape};
}

WireValue wire_piece(const WireValue& v, int64_t begin, int64_t end) {
  if (v.scales && begin % kWireBlock != 0)
    throw InternalError(fmt::format("wire_piece: [{}, {}) does not start on a block edge", begin, end));
  std::optional<UOp> scales;
  if (v.scales) scales = v.scales->shrink(spans({{begin / kWireBlock, (end + kWireBlock - 1) / kWireBlock}}));
  return {v.codes.shrink(spans({{begin, end}})), scales, Shape{end - begin}};
}

WireValue wire_send(const WireValue& v, const DeviceSpec& device, const Arg& arg) {
  return {settled_copy(v.codes, device, arg),
          v.scales ? std::optional(settled_copy(*v.scales, device, arg)) : std::nullopt, v.shape};
}

UOp wire_decode(const WireValue& v) {
  UOp wide = v.codes.cast(DType::float32);
  // FP8: exact, every product a multiple of 2^-133 below float32's max
  if (v.scales) wide = wide * per_element(scale_of(*v.scales), v.codes.shape().at(0));
  return wide.reshape(v.shape);
}

UOp wire_copy(WireFormat w, const UOp& x, const DeviceSpec& device, const Arg& arg) {
  UOp one = x;  // the source device's value encoded there, not every device's
  if (x.device().tuple()) one = settled_mselect(x, std::holds_alternative<int64_t>(arg) ? std::get<int64_t>(arg) : 0);
  return wire_decode(wire_send(wire_encode(w, one), device));
}

UOp wire_round(WireFormat w, const UOp& x) { return wire_decode(encode(w, x, false)); }

UOp Allreduce::send(const UOp& x, int64_t d, const Arg& arg) const {
  if (!wired()) return settled_copy(x, to(d), arg);
  if (on_the_wire(wire, x.dtype())) return settled_copy(x, to(d), arg).cast(DType::float32);  // already encoded
  return wire_copy(wire, x, to(d), arg);
}

UOp Allreduce::finish(const UOp& value) const {
  if (!wired()) return value;
  return on_the_wire(wire, dtype) ? value.cast(dtype) : wire_round(wire, value).cast(dtype);
}

}  // namespace ringrt
