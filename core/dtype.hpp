// Element types: names, sizes, promotion, and the 16-bit float conversions every backend shares.
#pragma once

#include <cstdint>
#include <cstring>
#include <iosfwd>
#include <string>
#include <string_view>

namespace ringrt {

// The public element types (README.md "The C++ API"); void_ is internal (STORE, SINK), and so are the two
// 8-bit floats, the element codes of the compressed wire (allreduce.wire, docs/compressed-wire.md): OCP FP8
// E4M3 (bias 7, max 448, no Inf) and E5M2 (bias 15, max 57344, IEEE Inf/NaN), tinygrad's fp8e4m3 and
// fp8e5m2. Types added later come after void_, so the values of the others (hashed into UOps and kernel
// names) never change.
enum class DType : uint8_t {
  float32,
  float16,
  bfloat16,
  float64,
  int32,
  int64,
  int8,
  uint8,
  bool_,
  void_,
  int16,
  uint32,
  fp8e4m3,
  fp8e5m2
};

std::string_view dtype_name(DType dtype);  // "float32", ..., "bool", "void"
int itemsize(DType dtype);                 // bytes per element; 0 for void
bool is_float(DType dtype);
bool is_unsigned(DType dtype);  // uint8, uint32 and bool
// The least upper bound of a and b in tinygrad's promotion lattice (reference: tinygrad dtype.py
// promo_lattice, least_upper_dtype; numpy agrees on the integers): bool < int8 < int16 < int32 < int64,
// bool < uint8 < int16, uint8 < uint32 < int64, int64 < float16, bfloat16 < float32 < float64; so
// int8+uint8 -> int16, int32+uint32 -> int64, float16+bfloat16 -> float32. (tinygrad's uint16, uint64
// are steps of its lattice ringrt lacks; no pair of ringrt types meets at one of them.) The internal fp8
// types sit below float32 alone: tinygrad puts them below float16 and bfloat16, which gives a pair of them
// two least upper bounds (promotion would not be associative); they only ever meet a CAST.
DType promote(DType a, DType b);
// The range of an integer or bool dtype, inclusive (bool: 0..1); throws InternalError for floats and void.
int64_t int_min(DType dtype);
int64_t int_max(DType dtype);
// Parses a public dtype name ("float32", "half", "bf16", "int", ...); throws ConfigError on anything else
// (the internal void and fp8 types included).
DType parse_dtype(std::string_view name);
// Throws ShapeError naming `where` unless dtype is a public element type; `ir`: the IR's check, which also
// admits the internal types (void_, fp8e4m3, fp8e5m2).
void check_dtype(DType dtype, std::string_view where, bool ir = false);
// Whether dtype is internal to the IR (void_ and the wire's fp8 types): no tensor, YAML or CLI takes it.
bool is_internal(DType dtype);
std::ostream& operator<<(std::ostream& os, DType dtype);  // the name

// IEEE binary16 and bfloat16, round to nearest even (NaN stays NaN), as GPUs store them.
inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff);
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {                                                 // subnormal or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13), rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // a carry into the exponent is right
  return static_cast<uint16_t>(half);
}

inline float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // normalize a subnormal
      int32_t e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

inline uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

inline float bfloat16_to_float(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace ringrt
