// The rules results are checked by (runtime/api/reference.hpp), on hand-made values: integers exact, float
// sums within n * epsilon * sum |x| unless integer terms make them exact, max and min exact, -0.0 equal to
// 0.0 unless compared bit for bit, NaN against NaN only, an expected infinity only itself, a count or dtype
// that differs counts every element, and each collective's reference against hand-written answers.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/api/reference.hpp"

BOOST_AUTO_TEST_SUITE(test_reference)

using namespace ringrt;

namespace {

// Device d's element i of `rows` (every device's row of one length).
StoredValue from_rows(const std::vector<std::vector<double>>& rows) {
  return [rows](int64_t d, int64_t i) { return rows[static_cast<size_t>(d)][static_cast<size_t>(i)]; };
}

HostBuffer buffer(DType dt, const std::vector<double>& values) {
  HostBuffer b(dt, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) b.set(static_cast<int64_t>(i), values[i]);
  return b;
}

std::vector<double> values_of(const HostBuffer& b) {
  std::vector<double> out;
  for (int64_t i = 0; i < b.numel(); ++i) out.push_back(is_float(b.dtype) ? b.get(i) : double(b.get_int(i)));
  return out;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

BOOST_AUTO_TEST_CASE(integers_are_exact_and_wrap) {
  Reference r = reference_of(DType::int8, 2, 0, 2, ReduceOp::sum, from_rows({{100, -3}, {100, 4}}));
  BOOST_TEST(r.exact.get_int(0) == -56);  // 200 wraps in int8, as on the devices
  BOOST_TEST(r.tolerance.empty());
  BOOST_TEST(compare(r, buffer(DType::int8, {-56, 1})).ok());
  Comparison c = compare(r, buffer(DType::int8, {-56, 2}));
  BOOST_TEST(c.wrong == 1);
  BOOST_TEST(c.compared == 2);
  BOOST_TEST_REQUIRE(c.first.has_value());
  BOOST_TEST(c.first->index == 1);
  BOOST_TEST(c.first->got == 2.0);
  BOOST_TEST(c.first->expected == 1.0);
  BOOST_TEST(count_wrong(r, buffer(DType::int8, {0, 0})) == 2);
}

// A float sum of n terms may be off by n * epsilon * sum |x|: within it is right, beyond it wrong, and the
// mismatch names the bound.
BOOST_AUTO_TEST_CASE(float_sums_are_within_the_bound_of_n_terms) {
  std::vector<std::vector<double>> rows{{0.1, 1.5}, {0.2, -0.25}, {0.3, 0.5}};
  Reference r = reference_of(DType::float64, 3, 0, 2, ReduceOp::sum, from_rows(rows));
  BOOST_TEST(epsilon(DType::float64) == std::ldexp(1.0, -52));
  BOOST_TEST(r.tolerance.at(0) == 3 * std::ldexp(1.0, -52) * (0.1 + 0.2 + 0.3));
  BOOST_TEST(r.tolerance.at(1) == 3 * std::ldexp(1.0, -52) * 2.25);
  double sum = 0.1 + 0.2 + 0.3;
  BOOST_TEST(compare(r, buffer(DType::float64, {sum + 0.5 * r.tolerance[0], 1.75})).ok());
  Comparison c = compare(r, buffer(DType::float64, {sum + 4 * r.tolerance[0], 1.75}));
  BOOST_TEST(c.wrong == 1);
  BOOST_TEST_REQUIRE(c.first.has_value());
  BOOST_TEST(c.first->index == 0);
  BOOST_TEST(c.first->tolerance == r.tolerance[0]);
  BOOST_TEST(c.first->expected == sum);
  // float32: eps 2^-23, the bound of the same terms 2^29 times wider
  Reference r32 = reference_of(DType::float32, 3, 0, 1, ReduceOp::sum, from_rows(rows));
  BOOST_TEST(r32.tolerance.at(0) == 3 * std::ldexp(1.0, -23) * (0.1 + 0.2 + 0.3));
}

// Integer terms whose partial sums fit the significand cannot round, in any order: compared exactly (a
// bfloat16 sum off by one spacing is wrong); past the significand the bound applies.
// An op outside ReduceOp (an int cast to one) is refused, not taken for a sum.
BOOST_AUTO_TEST_CASE(an_op_outside_reduce_op_is_refused) {
  for (int bad : {4, 255, -1})
    BOOST_CHECK_THROW(reference_of(DType::int32, 3, 0, 1, static_cast<ReduceOp>(bad), from_rows({{2}, {3}, {4}})),
                      std::invalid_argument);
  BOOST_CHECK_THROW(collective_reference("allreduce", DType::int32, static_cast<ReduceOp>(4), 3, 0, 3, 0, 0, 1,
                                         [](int64_t d, int64_t) { return static_cast<double>(d); }),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(integer_terms_that_fit_are_exact) {
  Reference small = reference_of(DType::bfloat16, 2, 0, 1, ReduceOp::sum, from_rows({{100}, {28}}));
  BOOST_TEST(small.tolerance.at(0) == 0.0);
  BOOST_TEST(compare(small, buffer(DType::bfloat16, {128})).ok());
  BOOST_TEST(compare(small, buffer(DType::bfloat16, {129})).wrong == 1);  // one spacing off
  Reference large = reference_of(DType::bfloat16, 2, 0, 1, ReduceOp::sum, from_rows({{200}, {200}}));
  BOOST_TEST(large.tolerance.at(0) == 2 * std::ldexp(1.0, -7) * 400);
  // products of powers of two are exact however large; other integer products while they fit
  BOOST_TEST(reference_of(DType::float16, 3, 0, 1, ReduceOp::prod, from_rows({{-64}, {32}, {2}})).tolerance.at(0) ==
             0.0);
  BOOST_TEST(reference_of(DType::float16, 3, 0, 1, ReduceOp::prod, from_rows({{3}, {5}, {7}})).tolerance.at(0) == 0.0);
  BOOST_TEST(reference_of(DType::float16, 2, 0, 1, ReduceOp::prod, from_rows({{0.75}, {3}})).tolerance.at(0) > 0.0);
  // one term (a copy: broadcast, allgather) and max/min never round
  BOOST_TEST(reference_of(DType::float32, 1, 0, 1, ReduceOp::sum, from_rows({{0.1}})).tolerance.empty());
  BOOST_TEST(reference_of(DType::float32, 2, 0, 1, ReduceOp::max, from_rows({{0.1}, {0.3}})).tolerance.empty());
}

// -0.0 equals 0.0 by value, not bit for bit; a NaN matches any NaN in every form and nothing else; an
// expected infinity only itself (a sum that overflows), even where a tolerance applies.
BOOST_AUTO_TEST_CASE(zero_signs_nans_and_infinities) {
  Reference zero = reference_of(DType::float32, 2, 0, 1, ReduceOp::max, from_rows({{0.0}, {-0.0}}));
  BOOST_TEST(compare(zero, buffer(DType::float32, {-0.0})).ok());
  BOOST_TEST(compare(zero, buffer(DType::float32, {0.0})).ok());
  Reference bits = exact_reference(buffer(DType::float32, {0.0, kNaN}), /*bitwise=*/true);
  BOOST_TEST(compare(bits, buffer(DType::float32, {-0.0, kNaN})).wrong == 1);
  BOOST_TEST(compare(bits, buffer(DType::float32, {0.0, -kNaN})).ok());  // another NaN
  Reference nan = reference_of(DType::float32, 2, 0, 2, ReduceOp::sum, from_rows({{kNaN, 1.0}, {1.0, 1.0}}));
  BOOST_TEST(compare(nan, buffer(DType::float32, {kNaN, 2.0})).ok());
  BOOST_TEST(compare(nan, buffer(DType::float32, {1.0, kNaN})).wrong == 2);
  Reference inf = reference_of(DType::float16, 2, 0, 1, ReduceOp::sum, from_rows({{60000.5}, {60000.5}}));
  BOOST_TEST(std::isinf(inf.exact.get(0)));
  BOOST_TEST(compare(inf, buffer(DType::float16, {kInf})).ok());
  BOOST_TEST(compare(inf, buffer(DType::float16, {65504})).wrong == 1);
  BOOST_TEST(compare(inf, buffer(DType::float16, {-kInf})).wrong == 1);
}

// Another element count or dtype: every element wrong, and the report says why.
BOOST_AUTO_TEST_CASE(another_count_or_dtype_is_all_wrong) {
  Reference r = exact_reference(buffer(DType::float32, {1, 2, 3}));
  Comparison fewer = compare(r, buffer(DType::float32, {1, 2}));
  BOOST_TEST(fewer.wrong == 3);
  BOOST_TEST(fewer.shape_problem == "got 2 float32 elements, expected 3 float32");
  Comparison other = compare(r, buffer(DType::int32, {1, 2, 3}));
  BOOST_TEST(other.wrong == 3);
  BOOST_TEST(other.shape_problem == "got 3 int32 elements, expected 3 float32");
}

// Each collective's reference on 3 devices of 6 int32 elements each, device d's element i = 10 d + i: the
// answers NCCL's definitions give, written out.
BOOST_AUTO_TEST_CASE(collective_references_are_nccls_definitions) {
  StoredValue v = [](int64_t d, int64_t i) { return static_cast<double>(10 * d + i); };
  auto ref = [&](const char* kind, int64_t count, int64_t device, int64_t len) {
    return values_of(collective_reference(kind, DType::int32, ReduceOp::sum, 3, 2, count, device, 0, len, v).exact);
  };
  using V = std::vector<double>;
  BOOST_TEST(ref("allreduce", 6, 0, 6) == (V{30, 33, 36, 39, 42, 45}));
  BOOST_TEST(ref("reduce", 6, 2, 6) == (V{30, 33, 36, 39, 42, 45}));
  BOOST_TEST(ref("reduce_scatter", 6, 1, 2) == (V{36, 39}));             // chunk 1 of the sum
  BOOST_TEST(ref("allgather", 6, 0, 6) == (V{0, 1, 10, 11, 20, 21}));    // 2 of each device
  BOOST_TEST(ref("alltoall", 6, 1, 6) == (V{2, 3, 12, 13, 22, 23}));     // chunk 1 of each device
  BOOST_TEST(ref("broadcast", 6, 0, 6) == (V{20, 21, 22, 23, 24, 25}));  // root 2's
  Reference part = collective_reference("allreduce", DType::int32, ReduceOp::max, 3, 0, 6, 0, 4, 2, v);
  BOOST_TEST(values_of(part.exact) == (V{24, 25}));  // elements [4, 6)
  // max, min and prod on values that are not ordered by device (so "the last device's" or "the first's" would
  // be wrong): device d's element i = (7 d + 3 i) mod 5 - 2
  StoredValue w = [](int64_t d, int64_t i) { return static_cast<double>((7 * d + 3 * i) % 5 - 2); };
  auto op_ref = [&](ReduceOp op) {
    return values_of(collective_reference("allreduce", DType::int32, op, 3, 0, 4, 0, 0, 4, w).exact);
  };
  // the columns: i=0: -2, 0, 2; i=1: 1, -2, 0; i=2: -1, 1, -2; i=3: 2, -1, 1
  BOOST_TEST(op_ref(ReduceOp::max) == (V{2, 1, 1, 2}));
  BOOST_TEST(op_ref(ReduceOp::min) == (V{-2, -2, -2, -1}));
  BOOST_TEST(op_ref(ReduceOp::prod) == (V{0, 0, 2, -2}));
  BOOST_TEST(op_ref(ReduceOp::sum) == (V{0, -1, -2, 2}));
  BOOST_CHECK_THROW(collective_reference("gather", DType::int32, ReduceOp::sum, 3, 0, 6, 0, 0, 6, v),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
