// The testing library's checks (testing/checks.hpp) on real results of 4 cpu devices: a right result passes with
// no message; a value planted wrong in what a device read back gives a report that names the collective, its
// algorithm, the dtype, the device, the first wrong index, the value and the expected value, then the schedule;
// references that do not fit the devices are a problem, not a pass; the interpreter comparison by value and bit
// for bit; same_element and message_has.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/settings.hpp"
#include "testing/checks.hpp"
#include "testing/datasets.hpp"

BOOST_AUTO_TEST_SUITE(test_checks)

using namespace ringrt;

namespace {

// 4 devices' float32 inputs of 10 elements: fractions, so that the sum rounds and the bound applies.
std::vector<HostBuffer> fractions() {
  std::vector<HostBuffer> in;
  for (int d = 0; d < 4; ++d) {
    HostBuffer b(DType::float32, {1, 10});
    for (int64_t i = 0; i < 10; ++i) b.set(i, 0.1 * static_cast<double>(d + 1) + 0.01 * static_cast<double>(i));
    in.push_back(b);
  }
  return in;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_right_result_passes) {
  std::vector<std::string> devs = cpu_devices(4);
  ScopedSettings ring(testing::algorithm_settings("ring", devs));
  std::vector<HostBuffer> in = fractions();
  Tensor r = Tensor::from_shards(in, devs, 0).sum({0});
  testing::ResultCheck check = testing::check_result(r, testing::reduction_expected(in, ReduceOp::sum), "allreduce");
  BOOST_TEST(check.ok(), check.message());
  BOOST_TEST(check.message().empty());
  BOOST_TEST(check.devices.size() == 4u);
  BOOST_TEST(check.compared() == 40);
  BOOST_TEST(check.info.algorithm == "ring");
  RINGRT_CHECK_RESULT(check);
}

// One element of CPU:2's value planted wrong after the run: the report names everything a failure needs.
BOOST_AUTO_TEST_CASE(a_planted_wrong_value_is_named_in_the_report) {
  std::vector<std::string> devs = cpu_devices(4);
  ScopedSettings ring(testing::algorithm_settings("ring", devs));
  std::vector<HostBuffer> in = fractions();
  Tensor r = Tensor::from_shards(in, devs, 0).sum({0});
  testing::ResultInfo info = testing::describe(r, "allreduce");  // before realizing: the schedule
  std::vector<std::pair<std::string, HostBuffer>> got = r.local_host_shards();
  BOOST_TEST_REQUIRE(got.size() == 4u);
  BOOST_TEST_REQUIRE(got[2].first == "CPU:2");
  got[2].second.set(7, 99.5);
  std::vector<Reference> want = testing::reduction_expected(in, ReduceOp::sum);
  testing::ResultCheck check = testing::check_values(got, r.devices(), want, info);
  BOOST_TEST(!check.ok());
  BOOST_TEST(check.wrong() == 1);
  std::string m = check.message();
  double expected = want[0].value.at(7);  // 0.1 + 0.2 + 0.3 + 0.4 + 4 * 0.07 in double
  BOOST_TEST(m.find("allreduce (ring) float32: 1 of 40 elements wrong, on 1 of 4 devices") == 0, m);
  BOOST_TEST(m.find(fmt::format("\n  CPU:2: 1 of 10 wrong, the first at index 7: got 99.5, expected {} (within {})",
                                expected, want[0].tolerance.at(7))) != std::string::npos,
             m);
  BOOST_TEST(m.find("CPU:0:") == std::string::npos, m);  // only the device with a wrong value
  BOOST_TEST(m.find("\nschedule:\n  ") != std::string::npos, m);
  BOOST_TEST(!info.schedule.empty());
  BOOST_TEST(m.find(info.schedule.substr(0, info.schedule.find('\n'))) != std::string::npos, m);
}

// Integers: the expected value exactly, in the message as an integer.
BOOST_AUTO_TEST_CASE(an_integer_mismatch_is_exact) {
  std::vector<std::string> devs = cpu_devices(3);
  std::vector<HostBuffer> in = testing::collective_locals(3, {1, 5}, DType::int32, 4);
  Tensor r = Tensor::from_shards(in, devs, 0).max({0});
  testing::ResultInfo info = testing::describe(r, "allreduce");
  std::vector<std::pair<std::string, HostBuffer>> got = r.local_host_shards();
  got[0].second.set_int(0, got[0].second.get_int(0) + 1);
  testing::ResultCheck check =
      testing::check_values(got, r.devices(), testing::reduction_expected(in, ReduceOp::max), info);
  BOOST_TEST(check.wrong() == 1);
  int64_t right = got[0].second.get_int(0) - 1;
  BOOST_TEST(check.message().find(fmt::format("CPU:0: 1 of 5 wrong, the first at index 0: got {}, expected {}\n",
                                              right + 1, right)) != std::string::npos,
             check.message());
}

// References that do not fit the result's devices fail the check with the reason.
BOOST_AUTO_TEST_CASE(references_that_do_not_fit_are_a_problem) {
  std::vector<std::string> devs = cpu_devices(3);
  std::vector<HostBuffer> in = testing::collective_locals(3, {1, 4}, DType::int32, 1);
  Tensor r = Tensor::from_shards(in, devs, 0).sum({0});
  std::vector<Reference> two = testing::reduction_expected(in, ReduceOp::sum);  // one for every device
  two.push_back(two[0]);
  testing::ResultCheck check = testing::check_result(r, two, "allreduce");
  BOOST_TEST(!check.ok());
  BOOST_TEST(check.message().find("2 references for 3 devices") != std::string::npos, check.message());
}

// Each collective run on the devices against the host's answer and against the interpreter, by value and bit for
// bit (the lowering is the interpreter's: the same additions in the same order).
BOOST_AUTO_TEST_CASE(every_collective_against_the_host_and_the_interpreter) {
  std::vector<std::string> devs = cpu_devices(4);
  for (const std::string& kind : {std::string("allreduce"), std::string("reduce_scatter"), std::string("allgather"),
                                  std::string("alltoall"), std::string("broadcast"), std::string("reduce")}) {
    BOOST_TEST_CONTEXT(kind) {
      Shape local = kind == "allreduce" ? Shape{1, 12} : Shape{4, 3};  // an allreduce reduces rows: one each
      std::vector<HostBuffer> in = testing::collective_locals(4, local, DType::float32, 2);
      Tensor x = Tensor::from_shards(in, devs, 0);
      RINGRT_CHECK_RESULT(testing::check_result(testing::apply_collective(kind, x, ReduceOp::sum, 1),
                                                testing::collective_expected(kind, in, ReduceOp::sum, 1), kind));
      RINGRT_CHECK_RESULT(testing::check_with_interpreter(testing::apply_collective(kind, x, ReduceOp::sum, 1), kind));
      RINGRT_CHECK_RESULT(testing::check_with_interpreter(testing::apply_collective(kind, x, ReduceOp::sum, 1), kind,
                                                          /*bitwise=*/true));
    }
  }
  std::vector<HostBuffer> rows = testing::collective_locals(4, {4, 3}, DType::float32, 2);
  BOOST_CHECK_THROW(testing::collective_expected("allreduce", rows, ReduceOp::sum, 0), std::invalid_argument);
  BOOST_CHECK_THROW(testing::collective_expected("gather", rows, ReduceOp::sum, 0), std::invalid_argument);
  // a root past the devices, or below 0: invalid_argument naming the root and the count, not a memory violation
  std::vector<HostBuffer> two = testing::collective_locals(2, {4, 3}, DType::float32, 2);
  for (int root : {7, -1, 2})
    for (const char* kind : {"broadcast", "reduce"}) {
      try {
        testing::collective_expected(kind, two, ReduceOp::sum, root);
        BOOST_ERROR("no exception for root " << root);
      } catch (const std::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find("root " + std::to_string(root) +
                                              " is not a device index: there are 2 "
                                              "devices") != std::string::npos,
                   e.what());
      }
    }
  // ragged locals, mixed dtypes
  std::vector<HostBuffer> ragged = two;
  ragged[1] = testing::collective_locals(1, {2, 3}, DType::float32, 2)[0];
  BOOST_CHECK_THROW(testing::collective_expected("allgather", ragged, ReduceOp::sum, 0), std::invalid_argument);
  std::vector<HostBuffer> mixed = two;
  mixed[1] = testing::collective_locals(1, {4, 3}, DType::int32, 2)[0];
  BOOST_CHECK_THROW(testing::collective_expected("allgather", mixed, ReduceOp::sum, 0), std::invalid_argument);
}

// A result realized before its check has no schedule left: the report says so.
BOOST_AUTO_TEST_CASE(a_result_realized_before_has_no_schedule) {
  std::vector<HostBuffer> in = testing::collective_locals(2, {1, 3}, DType::int32, 1);
  Tensor r = Tensor::from_shards(in, cpu_devices(2), 0).sum({0});
  r.realize();
  std::vector<std::pair<std::string, HostBuffer>> got = r.local_host_shards();
  got[1].second.set_int(2, 1000);
  testing::ResultCheck check =
      testing::check_values(got, r.devices(), testing::reduction_expected(in, ReduceOp::sum), testing::describe(r));
  BOOST_TEST(check.message().find("result (none) int32:") == 0, check.message());
  BOOST_TEST(check.message().find("schedule:\n  (none: the result was realized before the check)") != std::string::npos,
             check.message());
}

BOOST_AUTO_TEST_CASE(same_element_and_message_has) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  HostBuffer a(DType::float32, {3}), b(DType::float32, {3});
  a.set(0, 0.0), b.set(0, -0.0);
  a.set(1, kNaN), b.set(1, -kNaN);
  a.set(2, 1.5), b.set(2, 1.5);
  BOOST_TEST(!testing::same_element(a, b, 0));  // bit for bit: the sign of zero counts
  BOOST_TEST(testing::same_element(a, b, 1));   // any NaN
  BOOST_TEST(testing::same_element(a, b, 2));
  BOOST_TEST(testing::message_has({"shape", "(2, 3)"})(ShapeError("reshape: shape (2, 3) has 6 elements")));
  BOOST_TEST(!testing::message_has({"axis 2"})(ShapeError("reshape: shape (2, 3) has 6 elements")));
}

BOOST_AUTO_TEST_SUITE_END()
