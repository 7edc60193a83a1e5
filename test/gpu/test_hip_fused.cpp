// Fused collectives on the hip backend (rewrite/collective.hpp; runtime/hip/hip_device.cpp
// launch_collective): oneshot, twoshot and ring_fused allreduce as one kernel per device
// (codegen::render_hip_collective), its barrier and flags words in device memory that every device's
// blocks count into; label gpu (and simgpu: on runtime/hip/sim/'s simulated GPUs, whose counters show
// one kernel per device and no copy). Values against the interpreter, bit for bit, on every device;
// calls in a row (the word counts up across them) and in place. Built without HIP, the one case exits
// 77, which CTest reports as skipped.
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <cstdlib>

#include "test/gpu/skip_without_hip.hpp"

#ifdef RINGRT_HAVE_HIP

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/settings.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/device/device.hpp"
#include "test/gpu/hip_test_support.hpp"
#endif

BOOST_AUTO_TEST_SUITE(test_hip_fused)
RINGRT_SKIP_WITHOUT_HIP()

#ifdef RINGRT_HAVE_HIP

using namespace hip_test;
using ringrt::Tensor;

namespace {

const std::vector<std::string> kTwo{"HIP:0", "HIP:1"};

ringrt::AllreduceSettings forced(const std::string& algo) {
  ringrt::AllreduceSettings s;
  s.algorithm = algo;
  return s;
}

// The simulated runtime's kernel launches and copies so far; zeros on a real GPU.
struct Ran {
  uint64_t kernels = 0, copies = 0;
  static Ran now() {
#ifdef RINGRT_GPU_SIM
    ringrt::sim::Counters c = ringrt::sim::counters();
    return {c.kernels, c.copies};
#else
    return {};
#endif
  }
};
#ifdef RINGRT_GPU_SIM
constexpr bool kCounted = true;
#else
constexpr bool kCounted = false;
#endif

}  // namespace

BOOST_AUTO_TEST_SUITE(two_devices, *ringrt::testing::needs({"HIP", 2}))

// Out of place, for sizes below the device count, odd (3 and 5: a chunk of one element beside longer ones,
// whose combine kernels differ) and a few thousand, float32, int32 and float16: each device's bytes are
// the interpreter's; one kernel per device per call, no copy.
BOOST_AUTO_TEST_CASE(one_kernel_per_device_matches_the_interpreter) {
  for (const std::string algo : {"oneshot", "twoshot", "ring_fused"}) {
    ringrt::ScopedSettings scope(forced(algo));
    for (int64_t cols : {int64_t{1}, int64_t{3}, int64_t{5}, int64_t{257}, int64_t{4099}})
      for (ringrt::DType dtype : {ringrt::DType::float32, ringrt::DType::int32, ringrt::DType::float16}) {
        BOOST_TEST_CONTEXT(algo << " " << ringrt::dtype_name(dtype) << " " << cols << " columns") {
          Tensor x = (Tensor::rand({2, cols}, 7, kTwo, 0) * 1000.0f).cast(dtype).realize();
          Tensor y = x.sum({0});
          BOOST_TEST(y.schedule().fused_items.size() == 1u);
          std::vector<ringrt::HostBuffer> want = y.interpret_shards();
          ringrt::synchronize();
          Ran before = Ran::now();
          y.realize();
          ringrt::synchronize();
          if (kCounted) {
            BOOST_TEST(Ran::now().kernels - before.kernels == 2u);
            BOOST_TEST(Ran::now().copies - before.copies == 0u);
          }
          std::vector<Tensor> got = y.shards();
          BOOST_TEST_REQUIRE(got.size() == want.size());
          for (size_t d = 0; d < got.size(); ++d) BOOST_TEST((got[d].host().bytes == want[d].bytes), "device " << d);
        }
      }
  }
}

namespace {
// Realizes y, a collective with one fused item: one kernel per device for it (the front end's moves around
// it are kernel items of their own), no copy, every device's bytes the interpreter's.
void expect_one_kernel_per_device(Tensor y, const std::string& label) {
  ringrt::Schedule plan = y.schedule();
  BOOST_TEST_REQUIRE(plan.fused_items.size() == 1u);
  std::vector<ringrt::HostBuffer> want = y.interpret_shards();
  ringrt::synchronize();
  Ran before = Ran::now();
  y.realize();
  ringrt::synchronize();
  if (kCounted) BOOST_TEST(Ran::now().kernels - before.kernels == 2u * static_cast<uint64_t>(plan.kernels() + 1));
  if (kCounted) BOOST_TEST(Ran::now().copies - before.copies == 0u);
  std::vector<Tensor> got = y.shards();
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (size_t d = 0; d < got.size(); ++d) BOOST_TEST((got[d].host().bytes == want[d].bytes), label << " device " << d);
}
}  // namespace

// FSDP's gradient step and parameter step: a reduce_scatter and an allgather, one kernel per device each; and a
// broadcast from the second device.
BOOST_AUTO_TEST_CASE(a_reduce_scatter_and_an_allgather_are_one_kernel_per_device) {
  for (const std::string algo : {"oneshot", "twoshot", "ring_fused"}) {
    ringrt::ScopedSettings scope(forced(algo));
    Tensor x = (Tensor::rand({2, 2 * 515}, 11, kTwo, 0) * 100.0f).realize();
    expect_one_kernel_per_device(x.reduce_scatter(ringrt::ReduceOp::sum, 1), algo + " reduce_scatter");
    Tensor p = (Tensor::rand({4, 301}, 13, kTwo, 0) * 100.0f).realize();
    expect_one_kernel_per_device(p.allgather(), algo + " allgather");
    expect_one_kernel_per_device(p.broadcast(1, kTwo), algo + " broadcast");
  }
}

// DDP's step: a bucket written each step and allreduced in place, 20 steps on one barrier word (it
// counts up across calls); every step's sums against host arithmetic.
BOOST_AUTO_TEST_CASE(in_place_steps_count_the_word_up) {
  for (const std::string algo : {"oneshot", "twoshot", "ring_fused"}) {
    ringrt::ScopedSettings scope(forced(algo));
    const int64_t n = 1031;
    Tensor bucket = Tensor::full({2, n}, 0.0f).contiguous().shard(kTwo, 0).realize();
    for (int step = 0; step < 20; ++step) {
      std::vector<ringrt::HostBuffer> parts;
      for (int d = 0; d < 2; ++d) {
        ringrt::HostBuffer p(ringrt::DType::float32, {1, n});
        for (int64_t j = 0; j < n; ++j) p.set(j, static_cast<double>((step + 1) * (d + 1) + j % 17));
        parts.push_back(p);
      }
      bucket.write_shards(parts);
      bucket.allreduce_in_place();
      bucket.realize();
      for (const Tensor& shard : bucket.shards()) {
        ringrt::HostBuffer got = shard.host();
        for (int64_t j = 0; j < n; ++j)
          BOOST_TEST_REQUIRE(got.get(j) == static_cast<double>(3 * (step + 1) + 2 * (j % 17)),
                             algo << " step " << step << " element " << j);
      }
    }
  }
}

// A device that arrives late, past runtime.watchdog_s (its queue held by a host function): the run ends
// with the executor's TimeoutError naming both devices (each launch waits for the other), and the kernels
// stop waiting and fail (a DeviceError where the executor's watchdog has not spoken first), never with
// results computed from what had not arrived. In a child process: a failed kernel poisons its device for
// good.
BOOST_AUTO_TEST_CASE(a_late_device_fails_the_call_not_its_values) {
  if (!in_child_with("RINGRT_WATCHDOG_S", "0.3")) return;
  ringrt::ScopedSettings scope(forced("ring_fused"));
  Tensor x = two_device_rows(1000, 1.0f);
  Tensor y = x.sum({0});
  ringrt::device("HIP:1").submit([] { std::this_thread::sleep_for(std::chrono::milliseconds(1500)); }, {});
  std::string error;
  try {
    y.realize();
    ringrt::synchronize();
    for (const Tensor& s : y.shards()) s.host();
  } catch (const ringrt::TimeoutError& e) {
    error = e.what();
    BOOST_TEST(error.find("HIP:0, HIP:1 of (HIP:0, HIP:1)") != std::string::npos, error);
  } catch (const ringrt::DeviceError& e) {
    error = e.what();
  }
  BOOST_TEST(!error.empty(), "the late device's call completed");
}

BOOST_AUTO_TEST_SUITE_END()

#endif  // RINGRT_HAVE_HIP

BOOST_AUTO_TEST_SUITE_END()
