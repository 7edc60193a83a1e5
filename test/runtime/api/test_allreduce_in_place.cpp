// Tensor::allreduce_in_place: DDP's allreduce of a persistent gradient bucket.
//
// Every device's local value becomes the elementwise reduction of all devices' local values, in the
// tensor's own memory. Expected values: host loops over the host data each device was given
// (test/support/host_oracle.hpp). Sweeps: 1 to 5 devices, sum and max, odd element counts, the
// algorithms naive, ring, all2all (forced through ScopedSettings) and hierarchical, the tensor sharded
// on axis 0 (DDP's (ndev, count) bucket), on axis 1, or replicated with different values per device.
// Also: the schedule costs no more than the out-of-place reduce, a 200-step loop of write_shards +
// allreduce_in_place builds its programs in the first step only, and which copies a run turns into
// peer reads of the buckets themselves, or into peer writes.
// clang-format off
#include <boost/test/unit_test.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
// clang-format on

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/errors.hpp"
#include "core/settings.hpp"
#include "runtime/api/internal.hpp"
#include "runtime/api/trace.hpp"
#include "runtime/device/device.hpp"
#include "test/support/host_oracle.hpp"
#include "test/support/runtime_switches.hpp"

BOOST_AUTO_TEST_SUITE(test_allreduce_in_place)

using ringrt::test::set_switches;
using ringrt::test::switches;

namespace bdata = boost::unit_test::data;

using ringrt::AllreduceSettings;
using ringrt::CopyItem;
using ringrt::DType;
using ringrt::HostBuffer;
using ringrt::ReduceOp;
using ringrt::Schedule;
using ringrt::ScopedSettings;
using ringrt::Shape;
using ringrt::Tensor;

namespace allreduce_in_place {

using namespace ringrt::test::host;  // NOLINT: the oracle

// The settings that force algo on n devices (hierarchical: two groups).
AllreduceSettings forcing(const std::string& algo, int n) {
  AllreduceSettings s = ringrt::current_settings();
  s.ring = algo == "ring" ? 2 : 0;
  s.all2all = algo == "all2all" ? 2 : 0;
  s.groups.clear();
  if (algo == "hierarchical")
    for (int i = 0; i < n; ++i) s.groups["CPU:" + std::to_string(i)] = i < (n + 1) / 2 ? 0 : 1;
  return s;
}

ReduceOp ringrt_op(Op op) {
  return op == Op::sum ? ReduceOp::sum : op == Op::max ? ReduceOp::max : op == Op::min ? ReduceOp::min : ReduceOp::prod;
}

// Device d's local value for step s: small integers (sums stay exact), different per device and step.
Arr local_values(const Shape& local, int d, int step) {
  return make_arr(local, [=](int64_t i) { return static_cast<double>((i * 5 + d * 11 + step * 3) % 17 - 8); });
}

Arr fold(const std::vector<Arr>& parts, Op op) {
  Arr out = parts.at(0);
  for (size_t d = 1; d < parts.size(); ++d)
    out = map2(out, parts[d], [op](double a, double b) { return combine(op, a, b); });
  return out;
}

// Writes step's local values (local_values, as dt) into the shards of x, on n devices; returns them.
std::vector<Arr> write_step(Tensor& x, int n, const Shape& local, int step, DType dt = DType::float32) {
  std::vector<Arr> parts;
  std::vector<HostBuffer> host;
  for (int d = 0; d < n; ++d) {
    parts.push_back(local_values(local, d, step));
    host.push_back(to_buffer(parts.back(), dt));
  }
  x.write_shards(host);
  return parts;
}

enum class Layout { axis0, axis1, replicated };

struct Sample {
  int ndev;
  Op op;
  std::string algo;
  Layout layout;
  int64_t count;
};
std::ostream& operator<<(std::ostream& os, const Sample& s) {
  const char* l = s.layout == Layout::axis0 ? "axis 0" : s.layout == Layout::axis1 ? "axis 1" : "replicated";
  return os << s.ndev << " devices, " << op_str(s.op) << ", " << s.algo << ", " << l << ", " << s.count;
}
// Every device count x op x algorithm, the layout and the count drawn independently (k % 3 and (k / 3) % 4),
// so each layout meets odd and even counts: an even axis-1 count is a (1, count) row sharded on its columns,
// an odd one a (count, 1) column (sharded columns).
std::vector<Sample> samples() {
  std::vector<Sample> out;
  const int64_t counts[] = {37, 36, 1001, 4099};
  size_t k = 0;
  for (int n = 1; n <= 5; ++n)
    for (Op op : {Op::sum, Op::max, Op::min, Op::prod})
      for (const char* algo : {"naive", "ring", "all2all", "hierarchical"}) {
        if (std::string(algo) == "hierarchical" && n < 3) continue;
        auto layout = static_cast<Layout>(k % 3);
        out.push_back({n, op, algo, layout, counts[(k / 3) % 4]});
        ++k;
      }
  return out;
}

// A tensor on n devices whose local values are `locals` (shape: count elements per device).
Tensor bucket(int n, Layout layout, const Shape& local, DType dt) {
  auto devs = ringrt::cpu_devices(n);
  Shape logical = local;
  if (layout != Layout::replicated) logical[layout == Layout::axis0 ? 0 : 1] *= n;
  Tensor t = Tensor::full(logical, 0.0, dt);
  if (n > 1 || layout != Layout::replicated)
    t = t.shard(devs,
                layout == Layout::replicated ? std::nullopt : std::optional<int>(layout == Layout::axis0 ? 0 : 1));
  return t.contiguous().realize();
}

BOOST_DATA_TEST_CASE(values_match_host, bdata::make(samples()), sample) {
  ScopedSettings scope(forcing(sample.algo, sample.ndev));
  int n = sample.ndev;
  Shape local{1, sample.count};
  if (sample.layout == Layout::axis1 && sample.count % 2 == 1) local = {sample.count, 1};  // odd: sharded columns
  DType dt = sample.ndev % 2 ? DType::float32 : DType::int32;
  Tensor x = bucket(n, sample.layout, local, dt);
  std::vector<Arr> parts = write_step(x, n, local, 0, dt);
  Tensor before = x + 0;  // lazy: reads the shards before the allreduce
  x.allreduce_in_place(ringrt_op(sample.op));
  if (n > 1) BOOST_TEST(x.algorithms() == std::vector<std::string>{sample.algo}, boost::test_tools::per_element());
  x.realize();
  Arr want = fold(parts, sample.op);
  std::vector<Tensor> shards = x.shards();
  BOOST_TEST_REQUIRE(shards.size() == static_cast<size_t>(n));
  for (int d = 0; d < n; ++d) {
    BOOST_TEST_CONTEXT("device " << d) { expect_equal(read(shards[static_cast<size_t>(d)]), want); }
  }
  std::vector<Tensor> old = before.shards();
  for (int d = 0; d < n; ++d) {
    BOOST_TEST_CONTEXT("old, device " << d) {
      expect_equal(read(old[static_cast<size_t>(d)]), parts[static_cast<size_t>(d)]);
    }
  }
}

// The in-place allreduce schedules the copies of the out-of-place one (a reduce over the shard axis of
// the same bucket) and no more kernels: its last kernel writes into the bucket instead of fresh memory.
BOOST_DATA_TEST_CASE(schedule_costs_no_more_than_out_of_place, bdata::make({"naive", "ring", "all2all"}), algo) {
  ScopedSettings scope(forcing(algo, 4));
  Tensor x = bucket(4, Layout::axis0, {1, 400}, DType::float32), y = bucket(4, Layout::axis0, {1, 400}, DType::float32);
  Schedule out_of_place = y.sum({0}).schedule();
  x.allreduce_in_place();
  Schedule in_place = x.schedule();
  BOOST_TEST_MESSAGE(algo << " in place:\n" << in_place.to_string() << "out of place:\n" << out_of_place.to_string());
  BOOST_TEST(in_place.algorithms == out_of_place.algorithms, boost::test_tools::per_element());
  BOOST_TEST((in_place.copies() == out_of_place.copies()));
  BOOST_TEST(in_place.kernels() <= out_of_place.kernels());
}

// Peer reads of the buckets themselves (rewrite/plan/memory_plan.cpp, SettledSources): a copy of a
// peer's bucket becomes a read of it in place only when whatever overwrites the elements it reads waits
// for every reader of the copy. ring and all2all order their overwrites so (the allgather that stores
// chunk c into a bucket waits for chunk c's reduce), so their reduce-scatter copies nothing and the
// only copies are the allgather's n(n-1), into ranges of the buckets; naive's reduce overwrites each
// bucket while the peers may still be reading it, so its n(n-1) copies stay. With peer writes on, a
// reduce also stores its chunk into the peers' buckets where the schedule copied it from the reduce
// (it reads each element it overwrites, element for element): all2all copies nothing, the ring keeps
// each chunk's later hops, n(n-2). Values against the host's.
BOOST_DATA_TEST_CASE(peer_reads_in_place_only_before_the_overwrite, bdata::make({"naive", "ring", "all2all"}), algo) {
  const int n = 4;
  ScopedSettings scope(forcing(algo, n));
  const ringrt::RuntimeParams saved = ringrt::runtime_params();
  for (bool writes : {false, true}) {
    set_switches(switches(true, saved.kernel_split, saved.inline_small, writes));
    Shape local{1, 4099};
    Tensor x = bucket(n, Layout::axis0, local, DType::float32);
    std::vector<Arr> parts = write_step(x, n, local, writes ? 1 : 0);
    size_t copies = 0, kernels = 0;
    {
      x.allreduce_in_place();
      BOOST_TEST(x.algorithms() == std::vector<std::string>{algo}, boost::test_tools::per_element());
      ringrt::Trace trace;
      x.realize();
      for (const ringrt::TraceEvent& e : trace.events()) {
        copies += e.kind == ringrt::TraceEvent::Kind::copy;
        kernels += e.kind == ringrt::TraceEvent::Kind::kernel;
      }
    }
    BOOST_TEST_CONTEXT("peer writes " << writes) {
      size_t want_copies = !writes || algo == std::string("naive") ? n * (n - 1)
                           : algo == std::string("ring")           ? n * (n - 2)
                                                                   : 0;
      BOOST_TEST(copies == want_copies);
      // the reduces alone (all2all: one per device; ring: n-1 steps per chunk): the allgather stores
      // into the buckets, so nothing copies the result back
      if (algo != std::string("naive"))
        BOOST_TEST(kernels == static_cast<size_t>(algo == std::string("ring") ? n * (n - 1) : n));
      Arr want = fold(parts, Op::sum);
      for (const Tensor& shard : x.shards()) expect_equal(read(shard), want);
    }
  }
  set_switches(saved);
}

// DDP's loop: every step writes fresh gradients into the persistent bucket and allreduces it in place.
// After the first step nothing is built again; the last step's values match the host's sums.
BOOST_DATA_TEST_CASE(two_hundred_steps_build_nothing_new, bdata::make({"naive", "ring"}), algo) {
  ScopedSettings scope(forcing(algo, 4));
  const int n = 4, steps = 200;
  Shape local{1, 1001};
  Tensor x = bucket(n, Layout::axis0, local, DType::float32);
  size_t built_after_first = 0;
  std::vector<Arr> parts;
  for (int step = 0; step < steps; ++step) {
    parts = write_step(x, n, local, step);
    x.allreduce_in_place().realize();
    if (step == 0) built_after_first = Tensor::programs_built();
  }
  BOOST_TEST(Tensor::programs_built() == built_after_first);
  Arr want = fold(parts, Op::sum);
  for (const Tensor& s : x.shards()) expect_equal(read(s), want);
}

// A reader of the old contents built before the in-place allreduce and realized together with it,
// listed first or last (the breaker's case): it reads the old values, computed once before the write
// (before_write), never again from the new ones. Values against the host's.
BOOST_DATA_TEST_CASE(readers_realized_together_keep_the_old_values,
                     bdata::make({"naive", "ring", "all2all"}) * bdata::make({true, false}), algo, reader_first) {
  const int n = 3;
  ScopedSettings scope(forcing(algo, n));
  Shape local{1, 7};
  Tensor x = bucket(n, Layout::axis0, local, DType::float32);
  std::vector<Arr> parts = write_step(x, n, local, 0);
  Tensor sum = x.sum({0}), biggest = x.max({0});  // lazy, on the old contents
  x.allreduce_in_place();
  if (reader_first) {
    Tensor::realize_all({sum, biggest, x});
  } else {
    Tensor::realize_all({x, sum, biggest});
  }
  Arr want = fold(parts, Op::sum);
  expect_equal(reshape(read(sum), local), want);
  expect_equal(reshape(read(biggest), local), fold(parts, Op::max));
  for (const Tensor& shard : x.shards()) expect_equal(read(shard), want);
}

// A step's buckets allreduced in place and realized together run as one program (on GPUs one graph):
// three buckets of different sizes, each with its own writes, over 200 steps that build nothing after
// the first; every bucket's last step matches the host's sums.
BOOST_DATA_TEST_CASE(buckets_realized_together_are_one_program, bdata::make({"naive", "ring"}), algo) {
  ScopedSettings scope(forcing(algo, 4));
  const int n = 4, steps = 200;
  std::vector<Shape> locals{{1, 1001}, {1, 37}, {1, 4096}};
  std::vector<Tensor> buckets;
  for (const Shape& local : locals) buckets.push_back(bucket(n, Layout::axis0, local, DType::float32));
  std::vector<std::vector<Arr>> parts(locals.size());
  size_t before = Tensor::programs_built(), after_first = 0;
  for (int step = 0; step < steps; ++step) {
    for (size_t b = 0; b < buckets.size(); ++b) parts[b] = write_step(buckets[b], n, locals[b], step + int(b) * 7);
    std::vector<Tensor> ys;
    for (Tensor& bucket : buckets) ys.push_back(bucket.allreduce_in_place());
    Tensor::realize_all(ys);
    if (step == 0) after_first = Tensor::programs_built();
  }
  BOOST_TEST(after_first - before <= 1u);  // one program for the three (none when an earlier case built it)
  BOOST_TEST(Tensor::programs_built() == after_first);
  for (size_t b = 0; b < buckets.size(); ++b)
    for (const Tensor& s : buckets[b].shards()) expect_equal(read(s), fold(parts[b], Op::sum));
}

}  // namespace allreduce_in_place

BOOST_AUTO_TEST_SUITE_END()
