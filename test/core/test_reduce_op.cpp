// The public ops (core/reduce_op.hpp): their names, and their meaning on tensors against host arithmetic.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/reduce_op.hpp"
#include "rewrite/ops.hpp"
#include "runtime/api/devices.hpp"
#include "runtime/api/tensor.hpp"
#include "test/support/checks.hpp"

BOOST_AUTO_TEST_SUITE(test_reduce_op)

using namespace ringrt;

BOOST_AUTO_TEST_CASE(names_parse_back_and_print) {
  const std::vector<std::pair<ReduceOp, std::string>> want{
      {ReduceOp::sum, "sum"}, {ReduceOp::prod, "prod"}, {ReduceOp::max, "max"}, {ReduceOp::min, "min"}};
  for (const auto& [op, name] : want) {
    BOOST_TEST(reduce_op_name(op) == name);
    BOOST_TEST((parse_reduce_op(name) == op));
    std::ostringstream os;
    os << op;
    BOOST_TEST(os.str() == name);
  }
  for (const char* bad : {"", "add", "SUM", "sum ", "mean"}) BOOST_TEST(!parse_reduce_op(bad).has_value(), bad);
  BOOST_TEST(binary_op_name(BinaryOp::add) == "add");
  BOOST_TEST(binary_op_name(BinaryOp::less) == "less");
  BOOST_TEST(binary_op_name(BinaryOp::bitwise_xor) == "bitwise_xor");
}

// Each public op is the IR op the interpreter and the kernels implement (rewrite/ops.hpp ir_op), and back.
BOOST_AUTO_TEST_CASE(each_op_is_its_ir_op) {
  BOOST_TEST((ir_op(ReduceOp::sum) == Ops::ADD));
  BOOST_TEST((ir_op(ReduceOp::prod) == Ops::MUL));
  BOOST_TEST((ir_op(ReduceOp::max) == Ops::MAX));
  BOOST_TEST((ir_op(ReduceOp::min) == Ops::MIN));
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min})
    BOOST_TEST((reduce_op_of(ir_op(op)) == op));
  BOOST_CHECK_THROW(reduce_op_of(Ops::SUB), InternalError);
  BOOST_TEST((ir_op(BinaryOp::div) == Ops::FDIV));
  BOOST_TEST((ir_op(BinaryOp::idiv) == Ops::IDIV));
  BOOST_TEST((ir_op(BinaryOp::not_equal) == Ops::CMPNE));
  BOOST_TEST((ir_op(BinaryOp::bitwise_and) == Ops::AND));
}

// reduce and binary on one device give the host's values: every ReduceOp over axis 1 of a (2, 3) tensor, and
// the BinaryOps that the operators do not spell.
BOOST_AUTO_TEST_CASE(ops_on_tensors_match_the_host) {
  const std::vector<float> a{3, -1, 4, 1, 5, -9}, b{2, 7, 4, -1, 8, 3};
  Tensor x = Tensor::from_vector(a, {2, 3}), y = Tensor::from_vector(b, {2, 3});
  BOOST_TEST(x.reduce(ReduceOp::sum, {1}).to_vector<float>() == (std::vector<float>{6, -3}),
             boost::test_tools::per_element());
  BOOST_TEST(x.reduce(ReduceOp::prod, {1}).to_vector<float>() == (std::vector<float>{-12, -45}),
             boost::test_tools::per_element());
  BOOST_TEST(x.reduce(ReduceOp::max, {1}).to_vector<float>() == (std::vector<float>{4, 5}),
             boost::test_tools::per_element());
  BOOST_TEST(x.reduce(ReduceOp::min, {1}).to_vector<float>() == (std::vector<float>{-1, -9}),
             boost::test_tools::per_element());
  std::vector<int32_t> less = x.binary(BinaryOp::less, y).cast(DType::int32).to_vector<int32_t>();
  std::vector<float> sub = x.binary(BinaryOp::sub, y).to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) {
    BOOST_TEST(less[i] == (a[i] < b[i] ? 1 : 0), "element " << i);
    BOOST_TEST(sub[i] == a[i] - b[i], "element " << i);
  }
}

// A value outside the enums (an int cast to one) is a ShapeError naming the call and the value.
BOOST_AUTO_TEST_CASE(a_value_outside_the_enum_is_a_clear_error) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2}, {2});
  BOOST_CHECK_EXCEPTION(x.reduce(static_cast<ReduceOp>(9), {0}), ShapeError,
                        test::message_has({"REDUCE_AXIS", "9", "not a ReduceOp"}));
  BOOST_CHECK_EXCEPTION(x.binary(static_cast<BinaryOp>(99), x), ShapeError,
                        test::message_has({"binary", "99", "not a BinaryOp"}));
}

BOOST_AUTO_TEST_SUITE_END()
