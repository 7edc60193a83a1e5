// The helper functions every generated translation unit starts with (see render_common.hpp). They
// mirror rewrite/dtype.hpp's float16/bfloat16 conversions bit for bit (round to nearest even, NaN
// stays NaN) and rewrite/interpreter.cpp's integer and NaN rules, in plain C that g++, clang and hipRTC
// all accept (no headers; the dialect spells the bit casts, isfinite and fabs).
#include <fmt/format.h>

#include "codegen/render_common.hpp"

namespace ringrt::codegen::cstyle {

std::string prelude(const Dialect& d) {
  static constexpr const char* kText = R"(
RT_FN unsigned short rt_f2h(float f) {  // branch-free (selects only), so loops over it vectorize
  unsigned x = rt_fbits(f);
  unsigned sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  int exp = (int)((x >> 23) & 0xffu), e = exp - 127 + 15;
  unsigned norm = ((unsigned)e << 10) | (mant >> 13), nrem = mant & 0x1fffu;  // a carry into the exponent is right
  norm += (nrem > 0x1000u || (nrem == 0x1000u && (norm & 1u))) ? 1u : 0u;
  unsigned shift = (e > 0 || e < -10) ? 31u : (unsigned)(14 - e), full = mant | 0x800000u;  // subnormal result
  unsigned sub = full >> shift, srem = full & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
  sub += (srem > mid || (srem == mid && (sub & 1u))) ? 1u : 0u;
  unsigned r = exp == 0xff ? (0x7c00u | (mant ? 0x200u : 0u))
               : e >= 0x1f ? 0x7c00u
               : e > 0     ? norm
               : e >= -10  ? sub
                           : 0u;
  return (unsigned short)(sign | r);
}
RT_FN float rt_h2f(unsigned short h) {
  unsigned sign = ((unsigned)h & 0x8000u) << 16, exp = ((unsigned)h >> 10) & 0x1fu, mant = (unsigned)h & 0x3ffu;
  unsigned x = exp == 0x1fu ? (sign | 0x7f800000u | (mant << 13))
               : exp == 0u  ? (sign | rt_fbits((float)mant * 0x1p-24f))
                            : (sign | ((exp + 112u) << 23) | (mant << 13));
  return rt_bitsf(x);
}
RT_FN float rt_quiet(float f) { return f != f ? rt_bitsf(rt_fbits(f) | 0x400000u) : f; }
RT_FN float rt_bf2f(unsigned short b) { return rt_bitsf((unsigned)b << 16); }
RT_FN unsigned short rt_f2bf(float f) {
  unsigned x = rt_fbits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (unsigned short)(x >> 16);
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
