// The testing library's datasets (testing/datasets.hpp): the size of each axis and of their product, counts that
// are odd and below the device counts, the settings that force each algorithm (and the schedule's algorithm
// under them), and a small product of the axes run as a data case under the checks.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/settings.hpp"
#include "testing/checks.hpp"
#include "testing/collectives.hpp"
#include "testing/datasets.hpp"

BOOST_AUTO_TEST_SUITE(test_datasets)

using namespace ringrt;
namespace data = ringrt::testing::data;

BOOST_AUTO_TEST_CASE(sizes_of_the_axes_and_their_product) {
  BOOST_TEST(data::device_counts().size() == 6u);
  BOOST_TEST(data::algorithms().size() == 7u);
  BOOST_TEST(data::dtypes().size() == 4u);
  BOOST_TEST(data::ops().size() == 2u);
  BOOST_TEST(data::counts().size() == 4u);
  BOOST_TEST(data::matrix().size() == 6u * 7 * 4 * 2 * 4);
  BOOST_TEST((data::device_counts({2, 3}) * data::counts({1, 7, 9})).size() == 6u);
}

// Odd counts and counts below the device counts: some devices get no element of a chunk.
BOOST_AUTO_TEST_CASE(counts_are_odd_and_below_the_device_counts) {
  for (int ndev : testing::kDeviceCounts) {
    std::vector<int64_t> counts = testing::counts_for(ndev);
    BOOST_TEST(counts.size() == 6u);
    BOOST_TEST(counts[2] == 32 * ndev);
    BOOST_TEST(counts[3] == 32 * ndev + 5);
    if (ndev > 1) BOOST_TEST(testing::kCounts[0] < ndev);
  }
  int odd = 0;
  for (int64_t c : testing::kCounts) odd += c % 2;
  BOOST_TEST(odd == 3);
}

// Each algorithm forced: the schedule of an allreduce on 4 devices names it.
BOOST_AUTO_TEST_CASE(algorithm_settings_force_each_algorithm) {
  std::vector<std::string> devs = cpu_devices(4);
  for (const std::string& algo : testing::kAlgorithms) {
    BOOST_TEST_CONTEXT(algo) {
      AllreduceSettings s = testing::algorithm_settings(algo, devs);
      ScopedSettings scope(s);
      Tensor x = Tensor::placeholder({4, 64}, DType::float32, devs, 0);
      BOOST_TEST(x.sum({0}).algorithms() == std::vector<std::string>{algo});
      BOOST_TEST(s.groups.size() == (algo == "hierarchical" ? 4u : 0u));
    }
  }
  AllreduceSettings h = testing::algorithm_settings("hierarchical", cpu_devices(3));
  BOOST_TEST(h.groups.at("CPU:1") == 0);  // the first half, rounded up
  BOOST_TEST(h.groups.at("CPU:2") == 1);
  BOOST_CHECK_THROW(testing::algorithm_settings("tree", devs), std::invalid_argument);
}

// A product of the axes as a user crosses them: every sample right under the checks.
BOOST_DATA_TEST_CASE(a_product_of_the_axes_runs_under_the_checks,
                     data::device_counts({3}) * data::algorithms({"ring", "all2all"}) * data::dtypes({DType::float32}) *
                         data::ops() * data::counts({1}),
                     ndev, algo, dtype, op, count) {
  std::vector<std::string> devs = cpu_devices(ndev);
  ScopedSettings forced(testing::algorithm_settings(algo, devs));
  std::vector<HostBuffer> in = testing::collective_locals(ndev, {1, count}, dtype, 3);
  Tensor r = Tensor::from_shards(in, devs, 0).reduce(op, {0});
  RINGRT_CHECK_RESULT(testing::check_result(r, testing::reduction_expected(in, op), "allreduce"));
}

BOOST_AUTO_TEST_SUITE_END()
