// Google Benchmark microbenchmarks of ringrt's planning (docs/performance.md): lowering and scheduling
// an 8-device allreduce, planning a ring over 8..1024 devices (BM_Schedule/devices:N), and the rewrite of large graphs
// with the serial and the TBB-parallel driver at 1 and 2 threads, over nodes that exist already
// (BM_Rewrite) or that the rewrite makes (BM_RewriteFresh, whose crossover tells
// RewriteOptions::parallel_min_nodes).
//
//   build/release/ringrt_bench --benchmark_filter=Rewrite
//
// Rewrite graphs: W independent chains of depth 50 over distinct buffers, each step `(v + c) * 1`
// (the `* 1` is simplified away, so half the nodes change), summed pairwise into one root: about
// 100 * W nodes. Counters: nodes (graph size), rewrites (replacements made).
//
// BM_HostWrite: host writes to 4 devices against one memcpy of the same bytes.
//
// BM_AssignChain: a chain of lazy assigns (X.assign(X + 1) without realizing), whose cost per step must not
// grow with the chain.
//
// BM_SgdStep: a training step written the natural way on 4 cpu devices (65,536 floats each): host write of
// the gradients, allreduce, w.assign(w - lr * g), one realize; the learning rate a cosine schedule's, given
// as a plain double (lr:0, a kernel argument) or written each step into a device tensor (lr:1, the way
// around a program per value before run-time scalars). Counter: steps per second.
//
// BM_Realize: the whole path of one repeated allreduce, x.sum({0}).realize() on N cpu devices (lazy graph,
// program cache, buffers, launches, waits, freeing the result): at 1 KiB per device it is the host's
// cost per collective, the latency a small gradient bucket pays.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <ringrt/ringrt.hpp>
#include <vector>

#include "rewrite/lower/lower.hpp"
#include "rewrite/plan/schedule.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/api/internal.hpp"
#include "runtime/engine/collect.hpp"

using namespace ringrt;

namespace {

std::optional<double> broadcast_const(UOp u) {
  while (u.op() == Ops::RESHAPE || u.op() == Ops::EXPAND) u = u.src(0);
  if (u.op() != Ops::CONST) return std::nullopt;
  return u.arg_float();
}

// x * 1 -> x, x + 0 -> x
const PatternMatcher& simplifier() {
  static const PatternMatcher pm({
      {UPat(Ops::MUL).src({UPat::var("x"), UPat::var("y")}),
       [](const Match& m) -> std::optional<UOp> {
         auto c = broadcast_const(m["y"]);
         return c && *c == 1 ? std::optional<UOp>(m["x"]) : std::nullopt;
       }},
      {UPat(Ops::ADD).src({UPat::var("x"), UPat::var("y")}),
       [](const Match& m) -> std::optional<UOp> {
         auto c = broadcast_const(m["y"]);
         return c && *c == 0 ? std::optional<UOp>(m["x"]) : std::nullopt;
       }},
  });
  return pm;
}

UOp chains(int64_t width) {
  static std::vector<Tensor> leaves;  // the buffers stay alive for every graph built from them
  while (static_cast<int64_t>(leaves.size()) < width) leaves.push_back(Tensor::empty({4}));
  std::vector<UOp> tops;
  for (int64_t w = 0; w < width; ++w) {
    UOp v = uop_of(leaves[static_cast<size_t>(w)]);
    for (int d = 0; d < 50; ++d) v = v.alu(Ops::ADD, {v.const_like(d + 1)}).alu(Ops::MUL, {v.const_like(1)});
    tops.push_back(v);
  }
  while (tops.size() > 1) {
    std::vector<UOp> next;
    for (size_t i = 0; i + 1 < tops.size(); i += 2) next.push_back(tops[i].alu(Ops::ADD, {tops[i + 1]}));
    if (tops.size() % 2) next.push_back(tops.back());
    tops = std::move(next);
  }
  return tops[0];
}

// args: width (chains), driver (0 serial, 1 parallel), threads
void BM_Rewrite(benchmark::State& state) {
  UOp root = chains(state.range(0));
  RewriteOptions o;
  o.driver = state.range(1) ? RewriteDriver::parallel : RewriteDriver::serial;
  o.threads = static_cast<int>(state.range(2));
  o.map = false;  // as graph_rewrite, which the lowering uses
  size_t rewrites = 0;
  for (auto _ : state) {
    RewriteResult r = rewrite_graph(root, simplifier(), o);
    rewrites = r.rewrites;
    benchmark::DoNotOptimize(r.root);
  }
  state.counters["nodes"] = static_cast<double>(root.graph().toposort({root}).size());
  state.counters["rewrites"] = static_cast<double>(rewrites);
}
BENCHMARK(BM_Rewrite)
    ->ArgNames({"width", "parallel", "threads"})
    ->ArgsProduct({{10, 40, 100, 500, 1000, 2000}, {0}, {1}})
    ->ArgsProduct({{10, 40, 100, 500, 1000, 2000}, {1}, {1, 2}})
    ->Unit(benchmark::kMillisecond);

// BM_Rewrite as a lowering meets it: every node the rewrite makes is new (the graph is collected
// and rebuilt between iterations, untimed), so the time counts creating nodes (inferring each one's
// shape, the creation lock, the allocation) and not only finding them in the hash-consing table.
void BM_RewriteFresh(benchmark::State& state) {
  RewriteOptions o;
  o.driver = state.range(1) ? RewriteDriver::parallel : RewriteDriver::serial;
  o.threads = static_cast<int>(state.range(2));
  o.map = false;
  size_t made = 0;
  for (auto _ : state) {
    state.PauseTiming();
    collect_garbage(true);
    UOp root = chains(state.range(0));
    size_t before = root.graph().size();
    state.ResumeTiming();
    benchmark::DoNotOptimize(rewrite_graph(root, simplifier(), o).root);
    made = root.graph().size() - before;
  }
  collect_garbage(true);  // after the timed loop
  state.counters["made"] = static_cast<double>(made);
}
BENCHMARK(BM_RewriteFresh)
    ->ArgNames({"width", "parallel", "threads"})
    ->ArgsProduct({{100, 200, 500, 1000, 2000}, {0}, {1}})
    ->ArgsProduct({{100, 200, 500, 1000, 2000}, {1}, {2}})
    ->Unit(benchmark::kMillisecond);

// An allreduce sum over 8 cpu devices of `count` float32 per device; algo 0 naive, 1 ring, 2 all2all.
struct Allreduce8 {
  Tensor x = Tensor::empty({8, 1}).shard(cpu_devices(8), 0), y = x;
  AllreduceSettings s = current_settings();
  Allreduce8(int64_t count, int64_t algo) {
    x = Tensor::empty({8, count}).shard(cpu_devices(8), 0);
    x.realize();
    y = x.sum({0});
    s.ring = algo == 1 ? 2 : 0;
    s.all2all = algo == 2 ? 2 : 0;
  }
};

void BM_Lower8(benchmark::State& state) {
  Allreduce8 a(state.range(0), state.range(1));
  for (auto _ : state) benchmark::DoNotOptimize(lower_multi({uop_of(a.y)}, a.s));
}
BENCHMARK(BM_Lower8)->ArgNames({"count", "algo"})->ArgsProduct({{1 << 20}, {0, 1, 2}})->Unit(benchmark::kMicrosecond);

// BM_Lower8 in a steady state: the lowered graph is collected after each lowering (untimed), as the
// engine does, so every lowering builds in a graph (hash-consing table, heap) of the same size. In
// BM_Lower8 the global graph grows by every lowering's nodes (each makes fresh buffers), so its time
// also counts growing the table and faulting in fresh heap, and depends on the iteration count.
void BM_Lower8Collected(benchmark::State& state) {
  Allreduce8 a(state.range(0), state.range(1));
  size_t made = 0;
  for (auto _ : state) {
    size_t before = UOpGraph::global().size();
    benchmark::DoNotOptimize(lower_multi({uop_of(a.y)}, a.s));
    made = UOpGraph::global().size() - before;
    state.PauseTiming();
    collect_garbage(true);
    state.ResumeTiming();
  }
  state.counters["made"] = static_cast<double>(made);  // nodes each lowering makes
}
BENCHMARK(BM_Lower8Collected)
    ->ArgNames({"count", "algo"})
    ->ArgsProduct({{1 << 20}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond);

void BM_Schedule8(benchmark::State& state) {
  Allreduce8 a(state.range(0), state.range(1));
  Lowered low = lower_multi({uop_of(a.y)}, a.s);
  size_t items = 0;
  for (auto _ : state) {
    ItemPlan plan = plan_schedule(low.roots);
    items = plan.items.size();
    benchmark::DoNotOptimize(plan);
  }
  state.counters["items"] = static_cast<double>(items);
}
BENCHMARK(BM_Schedule8)
    ->ArgNames({"count", "algo"})
    ->ArgsProduct({{1 << 20}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond);

// Planning a ring allreduce of 1024 float32 per device over n cpu devices from a placeholder input
// (Tensor::schedule: lowering, planning and each kernel's IR; nothing allocated or compiled). The plan
// has about 64(n-1) copies (32 nonempty chunks), so the time should grow about linearly with n.
// Measured (dev preset, 2 busy cores): 8: 2 ms, 64: 0.11 s, 256: 0.86 s, 1024: 4.0 s (it was 2.2 ms,
// 0.19 s, 1.7 s, 11.8 s before precise dependencies and the flat node tables). About half is building
// the lowered graph (hash-consing, Boost vertices), a sixth planning, a tenth collecting it after.
void BM_Schedule(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  AllreduceSettings s = current_settings();
  s.ring = 2;
  ScopedSettings scope(s);
  Tensor y = Tensor::placeholder({n, 1024}, DType::float32, cpu_devices(n), 0).sum({0});
  size_t copies = 0;
  for (auto _ : state) {
    Schedule plan = y.schedule();
    copies = plan.copy_items.size();
    benchmark::DoNotOptimize(plan);
  }
  state.counters["copies"] = static_cast<double>(copies);
}
BENCHMARK(BM_Schedule)->ArgNames({"devices"})->RangeMultiplier(2)->Range(8, 1024)->Unit(benchmark::kMillisecond);

// args: devices, bytes per device (float32), algo (0 naive, 1 ring, 2 all2all)
void BM_Realize(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  AllreduceSettings s = current_settings();
  s.ring = state.range(2) == 1 ? 2 : 0;
  s.all2all = state.range(2) == 2 ? 2 : 0;
  ScopedSettings scope(s);
  int64_t count = state.range(1) / 4;
  Tensor x = Tensor::from_vector(std::vector<float>(static_cast<size_t>(n * count), 1.0f), {n, count})
                 .shard(cpu_devices(n), 0);
  x.realize();
  for (auto _ : state) {
    Tensor y = x.sum({0});
    y.realize();
  }
  state.SetBytesProcessed(state.iterations() * state.range(1));  // algbw
}
BENCHMARK(BM_Realize)
    ->ArgNames({"devices", "bytes", "algo"})
    ->ArgsProduct({{2, 4}, {1 << 10, 256 << 10}, {1, 2}})
    ->Unit(benchmark::kMicrosecond);

// The naive allreduce over 4 cpu devices of 256 Ki elements each, per element type and reduction: its kernel
// selects each peer's element by device number and folds them, so a select or max that does not vectorize
// for a type shows here (codegen/render_prelude.cpp rt_hsel, rt_max: float16 had run 15-200x slower).
// args: dtype (0 float32, 1 float16, 2 bfloat16), op (0 sum, 1 max)
void BM_NaiveByDtype(benchmark::State& state) {
  const DType dtypes[] = {DType::float32, DType::float16, DType::bfloat16};
  DType dt = dtypes[state.range(0)];
  AllreduceSettings s = current_settings();
  s.ring = 0, s.all2all = 0;
  ScopedSettings scope(s);
  int n = 4;
  int64_t count = 256 << 10;
  std::vector<float> data(static_cast<size_t>(n * count));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 13) - 6.0f;
  Tensor x = Tensor::from_vector(data, {n, count}).cast(dt).shard(cpu_devices(n), 0);
  x.realize();
  for (auto _ : state) {
    Tensor y = state.range(1) == 0 ? x.sum({0}) : x.max({0});
    y.realize();
  }
  state.SetBytesProcessed(state.iterations() * count * static_cast<int64_t>(itemsize(dt)));  // algbw
}
BENCHMARK(BM_NaiveByDtype)->ArgNames({"dtype", "op"})->ArgsProduct({{0, 1, 2}, {0, 1}})->Unit(benchmark::kMicrosecond);

// BM_HostWrite/bytes:B/memcpy:M: M = 0: Tensor::write_shards of B bytes to each of 4 cpu devices (the devices' copies
// at once, runtime/engine/storage.cpp DeviceStorage::write); M = 1: one memcpy of the same 4 B bytes, the floor.
// bytes_per_second is the host bandwidth of each.
void BM_HostWrite(benchmark::State& state) {
  int64_t bytes = state.range(0), count = bytes / 4;
  std::vector<HostBuffer> shards(4, HostBuffer(DType::float32, {count}));
  for (HostBuffer& h : shards) std::fill(h.bytes.begin(), h.bytes.end(), std::byte{1});
  if (state.range(1) == 1) {
    std::vector<std::byte> from(static_cast<size_t>(4 * bytes), std::byte{1}), to(from.size());
    for (auto _ : state) {
      std::memcpy(to.data(), from.data(), from.size());
      benchmark::DoNotOptimize(to.data());
    }
  } else {
    Tensor x = Tensor::full({4 * count}, 0.0).shard(cpu_devices(4), 0).contiguous().realize();
    for (auto _ : state) x.write_shards(shards);
  }
  state.SetBytesProcessed(state.iterations() * 4 * bytes);
}
BENCHMARK(BM_HostWrite)
    ->ArgNames({"bytes", "memcpy"})
    ->ArgsProduct({{1 << 20, 16 << 20}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// BM_AssignChain/steps:N: N lazy X.assign(X + 1) on 4 cpu devices (256 floats each) and one realize: the time per
// chain, so a linear chain shows N-proportional times (time per step flat across N).
void BM_AssignChain(benchmark::State& state) {
  int64_t steps = state.range(0);
  for (auto _ : state) {
    Tensor x = Tensor::full({4, 256}, 0.0).shard(cpu_devices(4), 0).contiguous().realize();
    for (int64_t i = 0; i < steps; ++i) x.assign(x + 1);
    x.realize();
  }
  state.counters["per_step_us"] =
      benchmark::Counter(static_cast<double>(steps) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_AssignChain)->ArgNames({"steps"})->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_SgdStep(benchmark::State& state) {
  constexpr int64_t kN = 65536;
  const bool lr_tensor = state.range(0) == 1;
  std::vector<std::string> devs = cpu_devices(4);
  Tensor w = Tensor::full({kN}, 1.0).shard(devs, std::nullopt).contiguous().realize();
  Tensor grads = Tensor::full({4, kN}, 0.0).shard(devs, 0).contiguous().realize();
  Tensor lr_on_devices = Tensor::full({1}, 0.0).shard(devs, std::nullopt).contiguous().realize();
  std::vector<HostBuffer> g(4, HostBuffer(DType::float32, {1, kN}));
  for (int d = 0; d < 4; ++d)
    for (int64_t i = 0; i < kN; ++i) g[static_cast<size_t>(d)].set(i, 1e-6 * static_cast<double>(d + i % 7));
  int64_t k = 0;
  for (auto _ : state) {
    double lr = 0.05 * (1 + std::cos(3.14159265358979 * static_cast<double>(k++ % 10000) / 10000));
    grads.write_shards(g);
    if (lr_tensor) {
      lr_on_devices.write(HostBuffer::from_vector(std::vector<double>{lr}, DType::float32, {1}));
      w.assign(w - lr_on_devices * grads.sum({0}));
    } else {
      w.assign(w - lr * grads.sum({0}));
    }
    w.realize();
  }
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SgdStep)->ArgNames({"lr"})->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
