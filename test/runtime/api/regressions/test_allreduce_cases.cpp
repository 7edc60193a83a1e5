// Multi-device regression cases C01..C04: the allreduce itself — each reduce op keeps its own combine step (C01),
// reductions of replicated tensors stay local and a 1-element allreduce (C02), fewer elements per device than devices
// (C03), device counts that are not powers of two (C04).
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

BOOST_AUTO_TEST_SUITE(test_allreduce_cases)

using namespace regr;  // NOLINT: the helpers of the regression cases

// =============================================================================================
// C01 — each reduce op keeps its own combine step

namespace {  // this file's helpers
void c01_body(const Variant& var) {
  ScopedSettings scoped(settings_for(var.algo, var.ndev));
  auto devs = ringrt::cpu_devices(var.ndev);
  Arr x = iota({4, 4});
  Tensor X = make_tensor(x, DType::int32);
  Tensor X0 = X.shard(devs, 0);
  X0.realize();
  Tensor X1 = X.shard(devs, 1);
  X1.realize();

  guard("X.max(0)", [&] {
    Tensor r = X0.max({0});
    expect_algorithms(r, {algo_name(var.algo)});
    expect_replicated(r, Arr{{4}, {12, 13, 14, 15}}, devs);  // a combine that adds gives [16,18,20,22]
  });
  guard("(X*-1).max(0)", [&] { expect_replicated((X0 * -1).max({0}), Arr{{4}, {0, -1, -2, -3}}, devs); });
  guard("X sharded on axis 1, max(1)", [&] {
    Tensor r = X1.max({1});
    expect_algorithms(r, {algo_name(var.algo)});
    expect_replicated(r, Arr{{4}, {3, 7, 11, 15}}, devs);
  });
  guard("float32 X.max()", [&] {
    Tensor F = make_tensor(x, DType::float32).shard(devs, 0);
    F.realize();
    expect_replicated(F.max(), Arr{{}, {15}}, devs);
  });
}
}  // namespace

BOOST_DATA_TEST_CASE(c01_max_combine, bdata::make(variants({2, 4}, kFlat)), var) { c01_body(var); }

BOOST_DATA_TEST_CASE(c01_max_combine_hierarchical, bdata::make(variants({4}, kHier)), var) { c01_body(var); }

// Class: every lowering path uses the op's own combine and identity — every op with every algorithm
// and device count, each op on two of four layouts (over the shard axis, over everything, over axis 1
// of a tensor sharded on axis 1, over another axis: stays sharded) and on a rotating dtype.
BOOST_DATA_TEST_CASE(c01_class_every_op_every_path, bdata::make(variants({2, 3, 5, 8}, kAll)), var) {
  ScopedSettings scoped(settings_for(var.algo, var.ndev));
  auto devs = ringrt::cpu_devices(var.ndev);
  int64_t n = var.ndev;
  struct Layout {
    Shape shape;
    int axis;
    std::vector<int> reduce_axes;
  };
  const std::vector<Layout> layouts = {
      {{2 * n, 5}, 0, {0}}, {{2 * n, 2, 3}, 0, {}}, {{3, 2 * n}, 1, {1}}, {{2 * n, 5}, 0, {1}}};
  for (size_t k = 0; k < kOps.size(); ++k) {
    Op op = kOps[k];
    DType dt = kDTypes[(k + rot(var)) % kDTypes.size()];
    for (size_t li : {(k + rot(var)) % 4, (k + rot(var) + 2) % 4}) {
      const Layout& l = layouts[li];
      std::ostringstream what;
      what << dname(dt) << " " << op_str(op) << " over (";
      for (int a : l.reduce_axes) what << a << ",";
      what << ") of " << shape_text(l.shape) << " sharded on axis " << l.axis;
      guard(what.str(), [&] {
        Arr x = reduce_data(op, l.shape);
        Tensor X = make_tensor(x, dt).shard(devs, l.axis);
        if (li % 2 == 0) X.realize();
        Tensor r = apply(X, op, l.reduce_axes);
        bool over_shard = l.reduce_axes.empty() ||
                          std::find(l.reduce_axes.begin(), l.reduce_axes.end(), l.axis) != l.reduce_axes.end();
        expect_algorithms(r, over_shard ? std::vector<std::string>{algo_name(var.algo)} : std::vector<std::string>{});
        BOOST_TEST(dname(r.dtype()) == dname(dt));
        expect_reduced(r, reduce(x, op, l.reduce_axes), l.axis, l.reduce_axes, devs);
      });
    }
  }
}

// =============================================================================================
// C02 — reductions of replicated tensors stay local; 1-element allreduce

BOOST_DATA_TEST_CASE(c02_replicated_stays_local, bdata::make(variants({2}, {Algo::naive, Algo::ring})), var) {
  ScopedSettings scoped(settings_for(var.algo, var.ndev));
  auto devs = ringrt::cpu_devices(2);
  Tensor X = Tensor::from_vector<int32_t>({1, 2, 3, 4}, {2, 2});
  for (std::optional<int> axis : {std::optional<int>(0), std::optional<int>(1), std::optional<int>()}) {
    guard(axis ? "sharded on axis " + std::to_string(*axis) : std::string("replicated"), [&] {
      Tensor S = X.shard(devs, axis);
      S.realize();
      Tensor r = S.sum();
      if (axis) {
        expect_algorithms(r, {algo_name(var.algo)});
      } else {
        expect_algorithms(r, {});
        BOOST_TEST(r.schedule().copies().empty());
      }
      expect_replicated(r, Arr{{}, {10}}, devs);  // 20 means a replicated tensor was allreduced
    });
  }
  Tensor R = X.shard(devs, std::nullopt);
  R.realize();
  guard("replicated sum(0)", [&] {
    Tensor r = R.sum({0});
    expect_algorithms(r, {});
    BOOST_TEST(r.schedule().copies().empty());
    expect_replicated(r, Arr{{2}, {4, 6}}, devs);
  });
  guard("replicated max()", [&] { expect_replicated(R.max(), Arr{{}, {4}}, devs); });
}

BOOST_AUTO_TEST_CASE(c02_one_element_ring_plan) {
  BOOST_TEST(plan_sizes(1, 2) == (std::vector<int64_t>{1, 0}), tt::per_element());
  BOOST_TEST(stated_plan(1, 2) == (std::vector<int64_t>{1, 0}), tt::per_element());
}

// Class: replicated tensors reduce locally for every op and axis set (dtypes rotating), with no
// allreduce and no copy, on neighbouring device counts.
BOOST_DATA_TEST_CASE(c02_class_replicated_reductions, bdata::make({2, 3, 5, 8}), ndev) {
  auto devs = ringrt::cpu_devices(ndev);
  const std::vector<std::vector<int>> axis_sets = {{}, {0}, {1}, {0, 1}};
  for (size_t k = 0; k < kOps.size(); ++k)
    for (size_t a = 0; a < axis_sets.size(); ++a) {
      Op op = kOps[k];
      DType dt = kDTypes[(k + a + static_cast<size_t>(ndev)) % kDTypes.size()];
      const std::vector<int>& axes = axis_sets[a];
      guard("replicated " + dname(dt) + " " + op_str(op) + " over " + std::to_string(axes.size()) + " axes", [&] {
        Arr x = reduce_data(op, {3, 4});
        Tensor R = make_tensor(x, dt).shard(devs, std::nullopt);
        if (a % 2 == 0) R.realize();
        // with R realized nothing moves; otherwise only R's broadcast copies
        Tensor r = a == 3 ? apply(R * 1 + R * 0, op, axes) : apply(R, op, axes);
        expect_algorithms(r, {});
        if (a % 2 == 0) BOOST_TEST(r.schedule().copies().empty());
        expect_replicated(r, reduce(x, op, axes), devs);
      });
    }
}

// Class: a 1-element allreduce (plan [1, 0, ...]) is right on every device: every op, algorithm and
// device count, dtypes rotating; a (n,) vector reduced whole and a (n, 1) matrix over axis 0.
BOOST_DATA_TEST_CASE(c02_class_one_element_allreduce, bdata::make(variants({2, 3, 5, 8}, kAll)), var) {
  ScopedSettings scoped(settings_for(var.algo, var.ndev));
  auto devs = ringrt::cpu_devices(var.ndev);
  int64_t n = var.ndev;
  BOOST_TEST(plan_sizes(1, n) == stated_plan(1, n), tt::per_element());
  for (size_t k = 0; k < kOps.size(); ++k) {
    Op op = kOps[k];
    DType dt = kDTypes[(k + rot(var)) % kDTypes.size()];
    guard("1-element allreduce " + dname(dt) + " " + op_str(op), [&] {
      bool column = (k + rot(var)) % 2 == 1;
      Arr v = reduce_data(op, column ? Shape{n, 1} : Shape{n});
      Tensor V = make_tensor(v, dt).shard(devs, 0);
      V.realize();
      std::vector<int> axes = column ? std::vector<int>{0} : std::vector<int>{};
      Tensor r = apply(V, op, axes);
      expect_algorithms(r, {algo_name(var.algo)});
      expect_replicated(r, reduce(v, op, axes), devs);
    });
  }
}

// =============================================================================================
// C03 — fewer elements per device than devices

BOOST_DATA_TEST_CASE(c03_fewer_elements_than_devices, bdata::make(variants({5}, {Algo::ring, Algo::all2all})), var) {
  {
    ScopedSettings scoped(settings_for(var.algo, 5));
    auto devs = ringrt::cpu_devices(5);
    Tensor X = Tensor::arange(15, DType::int32).reshape({5, 3}).shard(devs, 0);
    X.realize();
    guard("5 devices sum(0)", [&] {
      Tensor r = X.sum({0});
      expect_algorithms(r, {algo_name(var.algo)});
      expect_replicated(r, Arr{{3}, {30, 35, 40}}, devs);
    });
    guard("5 devices max(0)", [&] { expect_replicated(X.max({0}), Arr{{3}, {12, 13, 14}}, devs); });
  }
  {
    ScopedSettings scoped(settings_for(var.algo, 8));
    auto devs = ringrt::cpu_devices(8);
    Tensor X = Tensor::arange(16, DType::float32).reshape({8, 2}).shard(devs, 0);
    X.realize();
    guard("8 devices sum(0)", [&] {
      Tensor r = X.sum({0});
      expect_algorithms(r, {algo_name(var.algo)});
      expect_replicated(r, Arr{{2}, {56, 64}}, devs);
    });
    guard("8 devices sum()", [&] { expect_replicated(X.sum(), Arr{{}, {120}}, devs); });
  }
}

BOOST_AUTO_TEST_CASE(c03_ring_plans) {
  BOOST_TEST(plan_sizes(3, 5) == (std::vector<int64_t>{1, 1, 1, 0, 0}), tt::per_element());
  BOOST_TEST(plan_sizes(2, 8) == (std::vector<int64_t>{2, 0, 0, 0, 0, 0, 0, 0}), tt::per_element());
}

// Class: the plan of every (numel, ndev) matches the stated rule and tiles [0, numel) in order.
BOOST_AUTO_TEST_CASE(c03_class_plan_rule) {
  for (int64_t ndev = 1; ndev <= 9; ++ndev)
    for (int64_t numel = 0; numel <= 300; ++numel) {
      auto chunks = ringrt::allreduce_chunks(numel, ndev);
      BOOST_TEST_CONTEXT("numel " << numel << " over " << ndev << " devices") {
        BOOST_TEST(plan_sizes(numel, ndev) == stated_plan(numel, ndev), tt::per_element());
        BOOST_TEST_REQUIRE(static_cast<int64_t>(chunks.size()) == ndev);
        int64_t at = 0;
        for (auto [a, b] : chunks) {
          BOOST_TEST(a == at);
          BOOST_TEST(b >= a);
          at = b;
        }
        BOOST_TEST(at == numel);
      }
    }
}

// Class: empty chunks never hang, read out of bounds, or drop a device's contribution — per-device
// sizes 1, 2, n-1 and n+1 (ops and dtypes rotating over them), every algorithm, 3, 5, 7, 8 devices.
BOOST_DATA_TEST_CASE(c03_class_empty_chunks, bdata::make(variants({3, 5, 7, 8}, kAll)), var) {
  ScopedSettings scoped(settings_for(var.algo, var.ndev));
  auto devs = ringrt::cpu_devices(var.ndev);
  int64_t n = var.ndev;
  const std::vector<int64_t> sizes = {1, 2, n - 1, n + 1};
  for (size_t k = 0; k < sizes.size(); ++k) {
    int64_t cols = sizes[k];
    Op op = kOps[(k + rot(var)) % kOps.size()];
    DType dt = (k + rot(var)) % 2 ? DType::int32 : DType::float32;
    guard(dname(dt) + " " + op_str(op) + "(0) of (" + std::to_string(n) + ", " + std::to_string(cols) + ")", [&] {
      BOOST_TEST(plan_sizes(cols, n) == stated_plan(cols, n), tt::per_element());
      Arr x = reduce_data(op, {n, cols});
      Tensor X = make_tensor(x, dt).shard(devs, 0);
      X.realize();
      Tensor r = apply(X, op, {0});
      expect_algorithms(r, {algo_name(var.algo)});
      expect_replicated(r, reduce(x, op, {0}), devs);
      if (k == 0) expect_replicated(apply(X, op, {}), reduce(x, op, {}), devs);
    });
  }
}

// =============================================================================================
// C04 — device counts that are not powers of two

BOOST_DATA_TEST_CASE(c04_six_devices, bdata::make(variants({6}, kAll)), var) {
  ScopedSettings scoped(settings_for(var.algo, 6));
  auto devs = ringrt::cpu_devices(6);
  Tensor X = make_tensor(iota({6, 8}, 1), DType::float32).shard(devs, 0);
  X.realize();
  guard("sum(0)", [&] {
    Tensor r = X.sum({0});
    expect_algorithms(r, {algo_name(var.algo)});
    expect_replicated(r, Arr{{8}, {126, 132, 138, 144, 150, 156, 162, 168}}, devs);
  });
  guard("sum()", [&] { expect_replicated(X.sum(), Arr{{}, {1176}}, devs); });
  guard("max(0)", [&] { expect_replicated(X.max({0}), Arr{{8}, {41, 42, 43, 44, 45, 46, 47, 48}}, devs); });
}

BOOST_DATA_TEST_CASE(c04_six_devices_wide, bdata::make(variants({6}, kAll)), var) {
  ScopedSettings scoped(settings_for(var.algo, 6));
  auto devs = ringrt::cpu_devices(6);
  BOOST_TEST(plan_sizes(200, 6) == (std::vector<int64_t>{40, 32, 32, 32, 32, 32}), tt::per_element());
  Arr x = make_arr({6, 200}, [](int64_t f) { return static_cast<double>(200 * (f / 200) + f % 200 + 1); });
  Tensor X = make_tensor(x, DType::float32).shard(devs, 0);
  X.realize();
  Arr sum0{{200}, {}}, max0{{200}, {}};
  for (int j = 0; j < 200; ++j) {
    sum0.v.push_back(6 * j + 3006);
    max0.v.push_back(1001 + j);
  }
  guard("sum(0)", [&] {
    Tensor r = X.sum({0});
    expect_algorithms(r, {algo_name(var.algo)});
    expect_replicated(r, sum0, devs);
  });
  guard("sum()", [&] { expect_replicated(X.sum(), Arr{{}, {720600}}, devs); });
  guard("max(0)", [&] { expect_replicated(X.max({0}), max0, devs); });
}

// Class: 3, 5, 6 and 7 devices, every algorithm; numel with plan factors 8, 8 (uneven chunks) and 1
// (odd), with sum, max and min rotating over them and int32/float32 rotating too.
BOOST_DATA_TEST_CASE(c04_class_non_power_of_two, bdata::make(variants({3, 5, 6, 7}, kAll)), var) {
  ScopedSettings scoped(settings_for(var.algo, var.ndev));
  auto devs = ringrt::cpu_devices(var.ndev);
  int64_t n = var.ndev;
  const std::vector<int64_t> sizes = {200, 24, 13};
  const std::vector<Op> ops = {Op::sum, Op::max, Op::min};
  for (size_t k = 0; k < sizes.size(); ++k) {
    int64_t cols = sizes[k];
    Op op = ops[(k + rot(var)) % ops.size()];
    DType dt = (k + rot(var)) % 2 ? DType::int32 : DType::float32;
    guard(dname(dt) + " " + op_str(op) + "(0) of (" + std::to_string(n) + ", " + std::to_string(cols) + ")", [&] {
      BOOST_TEST(plan_sizes(cols, n) == stated_plan(cols, n), tt::per_element());
      Arr x = make_arr({n, cols}, [&](int64_t f) {
        double v = static_cast<double>(200 * (f / cols) + f % cols + 1);
        return op == Op::max ? -v : v;  // max on negative data, min on positive
      });
      Tensor X = make_tensor(x, dt).shard(devs, 0);
      X.realize();
      expect_replicated(apply(X, op, {0}), reduce(x, op, {0}), devs);
      if (k == 0) expect_replicated(apply(X, op, {}), reduce(x, op, {}), devs);
    });
  }
}

BOOST_AUTO_TEST_SUITE_END()
