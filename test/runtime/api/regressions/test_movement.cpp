// Multi-device regression cases C05..C08: movement through the shard axis — a sharded tensor copied to one device
// (C05), shrink and pad around the shard axis (C06), flip and permute with a sharded axis (C07), reshape through the
// shard axis (C08).
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

BOOST_AUTO_TEST_SUITE(test_movement)

using namespace regr;  // NOLINT: the helpers of the regression cases

// =============================================================================================
// C05 — a sharded tensor copied to one device

namespace {  // this file's helpers
// t.to(target): one device, exactly target, holding want; every copy stays within tuple + target.
void expect_on_device(const Tensor& t, const std::string& target, const Arr& want,
                      const std::vector<std::string>& devs) {
  Tensor c = t.to(target);
  BOOST_TEST(c.devices() == std::vector<std::string>{target}, tt::per_element());
  std::set<std::string> allowed(devs.begin(), devs.end());
  allowed.insert(target);
  for (const auto& cp : c.schedule().copies()) {
    BOOST_TEST(allowed.count(cp.src) == 1u, "copy from " << cp.src);
    BOOST_TEST(allowed.count(cp.dst) == 1u, "copy to " << cp.dst);
  }
  c.realize();
  BOOST_TEST(c.devices() == std::vector<std::string>{target}, tt::per_element());
  BOOST_TEST(c.shard_axis().has_value() == false);
  expect_equal(read(c), want);
}
}  // namespace

BOOST_DATA_TEST_CASE(c05_copy_sharded_to_one_device, bdata::make(variants({4}, kAll)), var) {
  create_outside_devices();
  ScopedSettings scoped(settings_for(var.algo, 4));
  auto devs = ringrt::cpu_devices(4);
  Tensor X = Tensor::arange(32, DType::int32).shard(devs, 0);
  X.realize();
  guard("to CPU:2 (inside the tuple)", [&] { expect_on_device(X, "CPU:2", iota({32}), devs); });
  guard("to CPU:5 (outside the tuple)", [&] { expect_on_device(X, "CPU:5", iota({32}), devs); });
}

BOOST_DATA_TEST_CASE(c05_copy_axis1_to_outside_device, bdata::make(variants({2}, kFlat)), var) {
  create_outside_devices();
  ScopedSettings scoped(settings_for(var.algo, 2));
  auto devs = ringrt::cpu_devices(2);
  Tensor X = Tensor::arange(8, DType::int32).reshape({2, 4}).shard(devs, 1);
  X.realize();
  expect_on_device(X, "CPU:5", Arr{{2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}}, devs);
}

// Class: every target inside the tuple and two outside it, from tensors sharded on axis 0 (realized)
// or axis 1 (not realized) or replicated, four dtypes — layouts and dtypes rotating over the targets —
// every algorithm and device count.
BOOST_DATA_TEST_CASE(c05_class_every_target, bdata::make(variants({2, 3, 5, 8}, kAll)), var) {
  create_outside_devices();
  ScopedSettings scoped(settings_for(var.algo, var.ndev));
  auto devs = ringrt::cpu_devices(var.ndev);
  int64_t n = var.ndev;
  std::vector<std::string> targets = devs;
  targets.push_back(dev(var.ndev));
  targets.push_back("CPU:9");
  Arr x0 = make_arr({2 * n, 3}, [](int64_t f) { return static_cast<double>((f * 7) % 23 - 11); });
  Arr x1 = make_arr({3, 2 * n}, [](int64_t f) { return static_cast<double>((f * 5) % 19 - 9); });
  for (size_t t = 0; t < targets.size(); ++t) {
    const std::string& target = targets[t];
    DType dt = kDTypes[(t + rot(var)) % kDTypes.size()];
    switch ((t + rot(var)) % 3) {
      case 0:
        guard(dname(dt) + " axis 0 to " + target, [&] {
          Tensor X = make_tensor(x0, dt).shard(devs, 0);
          X.realize();
          expect_on_device(X, target, x0, devs);
        });
        break;
      case 1:
        guard(dname(dt) + " axis 1, not realized, to " + target,
              [&] { expect_on_device(make_tensor(x1, dt).shard(devs, 1), target, x1, devs); });
        break;
      default:
        guard(dname(dt) + " replicated to " + target, [&] {
          Tensor R = make_tensor(x0, dt).shard(devs, std::nullopt);
          R.realize();
          expect_on_device(R, target, x0, devs);
        });
    }
  }
}

// =============================================================================================
// C06 — shrink and pad around the shard axis (each with the input realized first and without)

namespace {  // this file's helpers
Tensor c06_input(bool realized, int ndev = 4) {
  Tensor X = Tensor::arange(64, DType::int32).reshape({8, 8}).shard(ringrt::cpu_devices(ndev), 0);
  if (realized) X.realize();
  return X;
}
auto realized_or_not() { return bdata::make({false, true}); }
}  // namespace

BOOST_DATA_TEST_CASE(c06a_shrink_one_shard_and_columns, realized_or_not(), realized) {
  Tensor r = c06_input(realized).shrink({{0, 2}, {2, 4}});
  expect_replicated(r, Arr{{2, 2}, {2, 3, 10, 11}}, ringrt::cpu_devices(4));
}

BOOST_DATA_TEST_CASE(c06b_shrink_off_shard_boundary, realized_or_not(), realized) {
  Tensor X = c06_input(realized);
  BOOST_CHECK_EXCEPTION(X.shrink({{0, 3}, {0, 8}}).realize(), ShapeError, message_has({"SHRINK", "(8, 8)", "axis 0"}));
}

BOOST_DATA_TEST_CASE(c06c_shrink_pad_shards_back_into_place, realized_or_not(), realized) {
  Tensor X = c06_input(realized);
  Tensor r = X.shrink({{2, 4}, {0, 8}}).pad({{2, 4}, {0, 0}}) + X.shrink({{6, 8}, {0, 8}}).pad({{6, 0}, {0, 0}});
  Arr want = make_arr({8, 8}, [](int64_t f) {
    int64_t row = f / 8;
    return row == 2 || row == 3 || row == 6 || row == 7 ? static_cast<double>(f) : 0.0;
  });
  expect_replicated(r, want, ringrt::cpu_devices(4));
}

BOOST_DATA_TEST_CASE(c06d_pad_shard_axis, realized_or_not(), realized) {
  Tensor X = c06_input(realized);
  BOOST_CHECK_EXCEPTION(X.pad({{1, 0}, {0, 0}}).realize(), ShapeError, message_has({"PAD", "(8, 8)", "axis 0"}));
}

BOOST_DATA_TEST_CASE(c06e_shrink_reshape_expand_sum, realized_or_not(), realized) {
  Tensor r = c06_input(realized).shrink({{2, 4}, {0, 8}}).reshape({2, 1, 8}).expand({2, 3, 8}).sum({1});
  Arr want{{2, 8}, {}};
  for (int row = 2; row < 4; ++row)
    for (int j = 0; j < 8; ++j) want.v.push_back(3.0 * (8 * row + j));
  BOOST_TEST(want.v.front() == 48);
  BOOST_TEST(want.v.back() == 93);
  expect_replicated(r, want, ringrt::cpu_devices(4));
}

// Class: every range on the shard axis (one shard: copied everywhere; the whole axis: stays sharded;
// anything else: ShapeError), combined with column shrinks, pads and expands, on 2, 4 and 8 devices.
BOOST_DATA_TEST_CASE(c06_class_every_range, bdata::make({2, 4, 8}) * realized_or_not(), ndev, realized) {
  auto devs = ringrt::cpu_devices(ndev);
  Arr x = iota({8, 8});
  int64_t per = 8 / ndev;
  for (int64_t a = 0; a < 8; ++a)
    for (int64_t b = a + 1; b <= 8; ++b) {
      std::string what = "rows [" + std::to_string(a) + ", " + std::to_string(b) + ") columns [1, 5)";
      bool one_shard = a % per == 0 && b - a == per, whole = a == 0 && b == 8;
      bool whole_shards = a % per == 0 && b % per == 0;  // several: copied to every device side by side
      guard(what, [&] {
        Tensor X = c06_input(realized, ndev);
        Tensor r = X.shrink({{a, b}, {1, 5}});
        Arr want = slice(slice(x, 0, a, b), 1, 1, 5);
        if (whole) {
          expect_sharded(r, want, 0, devs);
        } else if (one_shard) {
          expect_replicated(r, want, devs);
          // padded back into place and summed over rows: the shard's column sums, everywhere
          Tensor p = X.shrink({{a, b}, {0, 8}}).pad({{a, 8 - b}, {0, 0}}).sum({0});
          expect_replicated(p, reduce(slice(x, 0, a, b), Op::sum, {0}), devs);
        } else if (whole_shards) {
          expect_replicated(r, want, devs);
        } else {
          BOOST_CHECK_EXCEPTION(r.realize(), ShapeError, message_has({"SHRINK", "(8, 8)", "axis 0"}));
        }
      });
    }
  guard("pad columns of the sharded tensor", [&] {
    Arr want = make_arr({8, 11}, [&](int64_t f) {
      int64_t i = f / 11, j = f % 11 - 1;
      return j >= 0 && j < 8 ? x.v[static_cast<size_t>(8 * i + j)] : 0.0;
    });
    expect_sharded(c06_input(realized, ndev).pad({{0, 0}, {1, 2}}), want, 0, devs);
  });
  for (std::pair<int64_t, int64_t> rows : {std::pair<int64_t, int64_t>{1, 0}, {0, 1}, {2, 2}}) {
    guard("pad rows", [&] {
      Tensor X = c06_input(realized, ndev);
      BOOST_CHECK_EXCEPTION(X.pad({rows, {0, 0}}).realize(), ShapeError, message_has({"PAD", "(8, 8)", "axis 0"}));
    });
  }
  guard("expand a middle axis and sum it", [&] {
    Tensor r = c06_input(realized, ndev).reshape({8, 1, 8}).expand({8, 3, 8}).sum({1});
    expect_sharded(r, make_arr({8, 8}, [](int64_t f) { return 3.0 * static_cast<double>(f); }), 0, devs);
  });
  guard("expand the unsharded axis of a (1, 8) tensor sharded on axis 1", [&] {
    Tensor X = Tensor::arange(8, DType::int32).reshape({1, 8}).shard(devs, 1);
    if (realized) X.realize();
    expect_sharded(X.expand({3, 8}), make_arr({3, 8}, [](int64_t f) { return static_cast<double>(f % 8); }), 1, devs);
  });
}

// =============================================================================================
// C07 — flip and permute with a sharded axis

namespace {  // this file's helpers
Tensor c07_input() { return Tensor::arange(8, DType::int32).reshape({2, 2, 2}).shard(ringrt::cpu_devices(2), 1); }
}  // namespace

BOOST_AUTO_TEST_CASE(c07a_flip_unsharded_axis) {
  Tensor r = c07_input().flip({0}) + 1;
  expect_sharded(r, Arr{{2, 2, 2}, {5, 6, 7, 8, 1, 2, 3, 4}}, 1, ringrt::cpu_devices(2));
}

BOOST_AUTO_TEST_CASE(c07b_flip_two_unsharded_axes) {
  Tensor r = c07_input().flip({0, 2});
  expect_sharded(r, Arr{{2, 2, 2}, {5, 4, 7, 6, 1, 0, 3, 2}}, 1, ringrt::cpu_devices(2));
}

BOOST_AUTO_TEST_CASE(c07c_flip_sharded_axis) {
  shape_error_or(
      Expect::refusal, {"FLIP", "(2, 2, 2)", "axis 1"}, [] { return c07_input().flip({1}); },
      [](Tensor t) {
        expect_values(t, {2, 3, 0, 1, 6, 7, 4, 5});
      });
}

BOOST_DATA_TEST_CASE(c07d_permute_moves_shard_axis_then_allreduce, bdata::make(variants({3}, kAll)), var) {
  ScopedSettings scoped(settings_for(var.algo, 3));
  auto devs = ringrt::cpu_devices(3);
  Tensor X = Tensor::arange(24, DType::int32).reshape({2, 6, 2}).shard(devs, 1);
  X.realize();
  Tensor P = X.permute({2, 0, 1});
  BOOST_TEST(uop_of(P).axis().value_or(-1) == 2);
  Tensor r = P.sum({2});
  expect_algorithms(r, {algo_name(var.algo)});
  expect_replicated(r, Arr{{2, 2}, {30, 102, 36, 108}}, devs);
}

// Class: every permutation of a sharded (2, 2n, 2) tensor followed by an allreduce over the moved
// shard axis; for two of the six, the permuted values shard by shard and a reduction over another
// axis; flips of the unsharded axes (values) and of the sharded one (ShapeError or values), realized
// or not; 2, 3 and 6 devices, every algorithm, int32 or float32.
BOOST_DATA_TEST_CASE(c07_class_permute_flip, bdata::make(variants({2, 3, 6}, kAll)), var) {
  ScopedSettings scoped(settings_for(var.algo, var.ndev));
  auto devs = ringrt::cpu_devices(var.ndev);
  int64_t n = var.ndev;
  Arr x = iota({2, 2 * n, 2});
  DType dt = rot(var) % 2 ? DType::int32 : DType::float32;
  Tensor X = make_tensor(x, dt).shard(devs, 1);
  X.realize();
  std::vector<int> order = {0, 1, 2};
  size_t p = 0;
  do {
    std::string what = dname(dt) + " permute (" + std::to_string(order[0]) + "," + std::to_string(order[1]) + "," +
                       std::to_string(order[2]) + ")";
    int new_axis = static_cast<int>(std::find(order.begin(), order.end(), 1) - order.begin());
    Arr px = permute(x, order);
    guard(what + " then an allreduce over the shard axis", [&] {
      Tensor r = X.permute(order).sum({new_axis});
      expect_algorithms(r, {algo_name(var.algo)});
      expect_replicated(r, reduce(px, Op::sum, {new_axis}), devs);
    });
    if ((p + rot(var)) % 3 == 0) {
      guard(what, [&] { expect_sharded(X.permute(order), px, new_axis, devs); });
      int other = (new_axis + 1) % 3;
      guard(what + " then max over another axis", [&] {
        expect_reduced(X.permute(order).max({other}), reduce(px, Op::max, {other}), new_axis, {other}, devs);
      });
    }
    ++p;
  } while (std::next_permutation(order.begin(), order.end()));
  const std::vector<std::vector<int>> unsharded = {{0}, {2}, {0, 2}, {-1}};
  for (size_t i = 0; i < unsharded.size(); ++i) {
    guard(dname(dt) + " flip unsharded axes", [&] {
      Tensor Y = make_tensor(x, dt).shard(devs, 1);
      if ((i + rot(var)) % 2) Y.realize();
      std::vector<int> pos;
      for (int a : unsharded[i]) pos.push_back(a < 0 ? a + 3 : a);
      Arr fx = flip(x, pos);
      expect_sharded(Y.flip(unsharded[i]) * 2, map2(fx, fx, [](double a, double) { return 2 * a; }), 1, devs);
    });
  }
  for (const std::vector<int>& axes : {std::vector<int>{1}, {0, 1}, {1, 2}, {-2}}) {
    guard(dname(dt) + " flip the sharded axis", [&] {
      std::vector<int> pos;
      for (int a : axes) pos.push_back(a < 0 ? a + 3 : a);
      Arr want = flip(x, pos);
      shape_error_or(
          Expect::refusal, {"FLIP", shape_text(x.shape), "axis 1"}, [&] { return X.flip(axes); },
          [&](Tensor t) { expect_equal(read(t), want); });
    });
  }
}

// =============================================================================================
// C08 — reshape through the shard axis

namespace {  // this file's helpers
// The oracle: a reshape of a tensor of shape s sharded on axis a over n devices keeps every element
// on its device exactly when some axis b of t satisfies t[b] % n == 0 and, for every flat index f,
// device(f) == coord_b(f) / (t[b] / n). Returns that axis (it is unique for n > 1) or nullopt.
std::optional<int> reshape_keeps_shards(const Shape& s, int a, int64_t n, const Shape& t) {
  int64_t total = numel(s);
  auto device_old = [&](int64_t f) { return unravel(f, s)[static_cast<size_t>(a)] / (s[static_cast<size_t>(a)] / n); };
  for (size_t b = 0; b < t.size(); ++b) {
    if (t[b] % n != 0) continue;
    bool ok = true;
    for (int64_t f = 0; ok && f < total; ++f) ok = device_old(f) == unravel(f, t)[b] / (t[b] / n);
    if (ok) return static_cast<int>(b);
  }
  return std::nullopt;
}

// Every shape of rank 1..4 whose product is total.
void shapes_of(int64_t total, size_t rank, Shape& prefix, std::vector<Shape>& out) {
  if (prefix.size() + 1 == rank) {
    prefix.push_back(total);
    out.push_back(prefix);
    prefix.pop_back();
    return;
  }
  for (int64_t d = 1; d <= total; ++d)
    if (total % d == 0) {
      prefix.push_back(d);
      shapes_of(total / d, rank, prefix, out);
      prefix.pop_back();
    }
}

// X: x sharded on axis over devs, realized or not.
void check_reshape(const Tensor& X, const Arr& x, int axis, const std::vector<std::string>& devs, const Shape& to,
                   bool realized) {
  int64_t n = static_cast<int64_t>(devs.size());
  std::optional<int> keeps = reshape_keeps_shards(x.shape, axis, n, to);
  BOOST_TEST_CONTEXT(shape_text(x.shape) << " sharded on axis " << axis << " over " << n << " devices -> "
                                         << shape_text(to) << (realized ? " (realized)" : "")) {
    if (keeps) {
      guard("valid reshape", [&] { expect_sharded(X.reshape(to), Arr{to, x.v}, *keeps, devs); });
    } else {
      BOOST_CHECK_EXCEPTION(X.reshape(to).realize(), ShapeError, message_has({"RESHAPE", shape_text(to)}));
    }
  }
}
}  // namespace

BOOST_AUTO_TEST_CASE(c08_reshape_keeps_shards) {
  auto devs = ringrt::cpu_devices(3);
  Arr x = iota({2, 6, 2});
  Tensor X = Tensor::arange(24, DType::int32).reshape({2, 6, 2}).shard(devs, 1);
  X.realize();
  const std::vector<std::pair<Shape, int>> cases = {
      {{2, 3, 2, 2}, 1}, {{2, 12}, 1}, {{2, 6, 2, 1}, 1}, {{1, 2, 6, 2}, 2}};
  for (const auto& c : cases) {  // not a structured binding: clang 14 cannot capture one
    const Shape& to = c.first;
    const int axis = c.second;
    guard("reshape to " + shape_text(to), [&] { expect_sharded(X.reshape(to), Arr{to, x.v}, axis, devs); });
  }
}

BOOST_AUTO_TEST_CASE(c08_reshape_moving_elements_is_shape_error) {
  auto devs = ringrt::cpu_devices(3);
  Tensor X = Tensor::arange(24, DType::int32).reshape({2, 6, 2}).shard(devs, 1);
  X.realize();
  for (const Shape& to : {Shape{24}, Shape{12, 2}, Shape{4, 3, 2}}) {
    BOOST_TEST_CONTEXT("reshape to " << shape_text(to)) {
      BOOST_CHECK_EXCEPTION(X.reshape(to).realize(), ShapeError, message_has({"RESHAPE", "(2, 6, 2)", shape_text(to)}));
    }
  }
  Tensor Y = Tensor::full({5, 4}, 1, DType::float32).shard(ringrt::cpu_devices(2), 1);
  BOOST_CHECK_EXCEPTION(Y.reshape({10, 2}).realize(), ShapeError, message_has({"RESHAPE", "(5, 4)", "(10, 2)"}));
}

// Class: every reshape target of rank 1..4, on several sharded layouts: a reshape that keeps each
// element on its device works (row-major values, the oracle's shard axis, the right slice on each
// device; the input realized for every other such target); any other is a ShapeError, never a crash
// or a silent wrong layout (checked with the input realized and not).
BOOST_DATA_TEST_CASE(c08_class_every_target,
                     bdata::make(std::vector<std::string>{"2x6x2/1/3", "2x6x2/1/2", "2x6x2/1/6", "6x4/0/3", "4x6/1/2",
                                                          "2x3x4/2/2", "2x3x4/2/4"}),
                     layout) {
  // "SHAPE/axis/ndev"
  Shape s;
  std::string text = layout;
  size_t slash = text.find('/');
  std::stringstream dims(text.substr(0, slash));
  for (std::string d; std::getline(dims, d, 'x');) s.push_back(std::stoll(d));
  int axis = std::stoi(text.substr(slash + 1));
  int ndev = std::stoi(text.substr(text.rfind('/') + 1));
  auto devs = ringrt::cpu_devices(ndev);
  Arr x = iota(s);
  Tensor lazy = make_tensor(x, DType::int32).shard(devs, axis);
  Tensor real = make_tensor(x, DType::int32).shard(devs, axis);
  real.realize();
  std::vector<Shape> targets;
  for (size_t rank = 1; rank <= 4; ++rank) {
    Shape prefix;
    shapes_of(numel(s), rank, prefix, targets);
  }
  int valid = 0;
  for (const Shape& to : targets) {
    if (reshape_keeps_shards(s, axis, ndev, to)) {
      bool realized = ++valid % 2 == 0;
      guard("reshape", [&] { check_reshape(realized ? real : lazy, x, axis, devs, to, realized); });
    } else {
      for (bool realized : {false, true})
        guard("reshape", [&] { check_reshape(realized ? real : lazy, x, axis, devs, to, realized); });
    }
  }
  BOOST_TEST_MESSAGE(layout << ": " << targets.size() << " targets, " << valid << " keep the shards");
  BOOST_TEST(valid > 0);
}

BOOST_AUTO_TEST_SUITE_END()
