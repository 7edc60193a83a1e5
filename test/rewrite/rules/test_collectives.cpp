// The collectives besides allreduce (rewrite/rules/collectives.cpp, runtime/api/tensor_collectives.cpp):
// values of every collective x algorithm x device count x dtype x op against host arithmetic, the runtime against the
// interpreter, the lowering invariants of collectives.cpp's header (copies, bytes per device, steps) on null devices,
// the allreduce read per device that becomes a reduce-scatter, and bad input.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "core/errors.hpp"
#include "rewrite/lower/lower.hpp"
#include "rewrite/plan/schedule.hpp"
#include "runtime/api/internal.hpp"
#include "test/support/allreduce_matrix.hpp"
#include "test/support/checks.hpp"
#include "test/support/null_device.hpp"
#include "testing/checks.hpp"
#include "testing/collectives.hpp"

BOOST_AUTO_TEST_SUITE(test_collectives)

using namespace ringrt;
using ringrt::test::forced_settings;

namespace {

const std::vector<std::string> kCollectives{"reduce_scatter", "allgather", "alltoall", "broadcast", "reduce"};

// The interpreter's values of r, the collective `kind` of the locals `in`, on every device against the host's
// (testing/checks.hpp). Nothing is compiled.
void expect_values(const Tensor& r, const std::string& kind, const std::vector<HostBuffer>& in, ReduceOp op, int root) {
  RINGRT_CHECK_RESULT(testing::check_values(testing::interpreter_values(r), r.devices(),
                                            testing::collective_expected(kind, in, op, root),
                                            testing::describe(r, kind)));
}

}  // namespace

// Every collective x naive/ring/all2all x 1 to 8 devices x float32, float16, bfloat16, int32 x sum and
// max where a reduction applies (reduce_scatter, reduce), rows of 5 elements (odd), one or two rows per
// device cycled over the points (shards of one row: fewer elements per chunk than devices for the
// broadcast's chunks); the lowered graph by the interpreter against host arithmetic on every device.
// 672 points, 0.5 s: nothing compiled.
BOOST_AUTO_TEST_CASE(values_match_host_arithmetic) {
  int point = 0;
  for (const std::string& kind : kCollectives)
    for (const std::string& algo : {std::string("naive"), std::string("ring"), std::string("all2all")})
      for (int ndev = 1; ndev <= 8; ++ndev)
        for (DType dtype : testing::kDTypes)
          for (ReduceOp op : testing::kOps) {
            if (op != ReduceOp::sum && kind != "reduce_scatter" && kind != "reduce") continue;  // nothing reduced
            ++point;
            int root = ndev - 1 - point % ndev;
            int64_t rows = kind == "reduce_scatter" || kind == "alltoall" ? ndev * (1 + point % 2) : 1 + point % 2;
            BOOST_TEST_CONTEXT(kind << " " << algo << " ndev " << ndev << " " << dtype_name(dtype) << " "
                                    << reduce_op_name(op) << " rows " << rows << " root " << root) {
              ScopedSettings scope(test::matrix_settings(algo, ndev));
              std::vector<HostBuffer> in = testing::collective_locals(ndev, {rows, 5}, dtype, point);
              Tensor x = Tensor::from_shards(in, cpu_devices(ndev), 0);
              Tensor r = testing::apply_collective(kind, x, op, root);
              if (ndev > 1)
                BOOST_TEST(r.algorithms() == std::vector<std::string>{testing::expected_algorithm(kind, algo)});
              expect_values(r, kind, in, op, root);
            }
          }
}

// reduce_scatter along axis 1 (the scatter axis moved first and back: device i gets columns 2i, 2i+1)
// and with the cast setting off (16-bit floats reduced as float32), ring and direct, on 3 devices.
BOOST_AUTO_TEST_CASE(reduce_scatter_along_another_axis_and_widened) {
  for (const std::string& algo : {std::string("ring"), std::string("all2all")})
    for (bool cast : {true, false}) {
      BOOST_TEST_CONTEXT(algo << " cast " << cast) {
        AllreduceSettings s = test::matrix_settings(algo, 3);
        s.cast = cast;
        ScopedSettings scope(s);
        std::vector<HostBuffer> in = testing::collective_locals(3, {2, 6}, DType::bfloat16, 11);
        Tensor r = Tensor::from_shards(in, cpu_devices(3), 0).reduce_scatter(ReduceOp::sum, -1);
        BOOST_TEST((r.shape() == Shape{2, 6}));
        BOOST_TEST((r.shard_axis() == std::optional<int>(1)));
        BOOST_TEST(r.algorithms() == std::vector<std::string>{algo});
        for (const CopyItem& c : r.schedule().copies()) BOOST_TEST(c.bytes == 4 * (cast ? 2 : 4));  // 4 elements
        std::vector<HostBuffer> got = r.interpret_shards();
        BOOST_TEST_REQUIRE(got.size() == 3u);
        for (int64_t d = 0; d < 3; ++d)
          for (int64_t row = 0; row < 2; ++row)
            for (int64_t col = 0; col < 2; ++col)
              BOOST_TEST(got[static_cast<size_t>(d)].get(row * 2 + col) ==
                             testing::host_reduced(in, ReduceOp::sum, row * 6 + 2 * d + col),
                         "device " << d << " (" << row << ", " << col << ")");
      }
    }
}

// The runtime (compiled kernels on 3 cpu devices) against the interpreter bit for bit, ring and direct,
// float32 sum; -0.0 survives the allgather (the allreduce of zero-padded shards made it +0.0).
BOOST_AUTO_TEST_CASE(runtime_matches_interpreter) {
  for (const std::string& algo : {std::string("ring"), std::string("all2all")}) {
    ScopedSettings scope(test::matrix_settings(algo, 3));
    std::vector<HostBuffer> in = testing::collective_locals(3, {3, 5}, DType::float32, 7);
    in[1].set(2, -0.0);
    Tensor x = Tensor::from_shards(in, cpu_devices(3), 0);
    for (const std::string& kind : kCollectives) {
      BOOST_TEST_CONTEXT(algo << " " << kind) {
        Tensor r = testing::apply_collective(kind, x, ReduceOp::sum, 1);
        RINGRT_CHECK_RESULT(testing::check_with_interpreter(r, kind, /*bitwise=*/true));
      }
    }
    std::vector<float> g = x.allgather().to_vector<float>();
    BOOST_TEST(std::signbit(g[17]));  // shard 1, element 2
  }
}

namespace {
struct Traffic {
  size_t copies = 0, steps = 0;
  std::map<std::string, int64_t> sent, received;  // bytes per device
  std::set<std::pair<std::string, std::string>> edges;
};

// The copies of lowering and planning t with s: count, bytes per device, edges, and steps (the longest
// chain of copies along the dependencies).
Traffic traffic(const Tensor& t, const AllreduceSettings& s) {
  Lowered low = lower_multi({uop_of(t)}, s);
  ItemPlan plan = plan_schedule(low.roots);
  Traffic out;
  std::vector<size_t> depth(plan.items.size(), 0);
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const ScheduleItem& item = plan.items[i];
    for (size_t d : item.deps) depth[i] = std::max(depth[i], depth[d]);
    if (item.kind != ScheduleItem::Kind::copy) continue;
    depth[i] += 1;
    out.steps = std::max(out.steps, depth[i]);
    ++out.copies;
    std::string from = item.ast.src(0).device().name(), to = item.device.name();
    int64_t bytes = prod(item.ast.shape()) * itemsize(item.ast.dtype());
    out.sent[from] += bytes;
    out.received[to] += bytes;
    out.edges.insert({from, to});
  }
  return out;
}

std::set<std::pair<std::string, std::string>> ring_edges(const std::vector<std::string>& devs) {
  std::set<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < devs.size(); ++i) out.insert({devs[i], devs[(i + 1) % devs.size()]});
  return out;
}

// Each device sends and receives `bytes`.
void expect_even(const Traffic& t, const std::vector<std::string>& devs, int64_t bytes) {
  for (const auto& d : devs) {
    BOOST_TEST((t.sent.count(d) ? t.sent.at(d) : 0) == bytes, d << " sends");
    BOOST_TEST((t.received.count(d) ? t.received.at(d) : 0) == bytes, d << " receives");
  }
}
}  // namespace

// reduce_scatter and allgather over n null devices, float32 buffers of S = 4 n 30 bytes per device (the
// gathered buffer for allgather): ring takes n-1 steps over the ring's edges, direct one step; both make
// n(n-1) copies and move (n-1)/n S per device, half of what the allreduce they replace moved.
BOOST_AUTO_TEST_CASE(reduce_scatter_and_allgather_invariants) {
  for (int n : {3, 4}) {
    auto devs = test::null_devices(n);
    int64_t S = 4 * n * 30;
    Tensor x = Tensor::placeholder({n * n * 30}, DType::float32, devs, 0);
    Tensor part = Tensor::placeholder({n * 30}, DType::float32, devs, 0);
    for (const std::string& algo : {std::string("ring"), std::string("all2all")}) {
      BOOST_TEST_CONTEXT("n " << n << " " << algo) {
        for (const Traffic& t :
             {traffic(x.reduce_scatter(), forced_settings(algo)), traffic(part.allgather(), forced_settings(algo))}) {
          BOOST_TEST(t.copies == static_cast<size_t>(n * (n - 1)));
          BOOST_TEST(t.steps == (algo == "ring" ? static_cast<size_t>(n - 1) : 1u));
          expect_even(t, devs, (n - 1) * S / n);
          if (algo == "ring") BOOST_TEST((t.edges == ring_edges(devs)));
        }
      }
    }
  }
}

// alltoall: n(n-1) copies of S/n, one step; broadcast: direct n-1 copies of S from the root, ring each
// device receiving S once over the ring's edges in n-1 steps per chunk; reduce_to the root's ring: the
// chunks reduce-scattered, then gathered to the root.
BOOST_AUTO_TEST_CASE(alltoall_and_broadcast_invariants) {
  int n = 4;
  auto devs = test::null_devices(n);
  int64_t S = 4 * 128;
  Tensor x = Tensor::placeholder({n * 128}, DType::float32, devs, 0);  // 128 elements per device: 4 chunks of 32
  Traffic a2a = traffic(x.alltoall(), forced_settings("ring"));
  BOOST_TEST(a2a.copies == static_cast<size_t>(n * (n - 1)));
  BOOST_TEST(a2a.steps == 1u);
  expect_even(a2a, devs, (n - 1) * S / n);
  Traffic direct = traffic(x.broadcast(2, devs), forced_settings("all2all"));
  BOOST_TEST(direct.copies == static_cast<size_t>(n - 1));
  BOOST_TEST(direct.sent.at("NULL:2") == (n - 1) * S);
  Traffic ring = traffic(x.broadcast(2, devs), forced_settings("ring"));
  BOOST_TEST(ring.copies == static_cast<size_t>(n * (n - 1)));
  BOOST_TEST(ring.steps == static_cast<size_t>(n - 1));
  auto into_root = ring_edges(devs);
  into_root.erase({"NULL:1", "NULL:2"});  // the root receives nothing
  BOOST_TEST((ring.edges == into_root));
  for (const auto& d : devs) BOOST_TEST((ring.received.count(d) ? ring.received.at(d) : 0) == (d == "NULL:2" ? 0 : S));
  BOOST_TEST(ring.sent.at("NULL:2") == S);
}

// alltoall over 4 devices, a (4, 4 * 32) shard per device cut into rows: every chunk is a contiguous
// range of its shard (its rows), so each copy reads the shard in place (no kernel stages a chunk before
// it) and the plan has one select kernel per device and the one reassembly kernel.
BOOST_AUTO_TEST_CASE(alltoall_copies_read_chunks_in_place) {
  int n = 4;
  auto devs = test::null_devices(n);
  Tensor x = Tensor::placeholder({n * n, n * 32}, DType::float32, devs, 0);
  Lowered low = lower_multi({uop_of(x.alltoall())}, forced_settings("all2all"));
  ItemPlan plan = plan_schedule(low.roots);
  size_t copies = 0, kernels = 0;
  for (const ScheduleItem& item : plan.items) {
    if (item.kind == ScheduleItem::Kind::copy) {
      ++copies;
      BOOST_TEST(item.deps.empty(), "a copy waits for " << item.deps.size() << " items");
    } else {
      ++kernels;
    }
  }
  BOOST_TEST(copies == static_cast<size_t>(n * (n - 1)));
  BOOST_TEST(kernels <= static_cast<size_t>(n + 1));
}

// An allreduce whose result each device only reads its own part of (x.sum({0}) sharded back onto the
// devices) is lowered as a reduce-scatter: n(n-1) copies of numel/n instead of the allreduce's 2n(n-1),
// DEBUG=2 names it, and the values are the sum's.
BOOST_AUTO_TEST_CASE(allreduce_read_per_device_is_a_reduce_scatter) {
  AllreduceSettings s = forced_settings("ring");
  ScopedSettings scope(s);
  std::vector<HostBuffer> in = testing::collective_locals(3, {1, 12}, DType::int32, 3);
  Tensor x = Tensor::from_shards(in, cpu_devices(3), 0);
  Tensor y = x.sum({0}).shard(cpu_devices(3), 0);
  std::ostringstream captured;
  std::vector<std::string> algos;
  {
    AllreduceSettings debug = s;
    debug.debug = 2;
    ScopedSettings loud(debug);
    std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
    algos = y.algorithms();
    std::cerr.rdbuf(old);
  }
  BOOST_TEST(algos == std::vector<std::string>{"ring"});
  BOOST_TEST(captured.str() == "RING REDUCE_SCATTER 3x12 | int32\n");
  Traffic t = traffic(y, s);
  BOOST_TEST(t.copies == 6u);
  expect_even(t, cpu_devices(3), 2 * 4 * 4);
  std::vector<int32_t> got = y.to_vector<int32_t>();
  for (int64_t e = 0; e < 12; ++e)
    BOOST_TEST(got[static_cast<size_t>(e)] == testing::host_reduced(in, ReduceOp::sum, e));
}

// Bad input: a clear error naming the op, the shapes and the devices.
BOOST_AUTO_TEST_CASE(bad_input_is_a_clear_error) {
  auto devs = cpu_devices(3);
  Tensor one = Tensor::full({6, 2}, 1.0);
  Tensor replicated = Tensor::placeholder({6, 2}, DType::float32, devs, std::nullopt);
  Tensor sharded = Tensor::placeholder({12, 2}, DType::float32, devs, 0);
  BOOST_CHECK_EXCEPTION(replicated.reduce_scatter(), ShapeError,
                        test::message_has({"reduce_scatter", "not sharded", "(6, 2)", "CPU:0, CPU:1, CPU:2"}));
  BOOST_CHECK_EXCEPTION(one.reduce_scatter(), DeviceError, test::message_has({"reduce_scatter", "CPU:0", "(6, 2)"}));
  BOOST_CHECK_EXCEPTION(sharded.reduce_scatter(ReduceOp::sum, 1), ShapeError,
                        test::message_has({"reduce_scatter", "(4, 2)", "multiple of 3", "CPU:2"}));
  BOOST_CHECK_EXCEPTION(sharded.reduce_scatter(static_cast<ReduceOp>(4)), ShapeError,
                        test::message_has({"reduce_scatter", "4", "not a ReduceOp"}));
  BOOST_CHECK_EXCEPTION(sharded.broadcast(3, devs), DeviceError,
                        test::message_has({"broadcast", "root 3", "CPU:0, CPU:1, CPU:2"}));
  BOOST_CHECK_EXCEPTION(one.broadcast(1, devs), DeviceError, test::message_has({"broadcast", "CPU:0", "root CPU:1"}));
  BOOST_CHECK_EXCEPTION(sharded.reduce_to(-1), DeviceError, test::message_has({"reduce_to", "root -1"}));
  BOOST_CHECK_EXCEPTION(replicated.alltoall(), ShapeError, test::message_has({"alltoall", "not sharded"}));
  BOOST_CHECK_EXCEPTION(Tensor::placeholder({6, 2}, DType::float32, devs, 0).alltoall(), ShapeError,
                        test::message_has({"alltoall", "local length 2", "multiple of 3"}));
}

namespace {
// G groups of m cpu devices (n = G m): consecutive devices share a group, or (interleaved) device i is
// in group i mod G; with the ring or the direct form forced for every step.
AllreduceSettings grouped(int ngroups, int m, bool interleaved, const std::string& algo) {
  AllreduceSettings s = forced_settings(algo);
  auto devs = cpu_devices(ngroups * m);
  for (int i = 0; i < ngroups * m; ++i) s.groups[devs[static_cast<size_t>(i)]] = interleaved ? i % ngroups : i / m;
  return s;
}

}  // namespace

// Over device groups (2x2, 2x3, 4x2; consecutive and interleaved groups) reduce_scatter and allgather take
// the hierarchical form, ring and direct, float32 sum and int32 max, 1 or 3 elements per chunk or shard
// (odd, fewer than the devices): the interpreter's values equal host arithmetic.
BOOST_AUTO_TEST_CASE(hierarchical_values_match_host_arithmetic) {
  struct Layout {
    int ngroups, m;
    bool interleaved;
  };
  int point = 0;
  for (Layout l : {Layout{2, 2, false}, Layout{2, 3, true}, Layout{4, 2, false}})
    for (const std::string& kind : {std::string("reduce_scatter"), std::string("allgather")})
      for (const std::string& algo : {std::string("ring"), std::string("all2all")}) {
        ++point;
        int n = l.ngroups * l.m;
        DType dtype = point % 2 ? DType::float32 : DType::int32;
        ReduceOp op = dtype == DType::float32 ? ReduceOp::sum : ReduceOp::max;
        int64_t each = point % 3 == 0 ? 3 : 1, rows = kind == "reduce_scatter" ? n * each : each;
        BOOST_TEST_CONTEXT(l.ngroups << "x" << l.m << (l.interleaved ? " interleaved " : " ") << kind << " " << algo
                                     << " " << dtype_name(dtype) << " rows " << rows) {
          ScopedSettings scope(grouped(l.ngroups, l.m, l.interleaved, algo));
          std::vector<HostBuffer> in = testing::collective_locals(n, {rows, 1}, dtype, point);
          Tensor r = testing::apply_collective(kind, Tensor::from_shards(in, cpu_devices(n), 0), op, 0);
          BOOST_TEST(r.algorithms() == std::vector<std::string>{"hierarchical"});
          expect_values(r, kind, in, op, 0);
        }
      }
}

// The runtime (compiled kernels, 2 groups of 2 cpu devices, ring) against the interpreter bit for bit;
// -0.0 survives the hierarchical allgather (selected into place, never summed).
BOOST_AUTO_TEST_CASE(hierarchical_runtime_matches_interpreter) {
  ScopedSettings scope(grouped(2, 2, false, "ring"));
  std::vector<HostBuffer> in = testing::collective_locals(4, {4, 3}, DType::float32, 5);
  in[2].set(1, -0.0);
  Tensor x = Tensor::from_shards(in, cpu_devices(4), 0);
  for (const std::string& kind : {std::string("reduce_scatter"), std::string("allgather")}) {
    BOOST_TEST_CONTEXT(kind) {
      Tensor r = testing::apply_collective(kind, x, ReduceOp::sum, 0);
      RINGRT_CHECK_RESULT(testing::check_with_interpreter(r, kind, /*bitwise=*/true));
    }
  }
  std::vector<float> g = x.allgather().to_vector<float>();
  BOOST_TEST(std::signbit(g[2 * 12 + 1]));  // shard 2, element 1
}

// The hierarchical reduce-scatter's bytes (S per device, G groups of m): each device sends and receives
// (m-1)/m S inside its group in m-1 copies of S/m, and (G-1)/G S/m across groups in G-1 copies of S/n;
// the allgather (S the gathered buffer) the same. Ring and direct, 2x2 and 2x3 (consecutive groups).
BOOST_AUTO_TEST_CASE(hierarchical_bytes_inside_and_across_groups) {
  for (auto [ngroups, m] : {std::pair{2, 2}, std::pair{2, 3}})
    for (const std::string& algo : {std::string("ring"), std::string("all2all")}) {
      int n = ngroups * m;
      int64_t c = 5, S = 4 * n * c;  // float32, 5 elements per final chunk
      AllreduceSettings s = grouped(ngroups, m, false, algo);
      ScopedSettings scope(s);
      auto devs = cpu_devices(n);
      Tensor x = Tensor::placeholder({n * n * c}, DType::float32, devs, 0);
      Tensor part = Tensor::placeholder({n * c}, DType::float32, devs, 0);
      for (const auto& [kind, r] :
           {std::pair{"reduce_scatter", x.reduce_scatter()}, std::pair{"allgather", part.allgather()}}) {
        BOOST_TEST_CONTEXT(ngroups << "x" << m << " " << algo << " " << kind) {
          Schedule sched = r.schedule();
          BOOST_TEST(sched.algorithms == std::vector<std::string>{"hierarchical"});
          std::map<std::string, int64_t> sent[2], received[2];  // [0] inside its group, [1] across groups
          size_t count[2] = {0, 0};
          for (const CopyItem& cp : sched.copies()) {
            int across = s.groups.at(cp.src) != s.groups.at(cp.dst);
            sent[across][cp.src] += cp.bytes;
            received[across][cp.dst] += cp.bytes;
            ++count[across];
            BOOST_TEST(cp.bytes == (across ? S / n : S / m));
          }
          BOOST_TEST(count[0] == static_cast<size_t>(ngroups * m * (m - 1)));
          BOOST_TEST(count[1] == static_cast<size_t>(m * ngroups * (ngroups - 1)));
          for (const auto& d : devs)
            for (int a : {0, 1}) {
              int64_t want = a ? (ngroups - 1) * S / (ngroups * m) : (m - 1) * S / m;
              BOOST_TEST(sent[a][d] == want, d << (a ? " across" : " inside"));
              BOOST_TEST(received[a][d] == want, d << (a ? " across" : " inside"));
            }
        }
      }
    }
}

// The hierarchical ring reduce-scatter reads each device's chunk of its group's buffers in place: no
// kernel makes a device's own range contiguous first (settled_copy, rewrite/rules/allreduce_blocks.hpp).
// 2 groups of 2: 13 kernels (21 when the rules' SHRINK-into-MSTACK made each range contiguous, as `ringrt
// schedule configs/hierarchical.yaml --count 7 --set experiment.collective=reduce_scatter --set
// allreduce.ring=2` showed before).
BOOST_AUTO_TEST_CASE(hierarchical_ring_reduce_scatter_reads_its_chunks_in_place) {
  ScopedSettings scope(grouped(2, 2, false, "ring"));
  Tensor x = Tensor::placeholder({4 * 4 * 5}, DType::float32, cpu_devices(4), 0);
  Schedule sched = x.reduce_scatter().schedule();
  BOOST_TEST(sched.algorithms == std::vector<std::string>{"hierarchical"});
  BOOST_TEST_MESSAGE("kernels " << sched.kernels() << ", copies " << sched.copies().size());
  BOOST_TEST(sched.kernels() == 13);
}

// Groups of unequal size (3 + 1) and groups that leave a device out: reduce_scatter and allgather are
// the hierarchical allreduce (as before), with the right values, and DEBUG=2 says why.
BOOST_AUTO_TEST_CASE(unfit_groups_keep_the_hierarchical_allreduce) {
  auto devs = cpu_devices(4);
  AllreduceSettings unequal = forced_settings("ring"), partial = forced_settings("ring");
  unequal.groups = {{"CPU:0", 0}, {"CPU:1", 0}, {"CPU:2", 0}, {"CPU:3", 1}};
  partial.groups = {{"CPU:0", 0}, {"CPU:1", 0}, {"CPU:2", 1}};
  for (const auto& [s, why] :
       {std::pair{unequal, "groups of unequal size"}, std::pair{partial, "groups do not cover the tuple"}})
    for (const std::string& kind : {std::string("reduce_scatter"), std::string("allgather")}) {
      BOOST_TEST_CONTEXT(kind << " " << why) {
        std::vector<HostBuffer> in =
            testing::collective_locals(4, {kind == "reduce_scatter" ? 4 : 1, 3}, DType::int32, 9);
        Tensor r = testing::apply_collective(kind, Tensor::from_shards(in, devs, 0), ReduceOp::sum, 0);
        AllreduceSettings debug = s;
        debug.debug = 2;
        std::ostringstream captured;
        std::vector<std::string> algos;
        {
          ScopedSettings loud(debug);
          std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
          algos = r.algorithms();
          std::cerr.rdbuf(old);
        }
        BOOST_TEST(algos == std::vector<std::string>{"hierarchical"});
        BOOST_TEST(
            captured.str().find(" | " + kind + " as the hierarchical allreduce: " + why + "\n") != std::string::npos,
            captured.str());
        ScopedSettings scope(s);
        expect_values(r, kind, in, ReduceOp::sum, 0);
      }
    }
}

// With the cast setting off, the hierarchical reduce-scatter reduces bfloat16 as float32 (every copy
// carries 4-byte elements: 6 per intra piece, 3 per inter chunk) and casts back: 2 groups of 2 devices.
BOOST_AUTO_TEST_CASE(hierarchical_reduce_scatter_widened) {
  AllreduceSettings s = grouped(2, 2, false, "all2all");
  s.cast = false;
  ScopedSettings scope(s);
  std::vector<HostBuffer> in = testing::collective_locals(4, {4, 3}, DType::bfloat16, 2);
  Tensor r = Tensor::from_shards(in, cpu_devices(4), 0).reduce_scatter(ReduceOp::sum, 0);
  BOOST_TEST(r.algorithms() == std::vector<std::string>{"hierarchical"});
  for (const CopyItem& c : r.schedule().copies())
    BOOST_TEST(c.bytes == 4 * (s.groups.at(c.src) == s.groups.at(c.dst) ? 6 : 3));
  BOOST_TEST(r.dtype() == DType::bfloat16);
  expect_values(r, "reduce_scatter", in, ReduceOp::sum, 0);
}

BOOST_AUTO_TEST_SUITE_END()
