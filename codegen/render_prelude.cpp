// The helper functions every generated translation unit starts with (see render_common.hpp). They
// mirror core/dtype.hpp's float16/bfloat16 conversions bit for bit (round to nearest even, NaN
// stays NaN) and rewrite/interpreter.cpp's integer and NaN rules, in plain C that g++, clang and hipRTC
// all accept (no headers; the dialect spells the bit casts, isfinite and fabs).
#include <fmt/format.h>

#include "codegen/render_common.hpp"

namespace ringrt::codegen::cstyle {

std::string prelude(const Dialect& d) {
  static constexpr const char* kText = R"(
RT_FN unsigned rt_sel(unsigned c, unsigned a, unsigned b) {  // c (0 or 1) ? a : b, as masks: no branch
  unsigned m = 0u - c;
  return (a & m) | (b & ~m);
}
// The conversions below select with rt_sel, make every float product they may select, and shift by
// constants only: g++ vectorizes loops over them (with ternaries it kept branches, since a float op under
// a condition may trap, and float16 kernels ran ~15x slower than float32). They give the bits the earlier
// branching forms gave for every float32 and float16 pattern (compared once, outside the suite); the kernel
// tests compare them with core/dtype.hpp's on every float16 pattern and pair. The subnormal rounding
// relies on round-to-nearest float addition that no compiler reassociates: no fast-math anywhere.
RT_FN unsigned short rt_f2h(float f) {
  unsigned x = rt_fbits(f);
  unsigned sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  int exp = (int)((x >> 23) & 0xffu), e = exp - 127 + 15;
  unsigned v = ((unsigned)e << 23) | mant;                  // a normal result: 13 bits to round off
  unsigned norm = (v + 0xfffu + ((v >> 13) & 1u)) >> 13;  // half to even; a carry into the exponent is right
  // a subnormal result (e <= 0) counts units of 2^-24: |f| * 2^24 (exact) rounded half to even by adding
  // and taking off 2^23; a larger |f| (or a NaN) is replaced by 0 first, so the conversion is defined
  float t = rt_bitsf(x & 0x7fffffffu) * 0x1p24f;
  t = t < 2048.0f ? t : 0.0f;
  unsigned sub = (unsigned)((t + 0x1p23f) - 0x1p23f);
  unsigned r = rt_sel((unsigned)(e > 0), norm, sub);
  r = rt_sel((unsigned)(e >= 0x1f), 0x7c00u, r);
  r = rt_sel((unsigned)(exp == 0xff), 0x7c00u | ((unsigned)(mant != 0u) << 9), r);
  return (unsigned short)(sign | r);
}
RT_FN float rt_h2f(unsigned short h) {
  unsigned sign = ((unsigned)h & 0x8000u) << 16, exp = ((unsigned)h >> 10) & 0x1fu, mant = (unsigned)h & 0x3ffu;
  unsigned x = rt_sel((unsigned)(exp == 0x1fu), 0x7f800000u | (mant << 13), ((exp + 112u) << 23) | (mant << 13));
  x = rt_sel((unsigned)(exp == 0u), rt_fbits((float)mant * 0x1p-24f), x);
  return rt_bitsf(sign | x);
}
RT_FN float rt_quiet(float f) { return f != f ? rt_bitsf(rt_fbits(f) | 0x400000u) : f; }
RT_FN float rt_bf2f(unsigned short b) { return rt_bitsf((unsigned)b << 16); }
RT_FN unsigned short rt_f2bf(float f) {
  unsigned x = rt_fbits(f);
  unsigned rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16, nan = (x >> 16) | 0x40u;
  return (unsigned short)rt_sel((unsigned)((x & 0x7fffffffu) > 0x7f800000u), nan, rounded);
}
RT_FN long long rt_idiv(long long a, long long b) {
  return (b == 0 || (b == -1 && a == (-9223372036854775807LL - 1))) ? 0LL : a / b;
}
RT_FN long long rt_imod(long long a, long long b) { return (b == 0 || b == -1) ? 0LL : a % b; }
RT_FN long long rt_imax(long long a, long long b) { return a < b ? b : a; }
RT_FN long long rt_imin(long long a, long long b) { return b < a ? b : a; }
RT_FN float rt_max(float a, float b) { return (a != a || a > b) ? a : b; }
RT_FN float rt_min(float a, float b) { return (a != a || a < b) ? a : b; }
RT_FN double rt_max(double a, double b) { return (a != a || a > b) ? a : b; }
RT_FN double rt_min(double a, double b) { return (a != a || a < b) ? a : b; }
RT_FN long long rt_floordiv(long long a, long long d) { return a / d - ((a % d != 0 && a < 0) ? 1 : 0); }
RT_FN long long rt_floormod(long long a, long long d) { return a - rt_floordiv(a, d) * d; }
)";
  // The dialect's primitives first; kText builds on them.
  return fmt::format(
             "\n#define RT_FN {}\n"
             "RT_FN unsigned rt_fbits(float f) {{ return {}; }}\n"
             "RT_FN float rt_bitsf(unsigned x) {{ return {}; }}\n"
             "RT_FN long long rt_d2i(double v) {{ return ({}(v) && {}(v) < 9.2e18) ? (long long)v : 0LL; }}",
             d.fn, d.float_bits, d.bits_float, d.isfinite, d.fabs) +
         kText;
}

}  // namespace ringrt::codegen::cstyle
