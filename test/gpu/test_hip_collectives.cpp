// The collectives besides allreduce (runtime/api/tensor_collectives.cpp, lowered by
// rewrite/rules/collectives.cpp) on the hip backend; label gpu. Each of reduce_scatter, allgather,
// broadcast, reduce (reduce_to) and alltoall runs on four logical HIP devices on GPU 0 (in a child process
// with RINGRT_HIP_LOGICAL_DEVICES = 4 x the GPUs, as test_hip_device.cpp's four_logical_devices_on_one_gpu:
// the device names are fixed at the first enumeration), with ring and all2all forced, float32 sum and int32
// max (the op where the collective reduces), on an odd size: 1001 elements per device, or (4, 251) where
// the local value must split into 4 chunks (reduce_scatter, alltoall). The values on every device are
// compared with host arithmetic (testing/collectives.hpp, testing/checks.hpp); the schedule's algorithm name with
// the one forced. Without a GPU the cases are skipped (a false precondition); built without HIP
// (RINGRT_HAVE_HIP undefined), the one case exits 77, which CTest reports as skipped.
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <cstdlib>

#include "test/gpu/skip_without_hip.hpp"

#ifdef RINGRT_HAVE_HIP

#include <fmt/format.h>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/settings.hpp"
#include "runtime/api/tensor.hpp"
#include "test/gpu/hip_test_support.hpp"
#include "testing/checks.hpp"
#endif

BOOST_AUTO_TEST_SUITE(test_hip_collectives)
RINGRT_SKIP_WITHOUT_HIP()

#ifdef RINGRT_HAVE_HIP

namespace bdata = boost::unit_test::data;
using namespace hip_test;
using ringrt::ReduceOp;
using ringrt::Shape;
using ringrt::Tensor;

namespace {

const std::vector<std::string> kKinds{"reduce_scatter", "allgather", "broadcast", "reduce", "alltoall"};
constexpr int kRoot = 1;  // broadcast's and reduce's root: not the first device

// Runs kind on the devices `names` with algo forced, dtype and op, and compares every device's values
// with the host's.
void check_collective(const std::string& kind, const std::vector<std::string>& names, const std::string& algo,
                      DType dtype, ReduceOp op) {
  int n = static_cast<int>(names.size());
  ringrt::AllreduceSettings s = ringrt::current_settings();
  s.ring = algo == "ring" ? 2 : 0;
  s.all2all = algo == "all2all" ? 2 : 0;
  ringrt::ScopedSettings scope(s);
  Shape local = kind == "reduce_scatter" || kind == "alltoall" ? Shape{n, 251} : Shape{1001};
  std::vector<HostBuffer> in = ringrt::testing::collective_locals(n, local, dtype, static_cast<int>(dtype) + 1);
  Tensor r = ringrt::testing::apply_collective(kind, Tensor::from_shards(in, names, 0), op, kRoot);
  BOOST_TEST(r.algorithms() == std::vector<std::string>{ringrt::testing::expected_algorithm(kind, algo)});
  RINGRT_CHECK_RESULT(
      ringrt::testing::check_result(r, ringrt::testing::collective_expected(kind, in, op, kRoot), kind));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu, *ringrt::testing::needs({"HIP", 1}))

BOOST_DATA_TEST_CASE(collective_on_four_logical_devices, bdata::make(kKinds), kind) {
  const int gpus = gpu_count();
  if (!in_child_with_logical_devices(std::to_string(4 * gpus))) return;
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) names.push_back(fmt::format("HIP:{}", i * gpus));
  for (const std::string algo : {"ring", "all2all"})
    for (auto [dtype, op] : {std::pair{DType::float32, ReduceOp::sum}, std::pair{DType::int32, ReduceOp::max}}) {
      BOOST_TEST_CONTEXT(kind << " " << algo << " " << ringrt::dtype_name(dtype) << " " << ringrt::reduce_op_name(op)) {
        check_collective(kind, names, algo, dtype, op);
      }
    }
}

BOOST_AUTO_TEST_SUITE_END()

#endif

BOOST_AUTO_TEST_SUITE_END()
