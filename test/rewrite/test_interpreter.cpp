// The reference interpreter on leaves, element-wise ops (hand-computed tables), casts, reductions and
// 16-bit floats (rewrite/interpreter.cpp).
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "rewrite/interpreter.hpp"
#include "test/rewrite/interpreter_fixture.hpp"
#include "test/support/checks.hpp"
#include "test/support/print.hpp"

BOOST_AUTO_TEST_SUITE(test_interpreter)

namespace bdata = boost::unit_test::data;
namespace tt = boost::test_tools;
using namespace ringrt;
using namespace ringrt::test;  // NOLINT: the fixture

namespace {

// ---- element-wise tables (hand-computed) ----

struct FloatRow {
  Ops op;
  F a, b, want;
  const char* why;
};
std::ostream& operator<<(std::ostream& os, const FloatRow& r) { return os << op_name(r.op) << ": " << r.why; }

const std::vector<FloatRow> kFloat32{
    {Ops::NEG, {1, -2.5, 0}, {}, {-1, 2.5, 0}, "negate"},
    {Ops::EXP2, {0, 3, -1}, {}, {1, 8, 0.5}, "powers of two"},
    {Ops::LOG2, {1, 8, 0.25}, {}, {0, 3, -2}, "exact logs"},
    {Ops::SIN, {0, 0x1.921fb6p+0}, {}, {0, 1}, "sin 0; sin of float(pi/2) rounds to 1"},
    {Ops::SQRT, {4, 9, 2}, {}, {2, 3, 0x1.6a09e6p+0}, "sqrt 2 rounds to float 0x3fb504f3"},
    {Ops::RECIP, {4, -0.5, 3}, {}, {0.25, -2, 0x1.555556p-2}, "1/3 rounds to float 0x3eaaaaab"},
    {Ops::ADD,
     {1.5, 16777216, 16777216, 0x1.99999ap-4},
     {2.25, 1, 3, 0x1.99999ap-3},
     {3.75, 16777216, 16777220, 0x1.333334p-2},
     "2^24+1 ties to even 2^24; 2^24+3 to 2^24+4; 0.1f+0.2f=0.3f"},
    {Ops::SUB, {5, 0.5, 0.5}, {3, 0.5, 16777216}, {2, 0, -16777216}, "0.5 - 2^24 ties to even -2^24"},
    {Ops::MUL, {4097, 1.5, -0.0}, {4097, -2, 5}, {16785408, -3, 0}, "4097^2 = 2^24+8193 rounds to 16785408"},
    {Ops::FDIV, {7, 1, -1, 0}, {2, 3, 0, 4}, {3.5, 0x1.555556p-2, -kInf, 0}, "division incl. by zero"},
    {Ops::MAX, {1, -3, 5, -kInf}, {2, -4, 5, -1}, {2, -3, 5, -1}, "max"},
    {Ops::MIN, {1, -3, 5, kInf}, {2, -4, 5, 7}, {1, -4, 5, 7}, "min"},
    {Ops::CMPLT, {1, 2, 3, -kInf}, {2, 2, 2, 0}, {1, 0, 0, 1}, "bool result"},
    {Ops::CMPNE, {1, 2, 3}, {2, 2, 2}, {1, 0, 1}, "bool result"},
    {Ops::CMPEQ, {1, 2, 3}, {2, 2, 2}, {0, 1, 0}, "bool result"},
};

struct IntRow {
  DType dtype;
  Ops op;
  I a, b, want;
  const char* why;
};
std::ostream& operator<<(std::ostream& os, const IntRow& r) {
  return os << dtype_name(r.dtype) << " " << op_name(r.op) << ": " << r.why;
}

constexpr int64_t kMin32 = -2147483648LL, kMax32 = 2147483647LL;

const std::vector<IntRow> kInts{
    {DType::int32, Ops::ADD, {kMax32, -5, 100}, {1, 3, -100}, {kMin32, -2, 0}, "INT32_MAX + 1 wraps"},
    {DType::int32, Ops::SUB, {kMin32, 5}, {1, 7}, {kMax32, -2}, "INT32_MIN - 1 wraps"},
    {DType::int32, Ops::MUL, {65536, 65537, -3}, {65536, 65537, 7}, {0, 131073, -21}, "2^32 wraps to 0"},
    {DType::int32, Ops::NEG, {kMin32, 5, 0}, {}, {kMin32, -5, 0}, "-INT32_MIN wraps to itself"},
    {DType::int32,
     Ops::IDIV,
     {7, -7, 7, -7, 5, kMin32, 0},
     {2, 2, -2, -2, 0, -1, 3},
     {3, -3, -3, 3, 0, kMin32, 0},
     "truncates toward zero; x/0 = 0; INT32_MIN/-1 wraps"},
    {DType::int32, Ops::MOD, {7, -7, 7, -7, 5}, {2, 2, -2, -2, 0}, {1, -1, 1, -1, 0}, "sign of the dividend; x%0 = 0"},
    {DType::int32, Ops::MAX, {3, -3, kMin32}, {-4, 2, kMax32}, {3, 2, kMax32}, "max"},
    {DType::int32, Ops::MIN, {3, -3, kMin32}, {-4, 2, kMax32}, {-4, -3, kMin32}, "min"},
    {DType::int32, Ops::AND, {12, -1}, {10, 6}, {8, 6}, "bitwise and"},
    {DType::int32, Ops::OR, {12, -1}, {10, 6}, {14, -1}, "bitwise or"},
    {DType::int32, Ops::XOR, {12, -1}, {10, 6}, {6, -7}, "bitwise xor"},
    {DType::int32, Ops::CMPLT, {1, 2, -3}, {2, 2, 2}, {1, 0, 1}, "bool result"},
    {DType::int32, Ops::CMPNE, {1, 2, -3}, {2, 2, 2}, {1, 0, 1}, "bool result"},
    {DType::int32, Ops::CMPEQ, {1, 2, -3}, {2, 2, 2}, {0, 1, 0}, "bool result"},
    {DType::int8, Ops::ADD, {127, -128}, {1, -1}, {-128, 127}, "int8 wraps"},
    {DType::int8, Ops::MUL, {16, -128}, {8, -1}, {-128, -128}, "16*8 = 128 wraps; -(-128) wraps"},
    {DType::uint8, Ops::ADD, {255, 3}, {1, 0}, {0, 3}, "uint8 wraps"},
    {DType::uint8, Ops::SUB, {3}, {5}, {254}, "uint8 wraps below zero"},
    {DType::uint8, Ops::CMPLT, {3, 255}, {200, 0}, {1, 0}, "uint8 compares unsigned"},
    {DType::int64,
     Ops::ADD,
     {9223372036854775807LL, 4294967296LL},
     {1, 4294967296LL},
     {std::numeric_limits<int64_t>::min(), 8589934592LL},
     "int64 wraps, no 32-bit truncation"},
    {DType::bool_, Ops::AND, {0, 1, 1}, {1, 1, 0}, {0, 1, 0}, "bool and"},
    {DType::bool_, Ops::OR, {0, 1, 0}, {1, 1, 0}, {1, 1, 0}, "bool or"},
};

}  // namespace

// ------------------------------------------------------------------------------------------------
BOOST_FIXTURE_TEST_SUITE(leaves, InterpreterFixture)

BOOST_AUTO_TEST_CASE(const_values) {
  HostBuffer f = one(cst(2.5));
  BOOST_TEST(f.dtype == DType::float32);
  BOOST_TEST(f.shape.empty());
  CHECK_VALUES(f.to_vector<double>(), F{2.5});
  CHECK_VALUES(ints(cst(-7, DType::int32)), I{-7});
  CHECK_VALUES(ints(cst(1, DType::bool_)), I{1});
  CHECK_VALUES(floats(cst(0.1, DType::float16)), F{0.0999755859375});  // stored as half 0x2e66
  CHECK_VALUES(ints(cst(300, DType::uint8)), I{44});                   // 300 - 256
}

BOOST_AUTO_TEST_CASE(const_broadcast) {
  HostBuffer b = one(cst(3).reshape({1, 1}).expand({2, 3}));
  BOOST_TEST(b.shape == (Shape{2, 3}));
  CHECK_VALUES(b.to_vector<double>(), F{3, 3, 3, 3, 3, 3});
  CHECK_VALUES(ints(input(DType::int32, {2, 2}, I{0, 0, 0, 0}).const_like(9)), I{9, 9, 9, 9});
}

BOOST_AUTO_TEST_CASE(buffer_from_the_lookup) {
  UOp x = input(DType::float32, {2, 2}, F{1, 2, 3, 4});
  HostBuffer b = one(x);
  BOOST_TEST(b.shape == (Shape{2, 2}));
  CHECK_VALUES(b.to_vector<double>(), F{1, 2, 3, 4});
  HostBuffer raw = one(x.src(0));  // the BUFFER itself is flat
  BOOST_TEST(raw.shape == Shape{4});
  CHECK_VALUES(raw.to_vector<double>(), F{1, 2, 3, 4});
}

BOOST_AUTO_TEST_CASE(unknown_buffers_start_zero_filled) {
  UOp scratch = new_buffer(DeviceSpec("CPU:0"), 3, DType::int32, &g);
  CHECK_VALUES(ints(scratch), I{0, 0, 0});
  Interpreter no_lookup;
  auto v = no_lookup.evaluate(new_buffer(DeviceSpec("CPU:0"), 2, DType::float32, &g));
  BOOST_REQUIRE(v.size() == 1u);
  CHECK_VALUES(v[0].to_vector<double>(), F{0, 0});
}

BOOST_AUTO_TEST_CASE(stored_values_take_the_buffer_dtype) {
  CHECK_VALUES(floats(input(DType::float16, {3}, F{2049, 2051, 0.1})), F{2048, 2052, 0.0999755859375});
  CHECK_VALUES(floats(input(DType::bfloat16, {2}, F{257, 259})), F{256, 260});
  CHECK_VALUES(ints(input(DType::int8, {2}, I{200, -129})), I{-56, 127});
  CHECK_VALUES(ints(input(DType::int32, {1}, I{4294967297LL})), I{1});
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(alu)

BOOST_DATA_TEST_CASE(float32, bdata::make(kFloat32), row) {
  InterpreterFixture f;
  Shape s{static_cast<int64_t>(row.a.size())};
  UOp a = f.input(DType::float32, s, row.a);
  UOp u = row.b.empty() ? a.alu(row.op) : a.alu(row.op, {f.input(DType::float32, s, row.b)});
  HostBuffer out = f.one(u);
  BOOST_TEST(out.dtype == (group::compare().contains(row.op) ? DType::bool_ : DType::float32));
  BOOST_TEST(out.shape == s);
  CHECK_VALUES(out.to_vector<double>(), row.want);
}

BOOST_DATA_TEST_CASE(integers, bdata::make(kInts), row) {
  InterpreterFixture f;
  Shape s{static_cast<int64_t>(row.a.size())};
  UOp a = f.input(row.dtype, s, row.a);
  UOp u = row.b.empty() ? a.alu(row.op) : a.alu(row.op, {f.input(row.dtype, s, row.b)});
  HostBuffer out = f.one(u);
  BOOST_TEST(out.dtype == (group::compare().contains(row.op) ? DType::bool_ : row.dtype));
  CHECK_VALUES(out.to_vector<int64_t>(), row.want);
}

BOOST_FIXTURE_TEST_CASE(where, InterpreterFixture) {
  UOp a = input(DType::int32, {4}, I{1, 5, -2, 7}), b = input(DType::int32, {4}, I{3, 4, -2, 9});
  UOp cond = a.alu(Ops::CMPLT, {b});
  CHECK_VALUES(ints(cond), I{1, 0, 0, 1});
  CHECK_VALUES(ints(cond.where(a, b)), I{1, 4, -2, 7});  // the smaller one
  UOp x = input(DType::float32, {4}, F{0.5, 1.5, -1, 2}), y = input(DType::float32, {4}, F{9, 9, 9, 9});
  HostBuffer out = one(cond.where(x, y));
  BOOST_TEST(out.dtype == DType::float32);
  CHECK_VALUES(out.to_vector<double>(), F{0.5, 9, 9, 2});
}

BOOST_AUTO_TEST_CASE(scalar_helpers) {
  BOOST_TEST(alu_int(Ops::IDIV, DType::int32, {-7, 2}) == -3);
  BOOST_TEST(alu_int(Ops::MOD, DType::int32, {-7, 2}) == -1);
  BOOST_TEST(alu_int(Ops::IDIV, DType::int64, {std::numeric_limits<int64_t>::min(), -1}) == 0);  // no trap
  BOOST_TEST(alu_int(Ops::WHERE, DType::int32, {0, 4, 5}) == 5);
  BOOST_TEST(alu_float(Ops::FDIV, DType::float32, {1, 4}) == 0.25);
  BOOST_TEST(alu_float(Ops::WHERE, DType::float32, {1, 4, 5}) == 4);
  double nan = std::numeric_limits<double>::quiet_NaN();
  BOOST_TEST(std::isnan(alu_float(Ops::MAX, DType::float32, {nan, 1})));  // NaN propagates either way
  BOOST_TEST(std::isnan(alu_float(Ops::MAX, DType::float32, {1, nan})));
  BOOST_TEST(std::isnan(alu_float(Ops::MIN, DType::float32, {nan, 1})));
  BOOST_TEST(std::isnan(alu_float(Ops::MIN, DType::float32, {1, nan})));
  BOOST_TEST(alu_float(Ops::CMPNE, DType::float32, {nan, nan}) == 1);
  BOOST_TEST(alu_float(Ops::CMPEQ, DType::float32, {nan, nan}) == 0);
  // ops without semantics for the kind of operand (the builders reject these graphs earlier)
  BOOST_CHECK_EXCEPTION(alu_int(Ops::EXP2, DType::int32, {1}), InternalError, ringrt::test::message_has({"EXP2"}));
  BOOST_CHECK_EXCEPTION(alu_float(Ops::AND, DType::float32, {1, 1}), InternalError, ringrt::test::message_has({"AND"}));
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_FIXTURE_TEST_SUITE(casts, InterpreterFixture)

BOOST_AUTO_TEST_CASE(float_to_int_truncates_toward_zero) {
  UOp x = input(DType::float32, {6}, F{2.7, -2.7, 0.5, -0.5, 7, -0.0});
  CHECK_VALUES(ints(x.cast(DType::int32)), I{2, -2, 0, 0, 7, 0});
  CHECK_VALUES(ints(input(DType::float32, {2}, F{200.9, 3.1}).cast(DType::uint8)), I{200, 3});
  CHECK_VALUES(ints(input(DType::float64, {2}, F{-1e10, 1e10}).cast(DType::int64)), I{-10000000000LL, 10000000000LL});
}

BOOST_AUTO_TEST_CASE(int_to_float16_rounds_to_nearest_even) {
  UOp x = input(DType::int32, {7}, I{2049, 2051, 65519, 65520, 70000, -2049, 1});
  HostBuffer h = one(x.cast(DType::float16));
  BOOST_TEST(h.dtype == DType::float16);
  CHECK_VALUES(h.to_vector<double>(), F{2048, 2052, 65504, kInf, kInf, -2048, 1});
}

BOOST_AUTO_TEST_CASE(int_to_bfloat16_rounds_to_nearest_even) {
  UOp x = input(DType::int32, {4}, I{257, 259, 255, -1});
  CHECK_VALUES(floats(x.cast(DType::bfloat16)), F{256, 260, 255, -1});
}

BOOST_AUTO_TEST_CASE(float_to_narrower_floats) {
  UOp x = input(DType::float32, {4}, F{0.1, 1e-8, 65536, 0x1p-24});
  CHECK_VALUES(floats(x.cast(DType::float16)), F{0.0999755859375, 0, kInf, 0x1p-24});
  CHECK_VALUES(floats(input(DType::float64, {1}, F{0.1}).cast(DType::float32)), F{0x1.99999ap-4});
  CHECK_VALUES(floats(input(DType::float16, {1}, F{0.1}).cast(DType::float32)), F{0.0999755859375});
  CHECK_VALUES(floats(x.cast(DType::float16).cast(DType::float64)), F{0.0999755859375, 0, kInf, 0x1p-24});
}

BOOST_AUTO_TEST_CASE(to_and_from_bool) {
  CHECK_VALUES(ints(input(DType::float32, {3}, F{0, 2.5, -0.0}).cast(DType::bool_)), I{0, 1, 0});
  CHECK_VALUES(ints(input(DType::int32, {3}, I{0, 3, -1}).cast(DType::bool_)), I{0, 1, 1});
  UOp b = input(DType::int32, {2}, I{1, 5}).alu(Ops::CMPLT, {input(DType::int32, {2}, I{2, 2})});
  CHECK_VALUES(floats(b.cast(DType::float32)), F{1, 0});
  CHECK_VALUES(ints(b.cast(DType::int32)), I{1, 0});
}

BOOST_AUTO_TEST_CASE(integer_narrowing_wraps) {
  CHECK_VALUES(ints(input(DType::int32, {3}, I{200, -129, 127}).cast(DType::int8)), I{-56, 127, 127});
  CHECK_VALUES(ints(input(DType::int64, {1}, I{4294967297LL}).cast(DType::int32)), I{1});
  CHECK_VALUES(ints(input(DType::int32, {2}, I{-1, 256}).cast(DType::uint8)), I{255, 0});
}

BOOST_AUTO_TEST_CASE(bitcast_keeps_the_bits) {
  CHECK_VALUES(ints(input(DType::float32, {2}, F{1.0, -2.0}).bitcast(DType::int32)), I{0x3f800000, -1073741824});
  CHECK_VALUES(floats(input(DType::int32, {1}, I{0x40490fdb}).bitcast(DType::float32)), F{0x1.921fb6p+1});  // pi
  // half 1.0 is 0x3c00; read as bfloat16 that is float 0x3c000000 = 2^-7
  CHECK_VALUES(floats(input(DType::float16, {1}, F{1.0}).bitcast(DType::bfloat16)), F{0.0078125});
  CHECK_VALUES(ints(input(DType::int8, {2}, I{-1, -128}).bitcast(DType::uint8)), I{255, 128});
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(reduce)

struct ReduceRow {
  Ops op;
  std::vector<int> axes;
  Shape shape;
  F want;
};
std::ostream& operator<<(std::ostream& os, const ReduceRow& r) {
  os << op_name(r.op) << " over";
  for (int a : r.axes) os << " " << a;
  return os;
}

// x = [[1, 2, 3], [4, 5, 6]]
const std::vector<ReduceRow> kReduce{
    {Ops::ADD, {0}, {1, 3}, {5, 7, 9}},   {Ops::ADD, {1}, {2, 1}, {6, 15}},  {Ops::ADD, {0, 1}, {1, 1}, {21}},
    {Ops::MAX, {0}, {1, 3}, {4, 5, 6}},   {Ops::MAX, {1}, {2, 1}, {3, 6}},   {Ops::MAX, {0, 1}, {1, 1}, {6}},
    {Ops::MIN, {0}, {1, 3}, {1, 2, 3}},   {Ops::MIN, {1}, {2, 1}, {1, 4}},   {Ops::MIN, {0, 1}, {1, 1}, {1}},
    {Ops::MUL, {0}, {1, 3}, {4, 10, 18}}, {Ops::MUL, {1}, {2, 1}, {6, 120}}, {Ops::MUL, {0, 1}, {1, 1}, {720}},
};

BOOST_DATA_TEST_CASE(small_matrix_float32_and_int32, bdata::make(kReduce), row) {
  for (DType dt : {DType::float32, DType::int32}) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      InterpreterFixture f;
      UOp x = f.input(dt, {2, 3}, F{1, 2, 3, 4, 5, 6});
      HostBuffer out = f.one(x.r(row.op, row.axes));
      BOOST_TEST(out.shape == row.shape);
      BOOST_TEST(out.dtype == dt);
      CHECK_VALUES(out.to_vector<double>(), row.want);
    }
  }
}

BOOST_FIXTURE_TEST_CASE(several_axes_of_three, InterpreterFixture) {
  // x[i][j][k] = 4i + 2j + k; summing over i and k leaves j: 0+1+4+5 = 10 and 2+3+6+7 = 18
  UOp x = input(DType::int32, {2, 2, 2}, I{0, 1, 2, 3, 4, 5, 6, 7});
  HostBuffer out = one(x.r(Ops::ADD, {0, 2}));
  BOOST_TEST(out.shape == (Shape{1, 2, 1}));
  CHECK_VALUES(out.to_vector<int64_t>(), I{10, 18});
  CHECK_VALUES(ints(x.r(Ops::MAX, {1})), I{2, 3, 6, 7});
}

BOOST_FIXTURE_TEST_CASE(identities_are_not_zero, InterpreterFixture) {
  CHECK_VALUES(ints(input(DType::int32, {3}, I{-5, -3, -9}).r(Ops::MAX, {0})), I{-3});
  CHECK_VALUES(ints(input(DType::int32, {2}, I{5, 3}).r(Ops::MIN, {0})), I{3});
  CHECK_VALUES(ints(input(DType::uint8, {2}, I{200, 100}).r(Ops::MIN, {0})), I{100});
  CHECK_VALUES(ints(input(DType::int8, {2}, I{-100, -120}).r(Ops::MAX, {0})), I{-100});
  CHECK_VALUES(ints(input(DType::int64, {2}, I{-5000000000LL, -6000000000LL}).r(Ops::MAX, {0})), I{-5000000000LL});
  CHECK_VALUES(floats(input(DType::float32, {2}, F{-1, -2}).r(Ops::MAX, {0})), F{-1});
  CHECK_VALUES(floats(input(DType::float32, {2}, F{7, 3}).r(Ops::MIN, {0})), F{3});
  CHECK_VALUES(floats(input(DType::float16, {2}, F{-1, -2}).r(Ops::MAX, {0})), F{-1});
  CHECK_VALUES(ints(input(DType::int32, {3}, I{2, 3, 4}).r(Ops::MUL, {0})), I{24});
}

BOOST_FIXTURE_TEST_CASE(integer_sums_wrap, InterpreterFixture) {
  CHECK_VALUES(ints(input(DType::int32, {2}, I{kMax32, 1}).r(Ops::ADD, {0})), I{kMin32});
  CHECK_VALUES(ints(input(DType::uint8, {3}, I{200, 50, 10}).r(Ops::ADD, {0})), I{4});  // 260 - 256
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
// float16 and bfloat16 round at every store, as a GPU stores them.
BOOST_FIXTURE_TEST_SUITE(low_precision, InterpreterFixture)

BOOST_AUTO_TEST_CASE(half_2048_plus_1_stays_2048) {
  UOp x = input(DType::float16, {1}, F{2048}), one_ = cst(1, DType::float16).reshape({1});
  CHECK_VALUES(floats(x + one_), F{2048});
  CHECK_VALUES(floats((x + one_) + one_), F{2048});  // rounded after each add
  CHECK_VALUES(floats(x + cst(2, DType::float16).reshape({1})), F{2050});
  BOOST_TEST(one(x + one_).dtype == DType::float16);
}

BOOST_AUTO_TEST_CASE(half_sum_of_4096_ones_saturates_at_2048) {
  UOp ones = cst(1, DType::float16).reshape({1}).expand({4096});
  CHECK_VALUES(floats(ones.r(Ops::ADD, {0})), F{2048});
  // in float32 the same sum is exact
  CHECK_VALUES(floats(cst(1).reshape({1}).expand({4096}).r(Ops::ADD, {0})), F{4096});
}

BOOST_AUTO_TEST_CASE(half_ties_round_to_even_in_arithmetic) {
  // half(0.1) + half(0.2) = 4914 * 2^-14 exactly, a tie between 1228 and 1229 * 2^-12: even 1228
  UOp a = input(DType::float16, {1}, F{0.1}), b = input(DType::float16, {1}, F{0.2});
  CHECK_VALUES(floats(a), F{0.0999755859375});
  CHECK_VALUES(floats(b), F{0.199951171875});
  CHECK_VALUES(floats(a + b), F{0.2998046875});
}

BOOST_AUTO_TEST_CASE(half_overflow_is_infinity) {
  UOp x = input(DType::float16, {2}, F{300, -300});
  CHECK_VALUES(floats(x * input(DType::float16, {2}, F{300, 300})), F{kInf, -kInf});
  // 65504 is the largest half; 65512 rounds back down to it, 65520 is the tie that goes to infinity
  CHECK_VALUES(floats(input(DType::float16, {1}, F{65504}) + input(DType::float16, {1}, F{8})), F{65504});
  CHECK_VALUES(floats(input(DType::float16, {1}, F{65504}) + input(DType::float16, {1}, F{16})), F{kInf});
}

BOOST_AUTO_TEST_CASE(bfloat16_rounds_each_store) {
  UOp x = input(DType::bfloat16, {2}, F{256, 1});
  UOp y = input(DType::bfloat16, {2}, F{1, 0.00390625});  // 1 and 2^-8
  CHECK_VALUES(floats(x + y), F{256, 1});                 // both ties to even
  UOp ones = cst(1, DType::bfloat16).reshape({1}).expand({1024});
  CHECK_VALUES(floats(ones.r(Ops::ADD, {0})), F{256});
  BOOST_TEST(one(x + y).dtype == DType::bfloat16);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
