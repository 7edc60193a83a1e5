// The allreduce lowering across device counts, algorithms, dtypes, ops and sizes (the matrix of
// test/support/allreduce_matrix.hpp), checked against host arithmetic (testing/checks.hpp) and the unsharded
// computation,
// plus the shape of each algorithm's schedule (copies, their order, node counts; docs/architecture.md).
#include <fmt/format.h>

#include <algorithm>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "core/errors.hpp"
#include "rewrite/lower/lower.hpp"
#include "rewrite/plan/schedule.hpp"
#include "rewrite/rules/allreduce_blocks.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/api/internal.hpp"
#include "test/support/allreduce_matrix.hpp"
#include "test/support/null_device.hpp"
#include "testing/checks.hpp"

BOOST_AUTO_TEST_SUITE(test_allreduce)

namespace bdata = boost::unit_test::data;
using namespace ringrt;

namespace {

// two groups for hierarchical: the first half and the rest
AllreduceSettings settings_for(const std::string& algo, int ndev) { return test::matrix_settings(algo, ndev); }

std::string expected_algorithm(const std::string& algo, int ndev) {
  if (algo == "hierarchical") return ndev >= 3 ? "hierarchical" : "naive";
  return algo;
}

// Host data for a (ndev, numel) tensor: values whose reductions are exact except float32 sums.
HostBuffer make_data(DType dtype, int ndev, int64_t numel, uint32_t seed) {
  std::mt19937 rng(seed);
  HostBuffer b(dtype, {ndev, numel});
  for (int64_t i = 0; i < b.numel(); ++i) {
    if (dtype == DType::int32) {
      b.set_int(i, std::uniform_int_distribution<int>(-1000, 1000)(rng));
    } else if (dtype == DType::float32) {
      b.set(i, std::uniform_real_distribution<double>(-1.0, 1.0)(rng));
    } else {  // 16-bit floats: small integers, so every partial sum is exact
      b.set(i, std::uniform_int_distribution<int>(-4, 4)(rng));
    }
  }
  return b;
}

// The rows of a (ndev, numel) buffer: device d's local value, a (1, numel) row.
std::vector<HostBuffer> rows_of(const HostBuffer& x) {
  int64_t ndev = x.shape[0], numel = x.shape[1];
  size_t row = static_cast<size_t>(numel * itemsize(x.dtype));
  std::vector<HostBuffer> out;
  for (int64_t d = 0; d < ndev; ++d) {
    HostBuffer b(x.dtype, {1, numel});
    std::copy_n(x.bytes.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(d) * row), row, b.bytes.begin());
    out.push_back(std::move(b));
  }
  return out;
}

const std::vector<int>& kDevices = testing::kDeviceCounts;
const std::vector<std::string>& kAlgorithms = testing::kAlgorithms;

}  // namespace

// Every (ndev, algorithm) pair: dtypes x ops x sizes (1, 3, ndev*32, ndev*32+5, 100, 257).
BOOST_DATA_TEST_CASE(matrix, bdata::make(kDevices) * bdata::make(kAlgorithms), ndev, algo) {
  ScopedSettings scope(settings_for(algo, ndev));
  auto devs = cpu_devices(ndev);
  std::vector<int64_t> sizes = testing::counts_for(ndev);
  uint32_t seed = 1;
  for (DType dtype : testing::kDTypes) {
    for (ReduceOp op : testing::kOps) {
      for (int64_t numel : sizes) {
        BOOST_TEST_CONTEXT("ndev " << ndev << " " << algo << " " << dtype_name(dtype) << " " << reduce_op_name(op)
                                   << " numel " << numel) {
          HostBuffer data = make_data(dtype, ndev, numel, seed++);
          Tensor x = Tensor::from_host(data).shard(devs, 0);
          x.realize();
          Tensor r = op == ReduceOp::sum ? x.sum({0}) : x.max({0});
          BOOST_TEST(r.schedule().algorithms == std::vector<std::string>{expected_algorithm(algo, ndev)});
          // the unsharded computation on one device, by the interpreter
          Tensor single = Tensor::from_host(data);
          HostBuffer alone = (op == ReduceOp::sum ? single.sum({0}) : single.max({0})).interpret();
          // the lowered per-device graph, by the interpreter
          std::vector<std::pair<std::string, HostBuffer>> got = testing::interpreter_values(r);
          BOOST_TEST_REQUIRE(got.size() == static_cast<size_t>(ndev));
          BOOST_TEST((got[0].second.shape == Shape{numel}));
          for (const auto& [dev, rep] : got) BOOST_TEST((rep.bytes == got[0].second.bytes), dev);  // bit for bit
          // both against host arithmetic, under the project's rules (runtime/api/reference.hpp): float32 sums
          // within ndev * 2^-23 * sum |x|, the rest exactly
          got.emplace_back("one device, unsharded", alone);
          RINGRT_CHECK_RESULT(testing::check_values(got, r.devices(), testing::reduction_expected(rows_of(data), op),
                                                    testing::describe(r, "allreduce")));
        }
      }
    }
  }
}

// The runtime (compiled kernels on the cpu devices) against the interpreter, bit for bit per device.
BOOST_DATA_TEST_CASE(runtime_matches_interpreter,
                     bdata::make(std::vector<int>{2, 3, 4, 5, 8}) * bdata::make(kAlgorithms), ndev, algo) {
  ScopedSettings scope(settings_for(algo, ndev));
  auto devs = cpu_devices(ndev);
  int64_t numel = 32 * ndev + 5;
  uint32_t seed = 100;
  for (DType dtype : {DType::float32, DType::int32}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max}) {
      BOOST_TEST_CONTEXT(dtype_name(dtype) << " " << reduce_op_name(op)) {
        Tensor x = Tensor::from_host(make_data(dtype, ndev, numel, seed++)).shard(devs, 0);
        x.realize();
        Tensor r = op == ReduceOp::sum ? x.sum({0}) : x.max({0});
        RINGRT_CHECK_RESULT(testing::check_with_interpreter(r, "allreduce", /*bitwise=*/true));
      }
    }
  }
}

namespace {
// Copies of realizing r, whose sharded input was realized before.
std::vector<CopyItem> allreduce_copies(const Tensor& r) { return r.schedule().copies(); }

Tensor sharded_ones(int ndev, int64_t cols) {
  Tensor x = Tensor::full({ndev, cols}, 1.0).contiguous().shard(cpu_devices(ndev), 0);
  x.realize();
  return x;
}

// The same on null devices (test/support/null_device.hpp), for tests that only inspect the allreduce's
// schedule: realizing the input compiles nothing (its values are meaningless).
Tensor null_sharded_ones(int ndev, int64_t cols) {
  Tensor x = Tensor::full({ndev, cols}, 1.0).contiguous().shard(test::null_devices(ndev), 0);
  x.realize();
  return x;
}

// Two groups, {NULL:0, NULL:1} and {NULL:2, NULL:3}.
std::map<std::string, int> null_pairs() { return {{"NULL:0", 0}, {"NULL:1", 0}, {"NULL:2", 1}, {"NULL:3", 1}}; }
}  // namespace

BOOST_AUTO_TEST_CASE(ring_copies_follow_the_ring_edges) {
  AllreduceSettings s;
  s.ring = 2;
  ScopedSettings scope(s);
  auto copies = allreduce_copies(null_sharded_ones(4, 400).sum({0}));
  BOOST_TEST(copies.size() == 24u);
  std::set<std::pair<std::string, std::string>> edges;
  for (const auto& c : copies) edges.insert({c.src, c.dst});
  std::set<std::pair<std::string, std::string>> ring{
      {"NULL:0", "NULL:1"}, {"NULL:1", "NULL:2"}, {"NULL:2", "NULL:3"}, {"NULL:3", "NULL:0"}};
  BOOST_TEST((edges == ring));
  // reduce-scatter and allgather each move every chunk n-1 times: 400 elements * 4 B * 3 * 2 in all
  int64_t bytes = 0;
  for (const auto& c : copies) bytes += c.bytes;
  BOOST_TEST(bytes == 400 * 4 * 3 * 2);
}

// Dependencies are the items whose writes the reader's bytes overlap: a ring copy waits for the one
// item that wrote the chunk it forwards (plus at most one more: the value it is combined with), never
// for every earlier store into the same scratch buffer, so the edges grow linearly with the copies.
BOOST_DATA_TEST_CASE(ring_copies_wait_for_the_writer_of_their_bytes, bdata::make({3, 8, 16}), n) {
  AllreduceSettings s;
  s.ring = 2;
  ScopedSettings scope(s);
  Tensor y = Tensor::placeholder({n, 32 * n}, DType::float32, test::null_devices(n), 0).sum({0});
  Lowered low = lower_multi({uop_of(y)}, s);
  ItemPlan plan = plan_schedule(low.roots);
  BOOST_TEST(plan.copies() == static_cast<size_t>(2 * n * (n - 1)));
  size_t edges = 0, most = 0;
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const ScheduleItem& item = plan.items[i];
    for (size_t d : item.deps) BOOST_TEST(d < i);
    if (item.kind == ScheduleItem::Kind::copy) most = std::max(most, item.deps.size());
    edges += item.deps.size();
  }
  BOOST_TEST(most <= 2u);
  // each copy at most 2, each per-chunk kernel a few, the reassembly one per chunk's last store
  BOOST_TEST(edges <= 3 * plan.items.size());
}

BOOST_AUTO_TEST_CASE(all2all_has_24_copies) {
  AllreduceSettings s;
  s.all2all = 2;
  ScopedSettings scope(s);
  Tensor r = sharded_ones(4, 400).sum({0}) * 2.0;
  auto copies = allreduce_copies(r.contiguous());
  BOOST_TEST(copies.size() == 24u);
  // the diff's bound: 22 kernels (tinygrad materializes each chunk before copying it; ringrt copies
  // ranges of the reduced buffer in place, so it needs 1 + 4 + 1, and 4 + 1 when the local sum over
  // the shard's axis of size 1 is skipped: RINGRT_ALLREDUCE_IN_PLACE, on unless set to 0)
  BOOST_TEST(r.contiguous().schedule().kernels() <= 22);
  BOOST_TEST(r.contiguous().schedule().kernels() == (ringrt::allreduce_in_place() ? 5 : 6));
  for (const auto& c : copies) BOOST_TEST(c.src != c.dst);
  std::vector<float> v = r.to_vector<float>();
  BOOST_TEST(v.size() == 400u);
  BOOST_TEST(std::all_of(v.begin(), v.end(), [](float f) { return f == 8.0f; }));
}

BOOST_AUTO_TEST_CASE(naive_has_12_copies_none_to_self) {
  AllreduceSettings s;
  s.ring = 0;
  ScopedSettings scope(s);
  Tensor r = null_sharded_ones(4, 4096).sum({0});
  auto copies = allreduce_copies(r);
  BOOST_TEST(copies.size() == 12u);
  BOOST_TEST(r.schedule().kernels() <= 2);
  std::map<std::pair<std::string, std::string>, int> pairs;
  for (const auto& c : copies) {
    BOOST_TEST(c.src != c.dst);
    ++pairs[{c.src, c.dst}];
  }
  BOOST_TEST(pairs.size() == 12u);  // every ordered pair of distinct devices once
}

BOOST_AUTO_TEST_CASE(hierarchical_routes_through_leaders) {
  // groups {D0, D1}, {D2, D3}, no leaders named: D0 and D2 lead (leader first, then by name).
  // inner reduce: D1->D0, D3->D2; leaders (2 devices, naive): D2->D0, D0->D2; broadcast: D0->D1, D2->D3.
  AllreduceSettings s;
  s.groups = {{"CPU:0", 0}, {"CPU:1", 0}, {"CPU:2", 1}, {"CPU:3", 1}};
  s.tuning = "off";  // tinygrad's rule for the leaders (naive on 2), not this machine's measured cost figures
  ScopedSettings scope(s);
  Tensor r = sharded_ones(4, 400).sum({0});
  BOOST_TEST(r.schedule().algorithms == std::vector<std::string>{"hierarchical"});
  std::multiset<std::pair<std::string, std::string>> got,
      want{{"CPU:1", "CPU:0"}, {"CPU:3", "CPU:2"}, {"CPU:2", "CPU:0"},
           {"CPU:0", "CPU:2"}, {"CPU:0", "CPU:1"}, {"CPU:2", "CPU:3"}};
  for (const auto& c : allreduce_copies(r)) got.insert({c.src, c.dst});
  BOOST_TEST((got == want));
  // each group's reduce reads the shards in place (rewrite/rules/allreduce.cpp copy_source: a stack of one
  // buffer's device values), not a contiguous copy of them first
  BOOST_TEST(r.schedule().kernels() == 5);
  std::vector<float> v = r.to_vector<float>();
  BOOST_TEST(std::all_of(v.begin(), v.end(), [](float f) { return f == 4.0f; }));
}

BOOST_AUTO_TEST_CASE(hierarchical_with_named_leaders) {
  // leaders D1 and D3: inner D0->D1, D2->D3; leaders D3->D1, D1->D3; broadcast D1->D0, D3->D2.
  AllreduceSettings s;
  s.groups = null_pairs();
  s.reduce_leaders = {"NULL:1", "NULL:3"};
  ScopedSettings scope(s);
  Tensor r = null_sharded_ones(4, 400).sum({0});
  std::multiset<std::pair<std::string, std::string>> got,
      want{{"NULL:0", "NULL:1"}, {"NULL:2", "NULL:3"}, {"NULL:3", "NULL:1"},
           {"NULL:1", "NULL:3"}, {"NULL:1", "NULL:0"}, {"NULL:3", "NULL:2"}};
  for (const auto& c : allreduce_copies(r)) got.insert({c.src, c.dst});
  BOOST_TEST((got == want));
}

BOOST_AUTO_TEST_CASE(threshold_picks_the_algorithm) {
  // level 1: ring only when ndev > 2 and numel > threshold; all2all wins over ring
  auto algo = [](int ndev, int64_t cols, AllreduceSettings s) {
    ScopedSettings scope(s);
    return null_sharded_ones(ndev, cols).sum({0}).schedule().algorithms.at(0);
  };
  AllreduceSettings s;
  s.ring_threshold = 100;
  BOOST_TEST(algo(4, 100, s) == "naive");
  BOOST_TEST(algo(4, 101, s) == "ring");
  BOOST_TEST(algo(2, 1000, s) == "naive");
  s.all2all = 1;
  BOOST_TEST(algo(4, 101, s) == "all2all");
  s.ring = 0;
  s.all2all = 0;
  BOOST_TEST(algo(4, 101, s) == "naive");
}

BOOST_AUTO_TEST_CASE(chunk_plan) {
  // factor 16 for 400 over 4: 25 units -> 7, 6, 6, 6 units
  auto c = allreduce_chunks(400, 4);
  std::vector<std::pair<int64_t, int64_t>> want{{0, 112}, {112, 208}, {208, 304}, {304, 400}};
  BOOST_TEST((c == want));
  // numel 1 over 2: factor 1 -> [1, 0]
  auto one = allreduce_chunks(1, 2);
  BOOST_TEST((one == std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 1}}));
  // 15 over 5: factor 1, 3 each; 16 over 8: factor 16 -> [16, 0, ...]
  BOOST_TEST((allreduce_chunks(15, 5)[4] == std::pair<int64_t, int64_t>{12, 15}));
  BOOST_TEST((allreduce_chunks(16, 8)[0] == std::pair<int64_t, int64_t>{0, 16}));
  BOOST_TEST((allreduce_chunks(16, 8)[1] == std::pair<int64_t, int64_t>{16, 16}));
}

BOOST_AUTO_TEST_CASE(cast_setting_promotes_16_bit_copies) {
  for (bool cast : {true, false}) {
    AllreduceSettings s;
    s.ring = 0;
    s.cast = cast;
    ScopedSettings scope(s);
    Tensor x = Tensor::full({2, 64}, 1.5, DType::float16).contiguous().shard(cpu_devices(2), 0);
    x.realize();
    Tensor r = x.sum({0});
    for (const auto& c : r.schedule().copies()) BOOST_TEST(c.bytes == 64 * (cast ? 2 : 4));
    BOOST_TEST(r.dtype() == DType::float16);
    std::vector<float> v = r.to_vector<float>();
    BOOST_TEST(std::all_of(v.begin(), v.end(), [](float f) { return f == 3.0f; }));
  }
}

BOOST_AUTO_TEST_CASE(environment_overrides_and_rejects_bad_values) {
  setenv("RING", "2", 1);
  BOOST_TEST(current_settings().ring == 2);
  setenv("RING", "abc", 1);
  BOOST_CHECK_EXCEPTION(current_settings(), ConfigError,
                        [](const ConfigError& e) { return std::string(e.what()).find("RING") != std::string::npos; });
  setenv("RING", "3", 1);
  BOOST_CHECK_THROW(current_settings(), ConfigError);
  unsetenv("RING");
  setenv("REDUCE_LEADERS", "CPU:0, CPU:2", 1);
  BOOST_TEST((current_settings().reduce_leaders == std::vector<std::string>{"CPU:0", "CPU:2"}));
  for (const char* bad : {"abc", "9", "CPU:", ":1", "CPU:x"}) {
    setenv("REDUCE_LEADERS", bad, 1);
    BOOST_CHECK_EXCEPTION(current_settings(), ConfigError, [](const ConfigError& e) {
      return std::string(e.what()).find("REDUCE_LEADERS") != std::string::npos;
    });
  }
  unsetenv("REDUCE_LEADERS");
  setenv("RINGRT_HIERARCHICAL", "Leader", 1);
  BOOST_CHECK_EXCEPTION(current_settings(), ConfigError, [](const ConfigError& e) {
    return std::string(e.what()) ==
           "environment variable RINGRT_HIERARCHICAL: key 'allreduce.hierarchical': "
           "expected leader or reduce_scatter, got 'Leader'";
  });
  setenv("RINGRT_HIERARCHICAL", "reduce_scatter", 1);
  BOOST_TEST(current_settings().hierarchical == "reduce_scatter");
  unsetenv("RINGRT_HIERARCHICAL");
  setenv("RING_ALLREDUCE_THRESHOLD", "-5", 1);
  BOOST_CHECK_THROW(current_settings(), ConfigError);
  unsetenv("RING_ALLREDUCE_THRESHOLD");
}

BOOST_AUTO_TEST_CASE(debug_2_prints_one_line_per_allreduce) {
  AllreduceSettings s;
  s.ring = 2;
  s.debug = 2;
  ScopedSettings scope(s);
  Tensor x = null_sharded_ones(4, 400);
  std::ostringstream captured;
  std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
  Tensor r = x.sum({0});
  r.schedule();
  std::cerr.rdbuf(old);
  BOOST_TEST(captured.str() == "RING ALLREDUCE 4x400 | float32\n");
}

namespace {
// allreduce.hierarchical = reduce_scatter over m groups of k consecutive devices PREFIX:0.. (group i / k).
AllreduceSettings rs_groups(int m, int k, const std::string& prefix) {
  AllreduceSettings s;
  s.hierarchical = "reduce_scatter";
  for (int i = 0; i < m * k; ++i) s.groups[prefix + ":" + std::to_string(i)] = i / k;
  return s;
}

// Every replica (the devices' values, in device order) equals the host reduction of data under the project's
// rules (testing/checks.hpp: float32 sums within the bound of n terms, the rest exactly).
void expect_reduced(const std::vector<HostBuffer>& replicas, const HostBuffer& data, ReduceOp op) {
  std::vector<std::pair<std::string, HostBuffer>> got;
  for (size_t d = 0; d < replicas.size(); ++d) got.emplace_back("device " + std::to_string(d), replicas[d]);
  RINGRT_CHECK_RESULT(testing::check_values(got, {}, testing::reduction_expected(rows_of(data), op),
                                            {"allreduce", "hierarchical_rs", std::string(dtype_name(data.dtype)), ""}));
}
}  // namespace

// The reduce_scatter form on 2 groups of k cpu devices: sum and max, float32 and int32, an odd numel
// below the device count (empty chunks) and one above; the lowered graph by the interpreter against
// host arithmetic on every device and, for one destination device (an ALLREDUCE onto CPU:1), there;
// the runtime's compiled kernels against the interpreter bit for bit for the small size (2 x 2 float32 sum, 2 x 3 int32
// max).
BOOST_DATA_TEST_CASE(hierarchical_rs_values, bdata::make({2, 3}), k) {
  int ndev = 2 * k;
  ScopedSettings scope(rs_groups(2, k, "CPU"));
  auto devs = cpu_devices(ndev);
  uint32_t seed = 200;
  for (int64_t numel : {int64_t{ndev - 1}, int64_t{37}})
    for (DType dtype : {DType::float32, DType::int32})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::max}) {
        BOOST_TEST_CONTEXT("numel " << numel << " " << dtype_name(dtype) << " " << reduce_op_name(op)) {
          HostBuffer data = make_data(dtype, ndev, numel, seed++);
          Tensor x = Tensor::from_host(data).shard(devs, 0);
          x.realize();
          Tensor r = op == ReduceOp::sum ? x.sum({0}) : x.max({0});
          BOOST_TEST(r.algorithms() == std::vector<std::string>{"hierarchical_rs"});
          std::vector<HostBuffer> replicas = r.interpret_shards();
          BOOST_TEST_REQUIRE(replicas.size() == static_cast<size_t>(ndev));
          expect_reduced(replicas, data, op);
          // one destination device
          Lowered one = lower_multi({uop_of(x).src(0).allreduce(ir_op(op), DeviceSpec("CPU:1"))}, current_settings());
          BOOST_TEST(one.algorithms == std::vector<Algorithm>{Algorithm::hierarchical_rs});
          BOOST_TEST((one.roots[0].device() == DeviceSpec("CPU:1")));
          expect_reduced(interpret_buffers(one.roots[0]), data, op);
          // few kernels to compile: k = 2 float32 sum, k = 3 int32 max
          bool run =
              k == 2 ? dtype == DType::float32 && op == ReduceOp::sum : dtype == DType::int32 && op == ReduceOp::max;
          if (numel != ndev - 1 || !run) continue;
          r.realize();
          std::vector<Tensor> got = r.shards();
          for (size_t d = 0; d < got.size(); ++d)
            BOOST_TEST((got[d].host().bytes == replicas[d].bytes), "device " << d);
        }
      }
}

// The plan of the reduce_scatter form: 2 groups of 3 (leaders NULL:2 and NULL:4 first, so the local
// indices pair NULL:2-NULL:4, NULL:0-NULL:3, NULL:1-NULL:5), 600 elements in chunks of 200. Copies
// inside a group: reduce-scatter and allgather, k(k-1) each per group, of one chunk; across groups: one
// 2-device (naive) allreduce per chunk, between devices of the same local index, of one chunk.
BOOST_AUTO_TEST_CASE(hierarchical_rs_copies_join_local_indices) {
  AllreduceSettings s = rs_groups(2, 3, "NULL");
  s.reduce_leaders = {"NULL:2", "NULL:4"};
  ScopedSettings scope(s);
  int intra = 0;
  std::set<std::pair<std::string, std::string>> cross;
  for (const auto& c : allreduce_copies(null_sharded_ones(6, 600).sum({0}))) {
    BOOST_TEST(c.bytes == 200 * 4, c.src << " -> " << c.dst);  // numel / k, never numel
    if (s.groups.at(c.src) == s.groups.at(c.dst)) {
      ++intra;
    } else {
      BOOST_TEST(cross.insert({c.src, c.dst}).second, "a second copy " << c.src << " -> " << c.dst);
    }
  }
  BOOST_TEST(intra == 2 * (6 + 6));
  std::set<std::pair<std::string, std::string>> want{{"NULL:2", "NULL:4"}, {"NULL:4", "NULL:2"}, {"NULL:0", "NULL:3"},
                                                     {"NULL:3", "NULL:0"}, {"NULL:1", "NULL:5"}, {"NULL:5", "NULL:1"}};
  BOOST_TEST((cross == want));
}

// Groups of unequal size ({CPU:0, CPU:1}, {CPU:2}) take the leader form, which DEBUG=2 names, with the
// right values; a bad value of the setting from code is a ConfigError naming the key.
BOOST_AUTO_TEST_CASE(hierarchical_rs_falls_back_on_unequal_groups) {
  AllreduceSettings s;
  s.hierarchical = "reduce_scatter";
  s.groups = {{"CPU:0", 0}, {"CPU:1", 0}, {"CPU:2", 1}};
  s.debug = 2;
  ScopedSettings scope(s);
  HostBuffer data = make_data(DType::int32, 3, 5, 300);
  Tensor x = Tensor::from_host(data).shard(cpu_devices(3), 0);
  x.realize();
  Tensor r = x.sum({0});
  std::ostringstream captured;
  std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
  std::vector<std::string> algos = r.algorithms();
  std::vector<HostBuffer> replicas = r.interpret_shards();  // lowers again: a second DEBUG line
  std::cerr.rdbuf(old);
  BOOST_TEST(algos == std::vector<std::string>{"hierarchical"});
  std::string line = "HIERARCHICAL ALLREDUCE 3x5 | int32 | leader form: groups of unequal size\n";
  BOOST_TEST(captured.str() == line + line);
  expect_reduced(replicas, data, ReduceOp::sum);

  s.hierarchical = "ring";
  BOOST_CHECK_EXCEPTION(ScopedSettings{s}, ConfigError, [](const ConfigError& e) {
    return std::string(e.what()) ==
           "AllreduceSettings: key 'allreduce.hierarchical': expected leader or "
           "reduce_scatter, got 'ring'";
  });
}

// The ring and all2all builders select shards and copy them in the form replace_allreduce's rules
// settle (settled_mselect, settled_copy), so a lowering makes hardly a node the rules then replace
// (a ring over 8 devices made 2.3x the nodes of its result before: the MSELECT and COPY chains the
// rules pushed down). Counts only; the values are the matrix's.
BOOST_DATA_TEST_CASE(ring_and_all2all_make_few_nodes_beyond_their_result, bdata::make({3, 8}) * bdata::make({1, 2}), n,
                     algo) {
  AllreduceSettings s;
  (algo == 1 ? s.ring : s.all2all) = 2;
  ScopedSettings scope(s);
  // a fresh placeholder: nothing of this lowering exists in the graph yet
  Tensor y = Tensor::placeholder({n, 1000 * n}, DType::float32, test::null_devices(n), 0).sum({0});
  UOp root = uop_of(y);
  size_t before = root.graph().size();
  Lowered low = lower_multi({root}, s);
  size_t made = root.graph().size() - before, result = root.graph().toposort(low.roots).size();
  BOOST_TEST_MESSAGE(fmt::format("n={} algo={}: made {} nodes, the result has {}", n, algo, made, result));
  BOOST_TEST(made <= result + result / 4);
}

// settled_mselect and settled_copy give what the rules reach from a plain MSELECT or COPY, and no rule
// applies to what they give: over a buffer, movement ops with per-device bounds, an MSTACK, constants
// and an MSTACK holding a constant, for every device index and destination.
BOOST_AUTO_TEST_CASE(settled_selections_and_copies_are_the_rules_fixpoints) {
  const int n = 3;
  AllreduceSettings s;
  PatternMatcher pm = replace_allreduce(s, {});
  std::vector<std::string> names = test::null_devices(n);
  DeviceSpec tuple(names);
  UOp buf = new_buffer(tuple, 12, DType::float32);
  std::vector<UOp> shards;
  for (int i = 0; i < n; ++i)
    shards.push_back(new_buffer(DeviceSpec(names[static_cast<size_t>(i)]), 12, DType::float32));
  UOp one = broadcast_to(const_uop(DType::float32, 1.0, tuple), {12});
  std::vector<UOp> mixed = shards;
  mixed[1] = broadcast_to(const_uop(DType::float32, 2.0, DeviceSpec(names[1])), {12});
  std::vector<UOp> tuples{buf, buf.reshape({3, 4}).shrink(spans({{1, 3}, {0, 4}})), mstack(shards), one, mstack(mixed)};
  auto fixpoint = [&](const UOp& u) {
    RewriteResult r = rewrite_graph(u, pm, {});
    return r.rewrites == 0 && r.root == u;
  };
  for (const UOp& x : tuples)
    for (int64_t i = 0; i < n; ++i) {
      UOp picked = settled_mselect(x, i);
      BOOST_TEST(fixpoint(picked));
      BOOST_TEST((graph_rewrite(x.mselect(i), pm) == picked));
      BOOST_TEST((picked.device() == DeviceSpec(names[static_cast<size_t>(i)])));
      for (const std::string& d : names) {
        UOp copied = settled_copy(x, DeviceSpec(d), Arg(i));
        BOOST_TEST(fixpoint(copied));
        BOOST_TEST((graph_rewrite(x.copy_to_device(DeviceSpec(d), i), pm) == copied));
        BOOST_TEST((copied.device() == DeviceSpec(d)));
        BOOST_TEST((copied.shape() == x.shape()));
      }
    }
  // a chunk of an MSTACK (the hierarchical reduce-scatter's): that device's own range, read in place
  // (the rules, settling the SHRINK first, would make it contiguous on every device)
  UOp chunk = mstack(shards).shrink(spans({{4, 8}}));
  UOp moved = settled_copy(chunk, DeviceSpec(names[2]), Arg(int64_t{1}));
  BOOST_TEST((moved == shards[1].shrink(spans({{4, 8}})).copy_to_device(DeviceSpec(names[2]))));
  BOOST_TEST(fixpoint(moved));
  // from one device: to itself nothing, to a tuple one copy per device (BROADCAST)
  BOOST_TEST((settled_copy(shards[0], DeviceSpec(names[0])) == shards[0]));
  UOp spread = settled_copy(shards[0], tuple);
  BOOST_TEST((spread.op() == Ops::MSTACK));
  BOOST_TEST((spread.src(0) == shards[0]));
  BOOST_TEST((spread.src(1).op() == Ops::COPY));
  BOOST_TEST(fixpoint(spread));
}

BOOST_AUTO_TEST_SUITE_END()
