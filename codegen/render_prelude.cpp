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
// c ? a : b for floats whose both arms are computed anyway (decoded values: fp8, or 16-bit floats selected into
// another type; into their own type rt_hsel and rt_bfsel below select the bits): a ternary over arms with float
// arithmetic (rt_h2f's product) kept a branch per element, and the naive allreduce's float16 kernel, which selects
// each peer's element, ran ~200x slower than float32.
RT_FN float rt_self(unsigned c, float a, float b) { return rt_bitsf(rt_sel(c, rt_fbits(a), rt_fbits(b))); }
// c ? a : b of two float16 (rt_hsel) or bfloat16 (rt_bfsel) values into the same type, on their bits: what
// decoding, selecting and encoding again gives (rt_f2h(rt_h2f(x)) is x but for a NaN, which becomes the
// canonical quiet one of its sign; rt_f2bf(rt_bf2f(x)) quiets a NaN), without the conversions.
RT_FN unsigned short rt_hsel(unsigned c, unsigned short a, unsigned short b) {
  unsigned h = rt_sel(c, a, b);
  return (unsigned short)rt_sel((unsigned)((h & 0x7fffu) > 0x7c00u), (h & 0x8000u) | 0x7e00u, h);
}
RT_FN unsigned short rt_bfsel(unsigned c, unsigned short a, unsigned short b) {
  unsigned h = rt_sel(c, a, b);
  return (unsigned short)rt_sel((unsigned)((h & 0x7fffu) > 0x7f80u), h | 0x40u, h);
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
// The compressed wire's 8-bit floats (core/wire_format.cpp encode_fp8/decode_fp8, bit for bit): round to
// nearest even on the format's grid, subnormals kept, |f| above max saturates, NaN -> S.1111.111 (both),
// Inf -> S.11111.00 (E5M2) or NaN (E4M3: no Inf). The grid's step in |f|'s binade is 2^qe; adding and
// taking off 2^(qe+23) rounds |f| to it (float32's ulp there is 2^qe), as rt_f2h does for subnormals. As
// above, every candidate is computed and one selected, so loops over them vectorize.
RT_FN unsigned char rt_f2fp8(float f, int mb, int bias, float maxv, unsigned inf_code) {
  unsigned x = rt_fbits(f), sign = (x >> 24) & 0x80u, ax = x & 0x7fffffffu;
  float a = rt_bitsf(ax);
  a = a < maxv ? a : maxv;  // saturation; NaN and Inf become maxv here and are replaced below
  int emin = 1 - bias, e = (int)(rt_fbits(a) >> 23) - 127;
  int qe = (e > emin ? e : emin) - mb;
  float c = rt_bitsf((unsigned)(qe + 23 + 127) << 23);
  float r = (a + c) - c;
  unsigned rb = rt_fbits(r);
  int re = (int)(rb >> 23) - 127;
  unsigned sub = (unsigned)(r * rt_bitsf((unsigned)(mb - emin + 127) << 23));  // units of the smallest subnormal
  unsigned norm = ((unsigned)(re + bias) << mb) | ((rb >> (23 - mb)) & ((1u << mb) - 1u));
  unsigned code = rt_sel((unsigned)(re < emin), sub, norm);
  code = rt_sel((unsigned)(ax > 0x7f800000u), 0x7fu, code);
  code = rt_sel((unsigned)(ax == 0x7f800000u), inf_code, code);
  return (unsigned char)(sign | code);
}
RT_FN float rt_fp82f(unsigned char c, int mb, int bias, int has_inf) {
  unsigned u = c, sign = (u & 0x80u) << 24, e = (u & 0x7fu) >> mb, m = u & ((1u << mb) - 1u), etop = 0x7fu >> mb;
  unsigned norm = ((e + 127u - (unsigned)bias) << 23) | (m << (23 - mb));
  unsigned sub = rt_fbits((float)m * rt_bitsf((unsigned)(1 - bias - mb + 127) << 23));
  unsigned v = rt_sel((unsigned)(e == 0u), sub, norm);
  unsigned special = has_inf ? (unsigned)(e == etop) : (unsigned)((e == etop) & (m == (1u << mb) - 1u));
  v = rt_sel(special, (has_inf && m == 0u) ? 0x7f800000u : 0x7fc00000u, v);
  return rt_bitsf(sign | v);
}
RT_FN unsigned char rt_f2e4m3(float f) { return rt_f2fp8(f, 3, 7, 448.0f, 0x7fu); }
RT_FN unsigned char rt_f2e5m2(float f) { return rt_f2fp8(f, 2, 15, 57344.0f, 0x7cu); }
RT_FN float rt_e4m32f(unsigned char c) { return rt_fp82f(c, 3, 7, 0); }
RT_FN float rt_e5m22f(unsigned char c) { return rt_fp82f(c, 2, 15, 1); }
RT_FN long long rt_idiv(long long a, long long b) {
  return (b == 0 || (b == -1 && a == (-9223372036854775807LL - 1))) ? 0LL : a / b;
}
RT_FN long long rt_imod(long long a, long long b) { return (b == 0 || b == -1) ? 0LL : a % b; }
RT_FN long long rt_imax(long long a, long long b) { return a < b ? b : a; }
RT_FN long long rt_imin(long long a, long long b) { return b < a ? b : a; }
RT_FN float rt_max(float a, float b) { return (a != a || a > b) ? a : b; }  // a NaN first operand wins
RT_FN float rt_min(float a, float b) { return (a != a || a < b) ? a : b; }
RT_FN double rt_max(double a, double b) { return (a != a || a > b) ? a : b; }
RT_FN double rt_min(double a, double b) { return (a != a || a < b) ? a : b; }
// The same of decoded float16, bfloat16 or fp8 values, as two selects over values: g++ vectorizes loops of
// rt_max over float32 values (the naive allreduce's selects and quiets around it included) but kept a branch per
// element where its operands were decoded (a float16 max reduction ran 15x slower than its sum), and the other
// way round for these.
RT_FN float rt_maxd(float a, float b) {
  float m = a > b ? a : b;
  return a != a ? a : m;
}
RT_FN float rt_mind(float a, float b) {
  float m = a < b ? a : b;
  return a != a ? a : m;
}
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
