// Deterministic mode (allreduce.deterministic, docs/deterministic.md): every reducing collective (allreduce,
// reduce_scatter, reduce_to) gives the bits of the interpreter's logical value, the left fold over the devices
// in tuple order, for every algorithm (naive, ring, all2all, oneshot, twoshot, ring_fused, and over two device
// groups the leader and reduce_scatter forms), device count 1..8, dtype (float16, bfloat16, float32, float64)
// and op, on every device; and stays within the usual bound of the exact reduction (runtime/api/reference.hpp).
// The lowered graph is evaluated by the interpreter (nothing compiled); runtime_matches_the_oracle runs a few
// points on the cpu devices.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <random>
#include <string>
#include <vector>

#include "runtime/api/internal.hpp"
#include "testing/checks.hpp"
#include "testing/collectives.hpp"
#include "testing/datasets.hpp"

BOOST_AUTO_TEST_SUITE(test_deterministic)

namespace bdata = boost::unit_test::data;
using namespace ringrt;

namespace {

const std::vector<std::string> kAlgos{"naive",   "ring",       "all2all",      "oneshot",
                                      "twoshot", "ring_fused", "hierarchical", "hierarchical_rs"};
const std::vector<DType> kFloats{DType::float16, DType::bfloat16, DType::float32, DType::float64};
const std::vector<ReduceOp> kAllOps{ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min};
const std::vector<std::string> kCollectives{"allreduce", "reduce_scatter", "reduce"};

// algo forced on ndev cpu devices (testing::algorithm_settings; hierarchical_rs: the two groups of hierarchical
// in the reduce_scatter form), deterministic or not.
AllreduceSettings settings_for(const std::string& algo, int ndev, bool deterministic = true) {
  AllreduceSettings s =
      testing::algorithm_settings(algo == "hierarchical_rs" ? "hierarchical" : algo, cpu_devices(ndev));
  if (algo == "hierarchical_rs") s.hierarchical = "reduce_scatter";
  s.deterministic = deterministic;
  return s;
}

// rows x cols values of dtype, each +-[0.5, 2) with a random significand: sums and products round (no exact
// partial results), nothing overflows or underflows in 16 bits over 8 devices.
HostBuffer random_data(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> mag(0.5, 2.0);
  HostBuffer b(dtype, {rows, cols});
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, (rng() % 2 ? -1.0 : 1.0) * mag(rng));
  return b;
}

// Row d of x (rows x cols), shaped `shape`.
HostBuffer row(const HostBuffer& x, int64_t d, Shape shape) {
  HostBuffer out(x.dtype, std::move(shape));
  size_t bytes = out.bytes.size();
  std::copy_n(x.bytes.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(d) * bytes), bytes, out.bytes.begin());
  return out;
}

// One point: the collective's lazy result over ndev devices from `data` (ndev rows, one per device), and each
// device's input as collective_expected takes it.
struct Point {
  Tensor result;
  std::vector<HostBuffer> inputs;
};
Point point_of(const std::string& collective, const HostBuffer& data, ReduceOp op) {
  int64_t ndev = data.shape[0], cols = data.shape[1];
  std::vector<std::string> devs = cpu_devices(static_cast<int>(ndev));
  bool rs = collective == "reduce_scatter";
  std::vector<HostBuffer> inputs;
  for (int64_t d = 0; d < ndev; ++d) inputs.push_back(rs ? row(data, d, {cols}) : row(data, d, {1, cols}));
  Tensor host = Tensor::from_host(data);
  Tensor x = (rs ? host.reshape({ndev * cols}) : host).shard(devs, 0);
  x.realize();
  Tensor r = rs                       ? x.reduce_scatter(op)
             : collective == "reduce" ? x.reduce_to(static_cast<int>(ndev) - 1, op)
                                      : x.reduce(op, {0});
  return {r, std::move(inputs)};
}

// The devices' values side by side (a reduce_scatter's shards make the logical value; every other result's
// device holds it whole), each compared with the oracle's bytes.
void check_bits(const std::vector<std::pair<std::string, HostBuffer>>& got, const HostBuffer& oracle, bool sharded) {
  std::vector<std::byte> all;
  for (const auto& [dev, v] : got) {
    if (!sharded) BOOST_TEST((v.bytes == oracle.bytes), dev << ": not the oracle's bits");
    all.insert(all.end(), v.bytes.begin(), v.bytes.end());
  }
  if (sharded) BOOST_TEST((all == oracle.bytes), "the shards side by side are not the oracle's bits");
}

}  // namespace

// Every algorithm x collective: ndev 1..8 x float16/bfloat16/float32/float64 x sum/prod/max/min, the lowered graph
// (interpreter) against the interpreter's logical value bit for bit, and against the exact reduction's bound.
BOOST_DATA_TEST_CASE(every_algorithm_gives_the_oracle_bits, bdata::make(kAlgos) * bdata::make(kCollectives), algo,
                     collective) {
  uint32_t seed = 7;
  for (int ndev = 1; ndev <= 8; ++ndev) {
    if (collective == "reduce_scatter" && ndev == 1) continue;  // no reduce_scatter of one device
    ScopedSettings scope(settings_for(algo, ndev));
    int64_t cols = collective == "reduce_scatter" ? 3 * ndev : 2 * ndev + 3;  // uneven allreduce chunks
    for (DType dtype : kFloats)
      for (ReduceOp op : kAllOps) {
        BOOST_TEST_CONTEXT(algo << " " << collective << " ndev " << ndev << " " << dtype_name(dtype) << " "
                                << reduce_op_name(op)) {
          HostBuffer data = random_data(dtype, ndev, cols, seed++);
          Point p = point_of(collective, data, op);
          for (const std::string& a : p.result.schedule().algorithms)  // what ran: never a rotating or grouped fold
            BOOST_TEST((a != "ring_fused" && a != "hierarchical" && a != "hierarchical_rs"), a);
          HostBuffer oracle = p.result.interpret();  // the logical graph: the fold in device order
          std::vector<std::pair<std::string, HostBuffer>> got = testing::interpreter_values(p.result);
          BOOST_TEST_REQUIRE(got.size() == (collective == "reduce" ? 1u : static_cast<size_t>(ndev)));
          check_bits(got, oracle, collective == "reduce_scatter");
          RINGRT_CHECK_RESULT(testing::check_values(got, p.result.devices(),
                                                    testing::collective_expected(collective, p.inputs, op, ndev - 1),
                                                    testing::describe(p.result, collective)));
        }
      }
  }
}

// The test has teeth: without the setting the ring's rotating fold differs from the oracle in float32 sums.
BOOST_AUTO_TEST_CASE(without_the_setting_the_ring_differs) {
  ScopedSettings scope(settings_for("ring", 4, /*deterministic=*/false));
  Point p = point_of("allreduce", random_data(DType::float32, 4, 64, 3), ReduceOp::sum);
  HostBuffer oracle = p.result.interpret();
  int differ = 0;
  for (const auto& [dev, v] : testing::interpreter_values(p.result)) differ += v.bytes != oracle.bytes;
  BOOST_TEST(differ > 0);
}

// The devices run it (compiled kernels, fused launches) and give the oracle's bits: 4 devices, every algorithm
// and collective, float16 and float32 sums.
BOOST_DATA_TEST_CASE(runtime_matches_the_oracle, bdata::make(kAlgos), algo) {
  ScopedSettings scope(settings_for(algo, 4));
  uint32_t seed = 40;
  for (const std::string& collective : kCollectives)
    for (DType dtype : {DType::float16, DType::float32}) {
      BOOST_TEST_CONTEXT(collective << " " << dtype_name(dtype)) {
        int64_t cols = collective == "reduce_scatter" ? 12 : 11;
        Point p = point_of(collective, random_data(dtype, 4, cols, seed++), ReduceOp::sum);
        HostBuffer oracle = p.result.interpret();
        check_bits(p.result.local_host_shards(), oracle, collective == "reduce_scatter");
      }
    }
}

BOOST_AUTO_TEST_SUITE_END()
