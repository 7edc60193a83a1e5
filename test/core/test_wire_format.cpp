// The compressed wire's host encoding (core/wire_format.hpp): every FP8 and bfloat16 code decoded
// against the formats' definitions and encoded back, every rounding boundary (midpoints between
// neighbouring codes: ties to even), the NaN/Inf pass-through rule, the block scale, the bound of one
// crossing and of an n-device sum on random, adversarial and all-equal data.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/wire_format.hpp"

BOOST_AUTO_TEST_SUITE(test_wire_format)

using ringrt::WireFormat;

namespace {

constexpr WireFormat kFp8[] = {WireFormat::fp8_e4m3, WireFormat::fp8_e5m2};
constexpr WireFormat kAll[] = {WireFormat::bfloat16, WireFormat::fp8_e4m3, WireFormat::fp8_e5m2};

// The value of an FP8 code from the OCP definition, written apart from the code under test.
double fp8_reference(WireFormat w, unsigned c) {
  bool e4m3 = w == WireFormat::fp8_e4m3;
  int mb = e4m3 ? 3 : 2, eb = e4m3 ? 4 : 5, bias = e4m3 ? 7 : 15;
  int exp = (c >> mb) & ((1 << eb) - 1), mant = c & ((1 << mb) - 1);
  double sign = (c & 0x80) ? -1 : 1;
  if (e4m3 && exp == 15 && mant == 7) return std::nan("");
  if (!e4m3 && exp == 31) return mant ? std::nan("") : sign * INFINITY;
  double frac = exp ? 1 + mant / double(1 << mb) : mant / double(1 << mb);
  return sign * frac * std::pow(2.0, (exp ? exp : 1) - bias);
}

// The positive finite values of a format, ascending, with their codes.
std::vector<std::pair<double, uint16_t>> positive_values(WireFormat w) {
  std::vector<std::pair<double, uint16_t>> out;
  unsigned count = w == WireFormat::bfloat16 ? 0x8000u : 0x80u;
  for (unsigned c = 0; c < count; ++c) {
    double v = ringrt::decode_element(w, static_cast<uint16_t>(c));
    if (std::isfinite(v)) out.push_back({v, static_cast<uint16_t>(c)});
  }
  return out;
}

// Data of one kind: random normal, a huge range (2^-149 .. 2^100, both signs: denormals included), or all
// equal.
std::vector<float> data(const std::string& kind, size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0, 1);
  std::uniform_real_distribution<double> e(-149, 100);
  std::vector<float> out(n);
  for (float& x : out)
    x = kind == "random" ? normal(rng)
        : kind == "huge" ? static_cast<float>(((rng() & 1) ? -1 : 1) * std::exp2(e(rng)))
                         : 0.1f;
  return out;
}

// The ring's sum of the n rows on the host: the running sum crosses at every hop (decoded, added in float32,
// encoded again), the reduced value crosses once more to its peers (the allgather): n crossings.
std::vector<float> ring_sum(WireFormat w, const std::vector<std::vector<float>>& rows) {
  std::vector<float> acc = rows[0];
  for (size_t d = 1; d < rows.size(); ++d) {
    acc = ringrt::cross(w, acc);
    for (size_t i = 0; i < acc.size(); ++i) acc[i] += rows[d][i];
  }
  return rows.size() > 1 ? ringrt::cross(w, acc) : acc;
}

}  // namespace

BOOST_AUTO_TEST_CASE(wire_bytes_count_elements_and_scales) {
  BOOST_TEST(ringrt::wire_bytes(WireFormat::native, 100, 4) == 400);
  BOOST_TEST(ringrt::wire_bytes(WireFormat::bfloat16, 100, 4) == 200);
  BOOST_TEST(ringrt::wire_bytes(WireFormat::fp8_e4m3, 100, 4) == 104);  // 100 elements + 4 scale bytes
  BOOST_TEST(ringrt::wire_bytes(WireFormat::fp8_e5m2, 64, 2) == 66);
}

BOOST_AUTO_TEST_CASE(one_crossing_is_within_its_bound) {
  std::mt19937 rng(11);
  for (WireFormat w : kAll)
    for (const char* kind : {"random", "huge", "equal"}) {
      std::vector<float> x = data(kind, 4096, rng);
      std::vector<float> back = ringrt::cross(w, x);
      for (size_t at = 0; at < x.size(); at += ringrt::kWireBlock) {
        std::span<const float> block(x.data() + at, ringrt::kWireBlock);
        int k = ringrt::block_scale_exponent(w, block);
        for (size_t i = at; i < at + ringrt::kWireBlock; ++i) {
          double err = std::fabs(static_cast<double>(back[i]) - x[i]);
          BOOST_TEST(err <= ringrt::crossing_error_bound(w, x[i], k), kind << " " << x[i] << " -> " << back[i]);
        }
      }
    }
  // all-equal values the format holds cross exactly
  for (WireFormat w : kAll) {
    std::vector<float> same(64, 0.375f);
    BOOST_TEST(ringrt::cross(w, same) == same);
  }
}

// The sum's bound (sum_error_bound) on the host ring, n = 1..8, for the data kinds; scale_max from the
// largest partial sum's magnitude (FP8; bfloat16: 1).
BOOST_AUTO_TEST_CASE(an_n_device_sum_is_within_its_bound) {
  std::mt19937 rng(13);
  for (WireFormat w : kAll)
    for (const char* kind : {"random", "huge", "equal"})
      for (int64_t n = 1; n <= 8; ++n) {
        std::vector<std::vector<float>> rows;
        for (int64_t d = 0; d < n; ++d) rows.push_back(data(kind, 256, rng));
        std::vector<float> got = ring_sum(w, rows);
        double amax = 0;
        for (const auto& r : rows)
          for (float x : r) amax = std::max(amax, std::fabs(static_cast<double>(x)));
        double fmax = w == WireFormat::bfloat16 ? 0 : ringrt::element_format(w).max;
        double scale_max = w == WireFormat::bfloat16 ? 1 : 4 * static_cast<double>(n) * amax / fmax;
        for (size_t i = 0; i < got.size(); ++i) {
          double exact = 0, sum_abs = 0;
          for (const auto& r : rows) exact += r[i], sum_abs += std::fabs(static_cast<double>(r[i]));
          double bound = ringrt::sum_error_bound(w, n, sum_abs, scale_max);
          BOOST_TEST(std::fabs(got[i] - exact) <= bound, kind << " n=" << n << " i=" << i);
        }
      }
}

// NaN and Inf in any row reach every element they touch: never a finite sum.
BOOST_AUTO_TEST_CASE(nan_and_inf_survive_an_n_device_sum) {
  for (WireFormat w : kAll) {
    std::vector<std::vector<float>> rows(4, std::vector<float>(32, 1.0f));
    rows[1][0] = NAN;
    rows[2][1] = INFINITY;
    rows[3][2] = -INFINITY;
    std::vector<float> got = ring_sum(w, rows);
    BOOST_TEST(std::isnan(got[0]));
    BOOST_TEST(!std::isfinite(got[1]));
    BOOST_TEST(!std::isfinite(got[2]));
    BOOST_TEST(got[3] == 4.0f);
  }
}

BOOST_AUTO_TEST_CASE(names_parse_and_print) {
  for (WireFormat w : {WireFormat::native, WireFormat::bfloat16, WireFormat::fp8_e4m3, WireFormat::fp8_e5m2})
    BOOST_TEST((ringrt::parse_wire_format(ringrt::wire_format_name(w)) == w));
  BOOST_CHECK_THROW(ringrt::parse_wire_format("fp8"), ringrt::ConfigError);
}

BOOST_AUTO_TEST_CASE(every_fp8_code_decodes_as_defined_and_encodes_back) {
  for (WireFormat w : kFp8)
    for (unsigned c = 0; c < 256; ++c) {
      double want = fp8_reference(w, c), got = ringrt::decode_element(w, static_cast<uint16_t>(c));
      if (std::isnan(want)) {
        BOOST_TEST(std::isnan(got));
        BOOST_TEST(std::isnan(ringrt::decode_element(w, ringrt::encode_element(w, static_cast<float>(got)))));
        continue;
      }
      BOOST_TEST(got == want, "code " << c);
      BOOST_TEST(ringrt::encode_element(w, static_cast<float>(got)) == c, "code " << c);
    }
  BOOST_TEST(ringrt::element_format(WireFormat::fp8_e4m3).max == 448.0);
  BOOST_TEST(ringrt::element_format(WireFormat::fp8_e5m2).max == 57344.0);
}

BOOST_AUTO_TEST_CASE(every_bfloat16_code_encodes_back) {
  for (unsigned c = 0; c < 0x10000u; ++c) {
    float v = ringrt::decode_element(WireFormat::bfloat16, static_cast<uint16_t>(c));
    if (std::isnan(v)) continue;
    BOOST_TEST(ringrt::encode_element(WireFormat::bfloat16, v) == c);
  }
}

// Between neighbouring values a < b (codes ca, cb): just below the midpoint rounds to a, just above to b,
// the midpoint to the one with an even code (ties to even); above max an FP8 value saturates.
BOOST_AUTO_TEST_CASE(every_rounding_boundary_rounds_to_nearest_even) {
  for (WireFormat w : kAll) {
    std::vector<std::pair<double, uint16_t>> v = positive_values(w);
    for (size_t i = 0; i + 1 < v.size(); ++i) {
      auto [a, ca] = v[i];
      auto [b, cb] = v[i + 1];
      double mid = (a + b) / 2;
      float below = std::nextafter(static_cast<float>(mid), 0.0f),
            above = std::nextafter(static_cast<float>(mid), INFINITY);
      if (static_cast<double>(static_cast<float>(mid)) != mid) continue;  // not a float (bfloat16 never, fp8 never)
      BOOST_TEST(ringrt::encode_element(w, below) == ca);
      BOOST_TEST(ringrt::encode_element(w, above) == cb);
      BOOST_TEST(ringrt::encode_element(w, static_cast<float>(mid)) == ((ca & 1) ? cb : ca), "tie " << mid);
      BOOST_TEST(ringrt::encode_element(w, -static_cast<float>(mid)) ==
                 (ringrt::encode_element(w, static_cast<float>(mid)) | (w == WireFormat::bfloat16 ? 0x8000 : 0x80)));
    }
  }
  BOOST_TEST(ringrt::decode_element(WireFormat::fp8_e4m3, ringrt::encode_element(WireFormat::fp8_e4m3, 1e6f)) ==
             448.0f);
  BOOST_TEST(ringrt::decode_element(WireFormat::fp8_e5m2, ringrt::encode_element(WireFormat::fp8_e5m2, -1e9f)) ==
             -57344.0f);
}

BOOST_AUTO_TEST_CASE(nan_and_inf_pass_through) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = INFINITY;
  for (WireFormat w : kAll) {
    BOOST_TEST(std::isnan(ringrt::decode_element(w, ringrt::encode_element(w, nan))));
    float pinf = ringrt::decode_element(w, ringrt::encode_element(w, inf));
    float ninf = ringrt::decode_element(w, ringrt::encode_element(w, -inf));
    if (w == WireFormat::fp8_e4m3) {
      BOOST_TEST((std::isnan(pinf) && std::isnan(ninf)));  // no Inf in E4M3: NaN, never a finite value
    } else {
      BOOST_TEST((pinf == inf && ninf == -inf));
    }
    BOOST_TEST(std::signbit(ringrt::decode_element(w, ringrt::encode_element(w, -0.0f))));
    // a block's scale ignores its non-finite elements; the finite ones keep their accuracy
    std::vector<float> block{1.0f, nan, -inf, 3.0f};
    std::vector<float> back = ringrt::cross(w, block);
    BOOST_TEST((back[0] == 1.0f && back[3] == 3.0f && std::isnan(back[1])));
    BOOST_TEST((w == WireFormat::fp8_e4m3 ? std::isnan(back[2]) : back[2] == -inf));
  }
}

BOOST_AUTO_TEST_CASE(block_scale_is_the_smallest_power_of_two_that_fits) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> mag(-140, 127);
  for (WireFormat w : kFp8) {
    double max = ringrt::element_format(w).max;
    for (int t = 0; t < 2000; ++t) {
      float amax = static_cast<float>(std::exp2(mag(rng)));
      if (amax == 0 || !std::isfinite(amax)) continue;
      std::vector<float> block{amax / 3, -amax, 0.0f};
      int k = ringrt::block_scale_exponent(w, block);
      if (k > ringrt::wire_min_scale_exponent(w)) {
        BOOST_TEST(amax <= std::ldexp(max, k));
        BOOST_TEST(amax > std::ldexp(max, k - 1));
      }
    }
    int kmin = ringrt::wire_min_scale_exponent(w);
    BOOST_TEST(kmin == (w == WireFormat::fp8_e4m3 ? -124 : -117));
    BOOST_TEST(ringrt::block_scale_exponent(w, std::vector<float>{0.0f, -0.0f}) == kmin);
    BOOST_TEST(ringrt::block_scale_exponent(w, std::vector<float>{NAN, INFINITY}) == kmin);
    BOOST_TEST(ringrt::block_scale_exponent(w, std::vector<float>{0x1p-130f}) == kmin);  // below: clamped
    BOOST_TEST(ringrt::encode_block(w, std::vector<float>{448.0f * 1024}).scale ==
               127 + ringrt::block_scale_exponent(w, std::vector<float>{448.0f * 1024}));
  }
  BOOST_TEST(ringrt::block_scale_exponent(WireFormat::bfloat16, std::vector<float>{1e30f}) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
