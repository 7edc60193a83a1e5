// Asynchronous realize on the hip backend (runtime/engine/pending.hpp, executor.cpp "Asynchronous
// runs"); label gpu (and simgpu: every case runs on runtime/hip/sim/'s simulated GPUs).
//
// With HIP:0's queue blocked by host work (test/gpu/hip_test_support.hpp Blocker), realize() returns
// with its work in flight (EngineStats::in_flight); reading the result waits for it; a host write waits,
// on the devices, for the work that still reads the old contents (the result is the old values'); a
// tensor dropped while its work runs keeps its memory until the work completes; synchronize() waits for
// everything; a pipelined loop of in-place allreduces keeps its order across the devices (fences); and a
// read that outlives runtime.watchdog_s names the late item. Values are checked against host arithmetic.
// Built without HIP, the one case exits 77, which CTest reports as skipped.
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <cstdlib>

#include "test/gpu/skip_without_hip.hpp"

#ifdef RINGRT_HAVE_HIP

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/params_internal.hpp"
#include "runtime/api/tensor.hpp"
#include "test/gpu/hip_test_support.hpp"
#include "test/support/checks.hpp"
#endif

BOOST_AUTO_TEST_SUITE(test_hip_async)
RINGRT_SKIP_WITHOUT_HIP()

#ifdef RINGRT_HAVE_HIP

using namespace hip_test;
using ringrt::Tensor;
using ringrt::test::message_has;

namespace {

const std::vector<std::string> kTwo{"HIP:0", "HIP:1"};
constexpr int64_t kCols = 300;
// The two devices' rows (hip_test_support.hpp two_device_rows), kCols columns.
Tensor rows(float scale = 1.0f) { return two_device_rows(kCols, scale); }

// The column sums of rows(scale): 1000 + 2c, times scale.
void check_sums(const std::vector<float>& got, float scale = 1.0f) {
  BOOST_TEST_REQUIRE(got.size() == static_cast<size_t>(kCols));
  for (int64_t c = 0; c < kCols; ++c)
    BOOST_TEST(got[static_cast<size_t>(c)] == scale * static_cast<float>(1000 + 2 * c), "column " << c);
}

// runtime.async on for the case, whatever the environment says (RINGRT_ASYNC=0 runs the rest of the
// suite synchronously).
struct Async {
  Async() {
    ringrt::RuntimeParams r = ringrt::current_runtime_params();
    r.async = true;
    ringrt::set_runtime_params(r, {"runtime.async"});
  }
  ~Async() { ringrt::reset_runtime_params(); }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(two_devices, Async, *ringrt::testing::needs({"HIP", 2}))

BOOST_AUTO_TEST_CASE(realize_returns_once_the_work_is_enqueued) {
  Tensor x = rows();
  x.sum({0}).realize();  // compiled once, before the queue is blocked
  ringrt::synchronize();
  Blocker blocker(ringrt::device("HIP:0"));
  Tensor y = x.sum({0});
  y.realize();
  BOOST_TEST(!blocker.released());  // (a realize that waited would have waited for it)
  BOOST_TEST(Tensor::engine_stats().in_flight >= 1u);
  blocker.release();
  check_sums(y.to_vector<float>());  // reading waits for the work
  ringrt::synchronize();
  BOOST_TEST(Tensor::engine_stats().in_flight == 0u);
}

// Write after read: y = x * 2 is queued behind the blocker; x is then written from the host. The write's
// copies wait, on the devices, for y's kernels: y holds the old values doubled.
BOOST_AUTO_TEST_CASE(a_host_write_waits_for_the_work_reading_the_old_contents) {
  Tensor x = rows();
  (x * 2.0f).realize();
  ringrt::synchronize();
  Blocker blocker(ringrt::device("HIP:0"));
  Tensor y = (x * 2.0f).sum({0});
  y.realize();
  std::vector<float> fresh(2 * kCols, 7.0f);
  x.write(ringrt::HostBuffer::from_vector(fresh, DType::float32, {2, kCols}));  // returns: staged, queued
  BOOST_TEST(!blocker.released());
  blocker.release();
  check_sums(y.to_vector<float>(), 2.0f);
  std::vector<float> now = x.to_vector<float>();
  BOOST_TEST((now == fresh));
}

// A tensor dropped while a queued run reads it keeps its device memory until that run completes.
BOOST_AUTO_TEST_CASE(memory_is_freed_after_the_work_that_uses_it) {
  Device& d0 = ringrt::device("HIP:0");
  std::optional<Tensor> y;
  int64_t held = 0;
  {
    Tensor x = rows(3.0f);
    (x + 1.0f).sum({0}).realize();
    ringrt::synchronize();
    Blocker blocker(d0);
    y = x.sum({0});
    y->realize();
    int64_t before = d0.memory_stats().in_use;
    x = Tensor::constant(0);  // its storage: freed once y's run is done
    held = d0.memory_stats().in_use;
    BOOST_TEST(held == before);
    blocker.release();
  }
  check_sums(y->to_vector<float>(), 3.0f);
  ringrt::synchronize();
  Tensor::engine_stats();  // (collects the graph)
  BOOST_TEST(d0.memory_stats().in_use < held);
}

BOOST_AUTO_TEST_CASE(synchronize_waits_for_every_realize) {
  Tensor x = rows();
  x.sum({0}).realize();
  ringrt::synchronize();
  std::vector<Tensor> results;
  {
    Blocker blocker(ringrt::device("HIP:0"));
    for (int i = 0; i < 5; ++i) results.push_back(x.sum({0}).realize());
    std::thread releaser([&] {
      std::this_thread::sleep_for(30ms);
      blocker.release();
    });
    ringrt::synchronize();
    releaser.join();
  }
  BOOST_TEST(Tensor::engine_stats().in_flight == 0u);
  for (const Tensor& r : results) check_sums(r.to_vector<float>());
}

// 30 in-place allreduces of a replicated gradient in a row, no wait between them: each doubles it (two
// devices, equal values), so the fences between runs keep their order on both devices.
BOOST_AUTO_TEST_CASE(a_pipelined_loop_keeps_its_order) {
  std::vector<float> ones(kCols, 1.0f);
  Tensor g = Tensor::from_vector(ones, {kCols}).shard(kTwo, std::nullopt);
  g.realize();
  for (int i = 0; i < 30; ++i) g.allreduce_in_place().realize();
  std::vector<float> got = g.to_vector<float>();
  for (float v : got) BOOST_TEST(v == 0x1p30f);
  for (const auto& [device, h] : g.local_host_shards())
    BOOST_TEST(h.get(kCols - 1) == static_cast<double>(0x1p30f), device);
}

BOOST_AUTO_TEST_CASE(a_late_item_is_named_by_the_read) {
  Tensor x = rows();
  x.sum({0}).realize();
  ringrt::synchronize();
  ringrt::RuntimeParams r = ringrt::current_runtime_params();
  r.watchdog_s = 0.3;
  ringrt::set_runtime_params(r, {"runtime.watchdog_s"});
  Blocker blocker(ringrt::device("HIP:0"), std::chrono::seconds(5));
  Tensor y = x.sum({0});
  y.realize();
  BOOST_CHECK_EXCEPTION(y.to_vector<float>(), ringrt::TimeoutError, message_has({"on HIP:0", "300 ms"}));
  r.watchdog_s = ringrt::RuntimeParams{}.watchdog_s;
  ringrt::set_runtime_params(r, {"runtime.watchdog_s"});
  blocker.release();
  check_sums(y.to_vector<float>());
}

#ifdef RINGRT_GPU_SIM
// Runs queued past the device's memory: on simulated GPUs of 8 MiB each (a child process), 40 queued
// realizes of 1 MiB results, each dropping the one before, behind a blocked queue. Without waiting for
// the work in flight, whose memory goes back as it completes, the allocations would fail.
BOOST_AUTO_TEST_CASE(allocations_wait_for_the_work_in_flight) {
  if (!in_child_with("RINGRT_SIM_GPU_MIB", "8")) return;
  constexpr int64_t n = (1 << 20) / 4;  // 1 MiB of float32 per device
  Tensor x = Tensor::from_vector(std::vector<float>(2 * n, 1.0f), {2, n}).shard(kTwo, 0).realize();
  (x * 2.0f).realize();
  ringrt::synchronize();
  Tensor y = x;
  {
    Blocker blocker(ringrt::device("HIP:0"));
    std::jthread releaser([&] {
      std::this_thread::sleep_for(100ms);
      blocker.release();
    });
    for (int i = 0; i < 40; ++i) y = (x * static_cast<float>(i)).realize();
  }
  std::vector<float> got = y.to_vector<float>();
  BOOST_TEST_REQUIRE(got.size() == static_cast<size_t>(2 * n));
  BOOST_TEST(got.front() == 39.0f);
  BOOST_TEST(got.back() == 39.0f);
}
#endif

BOOST_AUTO_TEST_SUITE_END()

#endif

BOOST_AUTO_TEST_SUITE_END()
