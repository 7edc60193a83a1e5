// Graph replay on the hip backend (runtime/engine/graph_run.cpp, runtime/hip/hip_graph.cpp); label gpu
// (and simgpu: on runtime/hip/sim/'s simulated GPUs, whose counters show what ran: graph launches and
// event records).
//
// An allreduce over two HIP devices is recorded once and then launched with one call per realize; a
// realize of the same structure on other buffers changes the recorded pointers (the values are the new
// buffers'); two results realized together are one graph; runtime.graphs=0 and a recording Trace run the
// items one by one (the trace has every item); a pipelined loop of in-place allreduces keeps its order
// with graphs and without. Every value is checked against host arithmetic. Built without HIP, the one
// case exits 77, which CTest reports as skipped.
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <cstdlib>

#include "test/gpu/skip_without_hip.hpp"

#ifdef RINGRT_HAVE_HIP

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/params_internal.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/api/trace.hpp"
#include "test/gpu/hip_test_support.hpp"
#endif

BOOST_AUTO_TEST_SUITE(test_hip_graph)
RINGRT_SKIP_WITHOUT_HIP()

#ifdef RINGRT_HAVE_HIP

using namespace hip_test;
using ringrt::Tensor;

namespace {

const std::vector<std::string> kTwo{"HIP:0", "HIP:1"};
constexpr int64_t kCols = 257;
// The two devices' rows (hip_test_support.hpp two_device_rows), kCols columns.
Tensor rows(float scale) { return two_device_rows(kCols, scale); }

void check_sums(const Tensor& y, float scale) {
  std::vector<float> got = y.to_vector<float>();
  BOOST_TEST_REQUIRE(got.size() == static_cast<size_t>(kCols));
  for (int64_t c = 0; c < kCols; ++c)
    BOOST_TEST(got[static_cast<size_t>(c)] == scale * static_cast<float>(1000 + 2 * c), "column " << c);
}

// The simulated runtime's graph launches and event records so far; zeros on a real GPU.
struct Ran {
  uint64_t graphs = 0, records = 0;
  static Ran now() {
#ifdef RINGRT_GPU_SIM
    ringrt::sim::Counters c = ringrt::sim::counters();
    return {c.graph_launches, c.event_records};
#else
    return {};
#endif
  }
  Ran since(const Ran& before) const { return {graphs - before.graphs, records - before.records}; }
};
#ifdef RINGRT_GPU_SIM
constexpr bool kCounted = true;
#else
constexpr bool kCounted = false;
#endif

// Sets runtime.graphs for the scope.
struct Graphs {
  explicit Graphs(bool on) {
    ringrt::RuntimeParams r = ringrt::current_runtime_params();
    r.graphs = on;
    ringrt::set_runtime_params(r, {"runtime.graphs"});
  }
  ~Graphs() { ringrt::reset_runtime_params(); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(two_devices, *ringrt::testing::needs({"HIP", 2}))

BOOST_AUTO_TEST_CASE(an_allreduce_is_one_launch_once_recorded) {
  Tensor x = rows(1.0f);
  check_sums(x.sum({0}).realize(), 1.0f);  // recorded (and launched)
  ringrt::synchronize();
  Ran before = Ran::now();
  Tensor y = x.sum({0});
  y.realize();
  ringrt::synchronize();
  Ran ran = Ran::now().since(before);
  if (kCounted) {
    BOOST_TEST(ran.graphs == 1u);
    BOOST_TEST(ran.records == 1u);  // the launch's event: no item's own
  }
  check_sums(y, 1.0f);
}

// Another input and a new output each run: the recorded nodes get this run's pointers.
BOOST_AUTO_TEST_CASE(other_buffers_change_the_recorded_pointers) {
  size_t built = Tensor::programs_built();
  Ran before = Ran::now();
  for (float scale : {1.0f, 2.0f, 3.0f, 0.5f}) check_sums(rows(scale).sum({0}).realize(), scale);
  ringrt::synchronize();
  if (kCounted) BOOST_TEST(Ran::now().since(before).graphs >= 4u);
  BOOST_TEST(Tensor::programs_built() - built <= 2u);  // (the data's shard, then the sum: reused)
}

// A learning rate given as a plain double is a kernel argument (docs/architecture.md "Runtime scalars"): a
// new value replays the recorded graph with that kernel node's argument word set, and builds nothing.
BOOST_AUTO_TEST_CASE(a_new_learning_rate_replays_the_graph) {
  Tensor w = Tensor::full({kCols}, 1.0).shard(kTwo, std::nullopt).contiguous().realize();
  Tensor g = rows(1.0f);  // column c of the devices' rows sums to 1000 + 2c
  std::vector<float> host(static_cast<size_t>(kCols), 1.0f);
  auto step = [&](double lr) {
    w.assign(w - lr * g.sum({0}));
    w.realize();
    for (int64_t c = 0; c < kCols; ++c) {
      float sum = static_cast<float>(1000 + 2 * c);
      host[static_cast<size_t>(c)] = host[static_cast<size_t>(c)] - static_cast<float>(lr) * sum;
    }
  };
  step(0.25);  // recorded
  ringrt::synchronize();
  size_t built = Tensor::programs_built();
  Ran before = Ran::now();
  for (double lr : {0.5, 0.125, 1e-3, 0.75}) step(lr);
  ringrt::synchronize();
  BOOST_TEST(Tensor::programs_built() == built);
  if (kCounted) BOOST_TEST(Ran::now().since(before).graphs == 4u);
  for (const auto& [dev, v] : w.local_host_shards())
    for (int64_t c = 0; c < kCols; ++c)
      BOOST_TEST(static_cast<float>(v.get(c)) == host[static_cast<size_t>(c)], dev << " column " << c);
}

BOOST_AUTO_TEST_CASE(results_realized_together_are_one_graph) {
  Tensor a = rows(1.0f), b = rows(4.0f);
  Tensor::realize_all({a.sum({0}), b.sum({0})});  // recorded
  ringrt::synchronize();
  Tensor ya = a.sum({0}), yb = b.sum({0});
  Ran before = Ran::now();
  Tensor::realize_all({ya, yb});
  ringrt::synchronize();
  if (kCounted) BOOST_TEST(Ran::now().since(before).graphs == 1u);
  check_sums(ya, 1.0f);
  check_sums(yb, 4.0f);
}

// DDP's step: three buckets of different sizes allreduced in place and realized together are one graph
// launch; each holds the sum of the devices' values (equal values: twice them).
BOOST_AUTO_TEST_CASE(a_step_of_buckets_allreduced_in_place_is_one_graph) {
  std::vector<Tensor> buckets;
  for (int64_t n : {int64_t{5}, int64_t{300}, int64_t{1031}})
    buckets.push_back(
        Tensor::from_vector(std::vector<float>(static_cast<size_t>(n), 1.5f), {n}).shard(kTwo, std::nullopt).realize());
  auto step = [&] {
    std::vector<Tensor> ys;
    for (Tensor& b : buckets) ys.push_back(b.allreduce_in_place());
    Tensor::realize_all(ys);
  };
  step();  // recorded
  ringrt::synchronize();
  Ran before = Ran::now();
  step();
  ringrt::synchronize();
  if (kCounted) BOOST_TEST(Ran::now().since(before).graphs == 1u);
  for (const Tensor& b : buckets)
    for (float v : b.to_vector<float>()) BOOST_TEST(v == 6.0f);  // 1.5 doubled twice
}

BOOST_AUTO_TEST_CASE(without_graphs_every_item_is_launched) {
  Graphs off(false);
  Tensor x = rows(1.0f);
  check_sums(x.sum({0}).realize(), 1.0f);
  ringrt::synchronize();
  Ran before = Ran::now();
  Tensor y = x.sum({0}).realize();
  ringrt::synchronize();
  Ran ran = Ran::now().since(before);
  if (kCounted) {
    BOOST_TEST(ran.graphs == 0u);
    BOOST_TEST(ran.records >= 2u);  // an event per piece of work
  }
  check_sums(y, 1.0f);
}

// A recording Trace runs the items one by one: every kernel item of the run is in the trace (with its
// launches on each device, and the copies).
BOOST_AUTO_TEST_CASE(a_trace_records_every_item) {
  Tensor x = rows(1.0f);
  check_sums(x.sum({0}).realize(), 1.0f);
  ringrt::synchronize();
  auto kernels = static_cast<size_t>(x.sum({0}).schedule().kernels());
  Ran before = Ran::now();
  ringrt::Trace trace;
  Tensor y = x.sum({0}).realize();
  trace.stop();
  if (kCounted) BOOST_TEST(Ran::now().since(before).graphs == 0u);
  BOOST_TEST(trace.events().size() >= kernels, trace.events().size() << " events for " << kernels << " kernel items");
  check_sums(y, 1.0f);
}

// 20 in-place allreduces of a replicated gradient in a row, no wait between them, with graphs and
// without: each doubles it (two devices, equal values).
BOOST_AUTO_TEST_CASE(a_pipelined_loop_keeps_its_order_either_way) {
  for (bool graphs : {true, false}) {
    Graphs mode(graphs);
    std::vector<float> ones(kCols, 1.0f);
    Tensor g = Tensor::from_vector(ones, {kCols}).shard(kTwo, std::nullopt);
    g.realize();
    for (int i = 0; i < 20; ++i) g.allreduce_in_place().realize();
    for (const auto& [device, h] : g.local_host_shards())
      for (int64_t c = 0; c < kCols; c += 64) BOOST_TEST(h.get(c) == 0x1p20, device << " graphs " << graphs);
  }
}

BOOST_AUTO_TEST_SUITE_END()

#endif

BOOST_AUTO_TEST_SUITE_END()
