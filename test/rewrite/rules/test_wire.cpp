// The compressed wire in the lowering (allreduce.wire, docs/compressed-wire.md): for every algorithm (naive,
// ring, all2all, the fused ones, which run unfused on a wire, and the hierarchical forms) x each wire (bfloat16,
// fp8_e4m3, fp8_e5m2) x allreduce, reduce_scatter, reduce_to x ndev x float32/bfloat16 x random, huge-range
// (denormals included), all-equal and non-finite data, the lowered graph's value (interpreter) on every device is
// within the wire's bound of the exact sum (core/wire_format.hpp sum_error_bound), an allreduce's devices hold the same
// bits, NaN and Inf pass through; the refusals name the collective, dtype, op and setting; the cpu devices give the
// interpreter's bits.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/wire_format.hpp"
#include "runtime/api/internal.hpp"
#include "testing/checks.hpp"
#include "testing/datasets.hpp"

BOOST_AUTO_TEST_SUITE(test_wire)

namespace bdata = boost::unit_test::data;
using namespace ringrt;

namespace {

const std::vector<std::string> kAlgos{"naive",   "ring",       "all2all",      "oneshot",
                                      "twoshot", "ring_fused", "hierarchical", "hierarchical_rs"};
const std::vector<std::string> kCollectives{"allreduce", "reduce_scatter", "reduce"};
const std::vector<std::string> kKinds{"random", "huge", "equal", "nonfinite"};
const std::vector<std::string> kWires{"bfloat16", "fp8_e4m3", "fp8_e5m2"};

AllreduceSettings wire_settings(const std::string& algo, int ndev, const std::string& wire = "bfloat16") {
  AllreduceSettings s =
      testing::algorithm_settings(algo == "hierarchical_rs" ? "hierarchical" : algo, cpu_devices(ndev));
  if (algo == "hierarchical_rs") s.hierarchical = "reduce_scatter";
  s.wire = wire;
  return s;
}

// ndev rows of cols values of dtype: random normal; a huge range (2^-140 .. 2^100, both signs: bfloat16's and
// float32's subnormals); all equal (0.1); random with a NaN, a +Inf and a -Inf in the first three columns.
HostBuffer wire_data(const std::string& kind, DType dtype, int64_t ndev, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_real_distribution<double> e(-140, 100);
  HostBuffer b(dtype, {ndev, cols});
  for (int64_t i = 0; i < b.numel(); ++i)
    b.set(i, kind == "huge" ? ((rng() & 1) ? -1 : 1) * std::exp2(e(rng)) : kind == "equal" ? 0.1 : normal(rng));
  if (kind == "nonfinite" && cols >= 3) {
    b.set(0, NAN);
    b.set((ndev - 1) * cols + 1, INFINITY);
    b.set(2, -INFINITY);
  }
  return b;
}

struct Point {
  Tensor result;
  HostBuffer data;
};
Point point_of(const std::string& collective, const HostBuffer& data) {
  int64_t ndev = data.shape[0], cols = data.shape[1];
  std::vector<std::string> devs = cpu_devices(static_cast<int>(ndev));
  bool rs = collective == "reduce_scatter";
  Tensor host = Tensor::from_host(data);
  Tensor x = (rs ? host.reshape({ndev * cols}) : host).shard(devs, 0);
  x.realize();
  Tensor r = rs                       ? x.reduce_scatter(ReduceOp::sum)
             : collective == "reduce" ? x.reduce_to(static_cast<int>(ndev) - 1, ReduceOp::sum)
                                      : x.reduce(ReduceOp::sum, {0});
  return {r, data};
}

// Element k of the logical result against the exact sum of column k: within the bound of `crossings` crossings
// of wire w (core/wire_format.hpp sum_error_bound); NaN where a NaN or +Inf and -Inf meet, +-Inf where one Inf
// does (on E4M3, which has no Inf, NaN once it crossed). FP8: the largest block scale a crossing value of column k
// meets is below 2 amax / max, amax the largest partial sum's magnitude in its block of 32, within 31 columns of k.
void check_element(WireFormat w, const HostBuffer& data, int64_t k, double got, int crossings) {
  int64_t ndev = data.shape[0], cols = data.shape[1];
  auto column = [&](int64_t c, double& exact, double& sum_abs) {
    exact = 0, sum_abs = 0;
    for (int64_t d = 0; d < ndev; ++d) {
      double x = data.get(d * cols + c);
      exact += x;
      sum_abs += std::isfinite(x) ? std::fabs(x) : 0;
    }
  };
  double exact = 0, sum_abs = 0;
  column(k, exact, sum_abs);
  if (std::isnan(exact)) {
    BOOST_TEST(std::isnan(got), "column " << k << ": " << got << ", want NaN");
  } else if (std::isinf(exact)) {
    if (w == WireFormat::fp8_e4m3) {  // an Inf that crossed is a NaN; one added after the last crossing stays
      BOOST_TEST((std::isnan(got) || got == exact), "column " << k << ": " << got << ", want NaN or " << exact);
    } else {
      BOOST_TEST(got == exact, "column " << k << ": " << got << ", want " << exact);
    }
  } else {
    double scale_max = 1.0;
    if (w != WireFormat::bfloat16) {
      double amax = 0, e = 0, a = 0;
      for (int64_t c = std::max<int64_t>(0, k - 31); c < std::min(cols, k + 32); ++c) {
        column(c, e, a);
        amax = std::max(amax, a);
      }
      scale_max = std::max(2 * amax / element_format(w).max, std::ldexp(1.0, wire_min_scale_exponent(w)));
    }
    double bound = sum_error_bound(w, crossings, sum_abs, scale_max);
    if (data.dtype == DType::bfloat16) bound += std::ldexp(std::fabs(exact), -8);  // the result's dtype
    BOOST_TEST(std::fabs(got - exact) <= bound, "column " << k << ": " << got << " vs " << exact);
  }
}

// The devices' values against the exact sums; an allreduce's devices hold the same bits.
void check_point(WireFormat w, const Point& p, const std::string& collective, int crossings) {
  std::vector<std::pair<std::string, HostBuffer>> got = testing::interpreter_values(p.result);
  int64_t cols = p.data.shape[1];
  if (collective == "reduce_scatter") {
    int64_t at = 0;  // the shards side by side: the flat buffer's chunks, each the sum of its rows' columns
    for (const auto& [dev, v] : got)
      for (int64_t i = 0; i < v.numel(); ++i, ++at) check_element(w, p.data, at % cols, v.get(i), crossings);
    return;
  }
  for (const auto& [dev, v] : got) {
    BOOST_TEST((v.bytes == got[0].second.bytes), dev << ": not the bits of " << got[0].first);
    for (int64_t k = 0; k < cols; ++k) check_element(w, p.data, k, v.get(k), crossings);
  }
}

}  // namespace

// Every wire x algorithm x collective: ndev 1..5 and 8 x float32/bfloat16 x the data kinds, within the bound (n
// crossings; the hierarchical forms, a reduction inside the groups and one across, 2n).
BOOST_DATA_TEST_CASE(every_algorithm_is_within_the_bound,
                     bdata::make(kWires) * bdata::make(kAlgos) * bdata::make(kCollectives), wire, algo, collective) {
  uint32_t seed = 5;
  for (int ndev : {1, 2, 3, 4, 5, 8}) {
    if (collective == "reduce_scatter" && ndev == 1) continue;
    ScopedSettings scope(wire_settings(algo, ndev, wire));
    int64_t cols = collective == "reduce_scatter" ? 5 * ndev : 2 * ndev + 35;  // uneven allreduce chunks
    for (DType dtype : {DType::float32, DType::bfloat16})
      for (const std::string& kind : kKinds) {
        BOOST_TEST_CONTEXT(algo << " " << collective << " ndev " << ndev << " " << dtype_name(dtype) << " " << kind) {
          Point p = point_of(collective, wire_data(kind, dtype, ndev, cols, seed++));
          for (const std::string& a : p.result.schedule().algorithms)  // a fused kernel has no copy to encode
            BOOST_TEST((a != "oneshot" && a != "twoshot" && a != "ring_fused"), a);
          check_point(parse_wire_format(wire), p, collective, algo.starts_with("hierarchical") ? 2 * ndev : ndev);
        }
      }
  }
}

// The wire has teeth: float32 sums over each wire differ from native ones, and are not the native bits; the
// FP8 wires round more than bfloat16's.
BOOST_AUTO_TEST_CASE(the_wire_rounds) {
  HostBuffer data = wire_data("random", DType::float32, 4, 64, 3);
  auto error = [&](const std::string& wire) {
    ScopedSettings scope(wire_settings("ring", 4, wire));
    HostBuffer v = testing::interpreter_values(point_of("allreduce", data).result)[0].second;
    double total = 0;  // of the absolute errors
    for (int64_t k = 0; k < 64; ++k) {
      double exact = 0;
      for (int64_t d = 0; d < 4; ++d) exact += data.get(d * 64 + k);
      total += std::fabs(v.get(k) - exact);
    }
    return total;
  };
  double native = error("native"), bf16 = error("bfloat16"), e4m3 = error("fp8_e4m3"), e5m2 = error("fp8_e5m2");
  BOOST_TEST(native < 1e-4);
  BOOST_TEST(bf16 > 4 * native);
  BOOST_TEST(e4m3 > 4 * bf16);
  BOOST_TEST(e5m2 > e4m3);  // 3 significant bits against 4
}

// The interpreter of the lowered ring computes what core/wire_format.hpp says the wire does: chunk c's running
// sum starts on device c, crosses (dec(enc(.))) at each hop and is added in float32, and the owner keeps one
// more crossing of the result; all2all: device c adds the crossed peers' pieces to its own, in device order.
BOOST_AUTO_TEST_CASE(the_interpreter_computes_the_host_encoding) {
  const int64_t ndev = 4, cols = 96;  // chunks of 32: allreduce_chunks(96, 4) = 3 x 32, then 0
  HostBuffer data = wire_data("random", DType::float32, ndev, cols, 21);
  auto row = [&](int64_t d, int64_t from, int64_t len) {
    std::vector<float> out;
    for (int64_t k = from; k < from + len; ++k) out.push_back(static_cast<float>(data.get(d * cols + k)));
    return out;
  };
  for (const std::string& wire : kWires)
    for (std::string algo : {"ring", "all2all"}) {
      WireFormat w = parse_wire_format(wire);
      ScopedSettings scope(wire_settings(algo, static_cast<int>(ndev), wire));
      std::vector<float> want;
      for (int64_t c = 0, at = 0; c < ndev && at < cols; ++c, at += 32) {
        std::vector<float> acc = row(algo == "ring" ? c : 0, at, 32);
        if (algo == "all2all" && c != 0) acc = cross(w, acc);
        for (int64_t step = 1; step < ndev; ++step) {
          int64_t d = algo == "ring" ? (c + step) % ndev : step;
          std::vector<float> x = row(d, at, 32);
          if (algo == "ring") acc = cross(w, acc);
          if (algo == "all2all" && d != c) x = cross(w, x);
          for (size_t k = 0; k < acc.size(); ++k) acc[k] += x[k];
        }
        acc = cross(w, acc);
        want.insert(want.end(), acc.begin(), acc.end());
      }
      Point p = point_of("allreduce", data);
      for (const auto& [dev, v] : testing::interpreter_values(p.result))
        for (int64_t k = 0; k < cols; ++k)
          BOOST_TEST(static_cast<float>(v.get(k)) == want[static_cast<size_t>(k)],
                     wire << " " << algo << " " << dev << " " << k);
    }
}

// Deterministic mode over a wire: every algorithm gives the same bits (naive and oneshot run as all2all there:
// allreduce.cpp allreduce_algorithm), on the cpu devices as in the interpreter, allreduce and reduce_scatter.
BOOST_AUTO_TEST_CASE(deterministic_over_a_wire_is_one_fold) {
  for (const std::string& wire : kWires)
    for (const std::string collective : {"allreduce", "reduce_scatter"}) {
      HostBuffer data = wire_data("random", DType::float32, 3, 96, 17);
      std::vector<std::vector<std::byte>> bits;
      for (const std::string algo : {"naive", "ring", "all2all", "oneshot", "twoshot", "ring_fused"}) {
        AllreduceSettings s = wire_settings(algo, 3, wire);
        s.deterministic = true;
        ScopedSettings scope(s);
        Point p = point_of(collective, data);
        std::vector<std::byte> all;
        for (const auto& [dev, v] : p.result.local_host_shards()) all.insert(all.end(), v.bytes.begin(), v.bytes.end());
        std::vector<std::byte> oracle;
        for (const auto& [dev, v] : testing::interpreter_values(p.result))
          oracle.insert(oracle.end(), v.bytes.begin(), v.bytes.end());
        BOOST_TEST((all == oracle), wire << " " << collective << " " << algo << ": the interpreter's bits");
        bits.push_back(all);
        BOOST_TEST((bits.back() == bits.front()), wire << " " << collective << " " << algo << " against naive");
      }
    }
}

// The wire is part of the program cache's key (AllreduceSettings): the same graph realized native, over the wire
// and native again runs three programs' values, not the first one cached.
BOOST_AUTO_TEST_CASE(the_program_cache_tells_the_wire_apart) {
  HostBuffer data = wire_data("random", DType::float32, 4, 64, 9);
  auto run = [&](const std::string& wire) {
    ScopedSettings scope(wire_settings("ring", 4, wire));
    Point p = point_of("allreduce", data);
    return p.result.local_host_shards()[0].second.bytes;
  };
  auto native = run("native"), wired = run("bfloat16"), again = run("native");
  BOOST_TEST((native != wired));
  BOOST_TEST((native == again));
}

// Refused where it cannot apply: integer dtypes (any wire), an op other than sum (FP8); the message names the
// collective, dtype, op and setting.
BOOST_AUTO_TEST_CASE(refusals_name_the_collective_dtype_op_and_setting) {
  auto message = [](const std::string& wire, DType dtype, ReduceOp op) -> std::string {
    ScopedSettings scope(wire_settings("ring", 4, wire));
    HostBuffer data(dtype, {4, 8});
    Tensor x = Tensor::from_host(data).shard(cpu_devices(4), 0);
    try {
      x.reduce(op, {0}).realize();
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  std::string m = message("bfloat16", DType::int32, ReduceOp::sum);
  BOOST_TEST(
      m.find("allreduce of int32 (sum): allreduce.wire bfloat16 applies to float32 and bfloat16") != std::string::npos,
      m);
  m = message("fp8_e4m3", DType::float32, ReduceOp::max);
  BOOST_TEST(m.find("allreduce of float32 (max): allreduce.wire fp8_e4m3 applies to sum only") != std::string::npos, m);
  m = message("fp8_e5m2", DType::bfloat16, ReduceOp::prod);
  BOOST_TEST(m.find("allreduce of bfloat16 (prod): allreduce.wire fp8_e5m2 applies to sum only") != std::string::npos,
             m);
  m = message("fp8_e5m2", DType::int8, ReduceOp::sum);
  BOOST_TEST(
      m.find("allreduce of int8 (sum): allreduce.wire fp8_e5m2 applies to float32 and bfloat16") != std::string::npos,
      m);
  BOOST_TEST(message("fp8_e4m3", DType::float32, ReduceOp::sum) == "no error");
  BOOST_TEST(message("fp8_e5m2", DType::bfloat16, ReduceOp::sum) == "no error");
  m = message("bfloat16", DType::float16, ReduceOp::sum);
  BOOST_TEST(m.find("applies to float32 and bfloat16 only") != std::string::npos, m);
  BOOST_TEST(message("native", DType::int32, ReduceOp::sum) == "no error");
  BOOST_TEST(message("bfloat16", DType::float32, ReduceOp::max) == "no error");
}

// The cpu devices (compiled kernels) give the interpreter's bits: 4 devices, every wire x algorithm and collective,
// float32 and bfloat16 sums; the FP8 wires also on huge-range and non-finite data (the codes' subnormals, NaN, Inf).
BOOST_DATA_TEST_CASE(runtime_matches_the_interpreter, bdata::make(kWires) * bdata::make(kAlgos), wire, algo) {
  ScopedSettings scope(wire_settings(algo, 4, wire));
  uint32_t seed = 40;
  for (const std::string& collective : kCollectives)
    for (DType dtype : {DType::float32, DType::bfloat16})
      for (const char* kind : {"random", "huge", "nonfinite"})
        for (int64_t cols : {collective == "reduce_scatter" ? 72 : 70, 128}) {
          if (wire == "bfloat16" && kind != std::string_view("random")) continue;
          BOOST_TEST_CONTEXT(collective << " " << dtype_name(dtype) << " " << kind << " " << cols) {
            // chunks of 18 (reduce_scatter) or uneven ones (allreduce): blocks cut short at a chunk's end, each
            // piece encoded; 128: chunks of 32, each device's buffer encoded once (allreduce.cpp)
            Point p = point_of(collective, wire_data(kind, dtype, 4, cols, seed++));
            std::vector<std::pair<std::string, HostBuffer>> want = testing::interpreter_values(p.result);
            std::vector<std::pair<std::string, HostBuffer>> got = p.result.local_host_shards();
            BOOST_TEST_REQUIRE(got.size() == want.size());
            for (size_t i = 0; i < got.size(); ++i)
              BOOST_TEST((got[i].second.bytes == want[i].second.bytes), got[i].first);
          }
        }
}

BOOST_AUTO_TEST_SUITE_END()
