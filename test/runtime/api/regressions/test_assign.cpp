// Multi-device regression cases C11..C12: writes — assign between different shard layouts (C11) and write after read
// (C12).
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

BOOST_AUTO_TEST_SUITE(test_assign)

using namespace regr;  // NOLINT: the helpers of the regression cases

// =============================================================================================
// C11 — assign between different shard layouts

BOOST_AUTO_TEST_CASE(c11_assign_replicated_from_sharded) {
  auto devs = ringrt::cpu_devices(2);
  Tensor R = Tensor::full({4, 4}, 0, DType::float32).shard(devs, std::nullopt);
  R.realize();
  Arr ones = make_arr({4, 4}, [](int64_t) { return 1.0; });
  shape_error_or(
      Expect::refusal, {"ASSIGN", "(4, 4)"},
      [&] {
        R.assign(Tensor::full({4, 4}, 1, DType::float32).shard(devs, 0));
        return R;
      },
      [&](Tensor t) { expect_replicated(t, ones, devs); });  // never half-filled
}

BOOST_AUTO_TEST_CASE(c11_assign_axis0_from_axis1) {
  auto devs = ringrt::cpu_devices(2);
  Tensor S = Tensor::full({4, 4}, 0, DType::float32).shard(devs, 0);
  S.realize();
  Arr ones = make_arr({4, 4}, [](int64_t) { return 1.0; });
  shape_error_or(
      Expect::refusal, {"ASSIGN", "(4, 4)"},
      [&] {
        S.assign(Tensor::full({4, 4}, 1, DType::float32).shard(devs, 1));
        return S;
      },
      [&](Tensor t) { expect_sharded(t, ones, 0, devs); });
}

// Class: every pair of layouts (axis 0, axis 1, replicated, one device inside or outside the tuple;
// the value realized or not, rotating) on 2 and 4 devices: equal layouts assign every device's part;
// other layouts are a ShapeError (a value on other devices: or a DeviceError) naming ASSIGN and the
// shape or devices, or fully right — never half-filled.
BOOST_DATA_TEST_CASE(c11_class_layout_pairs, bdata::make({2, 4}), ndev) {
  create_outside_devices();
  auto devs = ringrt::cpu_devices(ndev);
  int64_t m = 2 * ndev;
  Arr old_v = make_arr({m, m}, [](int64_t f) { return static_cast<double>(f % 9); });
  Arr new_v = make_arr({m, m}, [](int64_t f) { return 100.0 + static_cast<double>(f); });
  enum L { ax0, ax1, repl, single_in, single_out };
  const char* lname[] = {"axis0", "axis1", "replicated", "one device CPU:0", "one device outside"};
  auto place = [&](const Arr& x, L l) {
    switch (l) {
      case ax0:
        return make_tensor(x, DType::float32).shard(devs, 0);
      case ax1:
        return make_tensor(x, DType::float32).shard(devs, 1);
      case repl:
        return make_tensor(x, DType::float32).shard(devs, std::nullopt);
      case single_in:
        return make_tensor(x, DType::float32, "CPU:0");
      case single_out:
        return make_tensor(x, DType::float32, dev(ndev));
    }
    throw std::logic_error("layout");
  };
  for (L ld : {ax0, ax1, repl})
    for (L lv : {ax0, ax1, repl, single_in, single_out}) {
      bool value_realized = (ld + lv + ndev) % 2 == 0;
      guard(std::string(lname[ld]) + " <- " + lname[lv] + (value_realized ? " (realized)" : ""), [&] {
        Tensor D = place(old_v, ld);
        D.realize();
        Tensor V = place(new_v, lv);
        if (value_realized) V.realize();
        auto check = [&](Tensor t) {
          if (ld == repl) {
            expect_replicated(t, new_v, devs);
          } else {
            expect_sharded(t, new_v, ld == ax0 ? 0 : 1, devs);
          }
        };
        if (ld == lv) {
          D.assign(V);
          D.realize();
          check(D);
        } else if (lv == single_in || lv == single_out) {
          // a value on other devices: a ShapeError or DeviceError naming both sides, or every part right
          shape_error_or(
              Expect::refusal, {"ASSIGN", V.devices()[0], "CPU:1"},
              [&] {
                D.assign(V);
                return D;
              },
              check, true);
        } else {
          shape_error_or(
              Expect::refusal, {"ASSIGN", shape_text(old_v.shape)},
              [&] {
                D.assign(V);
                return D;
              },
              check);
        }
      });
    }
}

// =============================================================================================
// C12 — write after read

namespace {  // this file's helpers
void c12_run(bool buf_first) {
  auto devs = ringrt::cpu_devices(2);
  Tensor buf = Tensor::from_vector<float>({1, 2, 3, 4}, {4}).shard(devs, 0);
  buf.realize();
  Tensor stale = buf.to("CPU:0");
  buf.assign(Tensor::full({4}, 10, DType::float32).shard(devs, 0));
  if (buf_first) {
    buf.realize();
    stale.realize();
  } else {
    stale.realize();
    buf.realize();
  }
  BOOST_TEST(stale.devices() == std::vector<std::string>{"CPU:0"}, tt::per_element());
  expect_values(stale, {1, 2, 3, 4});
  expect_sharded(buf, Arr{{4}, {10, 10, 10, 10}}, 0, devs);
}
}  // namespace

BOOST_AUTO_TEST_CASE(c12_write_after_read_buf_first) { c12_run(true); }
BOOST_AUTO_TEST_CASE(c12_write_after_read_stale_first) { c12_run(false); }

// c12_class_dependencies' readers and writes, on a (2n, 3) float32 buffer sharded on axis 0 over the variant's
// n = ndev devices (devs), holding old_v until the write of new_v.
namespace {

// A reader of the buffer: how it is made, and its value computed on the host from the buffer's data.
struct C12Reader {
  const char* name;
  std::function<Tensor(const Tensor&)> make;
  std::function<Arr(const Arr&)> expect;
  bool collective;  // an allreduce: its result lives on every device of the tuple
  bool uses_allreduce;
};

// The readers: copies to a device inside (CPU:0) or outside (CPU:ndev) the tuple, collectives, an elementwise op,
// a cast, a local reduction.
std::vector<C12Reader> c12_readers(int ndev) {
  return {
      {"copy to CPU:0", [](const Tensor& t) { return t.to("CPU:0"); }, [](const Arr& a) { return a; }, false, true},
      {"copy outside", [ndev](const Tensor& t) { return t.to(dev(ndev)); }, [](const Arr& a) { return a; }, false,
       true},
      {"sum(0) (allreduce)", [](const Tensor& t) { return t.sum({0}); },
       [](const Arr& a) { return reduce(a, Op::sum, {0}); }, true, true},
      {"max() (allreduce)", [](const Tensor& t) { return t.max(); },
       [](const Arr& a) { return reduce(a, Op::max, {}); }, true, true},
      {"elementwise *2", [](const Tensor& t) { return t * 2; },
       [](const Arr& a) { return map2(a, a, [](double x, double) { return 2 * x; }); }, false, false},
      {"cast to float16", [](const Tensor& t) { return t.cast(DType::float16); }, [](const Arr& a) { return a; }, false,
       false},
      {"sum(1) (local)", [](const Tensor& t) { return t.sum({1}); },
       [](const Arr& a) { return reduce(a, Op::sum, {1}); }, false, false},
  };
}

// Checks a reader's value: replicated on devs when it is a collective's, else its values alone.
void c12_check_reader(Tensor r, const Arr& want, bool collective, const std::vector<std::string>& devs) {
  if (collective) {
    expect_replicated(r, want, devs);
  } else {
    expect_equal(read(r), want);
  }
}

// Each reader made before the write sees old_v, each made after it new_v, in either realization order
// (alternating); the collective readers under every algorithm, the others under naive only.
void c12_readers_before_and_after_the_write(const Variant& var, const std::vector<std::string>& devs, const Arr& old_v,
                                            const Arr& new_v) {
  const std::vector<C12Reader> readers = c12_readers(var.ndev);
  for (size_t i = 0; i < readers.size(); ++i) {
    const C12Reader& rd = readers[i];
    if (!rd.uses_allreduce && var.algo != Algo::naive) continue;
    bool writer_first = (i + rot(var)) % 2 == 0;
    std::string order = writer_first ? " (writer realized first)" : " (reader realized first)";
    guard(std::string("write after read: ") + rd.name + order, [&] {
      Tensor buf = make_tensor(old_v, DType::float32).shard(devs, 0);
      buf.realize();
      Tensor stale = rd.make(buf);
      buf.assign(make_tensor(new_v, DType::float32).shard(devs, 0));
      if (writer_first) {
        buf.realize();
        stale.realize();
      } else {
        stale.realize();
        buf.realize();
      }
      c12_check_reader(stale, rd.expect(old_v), rd.collective, devs);
      expect_sharded(buf, new_v, 0, devs);
    });
    guard(std::string("read after write: ") + rd.name + order, [&] {
      Tensor buf = make_tensor(old_v, DType::float32).shard(devs, 0);
      buf.realize();
      buf.assign(make_tensor(new_v, DType::float32).shard(devs, 0));
      Tensor fresh = rd.make(buf);
      if (writer_first) {
        buf.realize();
        fresh.realize();
      } else {
        fresh.realize();
        buf.realize();
      }
      c12_check_reader(fresh, rd.expect(new_v), rd.collective, devs);
      expect_sharded(buf, new_v, 0, devs);
    });
  }
}

// A write into a view of the buffer (its columns [1, 3)) after two reads (a copy, a sum): refused, or done right
// with the readers keeping the old values.
void c12_write_into_a_view(const Variant& var, const std::vector<std::string>& devs, const Arr& old_v,
                           const Arr& new_v) {
  int64_t n = var.ndev;
  guard("write into a view (columns [1, 3) of the whole sharded axis) after a read", [&] {
    Tensor buf = make_tensor(old_v, DType::float32).shard(devs, 0);
    buf.realize();
    Tensor stale = buf.to("CPU:0");
    Tensor total = buf.sum();
    Arr cols = slice(new_v, 1, 1, 3);
    Tensor view = buf.shrink({{0, 2 * n}, {1, 3}});
    Arr want = make_arr(old_v.shape, [&](int64_t f) {
      return f % 3 == 0 ? old_v.v[static_cast<size_t>(f)] : new_v.v[static_cast<size_t>(f)];
    });
    // writing into a view of a sharded tensor may be refused (ShapeError); if done, it is done right
    shape_error_or(
        Expect::values, {"ASSIGN", shape_text({2 * n, 2})},
        [&] {
          view.assign(make_tensor(cols, DType::float32).shard(devs, 0));
          if (rot(var) % 2) {
            view.realize();
            stale.realize();
          } else {
            stale.realize();
            total.realize();
            view.realize();
          }
          return view;
        },
        [&](Tensor v) {
          expect_equal(read(v), cols);
          expect_sharded(buf, want, 0, devs);
        });
    expect_equal(read(stale), old_v);
    expect_replicated(total, reduce(old_v, Op::sum, {}), devs);
  });
}

// The case's own form: a 1-D (2n) buffer assigned from values still lazy (a full(), an expression) that are
// sharded as part of the write; a copy made before keeps the old values.
void c12_lazy_values_sharded_by_the_write(const Variant& var, const std::vector<std::string>& devs) {
  int64_t n = var.ndev;
  for (int kind = 0; kind < 2; ++kind) {
    guard(kind == 0 ? "1-D buffer <- full(2n, 10) sharded" : "1-D buffer <- (v + 0) sharded", [&] {
      Arr old1 = iota({2 * n}, 1);
      Arr new1 = kind == 0 ? make_arr({2 * n}, [](int64_t) { return 10.0; }) : iota({2 * n}, 100);
      Tensor buf = make_tensor(old1, DType::float32).shard(devs, 0);
      buf.realize();
      Tensor stale = buf.to("CPU:0");
      Tensor value = kind == 0 ? Tensor::full({2 * n}, 10, DType::float32) : make_tensor(new1, DType::float32) + 0;
      buf.assign(value.shard(devs, 0));
      if ((rot(var) + static_cast<size_t>(kind)) % 2) {
        buf.realize();
        stale.realize();
      } else {
        stale.realize();
        buf.realize();
      }
      expect_equal(read(stale), old1);
      expect_sharded(buf, new1, 0, devs);
    });
  }
}

// Chained writes, one graph reading the old contents and the new, two readers of one pending increment.
void c12_chained_and_pending_writes(const std::vector<std::string>& devs, const Arr& old_v, const Arr& new_v) {
  guard("chained writes: buf <- new; buf <- buf + buf.sum(0)", [&] {
    Tensor buf = make_tensor(old_v, DType::float32).shard(devs, 0);
    buf.realize();
    Tensor stale = buf.sum();
    buf.assign(make_tensor(new_v, DType::float32).shard(devs, 0));
    buf.assign(buf + buf.sum({0}));
    buf.realize();
    Arr s = reduce(new_v, Op::sum, {0});
    Arr want = make_arr(new_v.shape,
                        [&](int64_t f) { return new_v.v[static_cast<size_t>(f)] + s.v[static_cast<size_t>(f % 3)]; });
    expect_sharded(buf, want, 0, devs);
    expect_replicated(stale, reduce(old_v, Op::sum, {}), devs);
  });
  guard("one graph reads the old contents and the new: (old + new) with old dead before realize", [&] {
    Tensor buf = make_tensor(old_v, DType::float32).shard(devs, 0);
    buf.realize();
    Tensor both = [&] {
      Tensor old = buf * 1;  // only the graph of `both` keeps it
      buf.assign(make_tensor(new_v, DType::float32).shard(devs, 0));
      return old + buf;
    }();
    expect_sharded(both, map2(old_v, new_v, [](double a, double b) { return a + b; }), 0, devs);
    expect_sharded(buf, new_v, 0, devs);
  });
  guard("two readers of one pending increment run it once", [&] {
    Tensor buf = make_tensor(old_v, DType::float32).shard(devs, 0);
    buf.realize();
    buf.assign(buf + 1);
    Tensor twice = buf * 2, thrice = buf * 3;
    expect_sharded(thrice, map2(old_v, old_v, [](double a, double) { return 3 * (a + 1); }), 0, devs);
    expect_sharded(twice, map2(old_v, old_v, [](double a, double) { return 2 * (a + 1); }), 0, devs);
    expect_sharded(buf, map2(old_v, old_v, [](double a, double) { return a + 1; }), 0, devs);
  });
}
}  // namespace

// Class: readers made before an in-place write see the old data (write after read); readers made
// after it see the new (read after write) — copies to a device inside or outside the tuple,
// collectives, an elementwise op, a cast, a local reduction — in either realization order
// (alternating); a write into a view of the buffer; chained writes; 2 and 4 devices; the collective
// readers under every algorithm, the others under naive.
BOOST_DATA_TEST_CASE(c12_class_dependencies, bdata::make(variants({2, 4}, kAll)), var) {
  create_outside_devices();
  ScopedSettings scoped(settings_for(var.algo, var.ndev));
  auto devs = ringrt::cpu_devices(var.ndev);
  int64_t n = var.ndev;
  Arr old_v = make_arr({2 * n, 3}, [](int64_t f) { return static_cast<double>(f + 1); });
  Arr new_v = make_arr({2 * n, 3}, [](int64_t f) { return static_cast<double>(50 - 2 * f); });
  c12_readers_before_and_after_the_write(var, devs, old_v, new_v);
  c12_write_into_a_view(var, devs, old_v, new_v);
  c12_lazy_values_sharded_by_the_write(var, devs);
  c12_chained_and_pending_writes(devs, old_v, new_v);
}

// Class: a value that reads its own destination at other indices (a flip, a permute, a reduction
// over the axis written) is computed aside before it is written, never read half-overwritten. The
// buffer is on one device (flipping or reducing a sharded axis in place is a collective: the
// sharded forms check the same on the unsharded axis); sizes below and above one kernel chunk.
BOOST_DATA_TEST_CASE(c12_class_in_place_hazards, bdata::make({1, 2, 4}) * bdata::make({8, 1000}), ndev, rows) {
  auto devs = ringrt::cpu_devices(std::max(ndev, 2));
  std::vector<std::string> on(devs.begin(), devs.begin() + ndev);
  Arr old_v = make_arr({rows, 2}, [](int64_t f) { return static_cast<double>(f % 97 + 1); });
  auto fresh = [&](std::optional<int> axis) {
    Tensor t = make_tensor(old_v, DType::float32);
    if (ndev > 1) t = t.shard(on, axis);
    t.realize();
    return t;
  };
  auto check = [&](const Tensor& t, const Arr& want, std::optional<int> axis) {
    if (ndev == 1) {
      expect_equal(read(t), want);
    } else if (axis) {
      expect_sharded(t, want, *axis, on);
    } else {
      expect_replicated(t, want, on);
    }
  };
  const std::optional<int> along = ndev > 1 ? std::optional<int>(0) : std::nullopt;
  guard("buf <- buf.flip(1) (the unsharded axis)", [&] {
    Tensor buf = fresh(along);
    buf.assign(buf.flip({1}));
    check(buf, flip(old_v, {1}), along);
  });
  guard("buf <- buf.flip(0), replicated", [&] {
    Tensor buf = fresh(std::nullopt);
    buf.assign(buf.flip({0}));
    check(buf, flip(old_v, {0}), std::nullopt);
  });
  guard("buf <- buf.sum(1) expanded - buf", [&] {
    Tensor buf = fresh(along);
    buf.assign(buf.sum({1}).reshape({rows, 1}).expand({rows, 2}) - buf);
    Arr s = reduce(old_v, Op::sum, {1});
    check(buf,
          make_arr(old_v.shape,
                   [&](int64_t f) { return s.v[static_cast<size_t>(f / 2)] - old_v.v[static_cast<size_t>(f)]; }),
          along);
  });
  guard("square buf <- buf.permute(1, 0), replicated", [&] {
    int64_t m = std::min<int64_t>(rows, 300);
    Arr sq = make_arr({m, m}, [](int64_t f) { return static_cast<double>(f % 89); });
    Tensor buf = make_tensor(sq, DType::float32);
    if (ndev > 1) buf = buf.shard(on, std::nullopt);
    buf.realize();
    buf.assign(buf.permute({1, 0}));
    check(buf, permute(sq, {1, 0}), std::nullopt);
  });
  guard("buf <- buf * 2 + 1 (same index: written in place)", [&] {
    Tensor buf = fresh(along);
    buf.assign(buf * 2 + 1);
    check(buf, map2(old_v, old_v, [](double a, double) { return 2 * a + 1; }), along);
  });
}

// A training step as a new user writes it: w (replicated per device) -= the lazy allreduce of a sharded bucket
// (replicated as one logical value). Each device stores its copy of the sum: host arithmetic's values on every
// device. The other way round (a value per device, which may differ between devices, into a tensor that is one
// logical value) is refused, and the axes print alike ("none"), so the message says what differs.
BOOST_AUTO_TEST_CASE(assign_a_lazy_allreduce_into_a_replicated_tensor) {
  auto devs = ringrt::cpu_devices(2);
  std::vector<float> w0{1, 2, 3, 4}, g{10, 20, 30, 40, 50, 60, 70, 80};  // g: 2 rows of 4, one per device
  ringrt::Tensor w = ringrt::Tensor::from_vector(w0, {4}).shard(devs, std::nullopt);
  w.realize();
  ringrt::Tensor bucket = ringrt::Tensor::from_vector(g, {2, 4}).shard(devs, 0);
  w.assign(w - bucket.sum({0})).realize();
  std::vector<float> want;
  for (size_t i = 0; i < 4; ++i) want.push_back(w0[i] - (g[i] + g[4 + i]));
  for (const auto& [dev, v] : w.local_host_shards())
    for (size_t i = 0; i < 4; ++i) BOOST_TEST(v.get(static_cast<int64_t>(i)) == want[i], dev << " " << i);
  // into a view of a sharded tensor the advice is to realize the value (one logical value), not to reshard it
  ringrt::Tensor big = ringrt::Tensor::full({4, 4}, 7.0).shard(devs, 0).contiguous().realize();
  BOOST_CHECK_EXCEPTION(
      big.shrink({{0, 4}, {0, 2}}).assign(ringrt::Tensor::full({2, 4, 2}, 1.0).shard(devs, 0).sum({0})),
      ringrt::ShapeError, ringrt::test::message_has({"realize() the value first"}));
  ringrt::Tensor logical = bucket.sum({0});  // lazy: one logical value
  BOOST_CHECK_EXCEPTION(logical.assign(w), ringrt::ShapeError,
                        ringrt::test::message_has({"held per device", "replicated as one logical value"}));
}

// 1,000 X.assign(X + 1) without realizing: host arithmetic's values (1,000 everywhere), and linear: a value built on
// X reads the destination of X's assignments that ran, not their chain, so the graph nodes alive after 1,000 steps
// are those after 10, and the chain builds no program after its first steps (scripts/bench/bench_runtime.cpp
// BM_AssignChain times it).
BOOST_AUTO_TEST_CASE(a_chain_of_lazy_assigns_stays_one_step_deep) {
  Tensor x = Tensor::full({4, 256}, 0.0).shard(ringrt::cpu_devices(4), 0).contiguous().realize();
  for (int i = 0; i < 10; ++i) x.assign(x + 1);
  size_t nodes = Tensor::engine_stats().graph_nodes, built = Tensor::programs_built();
  for (int i = 10; i < 1000; ++i) x.assign(x + 1);
  BOOST_TEST(Tensor::engine_stats().graph_nodes <= nodes + 16);  // a chain would hold thousands
  BOOST_TEST(Tensor::programs_built() == built);
  x.realize();
  for (const auto& [dev, v] : x.local_host_shards())
    for (int64_t i = 0; i < v.numel(); ++i) BOOST_TEST_REQUIRE(v.get(i) == 1000.0, dev << " " << i);
}

BOOST_AUTO_TEST_SUITE_END()
