#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/errors.hpp"
#include "core/host_buffer.hpp"
#include "test/support/checks.hpp"
#include "test/support/print.hpp"

BOOST_AUTO_TEST_SUITE(test_dtype)

namespace bdata = boost::unit_test::data;
using ringrt::DType;

namespace {

// ---- reference decoders written from the IEEE definitions, independent of the code under test ----

// binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits; exponent 0 is subnormal (m * 2^-24).
double half_bits_value(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

float float_from_bits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint32_t bits_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

bool half_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool bf16_is_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

struct DTypeRow {
  DType dtype;
  const char* name;
  int itemsize;
  bool is_float, is_unsigned;
};
std::ostream& operator<<(std::ostream& os, const DTypeRow& r) { return os << r.name; }

const std::vector<DTypeRow> kDTypes{
    {DType::float32, "float32", 4, true, false},   {DType::float16, "float16", 2, true, false},
    {DType::bfloat16, "bfloat16", 2, true, false}, {DType::float64, "float64", 8, true, false},
    {DType::int32, "int32", 4, false, false},      {DType::int64, "int64", 8, false, false},
    {DType::int8, "int8", 1, false, false},        {DType::uint8, "uint8", 1, false, true},
    {DType::bool_, "bool", 1, false, true},        {DType::void_, "void", 0, false, false},
    {DType::int16, "int16", 2, false, false},      {DType::uint32, "uint32", 4, false, true},
    {DType::fp8e4m3, "fp8e4m3", 1, true, false},   {DType::fp8e5m2, "fp8e5m2", 1, true, false},
};

struct PromoteRow {
  DType a, b, want;
};
std::ostream& operator<<(std::ostream& os, const PromoteRow& r) {
  return os << ringrt::dtype_name(r.a) << "+" << ringrt::dtype_name(r.b) << "->" << ringrt::dtype_name(r.want);
}

// The least upper bound in tinygrad's lattice: bool < int8 < int16 < int32 < int64, bool < uint8 < int16,
// uint8 < uint32 < int64, int64 < {float16, bfloat16} < float32 < float64 (as numpy on the integers),
// written out pair by pair (the upper triangle; the test checks both orders).
const std::vector<PromoteRow> kPromotions{
    {DType::bool_, DType::bool_, DType::bool_},
    {DType::bool_, DType::int8, DType::int8},
    {DType::bool_, DType::uint8, DType::uint8},
    {DType::bool_, DType::int32, DType::int32},
    {DType::bool_, DType::int64, DType::int64},
    {DType::bool_, DType::float16, DType::float16},
    {DType::bool_, DType::bfloat16, DType::bfloat16},
    {DType::bool_, DType::float32, DType::float32},
    {DType::bool_, DType::float64, DType::float64},
    {DType::int8, DType::int8, DType::int8},
    {DType::int8, DType::uint8, DType::int16},
    {DType::int8, DType::int32, DType::int32},
    {DType::int8, DType::int64, DType::int64},
    {DType::int8, DType::float16, DType::float16},
    {DType::int8, DType::bfloat16, DType::bfloat16},
    {DType::int8, DType::float32, DType::float32},
    {DType::int8, DType::float64, DType::float64},
    {DType::uint8, DType::uint8, DType::uint8},
    {DType::uint8, DType::int32, DType::int32},
    {DType::uint8, DType::int64, DType::int64},
    {DType::uint8, DType::float16, DType::float16},
    {DType::uint8, DType::bfloat16, DType::bfloat16},
    {DType::uint8, DType::float32, DType::float32},
    {DType::uint8, DType::float64, DType::float64},
    {DType::int32, DType::int32, DType::int32},
    {DType::int32, DType::int64, DType::int64},
    {DType::int32, DType::float16, DType::float16},
    {DType::int32, DType::bfloat16, DType::bfloat16},
    {DType::int32, DType::float32, DType::float32},
    {DType::int32, DType::float64, DType::float64},
    {DType::int64, DType::int64, DType::int64},
    {DType::int64, DType::float16, DType::float16},
    {DType::int64, DType::bfloat16, DType::bfloat16},
    {DType::int64, DType::float32, DType::float32},
    {DType::int64, DType::float64, DType::float64},
    {DType::float16, DType::float16, DType::float16},
    {DType::float16, DType::bfloat16, DType::float32},
    {DType::float16, DType::float32, DType::float32},
    {DType::float16, DType::float64, DType::float64},
    {DType::bfloat16, DType::bfloat16, DType::bfloat16},
    {DType::bfloat16, DType::float32, DType::float32},
    {DType::bfloat16, DType::float64, DType::float64},
    {DType::float32, DType::float32, DType::float32},
    {DType::float32, DType::float64, DType::float64},
    {DType::float64, DType::float64, DType::float64},
    // int16 and uint32
    {DType::int16, DType::bool_, DType::int16},
    {DType::int16, DType::int8, DType::int16},
    {DType::int16, DType::uint8, DType::int16},
    {DType::int16, DType::int16, DType::int16},
    {DType::int16, DType::int32, DType::int32},
    {DType::int16, DType::int64, DType::int64},
    {DType::int16, DType::uint32, DType::int64},
    {DType::int16, DType::float16, DType::float16},
    {DType::int16, DType::bfloat16, DType::bfloat16},
    {DType::int16, DType::float32, DType::float32},
    {DType::int16, DType::float64, DType::float64},
    {DType::uint32, DType::bool_, DType::uint32},
    {DType::uint32, DType::int8, DType::int64},
    {DType::uint32, DType::uint8, DType::uint32},
    {DType::uint32, DType::uint32, DType::uint32},
    {DType::uint32, DType::int32, DType::int64},
    {DType::uint32, DType::int64, DType::int64},
    {DType::uint32, DType::float16, DType::float16},
    {DType::uint32, DType::bfloat16, DType::bfloat16},
    {DType::uint32, DType::float32, DType::float32},
    {DType::uint32, DType::float64, DType::float64},
};

struct ParseRow {
  const char* text;
  DType want;
};
std::ostream& operator<<(std::ostream& os, const ParseRow& r) { return os << "'" << r.text << "'"; }

const std::vector<ParseRow> kParses{
    {"float32", DType::float32}, {"float16", DType::float16}, {"bfloat16", DType::bfloat16},
    {"float64", DType::float64}, {"int32", DType::int32},     {"int64", DType::int64},
    {"int8", DType::int8},       {"uint8", DType::uint8},     {"bool", DType::bool_},
    {"float", DType::float32},   {"half", DType::float16},    {"bf16", DType::bfloat16},
    {"double", DType::float64},  {"int", DType::int32},       {"long", DType::int64},
    {"char", DType::int8},       {"uchar", DType::uint8},     {"int16", DType::int16},
    {"uint32", DType::uint32},   {"short", DType::int16},     {"uint", DType::uint32},
};

const std::vector<std::string> kJunk{"",    "float33", "flaot32", "int17", "uint31",   "float32 ", " float32",
                                     "f32", "void",    "bfloat",  "floa",  "float32x", "int8_t",   "boolean"};

// A float to round and the binary16 bit pattern it must round to (hand-computed).
struct HalfRow {
  float in;
  uint16_t want;
  const char* why;
};
std::ostream& operator<<(std::ostream& os, const HalfRow& r) { return os << r.why; }

const std::vector<HalfRow> kHalf{
    {0.0f, 0x0000, "+0"},
    {-0.0f, 0x8000, "-0 keeps its sign"},
    {1.0f, 0x3c00, "1"},
    {-2.0f, 0xc000, "-2"},
    {0.5f, 0x3800, "0.5"},
    {2048.0f, 0x6800, "2048 = 2^11"},
    {2049.0f, 0x6800, "2049 ties to even 2048"},
    {2050.0f, 0x6801, "2050 exact"},
    {2051.0f, 0x6802, "2051 ties to even 2052"},
    {2053.0f, 0x6802, "2053 ties to even 2052"},
    {2049.5f, 0x6801, "2049.5 rounds up to 2050"},
    {65504.0f, 0x7bff, "65504 is the largest half"},
    {65519.0f, 0x7bff, "65519 rounds down to 65504"},
    {65520.0f, 0x7c00, "65520 ties to even: infinity"},
    {-65520.0f, 0xfc00, "-65520 -> -infinity"},
    {1.0e6f, 0x7c00, "1e6 overflows to infinity"},
    {1.99951171875f, 0x4000, "2 - 2^-11 ties to 2: the carry reaches the exponent"},
    {0.1f, 0x2e66, "0.1 -> 0.0999755859375"},
    {0.333333333f, 0x3555, "1/3 -> 0x3555"},
    {0x1p-14f, 0x0400, "2^-14 is the smallest normal"},
    {0x1p-24f, 0x0001, "2^-24 is the smallest subnormal"},
    {-0x1p-24f, 0x8001, "-2^-24"},
    {0x1p-25f, 0x0000, "2^-25 ties to even 0"},
    {0x1.000002p-25f, 0x0001, "just above 2^-25 rounds up to 2^-24"},
    {0x1.8p-24f, 0x0002, "1.5 * 2^-24 ties to even 2 * 2^-24"},
    {0x1.4p-23f, 0x0002, "2.5 * 2^-24 ties to even 2 * 2^-24"},
    {0x1p-26f, 0x0000, "2^-26 underflows to 0"},
    {0x1.ff8p-15f, 0x03ff, "1023 * 2^-24, the largest subnormal"},
    {0x1.ffcp-15f, 0x0400, "1023.5 * 2^-24 ties to even: the smallest normal"},
    {std::numeric_limits<float>::infinity(), 0x7c00, "inf"},
    {-std::numeric_limits<float>::infinity(), 0xfc00, "-inf"},
};

struct Bf16Row {
  float in;
  uint16_t want;
  const char* why;
};
std::ostream& operator<<(std::ostream& os, const Bf16Row& r) { return os << r.why; }

const std::vector<Bf16Row> kBf16{
    {0.0f, 0x0000, "+0"},
    {-0.0f, 0x8000, "-0"},
    {1.0f, 0x3f80, "1"},
    {-1.0f, 0xbf80, "-1"},
    {1.0f + 0x1p-8f, 0x3f80, "1 + 2^-8 ties to even 1"},
    {1.0f + 0x1p-7f, 0x3f81, "1 + 2^-7 exact"},
    {1.0f + 3 * 0x1p-8f, 0x3f82, "1 + 3*2^-8 ties to even 1 + 2^-6"},
    {1.0f + 0x1p-8f + 0x1p-23f, 0x3f81, "just above the tie rounds up"},
    {257.0f, 0x4380, "257 ties to even 256"},
    {259.0f, 0x4382, "259 ties to even 260"},
    {3.0e38f, 0x7f62, "3e38 stays finite"},
    {std::numeric_limits<float>::max(), 0x7f80, "FLT_MAX rounds to infinity"},
    {std::numeric_limits<float>::infinity(), 0x7f80, "inf"},
    {-std::numeric_limits<float>::infinity(), 0xff80, "-inf"},
    {float_from_bits(0x00010000u), 0x0001, "the smallest bfloat16 subnormal"},
    {float_from_bits(0x00008000u), 0x0000, "half of it ties to even 0"},
    {float_from_bits(0x00018000u), 0x0002, "1.5 of it ties to even 2"},
    {float_from_bits(0x3f7fffffu), 0x3f80, "just below 1 rounds to 1"},
};

}  // namespace

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(properties)

BOOST_DATA_TEST_CASE(name_and_itemsize, bdata::make(kDTypes), row) {
  BOOST_TEST(ringrt::dtype_name(row.dtype) == row.name);
  BOOST_TEST(ringrt::itemsize(row.dtype) == row.itemsize);
  BOOST_TEST(ringrt::is_float(row.dtype) == row.is_float);
  BOOST_TEST(ringrt::is_unsigned(row.dtype) == row.is_unsigned);
}

BOOST_AUTO_TEST_CASE(names_are_distinct) {
  for (size_t i = 0; i < kDTypes.size(); ++i)
    for (size_t j = i + 1; j < kDTypes.size(); ++j)
      BOOST_TEST(ringrt::dtype_name(kDTypes[i].dtype) != ringrt::dtype_name(kDTypes[j].dtype));
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(promotion)

BOOST_DATA_TEST_CASE(lattice, bdata::make(kPromotions), row) {
  BOOST_TEST(ringrt::promote(row.a, row.b) == row.want);
  BOOST_TEST(ringrt::promote(row.b, row.a) == row.want);
}

BOOST_AUTO_TEST_CASE(table_covers_every_pair) {
  // 11 public dtypes: 66 unordered pairs including a dtype with itself.
  BOOST_TEST(kPromotions.size() == 66u);
}

BOOST_AUTO_TEST_CASE(is_an_upper_bound_and_associative) {
  std::vector<DType> all;
  for (const auto& r : kDTypes)
    if (r.dtype != DType::void_) all.push_back(r.dtype);
  for (DType a : all)
    for (DType b : all) {
      DType ab = ringrt::promote(a, b);
      BOOST_TEST(ringrt::promote(ab, a) == ab);  // ab is above a
      BOOST_TEST(ringrt::promote(ab, b) == ab);
      for (DType c : all) BOOST_TEST(ringrt::promote(ab, c) == ringrt::promote(a, ringrt::promote(b, c)));
    }
}

// The wire's internal fp8 types sit below float32 alone (core/dtype.hpp: below float16 and bfloat16, as in
// tinygrad, two of them would have two least upper bounds); no public pair meets at them.
BOOST_AUTO_TEST_CASE(fp8_promotes_to_float32) {
  BOOST_TEST(ringrt::promote(DType::fp8e4m3, DType::float32) == DType::float32);
  BOOST_TEST(ringrt::promote(DType::fp8e5m2, DType::bfloat16) == DType::float32);
  BOOST_TEST(ringrt::promote(DType::fp8e4m3, DType::fp8e5m2) == DType::float32);
  BOOST_TEST(ringrt::promote(DType::int32, DType::fp8e4m3) == DType::float32);
  BOOST_TEST(ringrt::promote(DType::fp8e4m3, DType::float64) == DType::float64);
}

BOOST_AUTO_TEST_CASE(void_does_not_promote) {
  BOOST_CHECK_THROW(ringrt::promote(DType::void_, DType::float32), ringrt::InternalError);
  BOOST_CHECK_THROW(ringrt::promote(DType::int8, DType::void_), ringrt::InternalError);
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(parse)

BOOST_DATA_TEST_CASE(names_and_aliases, bdata::make(kParses), row) {
  BOOST_TEST(ringrt::parse_dtype(row.text) == row.want);
}

BOOST_DATA_TEST_CASE(every_name_round_trips, bdata::make(kDTypes), row) {
  std::string name(ringrt::dtype_name(row.dtype));
  if (ringrt::is_internal(row.dtype)) {
    BOOST_CHECK_THROW(ringrt::parse_dtype(name), ringrt::ConfigError);  // internal, not a user dtype
    BOOST_CHECK_THROW(ringrt::check_dtype(row.dtype, "cast"), ringrt::ShapeError);
    BOOST_CHECK_NO_THROW(ringrt::check_dtype(row.dtype, "CAST", true));  // the IR's check admits it
  } else {
    BOOST_TEST(ringrt::parse_dtype(name) == row.dtype);
  }
}

BOOST_DATA_TEST_CASE(junk_is_a_config_error_naming_it, bdata::make(kJunk), text) {
  BOOST_CHECK_EXCEPTION(ringrt::parse_dtype(text), ringrt::ConfigError, ringrt::test::message_has({"'" + text + "'"}));
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(float16)

BOOST_DATA_TEST_CASE(rounds_to_nearest_even, bdata::make(kHalf), row) {
  uint16_t got = ringrt::float_to_half(row.in);
  BOOST_CHECK_MESSAGE(got == row.want, std::hex << "0x" << got << " != 0x" << row.want);
}

BOOST_DATA_TEST_CASE(decodes_hand_patterns, bdata::make(kHalf), row) {
  if (row.want == 0x7c00 || row.want == 0xfc00) {
    BOOST_TEST(std::isinf(ringrt::half_to_float(row.want)));
  } else {
    BOOST_TEST(ringrt::half_to_float(row.want) == half_bits_value(row.want));
  }
}

BOOST_AUTO_TEST_CASE(nan_stays_nan) {
  for (uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fbfffffu, 0xff800001u}) {
    uint16_t h = ringrt::float_to_half(float_from_bits(bits));
    BOOST_CHECK_MESSAGE(half_is_nan(h), std::hex << bits << " -> " << h);
    BOOST_TEST(((h & 0x8000) != 0) == ((bits & 0x80000000u) != 0));  // the sign survives
    BOOST_TEST(std::isnan(ringrt::half_to_float(h)));
  }
  BOOST_TEST(std::isnan(ringrt::half_to_float(0x7e00)));
  BOOST_TEST(std::isnan(ringrt::half_to_float(0x7c01)));
  BOOST_TEST(std::isinf(ringrt::half_to_float(0x7c00)));
}

// Every finite half decodes to its IEEE value and encodes back to itself.
BOOST_AUTO_TEST_CASE(every_finite_pattern_round_trips) {
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    float f = ringrt::half_to_float(static_cast<uint16_t>(h));
    if (static_cast<double>(f) != half_bits_value(static_cast<uint16_t>(h)) || ringrt::float_to_half(f) != h) {
      if (++bad <= 5) BOOST_ERROR("pattern 0x" << std::hex << h << " decodes to " << f);
    }
  }
  BOOST_TEST(bad == 0);
}

// Between two neighbouring halves: the midpoint goes to the even one, a float ulp either side to the
// nearer one. Checks every gap of the positive and negative range, subnormals included.
BOOST_AUTO_TEST_CASE(every_midpoint_ties_to_even) {
  int bad = 0;
  for (uint16_t h = 0; h < 0x7c00; ++h) {
    double lo = half_bits_value(h);
    double hi = h == 0x7bff ? 65536.0 : half_bits_value(static_cast<uint16_t>(h + 1));
    float mid = static_cast<float>((lo + hi) / 2);  // 12 significant bits: exact in float
    uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : h;
    uint16_t up = static_cast<uint16_t>(h + 1);  // 0x7bff + 1 is 0x7c00, infinity
    float below = std::nextafter(mid, 0.0f), above = std::nextafter(mid, 1e30f);
    for (float sign : {1.0f, -1.0f}) {
      uint16_t s = sign < 0 ? 0x8000 : 0;
      bool ok = ringrt::float_to_half(sign * mid) == (s | even) && ringrt::float_to_half(sign * below) == (s | h) &&
                ringrt::float_to_half(sign * above) == (s | up);
      if (!ok && ++bad <= 5) BOOST_ERROR("gap above 0x" << std::hex << (s | h) << " rounds wrongly");
    }
  }
  BOOST_TEST(bad == 0);
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(bfloat16)

BOOST_DATA_TEST_CASE(rounds_to_nearest_even, bdata::make(kBf16), row) {
  uint16_t got = ringrt::float_to_bfloat16(row.in);
  BOOST_CHECK_MESSAGE(got == row.want, std::hex << "0x" << got << " != 0x" << row.want);
}

BOOST_AUTO_TEST_CASE(hand_values_decode) {
  BOOST_TEST(ringrt::bfloat16_to_float(0x3f80) == 1.0f);
  BOOST_TEST(ringrt::bfloat16_to_float(0x3f82) == 1.015625f);  // 1 + 2^-6
  BOOST_TEST(ringrt::bfloat16_to_float(0x4380) == 256.0f);
  BOOST_TEST(ringrt::bfloat16_to_float(0xc040) == -3.0f);
  BOOST_TEST(ringrt::bfloat16_to_float(0x7f7f) == 0x1.fep127f);  // the largest finite bfloat16
  BOOST_TEST(ringrt::bfloat16_to_float(0x0001) == 0x1p-133f);    // the smallest subnormal
  BOOST_TEST(std::isinf(ringrt::bfloat16_to_float(0xff80)));
}

BOOST_AUTO_TEST_CASE(nan_stays_nan) {
  // 0x7f800001 has its payload only in the low 16 bits: truncation alone would make it infinity.
  for (uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fbfffffu, 0xff800001u, 0x7fffffffu}) {
    uint16_t b = ringrt::float_to_bfloat16(float_from_bits(bits));
    BOOST_CHECK_MESSAGE(bf16_is_nan(b), std::hex << bits << " -> " << b);
    BOOST_TEST(((b & 0x8000) != 0) == ((bits & 0x80000000u) != 0));
  }
}

BOOST_AUTO_TEST_CASE(every_finite_pattern_round_trips) {
  int bad = 0;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7f80) == 0x7f80) continue;
    float f = ringrt::bfloat16_to_float(static_cast<uint16_t>(b));
    if (bits_of(f) != b << 16 || ringrt::float_to_bfloat16(f) != b) {
      if (++bad <= 5) BOOST_ERROR("pattern 0x" << std::hex << b << " does not round-trip");
    }
  }
  BOOST_TEST(bad == 0);
}

BOOST_AUTO_TEST_CASE(every_midpoint_ties_to_even) {
  int bad = 0;
  for (uint32_t b = 0; b < 0x7f80; ++b) {  // every positive finite gap; 0x7f7f's upper neighbour is inf
    uint32_t mid = (b << 16) | 0x8000u;    // exactly halfway between b and b + 1
    uint32_t even = (b & 1) ? b + 1 : b;
    for (uint32_t s : {0u, 0x8000u}) {
      uint32_t sign = s << 16;
      bool ok = ringrt::float_to_bfloat16(float_from_bits(sign | mid)) == (s | even) &&
                ringrt::float_to_bfloat16(float_from_bits(sign | (mid - 1))) == (s | b) &&
                ringrt::float_to_bfloat16(float_from_bits(sign | (mid + 1))) == (s | (b + 1));
      if (!ok && ++bad <= 5) BOOST_ERROR("gap above 0x" << std::hex << (s | b) << " rounds wrongly");
    }
  }
  BOOST_TEST(bad == 0);
}

BOOST_AUTO_TEST_SUITE_END()

// HostBuffer's transfers: a vector of the dtype's own element type goes in and out bit for bit (a
// signalling NaN stays signalling, which a trip through double would quiet); another type converts.
BOOST_AUTO_TEST_SUITE(host_buffer)
using ringrt::HostBuffer;

BOOST_AUTO_TEST_CASE(own_element_type_round_trips_bit_for_bit) {
  const uint32_t snan = 0x7f800001u, payload = 0xffc12345u;
  std::vector<float> in(3);
  std::memcpy(&in[0], &snan, 4);
  std::memcpy(&in[1], &payload, 4);
  in[2] = -0.0f;
  std::vector<float> out = HostBuffer::from_vector(in, DType::float32, {3}).to_vector<float>();
  BOOST_TEST_REQUIRE(out.size() == 3u);
  BOOST_TEST(std::memcmp(out.data(), in.data(), 12) == 0);
  std::vector<int16_t> small{-32768, 7, 32767};
  BOOST_TEST((HostBuffer::from_vector(small, DType::int16, {3}).to_vector<int16_t>() == small));
}

BOOST_AUTO_TEST_CASE(other_types_convert) {
  std::vector<int64_t> big{int64_t{1} << 40, -3, 5};
  HostBuffer b = HostBuffer::from_vector(big, DType::int32, {3});  // wraps to 32 bits
  BOOST_TEST((b.to_vector<int64_t>() == std::vector<int64_t>{0, -3, 5}));
  BOOST_TEST((b.to_vector<float>() == std::vector<float>{0.0f, -3.0f, 5.0f}));
  std::vector<float> f{1.5f, -2.0f};
  BOOST_TEST((HostBuffer::from_vector(f, DType::float64, {2}).to_vector<double>() == std::vector<double>{1.5, -2.0}));
  BOOST_TEST(
      (HostBuffer::from_vector(f, DType::float32, {3}).to_vector<float>() == std::vector<float>{1.5f, -2.0f, 0.0f}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
