// Multi-device regression cases C13..C15: what a collective leaves behind — replicas agree bit for bit (C13), a
// collective never overwrites its inputs (C14), changing the algorithm between runs takes effect (C15).
//
// Each case of shared/cases/multi-device-regressions.md is a test named by its number and widened to
// the class it stands for (neighbouring device counts, dtypes, algorithms, odd sizes). Every expected
// value is computed independently of ringrt by host loops over the unsharded data
// (test/support/host_oracle.hpp); values stated in the case file are asserted literally.
// Boost.Test's module header first, then its data-test headers.
// clang-format off
#include <boost/test/unit_test.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
// clang-format on

#include "test/runtime/api/regressions/regressions.hpp"

BOOST_AUTO_TEST_SUITE(test_collective_results)

using namespace regr;  // NOLINT: the helpers of the regression cases

// =============================================================================================
// C13 — replicas agree bit for bit

namespace {  // this file's helpers
std::vector<std::vector<std::byte>> replica_bytes(const Tensor& t) {
  std::vector<std::vector<std::byte>> out;
  for (const Tensor& s : t.shards()) out.push_back(s.host().bytes);
  return out;
}

void expect_bitwise_replicas(const Tensor& t, size_t ndev) {
  auto bytes = replica_bytes(t);
  BOOST_TEST_REQUIRE(bytes.size() == ndev);
  for (size_t i = 1; i < bytes.size(); ++i)
    BOOST_TEST((bytes[i] == bytes[0]), "device " << i << " differs from device 0");
}
}  // namespace

BOOST_DATA_TEST_CASE(c13_replicas_bitwise, bdata::make(variants({4}, kAll)), var) {
  ScopedSettings scoped(settings_for(var.algo, 4));
  auto devs = ringrt::cpu_devices(4);
  const double row[] = {1e8, 1, -1e8, 1};
  Arr x = make_arr({4, 128}, [&](int64_t f) { return row[f / 128]; });
  Tensor X = make_tensor(x, DType::float32).shard(devs, 0);
  X.realize();
  Tensor r = X.sum({0});
  expect_algorithms(r, {algo_name(var.algo)});
  expect_bitwise_replicas(r, 4);
  Arr got = read(r);
  BOOST_TEST_REQUIRE(got.v.size() == 128u);
  // every algorithm within the float32 bound of the exact sum (2) for any order of the 4 terms: a sum of n
  // terms in float32 errs by at most gamma_{n-1} sum |x_i|, gamma_k = k u / (1 - k u), u = 2^-24 (Higham 4.4);
  // which value each algorithm's order gives is not pinned
  const double sum_abs = 1e8 + 1 + 1e8 + 1, k = 3, u = 0x1p-24, bound = k * u / (1 - k * u) * sum_abs;
  for (double v : got.v) BOOST_TEST(std::abs(v - 2.0) <= bound, v << " vs 2 within " << bound);
}

// Class: inputs with heavy cancellation in float32, float16 and bfloat16 (16-bit allreduce copies
// kept or promoted: the cast setting), sum or prod and the number of columns rotating, every
// algorithm and device count: replicas bit for bit, values within the dtype's rounding of the exact
// result.
BOOST_DATA_TEST_CASE(c13_class_bitwise, bdata::make(variants({2, 3, 5, 8}, kAll)), var) {
  auto devs = ringrt::cpu_devices(var.ndev);
  int64_t n = var.ndev;
  const std::vector<std::pair<DType, bool>> combos = {{DType::float32, true},
                                                      {DType::float16, true},
                                                      {DType::float16, false},
                                                      {DType::bfloat16, true},
                                                      {DType::bfloat16, false}};
  const std::vector<int64_t> col_counts = {128, 7, 1};
  for (size_t k = 0; k < combos.size(); ++k) {
    const DType dt = combos[k].first;  // not a structured binding: clang 14 cannot capture one
    const bool cast = combos[k].second;
    AllreduceSettings s = settings_for(var.algo, var.ndev);
    s.cast = cast;
    ScopedSettings scoped(s);
    double big = dt == DType::float32 ? 1e8 : dt == DType::float16 ? 4096 : 512;
    double eps = dt == DType::float32   ? std::ldexp(1.0, -23)
                 : dt == DType::float16 ? std::ldexp(1.0, -10)
                                        : std::ldexp(1.0, -7);
    int64_t cols = col_counts[(k + rot(var)) % col_counts.size()];
    std::string what = dname(dt) + (cast ? "" : " (cast off)") + " of " + std::to_string(cols) + " columns";
    if ((k + rot(var)) % 2 == 0) {
      guard("sum " + what, [&] {
        Arr x = make_arr({n, cols}, [&](int64_t f) {
          int64_t d = f / cols, j = f % cols;
          int64_t q = (d + j) % 4;
          return q == 0 ? big : q == 2 ? -big : static_cast<double>(1 + j % 3);
        });
        Tensor X = make_tensor(x, dt).shard(devs, 0);
        X.realize();
        Tensor r = X.sum({0});
        expect_bitwise_replicas(r, static_cast<size_t>(n));
        Arr got = read(r), exact = reduce(x, Op::sum, {0});
        for (size_t j = 0; j < got.v.size(); ++j)
          BOOST_TEST(std::abs(got.v[j] - exact.v[j]) <= static_cast<double>(n * n) * big * eps);
      });
    } else {
      guard("prod " + what, [&] {
        Arr x = make_arr({n, cols}, [&](int64_t f) { return 1.0 + static_cast<double>((f * 3) % 5) / 64.0; });
        Tensor X = make_tensor(x, dt).shard(devs, 0);
        X.realize();
        Tensor r = X.prod({0});
        expect_bitwise_replicas(r, static_cast<size_t>(n));
        Arr got = read(r), exact = reduce(x, Op::prod, {0});
        for (size_t j = 0; j < got.v.size(); ++j)
          BOOST_TEST(std::abs(got.v[j] - exact.v[j]) <= 2.0 * static_cast<double>(n) * eps * exact.v[j]);
      });
    }
  }
}

// =============================================================================================
// C14 — a collective never overwrites its inputs

namespace {  // this file's helpers
struct C14Setting {
  const char* name;
  int ndev;
  Algo algo;
  bool leaders02;  // groups {D0,D1},{D2,D3} led by D0 and D2
};
std::ostream& operator<<(std::ostream& os, const C14Setting& s) { return os << s.name; }

AllreduceSettings c14_settings(const C14Setting& c) {
  if (!c.leaders02) return settings_for(c.algo, c.ndev);
  AllreduceSettings s;  // defaults otherwise (RING=1, ALL2ALL=0)
  s.groups = {{"CPU:0", 0}, {"CPU:1", 0}, {"CPU:2", 1}, {"CPU:3", 1}};
  s.reduce_leaders = {"CPU:0", "CPU:2"};
  return s;
}

// ops: the reductions to run twice on x.
void c14_body(const C14Setting& c, DType dt, const std::vector<Op>& ops) {
  ScopedSettings scoped(c14_settings(c));
  auto devs = ringrt::cpu_devices(c.ndev);
  // 1 + 2f mod 5: every partial product divides 1800 = 2^3 * 225, exact in bfloat16's 8 bits
  Arr data = make_arr({c.ndev}, [](int64_t f) { return static_cast<double>(1 + (2 * f) % 5); });
  Tensor x = make_tensor(data, dt).shard(devs, 0);
  x.realize();
  double total = reduce(data, Op::sum, {}).v[0];
  for (Op op : ops) {
    guard(std::string("two ") + op_str(op) + "s of x", [&] {
      Tensor r1 = apply(x, op, {}), r2 = apply(x, op, {});
      Arr want = reduce(data, op, {});
      expect_replicated(r1, want, devs);
      expect_replicated(r2, want, devs);
      expect_sharded(x, data, 0, devs);  // x untouched
    });
  }
  guard("y.assign(y + y.sum())", [&] {
    Tensor y = make_tensor(data, dt).shard(devs, 0);
    y.realize();
    y.assign(y + y.sum());
    y.realize();
    expect_sharded(y, make_arr({c.ndev}, [&](int64_t f) { return data.v[static_cast<size_t>(f)] + total; }), 0, devs);
  });
}
}  // namespace

BOOST_DATA_TEST_CASE(c14_inputs_untouched,
                     bdata::make(std::vector<C14Setting>{
                         {"4 devices flat (defaults: naive)", 4, Algo::naive, false},
                         {"4 devices, groups {D0,D1},{D2,D3}, leaders D0, D2", 4, Algo::hier, true}}),
                     c) {
  ScopedSettings scoped(c14_settings(c));
  auto devs = ringrt::cpu_devices(4);
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {4}).shard(devs, 0);
  x.realize();
  Tensor r1 = x.sum(), r2 = x.sum();
  expect_algorithms(r1, {c.leaders02 ? "hierarchical" : "naive"});
  expect_replicated(r1, Arr{{}, {10}}, devs);
  expect_replicated(r2, Arr{{}, {10}}, devs);
  expect_sharded(x, Arr{{4}, {1, 2, 3, 4}}, 0, devs);
  Tensor y = Tensor::from_vector<float>({1, 2, 3, 4}, {4}).shard(devs, 0);
  y.realize();
  y.assign(y + y.sum());
  y.realize();
  expect_sharded(y, Arr{{4}, {11, 12, 13, 14}}, 0, devs);
}

// Class: every op (two per sample, rotating), algorithm and device count, three dtypes (rotating).
BOOST_DATA_TEST_CASE(c14_class_inputs_untouched, bdata::make(variants({2, 3, 5, 8}, kAll)), var) {
  const std::vector<DType> dts = {DType::float32, DType::int32, DType::bfloat16};
  DType dt = dts[rot(var) % dts.size()];
  BOOST_TEST_CONTEXT(dname(dt)) {
    c14_body(C14Setting{"", var.ndev, var.algo, false}, dt, {kOps[rot(var) % 4], kOps[(rot(var) + 2) % 4]});
  }
}

// =============================================================================================
// C15 — changing the algorithm between runs takes effect

namespace {  // this file's helpers
std::multiset<std::string> copy_pairs(const ringrt::Schedule& s) {
  std::multiset<std::string> out;
  for (const auto& c : s.copies()) out.insert(c.src + ">" + c.dst);
  return out;
}
}  // namespace

BOOST_AUTO_TEST_CASE(c15_ring_setting_takes_effect) {
  auto devs = ringrt::cpu_devices(4);
  Tensor X = Tensor::full({4, 400}, 1, DType::float32).shard(devs, 0);
  X.realize();
  Arr fours = make_arr({400}, [](int64_t) { return 4.0; });
  {
    AllreduceSettings s;
    s.ring = 0;
    ScopedSettings scoped(s);
    Tensor r = X.sum({0});
    ringrt::Schedule sched = r.schedule();
    BOOST_TEST(sched.algorithms == std::vector<std::string>{"naive"}, tt::per_element());
    BOOST_TEST(sched.copies().size() == 12u);
    expect_replicated(r, fours, devs);
  }
  {
    AllreduceSettings s;
    s.ring = 2;
    ScopedSettings scoped(s);
    Tensor r = X.sum({0});
    ringrt::Schedule sched = r.schedule();
    BOOST_TEST(sched.algorithms == std::vector<std::string>{"ring"}, tt::per_element());
    BOOST_TEST(sched.copies().size() == 24u);
    expect_replicated(r, fours, devs);
  }
}

// c15_class_every_setting_in_the_key's steps, each on a (4, 400) tensor of ones sharded on axis 0 over CPU:0..3,
// whose allreduce X.sum({0}) is 400 fours on every device.
namespace {
// One change of the settings and the lowering it must give.
struct C15Step {
  const char* name;
  std::function<void(AllreduceSettings&)> set;
  std::string algo;
  size_t copies;
  std::multiset<std::string> pairs;  // empty: not checked
};

// The copies of a ring allreduce over CPU:0..3, as src>dst pairs: edges D_i -> D_(i+1), 24 copies, 6 per edge.
std::multiset<std::string> c15_ring_pairs() {
  std::multiset<std::string> ring_pairs;
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 6; ++k) ring_pairs.insert(dev(i) + ">" + dev((i + 1) % 4));
  return ring_pairs;
}

// The settings, changed back and forth: ring, all2all, the threshold (at its boundary), groups and leaders; each
// step starts from the default settings.
std::vector<C15Step> c15_steps() {
  auto flat = [](AllreduceSettings& s) {
    s.ring = 0;
    s.all2all = 0;
  };
  auto groups = [](AllreduceSettings& s) { s.groups = {{"CPU:0", 0}, {"CPU:1", 0}, {"CPU:2", 1}, {"CPU:3", 1}}; };
  const std::multiset<std::string> ring_pairs = c15_ring_pairs();
  return {
      {"RING=0", flat, "naive", 12, {}},
      {"RING=2", [](AllreduceSettings& s) { s.ring = 2; }, "ring", 24, ring_pairs},
      {"RING=0 again", flat, "naive", 12, {}},
      {"ALL2ALL=2", [](AllreduceSettings& s) { s.all2all = 2; }, "all2all", 24, {}},
      {"ALL2ALL=2, RING=2 (all2all wins)",
       [](AllreduceSettings& s) {
         s.all2all = 2;
         s.ring = 2;
       },
       "all2all",
       24,
       {}},
      {"RING=1, threshold 399 (400 > 399)",
       [](AllreduceSettings& s) {
         s.ring = 1;
         s.ring_threshold = 399;
       },
       "ring", 24, ring_pairs},
      {"RING=1, threshold 400 (400 is not > 400)",
       [](AllreduceSettings& s) {
         s.ring = 1;
         s.ring_threshold = 400;
       },
       "naive",
       12,
       {}},
      {"ALL2ALL=1, threshold 100",
       [](AllreduceSettings& s) {
         s.all2all = 1;
         s.ring_threshold = 100;
       },
       "all2all",
       24,
       {}},
      // hierarchical: 1 copy into each leader, 2 between the leaders, 1 back out of each leader
      {"groups {D0,D1},{D2,D3}",
       [flat, groups](AllreduceSettings& s) {
         flat(s);
         groups(s);
       },
       "hierarchical",
       6,
       {"CPU:1>CPU:0", "CPU:3>CPU:2", "CPU:0>CPU:2", "CPU:2>CPU:0", "CPU:0>CPU:1", "CPU:2>CPU:3"}},
      {"groups, leaders D1, D3",
       [flat, groups](AllreduceSettings& s) {
         flat(s);
         groups(s);
         s.reduce_leaders = {"CPU:1", "CPU:3"};
       },
       "hierarchical",
       6,
       {"CPU:0>CPU:1", "CPU:2>CPU:3", "CPU:1>CPU:3", "CPU:3>CPU:1", "CPU:1>CPU:0", "CPU:3>CPU:2"}},
      {"groups dropped again", flat, "naive", 12, {}},
  };
}

// Runs each step: the algorithm, the number of copies (and their pairs where the step gives them), the values.
void c15_check_steps(const Tensor& X, const Arr& fours, const std::vector<std::string>& devs) {
  const std::vector<C15Step> steps = c15_steps();
  for (const C15Step& st : steps) {
    guard(st.name, [&] {
      AllreduceSettings s;
      st.set(s);
      ScopedSettings scoped(s);
      Tensor r = X.sum({0});
      ringrt::Schedule sched = r.schedule();
      BOOST_TEST(sched.algorithms == std::vector<std::string>{st.algo}, tt::per_element());
      BOOST_TEST(sched.copies().size() == st.copies);
      if (!st.pairs.empty()) BOOST_TEST((copy_pairs(sched) == st.pairs), "copy pairs differ");
      expect_replicated(r, fours, devs);
    });
  }
}

// float16 copies with the cast on, off and on again: 2 bytes per element when on, 4 when off, of a (4, 400) H.
void c15_check_cast(const Tensor& H, const Arr& fours, const std::vector<std::string>& devs) {
  for (bool cast : {true, false, true}) {
    guard(std::string("float16 copies with cast ") + (cast ? "on" : "off"), [&] {
      AllreduceSettings s;
      s.ring = 0;
      s.cast = cast;
      ScopedSettings scoped(s);
      Tensor r = H.sum({0});
      ringrt::Schedule sched = r.schedule();
      BOOST_TEST(sched.copies().size() == 12u);
      for (const auto& c : sched.copies()) BOOST_TEST(c.bytes == (cast ? 400 * 2 : 400 * 4));
      BOOST_TEST(dname(r.dtype()) == "float16");
      expect_replicated(r, fours, devs);
    });
  }
}
}  // namespace

// Class: every setting is part of what decides the lowering, changed back and forth in one process:
// ring, all2all, the threshold (at its boundary), groups, leaders and cast; and realize() (not only
// schedule()) follows the change, seen through C13's order-dependent values.
BOOST_AUTO_TEST_CASE(c15_class_every_setting_in_the_key) {
  auto devs = ringrt::cpu_devices(4);
  Tensor X = Tensor::full({4, 400}, 1, DType::float32).shard(devs, 0);
  X.realize();
  Tensor H = Tensor::full({4, 400}, 1, DType::float16).shard(devs, 0);
  H.realize();
  Arr fours = make_arr({400}, [](int64_t) { return 4.0; });
  c15_check_steps(X, fours, devs);
  c15_check_cast(H, fours, devs);
}

BOOST_AUTO_TEST_CASE(c15_realize_follows_settings) {
  auto devs = ringrt::cpu_devices(4);
  const double row[] = {1e8, 1, -1e8, 1};
  Arr x = make_arr({4, 128}, [&](int64_t f) { return row[f / 128]; });
  Tensor X = make_tensor(x, DType::float32).shard(devs, 0);
  X.realize();
  Arr ones = make_arr({128}, [](int64_t) { return 1.0; });
  Arr ring = make_arr({128}, [](int64_t j) { return (j / 32) % 2 == 0 ? 1.0 : 0.0; });
  for (int ring_level : {0, 2, 0, 2}) {
    BOOST_TEST_CONTEXT("RING=" << ring_level) {
      AllreduceSettings s;
      s.ring = ring_level;
      ScopedSettings scoped(s);
      expect_replicated(X.sum({0}), ring_level == 2 ? ring : ones, devs);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
