// Breaker's fuzz of the reused binding plan (runtime/engine/binding.cpp), the inline small items
// (runtime/cpu/cpu_device.cpp) and the program key past 16 buffers (rewrite/canonical.cpp): many runs
// of a few cached programs over a pool of tensors, with in-place writes, views, overlapping assigns,
// collectives and the switches (peer_reads, inline_small, kernel_split, allreduce_in_place,
// program_cache) toggled between runs; every value checked against host mirrors. Longer runs:
// FUZZ_STEPS, FUZZ_SEED, FUZZ_TOGGLE (1 in k steps), FUZZ_N, FUZZ_ALGO (ring|all2all|hier|hier_rs).
#include <algorithm>
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/params_internal.hpp"
#include "core/settings.hpp"
#include "runtime/api/devices.hpp"
#include "runtime/api/internal.hpp"
#include "runtime/device/device.hpp"
#include "runtime/engine/executor.hpp"
#include "test/runtime/engine/binding_fuzz.hpp"

BOOST_AUTO_TEST_SUITE(test_binding_fuzz)

using namespace ringrt;

using ringrt::test::binding_fuzz::Fuzz;

namespace binding_fuzz {

BOOST_AUTO_TEST_CASE(many_runs_match_the_host) {
  RuntimeParams saved = current_runtime_params();
  size_t built = Program::bindings_built(), progs = Tensor::programs_built();
  int steps = 80;
  if (const char* e = std::getenv("FUZZ_STEPS")) steps = std::atoi(e);
  unsigned seed0 = 1;
  if (const char* e = std::getenv("FUZZ_SEED")) seed0 = static_cast<unsigned>(std::atoi(e));
  int64_t n = 12;
  if (const char* e = std::getenv("FUZZ_N")) n = std::atoll(e);
  Fuzz f(n, seed0);
  if (const char* e = std::getenv("FUZZ_TOGGLE")) f.toggle_every = std::atoi(e);
  AllreduceSettings st = current_settings();
  if (const char* e = std::getenv("FUZZ_ALGO")) {
    st.ring = std::string(e) == "ring" ? 2 : 0;
    st.all2all = std::string(e) == "all2all" ? 2 : 0;
    if (std::string(e) == "hier")
      for (int d = 0; d < 4; ++d) st.groups["CPU:" + std::to_string(d)] = d / 2;
    if (std::string(e) == "hier_rs") {
      for (int d = 0; d < 4; ++d) st.groups["CPU:" + std::to_string(d)] = d / 2;
      st.hierarchical = "reduce_scatter";
    }
  }
  ScopedSettings scope(st);
  f.run(steps);
  BOOST_TEST_MESSAGE("bindings built " << Program::bindings_built() - built << ", programs "
                                       << Tensor::programs_built() - progs);
  set_runtime_params(saved, {"runtime.peer_reads", "runtime.inline_small", "runtime.kernel_split",
                             "runtime.allreduce_in_place", "runtime.program_cache", "runtime.stream_bytes"});
}

}  // namespace binding_fuzz

namespace binding_fuzz {
// Two threads, each with its own pool, realizing at once while the switches change under them.
BOOST_AUTO_TEST_CASE(two_threads_match_the_host) {
  RuntimeParams saved = current_runtime_params();
  int steps = 40;
  if (const char* e = std::getenv("FUZZ_STEPS")) steps = std::atoi(e);
  unsigned seed0 = 1;
  if (const char* e = std::getenv("FUZZ_SEED")) seed0 = static_cast<unsigned>(std::atoi(e));
  Fuzz f1(12, seed0 + 100), f2(12, seed0 + 200);
  f1.quiet = f2.quiet = true;
  f1.toggle_every = f2.toggle_every = 6;
  std::thread t1([&] { f1.run(steps); }), t2([&] { f2.run(steps); });
  t1.join();
  t2.join();
  BOOST_TEST(f1.failures == 0, f1.first_failure);
  BOOST_TEST(f2.failures == 0, f2.first_failure);
  set_runtime_params(saved, {"runtime.peer_reads", "runtime.inline_small", "runtime.kernel_split",
                             "runtime.allreduce_in_place", "runtime.program_cache", "runtime.stream_bytes"});
}
}  // namespace binding_fuzz

namespace binding_fuzz {
// Program keys past the scan of 16 buffers: sums of k distinct tensors, then one of them again
// (which one varies); every pick is its own host sum, and graphs that differ only in which earlier
// buffer is read again never share a program's values.
BOOST_AUTO_TEST_CASE(repeated_buffers_past_sixteen) {
  const int64_t n = 8;
  std::vector<std::vector<float>> data;
  std::vector<Tensor> ts;
  for (int k = 0; k < 24; ++k) {
    data.emplace_back(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) data.back()[static_cast<size_t>(j)] = static_cast<float>((k * 7 + j * 3) % 23 + k);
    ts.push_back(Tensor::from_vector(data.back(), {n}, "CPU:0"));
    ts.back().realize();
  }
  std::mt19937 rng(5);
  for (int round = 0; round < 12; ++round) {
    int k = 14 + static_cast<int>(rng() % 6);  // 14..19 distinct
    std::vector<int> pick;
    for (int i = 0; i < 24; ++i) pick.push_back(i);
    std::shuffle(pick.begin(), pick.end(), rng);
    pick.resize(static_cast<size_t>(k));
    int again = pick[rng() % pick.size()], again2 = pick[rng() % pick.size()];
    Tensor sum = ts[static_cast<size_t>(pick[0])];
    std::vector<float> want = data[static_cast<size_t>(pick[0])];
    auto add = [&](int idx, float mul) {
      sum = sum + ts[static_cast<size_t>(idx)] * static_cast<double>(mul);
      for (int64_t j = 0; j < n; ++j)
        want[static_cast<size_t>(j)] += mul * data[static_cast<size_t>(idx)][static_cast<size_t>(j)];
    };
    for (size_t i = 1; i < pick.size(); ++i) add(pick[i], 1.0f);
    add(again, 2.0f);
    add(again2, 3.0f);
    BOOST_TEST(sum.to_vector<float>() == want, boost::test_tools::per_element());
  }
}
}  // namespace binding_fuzz

namespace binding_fuzz {
// Runs of one program that time out behind a stuck device (the binding reused while the earlier run's
// items are still queued), then runs after the device is released: each value is its own host sum.
BOOST_AUTO_TEST_CASE(reused_binding_after_timeouts) {
  auto devs = cpu_devices(4);
  const int64_t n = 16;
  auto data = [&](int seed) {
    std::vector<float> v(static_cast<size_t>(4 * n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 3 + static_cast<size_t>(seed) * 5) % 13);
    return v;
  };
  auto colsum = [&](const std::vector<float>& v) {
    std::vector<float> out(static_cast<size_t>(n), 0.0f);
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t j = 0; j < n; ++j) out[static_cast<size_t>(j)] += v[static_cast<size_t>(r * n + j)];
    return out;
  };
  std::vector<Tensor> xs;
  for (int k = 0; k < 3; ++k) {
    xs.push_back(Tensor::from_vector(data(k), {4, n}).shard(devs, 0));
    xs.back().realize();
  }
  BOOST_TEST(xs[0].sum({0}).to_vector<float>() == colsum(data(0)), boost::test_tools::per_element());
  std::atomic<bool> release{false};
  device("CPU:2").submit(
      [&] {
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      },
      {});
  set_watchdog_timeout(std::chrono::milliseconds(200));
  std::vector<Tensor> late;
  for (int k = 1; k < 3; ++k) {
    late.push_back(xs[static_cast<size_t>(k)].sum({0}));
    BOOST_CHECK_THROW(late.back().realize(), TimeoutError);
  }
  release = true;
  set_watchdog_timeout(std::chrono::milliseconds(60000));
  for (int k : {2, 0, 1, 2})
    BOOST_TEST(xs[static_cast<size_t>(k)].sum({0}).to_vector<float>() == colsum(data(k)),
               boost::test_tools::per_element());
}
}  // namespace binding_fuzz

BOOST_AUTO_TEST_SUITE_END()
