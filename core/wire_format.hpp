// The compressed wire of allreduce.wire (docs/compressed-wire.md), host side, as pure functions: the
// formats, one block's encoding (OCP MX style: up to 32 elements sharing a power-of-two E8M0 scale),
// its decoding, and the error bounds of one crossing and of an n-device sum. The lowering
// (rewrite/rules/wire.hpp) builds the same arithmetic in the IR; tests compare the two.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace ringrt {

enum class WireFormat : uint8_t { native, bfloat16, fp8_e4m3, fp8_e5m2 };

std::string_view wire_format_name(WireFormat w);  // "native", "bfloat16", "fp8_e4m3", "fp8_e5m2"
// The format named `name` (one of allreduce.wire's words); throws ConfigError on anything else.
WireFormat parse_wire_format(std::string_view name);

inline constexpr int kWireBlock = 32;  // elements per block (one scale byte each, FP8 only)

// One element format: significant bits p (the implicit bit included), exponent bias, the largest finite
// value, whether it has Inf (E5M2, bfloat16) or not (E4M3: no Inf, one NaN code per sign).
struct ElementFormat {
  int exponent_bits, mantissa_bits, bias;
  double max;
  bool has_inf;
  int bits() const { return 1 + exponent_bits + mantissa_bits; }
};
ElementFormat element_format(WireFormat w);  // throws InternalError for native

// Element codes, round to nearest even, subnormals kept; NaN -> NaN, +-Inf -> +-Inf where the format has
// it (E4M3: NaN). FP8: a finite value above max becomes max with its sign (saturation: the block scale
// below never lets that happen on the wire); bfloat16 is float32 -> bfloat16 as the CAST rounds
// (core/dtype.hpp float_to_bfloat16: above bfloat16's max, within 2^-9 of float32's, rounds to Inf).
// The code is in the low bits() bits.
uint16_t encode_element(WireFormat w, float x);
float decode_element(WireFormat w, uint16_t code);

// The smallest block scale exponent: FP8 -124 (E4M3) and -117 (E5M2), where the format's smallest
// subnormal times the scale is 2^-133, bfloat16's smallest subnormal. So every decoded value is a multiple
// of 2^-133: exact in float32 and in bfloat16, and dec(enc(.)) is idempotent (a decoded value crosses again
// exactly). 0 for bfloat16 and native.
int wire_min_scale_exponent(WireFormat w);
// The E8M0 scale exponent of a block: the smallest power of two 2^k with amax / 2^k <= max (amax the
// largest finite |x| of the block), k clamped to [wire_min_scale_exponent, 127] (a block with no finite
// non-zero element: the minimum); bfloat16: always 0.
int block_scale_exponent(WireFormat w, std::span<const float> block);

// One block of up to 32 elements on the wire: the scale byte (E8M0: k + 127) and the element codes.
struct WireBlock {
  uint8_t scale = 127;
  std::vector<uint16_t> codes;
};
WireBlock encode_block(WireFormat w, std::span<const float> block);
std::vector<float> decode_block(WireFormat w, const WireBlock& b);
// dec(enc(x)) of a whole buffer, block by block from its start (the last block may be shorter): the
// value a chunk has after one crossing. native: x unchanged.
std::vector<float> cross(WireFormat w, std::span<const float> x);

// Bytes that cross for `numel` elements of a dtype of `itemsize` bytes: native numel * itemsize;
// bfloat16 2 numel; FP8 numel + ceil(numel / 32) scale bytes.
int64_t wire_bytes(WireFormat w, int64_t numel, int itemsize);

// The unit roundoff u_w (2^-p) and eta_w (half the smallest subnormal, times the scale) of one crossing:
// |dec(enc(x)) - x| <= u_w |x| + eta_w 2^k for an element of a block of scale 2^k.
double wire_unit_roundoff(WireFormat w);
double wire_eta(WireFormat w);
// The bound of one crossing for x in a block of scale exponent k.
double crossing_error_bound(WireFormat w, double x, int k);
// The bound on |result - exact| of an n-device sum over the wire with float32 accumulation, for every
// algorithm (the ring's, the largest: docs/compressed-wire.md): ((1+u_w)^n (1+2^-24)^(n-1) - 1) sum_abs
// + n eta_w scale_max, where sum_abs = sum_i |x_i| and scale_max is the largest block scale (2^k) any
// crossing value of the element may meet (for FP8: <= 2 n max|x| / max; bfloat16: 1).
double sum_error_bound(WireFormat w, int64_t n, double sum_abs, double scale_max);

}  // namespace ringrt
