// The compressed wire's host-side encoding (wire_format.hpp; docs/compressed-wire.md).
#include "core/wire_format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/dtype.hpp"
#include "core/errors.hpp"

namespace ringrt {
namespace {

constexpr std::string_view kNames[] = {"native", "bfloat16", "fp8_e4m3", "fp8_e5m2"};

// The FP8 code of a (scaled) value: round to nearest even on the format's grid, subnormals kept.
uint16_t encode_fp8(const ElementFormat& f, double x) {
  uint16_t sign = std::signbit(x) ? static_cast<uint16_t>(1u << (f.bits() - 1)) : 0;
  uint16_t top = static_cast<uint16_t>((1u << (f.exponent_bits + f.mantissa_bits)) - 1);  // all ones
  if (std::isnan(x) || (std::isinf(x) && !f.has_inf)) return sign | top;  // NaN: S.1111.111 (E4M3), S.11111.11 (E5M2)
  if (std::isinf(x)) return sign | static_cast<uint16_t>(((1u << f.exponent_bits) - 1) << f.mantissa_bits);
  double a = std::min(std::fabs(x), f.max);  // saturation
  if (a == 0) return sign;
  int emin = 1 - f.bias;
  int e = std::max(std::ilogb(a), emin);
  double q = std::ldexp(1.0, e - f.mantissa_bits);  // the grid's step in a's binade
  double m = std::nearbyint(a / q);                 // ties to even (the default rounding mode)
  int64_t one = int64_t{1} << f.mantissa_bits;
  if (m >= 2 * one) {  // rounded up into the next binade
    m /= 2;
    ++e;
  }
  auto mant = static_cast<int64_t>(m);
  if (mant < one) return sign | static_cast<uint16_t>(mant);  // subnormal (e == emin)
  return sign | static_cast<uint16_t>(((e + f.bias) << f.mantissa_bits) | (mant - one));
}

double decode_fp8(const ElementFormat& f, uint16_t code) {
  bool neg = (code >> (f.bits() - 1)) & 1u;
  int exp = (code >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1);
  int mant = code & ((1 << f.mantissa_bits) - 1);
  int exp_top = (1 << f.exponent_bits) - 1;
  double v;
  if (!f.has_inf && exp == exp_top && mant == (1 << f.mantissa_bits) - 1)
    v = std::numeric_limits<double>::quiet_NaN();
  else if (f.has_inf && exp == exp_top)
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (exp == 0)
    v = std::ldexp(mant, 1 - f.bias - f.mantissa_bits);
  else
    v = std::ldexp((1 << f.mantissa_bits) + mant, exp - f.bias - f.mantissa_bits);
  return neg ? -v : v;
}

}  // namespace

std::string_view wire_format_name(WireFormat w) { return kNames[static_cast<size_t>(w)]; }

WireFormat parse_wire_format(std::string_view name) {
  for (size_t i = 0; i < std::size(kNames); ++i)
    if (kNames[i] == name) return static_cast<WireFormat>(i);
  throw ConfigError(fmt::format("allreduce.wire: expected one of native|bfloat16|fp8_e4m3|fp8_e5m2, got '{}'", name));
}

ElementFormat element_format(WireFormat w) {
  switch (w) {
    case WireFormat::bfloat16:
      return {8, 7, 127, 0x1.fep127, true};
    case WireFormat::fp8_e4m3:
      return {4, 3, 7, 448.0, false};
    case WireFormat::fp8_e5m2:
      return {5, 2, 15, 57344.0, true};
    case WireFormat::native:
      break;
  }
  throw InternalError("element_format: the native wire has no element format");
}

uint16_t encode_element(WireFormat w, float x) {
  if (w == WireFormat::bfloat16) return float_to_bfloat16(x);
  return encode_fp8(element_format(w), x);
}

float decode_element(WireFormat w, uint16_t code) {
  if (w == WireFormat::bfloat16) return bfloat16_to_float(code);
  return static_cast<float>(decode_fp8(element_format(w), code));
}

int wire_min_scale_exponent(WireFormat w) {
  if (w == WireFormat::bfloat16 || w == WireFormat::native) return 0;
  ElementFormat f = element_format(w);
  return -134 + f.bias + f.mantissa_bits;  // the smallest subnormal times 2^k at least 2^-133
}

int block_scale_exponent(WireFormat w, std::span<const float> block) {
  if (w == WireFormat::bfloat16 || w == WireFormat::native) return 0;
  double amax = 0;
  for (float x : block)
    if (std::isfinite(x)) amax = std::max(amax, std::fabs(static_cast<double>(x)));
  int kmin = wire_min_scale_exponent(w);
  if (amax == 0) return kmin;
  double max = element_format(w).max;
  int k = static_cast<int>(std::ceil(std::log2(amax / max)));
  while (amax > std::ldexp(max, k)) ++k;  // the smallest k with amax <= max 2^k, exactly
  while (amax <= std::ldexp(max, k - 1)) --k;
  return std::clamp(k, kmin, 127);
}

WireBlock encode_block(WireFormat w, std::span<const float> block) {
  if (w == WireFormat::native) throw InternalError("encode_block: the native wire encodes nothing");
  int k = block_scale_exponent(w, block);
  WireBlock out{static_cast<uint8_t>(k + 127), {}};
  for (float x : block)
    out.codes.push_back(w == WireFormat::bfloat16
                            ? float_to_bfloat16(x)
                            : encode_fp8(element_format(w), std::ldexp(static_cast<double>(x), -k)));
  return out;
}

std::vector<float> decode_block(WireFormat w, const WireBlock& b) {
  int k = static_cast<int>(b.scale) - 127;
  std::vector<float> out;
  for (uint16_t c : b.codes)
    out.push_back(w == WireFormat::bfloat16 ? bfloat16_to_float(c)
                                            : static_cast<float>(std::ldexp(decode_fp8(element_format(w), c), k)));
  return out;
}

std::vector<float> cross(WireFormat w, std::span<const float> x) {
  if (w == WireFormat::native) return {x.begin(), x.end()};
  std::vector<float> out;
  out.reserve(x.size());
  for (size_t at = 0; at < x.size(); at += kWireBlock) {
    std::vector<float> part =
        decode_block(w, encode_block(w, x.subspan(at, std::min<size_t>(kWireBlock, x.size() - at))));
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

int64_t wire_bytes(WireFormat w, int64_t numel, int itemsize) {
  switch (w) {
    case WireFormat::native:
      return numel * itemsize;
    case WireFormat::bfloat16:
      return 2 * numel;
    default:
      return numel + (numel + kWireBlock - 1) / kWireBlock;
  }
}

double wire_unit_roundoff(WireFormat w) {
  if (w == WireFormat::native) return 0;
  return std::ldexp(1.0, -(element_format(w).mantissa_bits + 1));
}

double wire_eta(WireFormat w) {
  if (w == WireFormat::native) return 0;
  ElementFormat f = element_format(w);
  return std::ldexp(1.0, -f.bias - f.mantissa_bits);  // half of 2^(1 - bias - mantissa_bits)
}

double crossing_error_bound(WireFormat w, double x, int k) {
  return wire_unit_roundoff(w) * std::fabs(x) + wire_eta(w) * std::ldexp(1.0, k);
}

double sum_error_bound(WireFormat w, int64_t n, double sum_abs, double scale_max) {
  double nd = static_cast<double>(n);
  double grow = std::pow(1 + wire_unit_roundoff(w), nd) * std::pow(1 + 0x1p-24, nd);
  double u = 0x1p-24;
  return (std::pow(1 + wire_unit_roundoff(w), nd) * std::pow(1 + u, std::max(0.0, nd - 1)) - 1) * sum_abs +
         nd * wire_eta(w) * scale_max * grow;
}

}  // namespace ringrt
