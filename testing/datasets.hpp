// Boost.Test datasets of collective test points, to cross with BOOST_DATA_TEST_CASE (device counts x
// algorithms x dtypes x ops x counts), and the settings that force each algorithm. The defaults are the
// project's own allreduce matrix (test/support/allreduce_matrix.hpp). Part of <ringrt/testing.hpp>.
//
//   BOOST_DATA_TEST_CASE(allreduce_sums, ringrt::testing::data::matrix(), ndev, algo, dtype, op, count) {
//     std::vector<std::string> devices = ringrt::cpu_devices(ndev);
//     ringrt::ScopedSettings forced(ringrt::testing::algorithm_settings(algo, devices));
//     ...
//   }
#pragma once

#include <boost/test/data/monomorphic.hpp>
#include <cstdint>
#include <ringrt/core/dtype.hpp>
#include <ringrt/core/reduce_op.hpp>
#include <ringrt/core/settings.hpp>
#include <ringrt/runtime/api/devices.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ringrt::testing {

// Device counts: 1 (no copy at all), 2, an odd count, 4, another odd one, 8.
inline const std::vector<int> kDeviceCounts{1, 2, 3, 4, 5, 8};
// Every allreduce algorithm that can be forced (algorithm_settings): naive, ring and all2all (tinygrad's),
// the fused oneshot, twoshot and ring_fused, and hierarchical over two device groups.
inline const std::vector<std::string> kAlgorithms{"naive",   "ring",       "all2all",     "oneshot",
                                                  "twoshot", "ring_fused", "hierarchical"};
inline const std::vector<DType> kDTypes{DType::float32, DType::float16, DType::bfloat16, DType::int32};
inline const std::vector<ReduceOp> kOps{ReduceOp::sum, ReduceOp::max};
// Elements per device: odd counts, counts below most device counts (1 and 3: some devices get no chunk of a
// ring), and counts no device count above 1 divides evenly but 100's.
inline const std::vector<int64_t> kCounts{1, 3, 100, 257};

// The counts of kCounts and two that fit ndev devices: 32 ndev (whole chunks) and 32 ndev + 5 (a tail), in
// the allreduce matrix's order {1, 3, 32 ndev, 32 ndev + 5, 100, 257}.
inline std::vector<int64_t> counts_for(int ndev) { return {1, 3, 32 * ndev, 32 * ndev + 5, 100, 257}; }

// The default settings (not the environment's) with `algo` forced for every allreduce on `devices`: naive, ring
// or all2all at level 2 (always), oneshot, twoshot or ring_fused through allreduce.algorithm (the fused forms), or
// hierarchical: two device groups, the first half of `devices` (rounded up) and the rest (on fewer than 3
// devices ringrt lowers that as naive). Install them with ScopedSettings. Throws std::invalid_argument for
// another name.
inline AllreduceSettings algorithm_settings(const std::string& algo, const std::vector<std::string>& devices) {
  AllreduceSettings s;
  if (algo == "oneshot" || algo == "twoshot" || algo == "ring_fused") {
    s.algorithm = algo;
    return s;
  }
  if (algo != "naive" && algo != "ring" && algo != "all2all" && algo != "hierarchical")
    throw std::invalid_argument("algorithm_settings: no algorithm '" + algo + "' (naive, ring, all2all, oneshot, " +
                                "twoshot, ring_fused, hierarchical)");
  s.ring = algo == "ring" ? 2 : 0;
  s.all2all = algo == "all2all" ? 2 : 0;
  size_t n = devices.size();
  if (algo == "hierarchical")
    for (size_t i = 0; i < n; ++i) s.groups[devices[i]] = i < (n + 1) / 2 ? 0 : 1;
  return s;
}

// The datasets, one per axis (each a Boost.Test monomorphic dataset of its values, the defaults above unless
// given), and their product. A data case over matrix() has 6 x 7 x 4 x 2 x 4 = 1344 samples, each its own CTest
// test under ringrt_add_boost_tests; cross fewer axes or pass fewer values for a quick suite.
namespace data {

inline auto device_counts(std::vector<int> values = kDeviceCounts) {
  return boost::unit_test::data::make(std::move(values));
}
inline auto algorithms(std::vector<std::string> values = kAlgorithms) {
  return boost::unit_test::data::make(std::move(values));
}
inline auto dtypes(std::vector<DType> values = kDTypes) { return boost::unit_test::data::make(std::move(values)); }
inline auto ops(std::vector<ReduceOp> values = kOps) { return boost::unit_test::data::make(std::move(values)); }
inline auto counts(std::vector<int64_t> values = kCounts) { return boost::unit_test::data::make(std::move(values)); }
// device_counts() x algorithms() x dtypes() x ops() x counts(): samples (ndev, algo, dtype, op, count).
inline auto matrix() { return device_counts() * algorithms() * dtypes() * ops() * counts(); }

}  // namespace data
}  // namespace ringrt::testing
