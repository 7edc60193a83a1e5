// A training loop runs forever: programs keyed by structure are reused across fresh data,
// and what a step creates (graph nodes, storages, tensor states, assignment records) is freed, so
// the engine's counts stay flat. Counts only, never times; values against host arithmetic. And the
// process exits cleanly after whatever ran: run as child processes, checked by exit status.
#include <sys/wait.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/hash.hpp"
#include "core/params_internal.hpp"
#include "runtime/api/internal.hpp"

BOOST_AUTO_TEST_SUITE(test_lifetimes)

using namespace ringrt;

namespace {

// Step s's host data: rows x cols float32 small integers (sums stay exact).
HostBuffer step_data(int64_t rows, int64_t cols, uint64_t s) {
  HostBuffer b(DType::float32, {rows, cols});
  for (int64_t i = 0; i < rows * cols; ++i) b.set(i, static_cast<double>(splitmix64(s * 1000003 + i) % 17) - 8);
  return b;
}

std::vector<float> column_sums(const HostBuffer& b) {
  std::vector<float> out(static_cast<size_t>(b.shape[1]), 0.0f);
  for (int64_t r = 0; r < b.shape[0]; ++r)
    for (int64_t c = 0; c < b.shape[1]; ++c)
      out[static_cast<size_t>(c)] += static_cast<float>(b.get(r * b.shape[1] + c));
  return out;
}

// The counts that must not grow in a steady loop.
struct Flat {
  size_t nodes, storages, tensors, assignments, programs;
  explicit Flat(const EngineStats& s)
      : nodes(s.graph_nodes),
        storages(s.storages),
        tensors(s.tensors),
        assignments(s.assignments),
        programs(s.programs_built) {}
};

void check_flat(const Flat& warm, const EngineStats& now) {
  BOOST_TEST(now.graph_nodes <= warm.nodes);
  BOOST_TEST(now.storages <= warm.storages);
  BOOST_TEST(now.tensors <= warm.tensors);
  BOOST_TEST(now.assignments <= warm.assignments);
  BOOST_TEST(now.programs_built == warm.programs);
}

}  // namespace

BOOST_AUTO_TEST_CASE(fresh_data_every_step_builds_one_program_and_keeps_the_engine_flat) {
  auto devs = cpu_devices(4);
  std::optional<Flat> warm;
  size_t before = Tensor::programs_built();
  for (uint64_t step = 0; step < 400; ++step) {
    HostBuffer data = step_data(4, 256, step);
    std::vector<float> got = Tensor::from_host(data).shard(devs, 0).sum({0}).to_vector<float>();
    BOOST_TEST(got == column_sums(data), boost::test_tools::per_element());
    if (step == 0) BOOST_TEST(Tensor::programs_built() - before <= 2);  // the shard's copies and the sum
    if (step == 100) warm.emplace(Tensor::engine_stats());
    if (step == 399) check_flat(*warm, Tensor::engine_stats());
  }
}

BOOST_AUTO_TEST_CASE(the_same_tensors_realized_again_add_nothing) {
  auto devs = cpu_devices(2);
  HostBuffer data = step_data(2, 64, 7);
  Tensor x = Tensor::from_host(data).shard(devs, 0);
  x.realize();
  std::vector<float> want = column_sums(data);
  std::optional<Flat> warm;
  for (int step = 0; step < 300; ++step) {
    BOOST_TEST(x.sum({0}).to_vector<float>() == want, boost::test_tools::per_element());
    if (step == 50) warm.emplace(Tensor::engine_stats());
  }
  check_flat(*warm, Tensor::engine_stats());
}

BOOST_AUTO_TEST_CASE(a_persistent_tensor_assigned_fresh_data_keeps_nothing_it_was_given) {
  auto devs = cpu_devices(3);
  Tensor p = Tensor::from_host(step_data(3, 96, 0)).shard(devs, 0);
  Tensor b = Tensor::from_host(step_data(6, 16, 0));
  p.realize();
  b.realize();
  std::optional<Flat> warm;
  for (uint64_t step = 1; step <= 300; ++step) {
    HostBuffer fresh = step_data(3, 96, step), small = step_data(6, 16, step);
    p.assign(Tensor::from_host(fresh).shard(devs, 0)).realize();
    b.assign(Tensor::from_host(small)).realize();
    if (step % 50 == 0) {
      BOOST_TEST(p.sum({0}).to_vector<float>() == column_sums(fresh), boost::test_tools::per_element());
      BOOST_TEST(b.sum({0}).to_vector<float>() == column_sums(small), boost::test_tools::per_element());
    }
    if (step == 100) warm.emplace(Tensor::engine_stats());
  }
  check_flat(*warm, Tensor::engine_stats());
}

BOOST_AUTO_TEST_CASE(assigning_into_a_shrink_in_a_loop_stays_flat) {
  auto devs = cpu_devices(2);
  Tensor base = Tensor::from_host(step_data(4, 8, 0)).shard(devs, 1);
  base.realize();
  Tensor view = base.shrink({{1, 3}, {0, 8}});
  std::vector<float> want = base.to_vector<float>();
  std::optional<Flat> warm;
  for (int step = 0; step < 200; ++step) {
    view.assign(view + 1.0).realize();
    for (int64_t r = 1; r < 3; ++r)
      for (int64_t c = 0; c < 8; ++c) want[static_cast<size_t>(r * 8 + c)] += 1.0f;
    if (step == 50) warm.emplace(Tensor::engine_stats());
  }
  BOOST_TEST(base.to_vector<float>() == want, boost::test_tools::per_element());
  check_flat(*warm, Tensor::engine_stats());
}

BOOST_AUTO_TEST_CASE(the_program_cache_is_bounded_and_counts_hits_misses_and_evictions) {
  RuntimeParams r = current_runtime_params();
  r.program_cache = 3;
  set_runtime_params(r, {"runtime.program_cache"});
  auto devs = cpu_devices(2);
  EngineStats s0 = Tensor::engine_stats();
  for (int64_t n = 1; n <= 6; ++n) {  // six structures: three evicted
    HostBuffer data = step_data(2, 2 * n, static_cast<uint64_t>(n));
    BOOST_TEST(Tensor::from_host(data).shard(devs, 0).sum({0}).to_vector<float>() == column_sums(data),
               boost::test_tools::per_element());
  }
  EngineStats s1 = Tensor::engine_stats();
  BOOST_TEST(s1.program_cache_capacity == 3u);
  BOOST_TEST(s1.programs_cached <= 3u);
  BOOST_TEST(s1.program_cache_evictions - s0.program_cache_evictions >= 3u);
  HostBuffer again = step_data(2, 12, 99);  // the last shape: cached, a hit with new buffers
  BOOST_TEST(Tensor::from_host(again).shard(devs, 0).sum({0}).to_vector<float>() == column_sums(again),
             boost::test_tools::per_element());
  EngineStats s2 = Tensor::engine_stats();
  BOOST_TEST(s2.programs_built == s1.programs_built);
  BOOST_TEST(s2.program_cache_hits > s1.program_cache_hits);
  reset_runtime_params();
}

// The same lazy value realized again finds its program (from its roots' node ids, without the
// Canonical form: program_cache.cpp's LastRoots) and counts a hit; through a cache of one program two
// structures evict each other, and each is built again, never run from an evicted entry.
BOOST_AUTO_TEST_CASE(the_same_roots_again_hit_and_an_evicted_program_is_built_again) {
  RuntimeParams r = current_runtime_params();
  r.program_cache = 1;
  set_runtime_params(r, {"runtime.program_cache"});
  auto devs = cpu_devices(2);
  HostBuffer data = step_data(2, 6, 7);
  Tensor x = Tensor::from_host(data).shard(devs, 0);
  x.realize();
  std::vector<float> sums = column_sums(data), twice = sums;
  for (float& v : twice) v *= 2.0f;
  EngineStats s0 = Tensor::engine_stats();
  for (int i = 0; i < 3; ++i) BOOST_TEST(x.sum({0}).to_vector<float>() == sums, boost::test_tools::per_element());
  EngineStats s1 = Tensor::engine_stats();
  BOOST_TEST(s1.programs_built - s0.programs_built == 1u);
  BOOST_TEST(s1.program_cache_hits - s0.program_cache_hits == 2u);
  for (int i = 0; i < 3; ++i) {
    BOOST_TEST(x.sum({0}).to_vector<float>() == sums, boost::test_tools::per_element());
    BOOST_TEST((x.sum({0}) * 2.0).to_vector<float>() == twice, boost::test_tools::per_element());
  }
  EngineStats s2 = Tensor::engine_stats();
  BOOST_TEST(s2.programs_built - s1.programs_built == 5u);  // the first sum still cached: a hit
  BOOST_TEST(s2.program_cache_evictions - s1.program_cache_evictions == 5u);
  reset_runtime_params();
}

// Collections run only while no thread is inside the Tensor API: threads building and realizing
// while another forces collections (engine_stats) all get right values (the tsan preset runs this).
BOOST_AUTO_TEST_CASE(threads_building_and_realizing_while_the_graph_is_collected) {
  auto devs = cpu_devices(2);
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, collections{0};
  std::vector<std::thread> workers;
  for (uint64_t t = 0; t < 3; ++t)
    workers.emplace_back([&, t] {
      for (uint64_t s = 0; s < 150; ++s) {
        HostBuffer data = step_data(2, 32, s * 7 + t);
        Tensor x = Tensor::from_host(data).shard(devs, 0);
        Tensor y = (x * 2.0).sum({0});  // lazy nodes alive across other threads' realizes
        std::vector<float> want = column_sums(data);
        for (float& w : want) w *= 2.0f;
        if (y.to_vector<float>() != want) ++wrong;
      }
    });
  std::thread collector([&] {
    while (!stop) {
      Tensor::engine_stats();
      ++collections;
      std::this_thread::yield();
    }
  });
  for (auto& w : workers) w.join();
  stop = true;
  collector.join();
  BOOST_TEST(wrong.load() == 0);
  BOOST_TEST(collections.load() > 0);
}

// Two tensors of one value realized together each get it (they share its memory).
BOOST_AUTO_TEST_CASE(tensors_of_one_value_realized_together_each_get_it) {
  Tensor a = Tensor::from_host(step_data(2, 8, 3));
  std::vector<float> want = a.to_vector<float>();
  for (float& w : want) w += 1.0f;
  Tensor y1 = a + 1.0, y2 = a + 1.0, z = a * 1.0;  // y1 and y2: one graph node
  Tensor::realize_all({y1, z, y2});
  BOOST_TEST(y1.to_vector<float>() == want, boost::test_tools::per_element());
  BOOST_TEST(y2.to_vector<float>() == want, boost::test_tools::per_element());
}

// A loop that writes from the host and never realizes is collected too (at the end of Tensor calls).
BOOST_AUTO_TEST_CASE(a_loop_that_never_realizes_stays_flat) {
  Tensor x = Tensor::from_host(step_data(2, 8, 0));
  x.realize();
  HostBuffer h = step_data(2, 8, 1);
  size_t peak = 0;
  for (int step = 0; step < 30000; ++step) {
    Tensor y = x + 1.0;  // built, never realized
    x.write(h);
    if (step >= 20000) peak = std::max(peak, UOpGraph::global().alive());
  }
  BOOST_TEST(peak < 20000u);  // bounded by the collection threshold, not by the step count
}

// A chain too deep for one kernel is a ShapeError, not a stack overflow.
BOOST_AUTO_TEST_CASE(a_chain_too_deep_for_one_kernel_is_an_error) {
  Tensor a = Tensor::from_host(step_data(1, 4, 0));
  for (int i = 0; i < 30000; ++i) a = a + 1.0;
  BOOST_CHECK_THROW(a.realize(), ShapeError);
  BOOST_CHECK_THROW(a.schedule(), ShapeError);
}

namespace {
// Kernel libraries mapped into this process now (distinct .so files, loaded from memory or a file).
size_t kernel_libraries_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> paths;
  for (std::string line; std::getline(maps, line);) {
    size_t at = line.find('/');
    if (at == std::string::npos) continue;
    std::string path = line.substr(at);
    if (path.ends_with(" (deleted)")) path.resize(path.size() - 10);  // loaded from memory: /memfd:ringrt-<key>.so
    if (path.find("ringrt") != std::string::npos && path.ends_with(".so")) paths.insert(path);
  }
  return paths.size();
}
}  // namespace

// A constant that changes every step (a learning-rate schedule) builds a program per step: the
// programs beyond runtime.program_cache are dropped, and their kernels unloaded with them.
BOOST_AUTO_TEST_CASE(kernels_of_dropped_programs_are_unloaded) {
  RuntimeParams r = current_runtime_params();
  r.program_cache = 2;
  set_runtime_params(r, {"runtime.program_cache"});
  Tensor x = Tensor::from_host(step_data(1, 16, 5));
  x.realize();
  std::vector<float> want = x.to_vector<float>();
  size_t before = kernel_libraries_mapped();
  for (int step = 1; step <= 40; ++step) {
    double rate = 1.0 + step / 1024.0;  // exact in float32
    x.assign(x * rate).realize();
    for (float& w : want) w *= static_cast<float>(rate);
  }
  BOOST_TEST(x.to_vector<float>() == want, boost::test_tools::per_element());
  BOOST_TEST_MESSAGE("kernel libraries mapped: " << before << " -> " << kernel_libraries_mapped());
  BOOST_TEST(kernel_libraries_mapped() <= before + 6);  // those of the cached programs, not 40
  reset_runtime_params();
}

// ---- exit: a process built on ringrt exits cleanly whatever ran. Each parent case runs a
// disabled child case of this executable as a process of its own; exit status 0 is the pass (a crash
// in the exit handlers is a signal).
namespace {
int run_child(const std::string& child) {  // `child`: a case of the running case's suite
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string path = boost::unit_test::framework::current_test_case().full_name();
  path = path.substr(0, path.rfind('/') + 1) + child;
  int raw = std::system(("'" + self + "' --run_test=" + path + " --log_level=error > /dev/null").c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0);
}
}  // namespace

// A run the watchdog gave up on still runs when the process exits; its memory is freed by its last
// item, on a device thread, while exit tears down global state.
BOOST_AUTO_TEST_CASE(child_exits_while_a_timed_out_run_still_runs, *boost::unit_test::disabled()) {
  auto devs = cpu_devices(4);
  Tensor x = Tensor::from_host(step_data(4, 1 << 17, 7)).shard(devs, 0);  // 512 KiB per device
  x.realize();
  auto* release = new std::atomic<bool>(false);  // never freed: the stuck item reads it until the end
  device("CPU:0").submit(                        // stuck until released: CPU:0's queue holds the run's items
      [release] {
        while (!*release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      {});
  RuntimeParams r = current_runtime_params();
  r.watchdog_s = 0.001;  // the smallest the tunable takes
  set_runtime_params(r, {"runtime.watchdog_s"});
  BOOST_CHECK_THROW(x.sum({0}).realize(), TimeoutError);
  *release = true;  // the items run now, while the process exits
}

BOOST_AUTO_TEST_CASE(a_process_exits_cleanly_after_a_watchdog_timeout) {
  BOOST_TEST(run_child("child_exits_while_a_timed_out_run_still_runs") == 0);
}

// A static holding a tensor, constructed before the first use of the device registry and the graph:
// it is destroyed after them, and its storage goes back to a device that is still there.
BOOST_AUTO_TEST_CASE(child_exits_with_a_static_tensor_made_first, *boost::unit_test::disabled()) {
  static std::vector<Tensor> held;
  held.push_back(Tensor::from_host(step_data(1, 4, 3), "CPU:1"));
  BOOST_TEST(held.back().to_vector<float>() == column_sums(step_data(1, 4, 3)),  // one row: its values
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_process_exits_cleanly_with_a_static_tensor_made_first) {
  BOOST_TEST(run_child("child_exits_with_a_static_tensor_made_first") == 0);
}

BOOST_AUTO_TEST_SUITE_END()
