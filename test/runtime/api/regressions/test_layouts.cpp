// Multi-device regression cases C09..C10: operands of different layouts — elementwise ops between differently sharded
// operands (C09) and uneven shards (C10).
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

BOOST_AUTO_TEST_SUITE(test_layouts)

using namespace regr;  // NOLINT: the helpers of the regression cases

// =============================================================================================
// C09 — elementwise ops between differently sharded operands

BOOST_AUTO_TEST_CASE(c09a_sharded_plus_replicated_row) {
  auto devs = ringrt::cpu_devices(2);
  Tensor v = Tensor::from_vector<float>({1, 2, 3, 4}, {4}).shard(devs, 0);
  Tensor R = Tensor::from_vector<float>({10, 20, 30, 40}, {1, 4}).shard(devs, std::nullopt);
  expect_sharded(v + R, Arr{{1, 4}, {11, 22, 33, 44}}, 1, devs);
}

BOOST_AUTO_TEST_CASE(c09b_sharded_plus_replicated_column) {
  auto devs = ringrt::cpu_devices(2);
  Tensor v = Tensor::from_vector<float>({1, 2, 3, 4}, {4}).shard(devs, 0);
  Tensor R = Tensor::from_vector<float>({1, 2, 3}, {3, 1}).shard(devs, std::nullopt);
  expect_sharded(v + R, Arr{{3, 4}, {2, 3, 4, 5, 3, 4, 5, 6, 4, 5, 6, 7}}, 1, devs);
}

BOOST_DATA_TEST_CASE(c09c_axis0_plus_axis1, bdata::make(variants({2}, kFlat)), var) {
  ScopedSettings scoped(settings_for(var.algo, 2));
  auto devs = ringrt::cpu_devices(2);
  Tensor A = Tensor::arange(16, DType::int32).reshape({4, 4});
  Tensor r = A.shard(devs, 0) + (A * 10).shard(devs, 1);
  Arr want = make_arr({4, 4}, [](int64_t f) { return 11.0 * static_cast<double>(f); });
  r.realize();
  BOOST_TEST_REQUIRE(r.shard_axis().has_value());
  expect_sharded(r, want, *r.shard_axis(), devs);
}

BOOST_AUTO_TEST_CASE(c09d_axis0_plus_replicated) {
  auto devs = ringrt::cpu_devices(2);
  Tensor A = Tensor::arange(16, DType::int32).reshape({4, 4});
  Tensor r = A.shard(devs, 0) + (A * 10).shard(devs, std::nullopt);
  expect_sharded(r, make_arr({4, 4}, [](int64_t f) { return 11.0 * static_cast<double>(f); }), 0, devs);
}

BOOST_DATA_TEST_CASE(c09e_matmul_contracting_the_shard_axis, bdata::make(variants({2}, kFlat)), var) {
  ScopedSettings scoped(settings_for(var.algo, 2));
  auto devs = ringrt::cpu_devices(2);
  Tensor X = Tensor::arange(8, DType::float32).reshape({2, 4}).shard(devs, 1);
  Tensor W = Tensor::arange(8, DType::float32).reshape({4, 2}).shard(devs, 0);
  X.realize();
  W.realize();
  Tensor r = (X.reshape({2, 4, 1}).expand({2, 4, 2}) * W.reshape({1, 4, 2}).expand({2, 4, 2})).sum({1});
  expect_algorithms(r, {algo_name(var.algo)});
  expect_replicated(r, Arr{{2, 2}, {28, 34, 76, 98}}, devs);
}

BOOST_DATA_TEST_CASE(c09f_multi_with_single_device_tensor, bdata::make(std::vector<int>{0, 1, 5}), single) {
  create_outside_devices();
  auto devs = ringrt::cpu_devices(2);
  Tensor A = Tensor::arange(16, DType::int32).reshape({4, 4}).shard(devs, 0);
  Tensor B = Tensor::arange(16, DType::int32, dev(single)).reshape({4, 4});
  std::vector<std::string> parts = {"CPU:0", "CPU:1", dev(single)};
  BOOST_CHECK_EXCEPTION((A + B).realize(), ShapeError, message_has(parts));
  BOOST_CHECK_EXCEPTION((B * A).realize(), ShapeError, message_has(parts));
  A.realize();
  BOOST_CHECK_EXCEPTION((A - B).realize(), ShapeError, message_has(parts));
}

// c09_class_layout_pairs' operands: (m, m) arrays, m = 2 * ndev, placed on the variant's devices (devs).
namespace {
enum C09Layout { ax0, ax1, repl, scalar, row, col };

// x (m, m) placed in layout l as dt: the tensor, and the host values it stands for broadcast to (m, m) (a scalar
// 3; row 1 of x as a (1, m) row; column 2 of x as an (m, 1) column; else x).
std::pair<Tensor, Arr> c09_layout(const Arr& x, C09Layout l, DType dt, const std::vector<std::string>& devs,
                                  int64_t m) {
  switch (l) {
    case ax0:
      return {make_tensor(x, dt).shard(devs, 0), x};
    case ax1:
      return {make_tensor(x, dt).shard(devs, 1), x};
    case repl:
      return {make_tensor(x, dt).shard(devs, std::nullopt), x};
    case scalar:
      return {Tensor::constant(3, dt), make_arr({m, m}, [](int64_t) { return 3.0; })};
    case row: {
      Arr r = slice(x, 0, 1, 2);
      return {make_tensor(r, dt).shard(devs, std::nullopt),
              make_arr({m, m}, [&](int64_t f) { return r.v[static_cast<size_t>(f % m)]; })};
    }
    case col: {
      Arr c = slice(x, 1, 2, 3);
      return {make_tensor(c, dt).shard(devs, std::nullopt),
              make_arr({m, m}, [&](int64_t f) { return c.v[static_cast<size_t>(f / m)]; })};
    }
  }
  throw std::logic_error("layout");
}

// An elementwise binary op: on tensors (t) and on host values (h).
struct C09BinOp {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> t;
  std::function<double(double, double)> h;
};

// The ops the pairs rotate over: +, -, *, maximum.
std::vector<C09BinOp> c09_ops() {
  return {{"+", [](const Tensor& p, const Tensor& q) { return p + q; }, [](double p, double q) { return p + q; }},
          {"-", [](const Tensor& p, const Tensor& q) { return p - q; }, [](double p, double q) { return p - q; }},
          {"*", [](const Tensor& p, const Tensor& q) { return p * q; }, [](double p, double q) { return p * q; }},
          {"maximum", [](const Tensor& p, const Tensor& q) { return p.maximum(q); },
           [](double p, double q) { return std::max(p, q); }}};
}

// Every pair of operand layouts (axis 0, axis 1, replicated) x (those, a scalar, a replicated row or column to
// broadcast), with the op and dtype rotating over the pairs: the result sharded when an operand is, else replicated.
void c09_elementwise_pairs(const Variant& var, const std::vector<std::string>& devs) {
  int64_t n = var.ndev, m = 2 * n;
  const char* lname[] = {"axis0", "axis1", "replicated", "scalar", "row(1,m) replicated", "column(m,1) replicated"};
  Arr a = make_arr({m, m}, [](int64_t f) { return static_cast<double>((f * 5) % 11 - 5); });
  Arr b = make_arr({m, m}, [](int64_t f) { return static_cast<double>((f * 3) % 7 - 3); });
  const std::vector<C09BinOp> ops = c09_ops();
  const std::vector<DType> dts = {DType::int32, DType::float32, DType::bfloat16};
  size_t pair = 0;
  for (C09Layout la : {ax0, ax1, repl})
    for (C09Layout lb : {ax0, ax1, repl, scalar, row, col}) {
      const C09BinOp& op = ops[(pair + rot(var)) % ops.size()];
      DType dt = dts[(pair + rot(var)) % dts.size()];
      ++pair;
      guard(dname(dt) + " " + lname[la] + " " + op.name + " " + lname[lb], [&] {
        auto [ta, ha] = c09_layout(a, la, dt, devs, m);
        auto [tb, hb] = c09_layout(b, lb, dt, devs, m);
        if (la != repl) ta.realize();
        Arr want = map2(ha, hb, op.h);
        Tensor r = op.t(ta, tb);
        r.realize();
        BOOST_TEST(r.shape() == want.shape, tt::per_element());
        if (r.shard_axis()) {
          BOOST_TEST((la != repl || lb == ax0 || lb == ax1));
          expect_sharded(r, want, *r.shard_axis(), devs);
        } else {
          BOOST_TEST((la == repl && lb != ax0 && lb != ax1), "result not sharded");
          expect_replicated(r, want, devs);
        }
      });
    }
}

// Matmuls (3, m) x (m, 2) contracting X's shard axis, W sharded on that axis (an allreduce by the variant's
// algorithm) or replicated; the product computed on the host.
void c09_matmuls(const Variant& var, const std::vector<std::string>& devs) {
  int64_t n = var.ndev, m = 2 * n;
  DType dt = rot(var) % 2 ? DType::int32 : DType::float32;
  Arr x = make_arr({3, m}, [](int64_t f) { return static_cast<double>(f % 5 - 2); });
  Arr w = make_arr({m, 2}, [](int64_t f) { return static_cast<double>(f % 3 - 1); });
  Arr want{{3, 2}, {}};
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < m; ++k) acc += x.v[static_cast<size_t>(i * m + k)] * w.v[static_cast<size_t>(k * 2 + j)];
      want.v.push_back(acc);
    }
  auto matmul = [&](const Tensor& X, const Tensor& W) {
    return (X.reshape({3, m, 1}).expand({3, m, 2}) * W.reshape({1, m, 2}).expand({3, m, 2})).sum({1});
  };
  guard(dname(dt) + " matmul contracting the shard axis", [&] {
    Tensor r = matmul(make_tensor(x, dt).shard(devs, 1), make_tensor(w, dt).shard(devs, 0));
    expect_algorithms(r, {algo_name(var.algo)});
    expect_replicated(r, want, devs);
  });
  guard(dname(dt) + " matmul with W replicated, contracting X's shard axis", [&] {
    Tensor r = matmul(make_tensor(x, dt).shard(devs, 1), make_tensor(w, dt).shard(devs, std::nullopt));
    expect_replicated(r, want, devs);
  });
}
}  // namespace

// Class: every pair of operand layouts (axis 0, axis 1, replicated) x (those, a scalar, a replicated
// row or column to broadcast), with the op and dtype rotating over the pairs; 2..4 devices, every
// algorithm for the mixed-axis allreduce; and matmuls contracting the shard axis.
BOOST_DATA_TEST_CASE(c09_class_layout_pairs, bdata::make(variants({2, 3, 4}, kAll)), var) {
  ScopedSettings scoped(settings_for(var.algo, var.ndev));
  auto devs = ringrt::cpu_devices(var.ndev);
  c09_elementwise_pairs(var, devs);
  c09_matmuls(var, devs);
}

// =============================================================================================
// C10 — uneven shards

namespace {  // this file's helpers
struct Uneven {
  std::string name;
  Arr x;
  DType dtype;
  int axis, ndev;
};
std::ostream& operator<<(std::ostream& os, const Uneven& u) { return os << u.name; }

void check_uneven(const Uneven& u) {
  auto devs = ringrt::cpu_devices(u.ndev);
  Tensor X = make_tensor(u.x, u.dtype);
  int64_t len = u.x.shape[static_cast<size_t>(u.axis)];
  std::vector<std::string> parts = {"shard", "axis " + std::to_string(u.axis), "length " + std::to_string(len),
                                    std::to_string(u.ndev) + " devices"};
  std::optional<Tensor> S;
  try {
    S = X.shard(devs, u.axis);
  } catch (const ShapeError& e) {
    BOOST_TEST(message_has(parts)(e), "ShapeError at shard(): " << e.what());
    return;
  }
  BOOST_TEST_MESSAGE("uneven shards supported: checking round trip, sum and max");
  expect_equal(read(*S), u.x);
  expect_replicated(S->sum(), reduce(u.x, Op::sum, {}), devs);
  expect_replicated(S->max(), reduce(u.x, Op::max, {}), devs);
  Tensor neg = make_tensor(u.x, u.dtype) * -1 - 1;  // all negative: an empty shard must not add a 0
  Arr hneg = u.x;
  for (double& v : hneg.v) v = -v - 1;
  expect_replicated(neg.shard(devs, u.axis).max(), reduce(hneg, Op::max, {}), devs);
}
}  // namespace

BOOST_DATA_TEST_CASE(c10_uneven_shard,
                     bdata::make(std::vector<Uneven>{
                         {"int32 [1,2] over 4", Arr{{2}, {1, 2}}, DType::int32, 0, 4},
                         {"int32 [1,2,3] over 2", Arr{{3}, {1, 2, 3}}, DType::int32, 0, 2},
                         {"float32 ones(256) over 3", make_arr({256}, [](int64_t) { return 1.0; }), DType::float32, 0,
                          3}}),
                     u) {
  check_uneven(u);
}

// Class: uneven on axis 1, fewer elements than devices, other dtypes and counts; even splits stay fine.
BOOST_DATA_TEST_CASE(c10_class_uneven,
                     bdata::make(std::vector<Uneven>{
                         {"int32 (2,3) axis 1 over 2", iota({2, 3}, 1), DType::int32, 1, 2},
                         {"float32 (5,) over 3", iota({5}, 1), DType::float32, 0, 3},
                         {"float16 (7,4) axis 0 over 4", iota({7, 4}, 1), DType::float16, 0, 4},
                         {"bfloat16 (3,) over 8", iota({3}, 1), DType::bfloat16, 0, 8},
                         {"int32 (1,) over 2", iota({1}, 1), DType::int32, 0, 2},
                         {"int32 (4,10) axis 1 over 4", iota({4, 10}, 1), DType::int32, 1, 4},
                         {"float32 (9,2) axis 0 over 6", iota({9, 2}, 1), DType::float32, 0, 6}}),
                     u) {
  check_uneven(u);
  // the even neighbour: (k*n, ...) on the same axis shards and sums right
  auto devs = ringrt::cpu_devices(u.ndev);
  Shape even = u.x.shape;
  even[static_cast<size_t>(u.axis)] = u.ndev;
  Arr x = iota(even, 1);
  Tensor S = make_tensor(x, u.dtype).shard(devs, u.axis);
  expect_sharded(S, x, u.axis, devs);
  expect_replicated(S.sum(), reduce(x, Op::sum, {}), devs);
}

BOOST_AUTO_TEST_SUITE_END()
