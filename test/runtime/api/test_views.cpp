// Views of tensors: assign into a shrink and contiguous() of a contiguous range of a
// realized buffer, which is that range of the buffer and no kernel (tinygrad's BUFFER_VIEW).
//
// Every expected value comes from host loops over the unsharded data (test/support/host_oracle.hpp); per-device values
// are checked through Tensor::shards(). Sweeps: 1 to 8 devices, the base sharded on each axis or
// replicated, realized before the view or not, the value's layout, dtypes rotating through the
// samples, and (where a collective runs: a sharded value gathered into some shards) every algorithm.
//
// Decided here: a contiguous() that borrowed a buffer's memory is a value, not an alias. Writing the
// buffer later (assign, assign into a view) leaves it unchanged, and writing into it leaves the buffer
// unchanged. tinygrad's BUFFER_VIEW aliases its base; ringrt keeps C12's rule that tensors read
// before an in-place write see the old values.
// clang-format off
#include <boost/test/unit_test.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
// clang-format on

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "core/errors.hpp"
#include "core/settings.hpp"
#include "runtime/api/internal.hpp"
#include "test/support/checks.hpp"
#include "test/support/host_oracle.hpp"

BOOST_AUTO_TEST_SUITE(test_views)

namespace bdata = boost::unit_test::data;
namespace tt = boost::test_tools;

using ringrt::AllreduceSettings;
using ringrt::DType;
using ringrt::HostBuffer;
using ringrt::Ops;
using ringrt::ScopedSettings;
using ringrt::Shape;
using ringrt::ShapeError;
using ringrt::Tensor;
using ringrt::UOp;

namespace views {

using namespace ringrt::test::host;  // NOLINT: the oracle
using ringrt::test::message_has;

// ---------------------------------------------------------------------------------------------
// tensors

const std::vector<DType> kDtypes = {DType::float32, DType::int32, DType::float16, DType::int64, DType::uint8};

// Where a tensor lives: sharded on an axis of devs, or replicated on devs (axis nullopt).
struct Layout {
  std::vector<std::string> devs;
  std::optional<int> axis;
};

Tensor place(const Arr& a, DType dt, const Layout& l) { return make_tensor(a, dt).shard(l.devs, l.axis); }

// The logical value is want and every device holds its part of it (its shard, or all of it).
void expect_layout(const Tensor& t, const Arr& want, const Layout& l) {
  BOOST_TEST_CONTEXT("logical value") { expect_equal(read(t), want); }
  std::vector<Tensor> shards = t.shards();
  BOOST_TEST_REQUIRE(shards.size() == l.devs.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    Region r = whole(want.shape);
    if (l.axis) {
      auto ax = static_cast<size_t>(*l.axis);
      int64_t len = want.shape[ax] / static_cast<int64_t>(l.devs.size());
      r[ax] = {static_cast<int64_t>(i) * len, static_cast<int64_t>(i + 1) * len};
    }
    BOOST_TEST_CONTEXT("part on " << l.devs[i]) {
      BOOST_TEST(shards[i].devices() == std::vector<std::string>{l.devs[i]}, tt::per_element());
      expect_equal(read(shards[i]), slice(want, r));
    }
  }
}

std::string axis_text(std::optional<int> a) { return a ? "axis " + std::to_string(*a) : "replicated"; }

enum class Algo { naive, ring, all2all, hier };
std::ostream& operator<<(std::ostream& os, Algo a) {
  switch (a) {
    case Algo::naive:
      return os << "naive(RING=0)";
    case Algo::ring:
      return os << "ring(RING=2)";
    case Algo::all2all:
      return os << "all2all(ALL2ALL=2)";
    case Algo::hier:
      return os << "hierarchical(two halves; naive under 3 devices)";
  }
  return os << "?";
}
AllreduceSettings settings_for(Algo a, int ndev) {
  AllreduceSettings s;
  s.ring = a == Algo::ring ? 2 : 0;
  s.all2all = a == Algo::all2all ? 2 : 0;
  if (a == Algo::hier && ndev >= 3)
    for (int i = 0; i < ndev; ++i) s.groups["CPU:" + std::to_string(i)] = i < (ndev + 1) / 2 ? 0 : 1;
  return s;
}

// The BUFFER a realized tensor's view chain ends in.
UOp buffer_under(const Tensor& t) {
  UOp u = uop_of(t);
  while (u.op() != Ops::BUFFER) u = u.src(0);
  return u;
}

}  // namespace views

using namespace views;

// =============================================================================================
// item 3 — assign into a shrink of a multi-device tensor

// Replicated base, realized before the view or not: the region changes on every device, the rest
// stays; the view and the base read the write; a reader made before the write keeps the old values.
BOOST_DATA_TEST_CASE(assign_into_shrink_of_replicated, bdata::xrange(1, 9) * bdata::make({false, true}), ndev,
                     realized) {
  Layout l{ringrt::cpu_devices(ndev), std::nullopt};
  DType dt = kDtypes[static_cast<size_t>(ndev + realized) % kDtypes.size()];
  BOOST_TEST_CONTEXT(ndev << " devices, " << dname(dt) << (realized ? ", realized" : ", lazy")) {
    Arr old_v = make_arr({5, 6}, [](int64_t f) { return static_cast<double>(f % 11); });
    for (const Region& r : {Region{{1, 4}, {2, 5}}, Region{{0, 5}, {3, 4}}, Region{{4, 5}, {0, 6}}}) {
      guard("region rows [" + std::to_string(r[0].first) + ", " + std::to_string(r[0].second) + ")", [&] {
        Tensor base = place(old_v, dt, l);
        if (realized) base.realize();
        Tensor before = base * 1;
        Tensor view = base.shrink(r);
        Arr value = make_arr(slice(old_v, r).shape, [](int64_t f) { return 100.0 + static_cast<double>(f); });
        view.assign(place(value, dt, l));
        Arr want = write(old_v, r, value);
        expect_layout(base, want, l);
        expect_layout(view, value, l);
        expect_layout(before, old_v, l);
        expect_layout(base * 1, want, l);  // a reader made after the write
      });
    }
  }
}

// Base sharded on axis 0 or 1, the shrink on the other axis (the whole sharded axis), realized or not;
// the value sharded like the view, or replicated on the same devices.
BOOST_DATA_TEST_CASE(assign_into_shrink_of_sharded_off_axis, bdata::xrange(1, 9) * bdata::make({0, 1}), ndev, axis) {
  Layout l{ringrt::cpu_devices(ndev), axis};
  Shape shape = axis == 0 ? Shape{2 * ndev, 5} : Shape{5, 2 * ndev};
  Region r = whole(shape);
  r[static_cast<size_t>(1 - axis)] = {1, 4};
  Arr old_v = make_arr(shape, [](int64_t f) { return static_cast<double>(f % 13); });
  Arr value = make_arr(slice(old_v, r).shape, [](int64_t f) { return 50.0 + static_cast<double>(f); });
  for (int sample = 0; sample < 4; ++sample) {
    bool realized = sample % 2 == 1, replicated_value = sample / 2 == 1;
    DType dt = kDtypes[static_cast<size_t>(ndev + axis + sample) % kDtypes.size()];
    guard(std::to_string(ndev) + " devices, " + axis_text(axis) + ", " + dname(dt) +
              (realized ? ", realized" : ", lazy") + (replicated_value ? ", replicated value" : ", sharded value"),
          [&] {
            Tensor base = place(old_v, dt, l);
            if (realized) base.realize();
            Tensor before = base + 0;
            Tensor view = base.shrink(r);
            view.assign(replicated_value ? place(value, dt, {l.devs, std::nullopt}) : place(value, dt, l));
            Arr want = write(old_v, r, value);
            expect_layout(base, want, l);
            expect_layout(view, value, l);
            expect_layout(before, old_v, l);
          });
  }
}

// Base sharded on axis 0 over n devices (2 rows each); the view is shards [k, e) of it, and a column
// range too. Only the devices holding those shards change. The value replicated, or sharded over
// all the devices (then gathered by an allreduce: every algorithm).
BOOST_DATA_TEST_CASE(assign_into_whole_shards,
                     bdata::xrange(1, 9) * bdata::make({Algo::naive, Algo::ring, Algo::all2all, Algo::hier}), ndev,
                     algo) {
  ScopedSettings scoped(settings_for(algo, ndev));
  Layout l{ringrt::cpu_devices(ndev), 0};
  Shape shape{2 * ndev, 4};
  Arr old_v = make_arr(shape, [](int64_t f) { return static_cast<double>(f % 17); });
  std::vector<std::pair<int64_t, int64_t>> shard_ranges{{0, 1}, {ndev - 1, ndev}, {0, ndev}};
  if (ndev >= 3) shard_ranges.push_back({1, ndev - 1});
  for (size_t i = 0; i < shard_ranges.size(); ++i) {
    const auto k = shard_ranges[i].first, e = shard_ranges[i].second;  // clang 14 cannot capture a structured binding
    Region r{{2 * k, 2 * e}, {static_cast<int64_t>(i % 2), 4}};
    Arr value = make_arr(slice(old_v, r).shape, [](int64_t f) { return 60.0 + static_cast<double>(f); });
    // a value sharded over all n devices needs the region's rows to split evenly over them
    bool sharded_value = (i + static_cast<size_t>(ndev)) % 2 == 0 && (2 * (e - k)) % ndev == 0;
    bool realized = i % 2 == 1;
    DType dt = kDtypes[(i + static_cast<size_t>(ndev)) % kDtypes.size()];
    guard(std::to_string(ndev) + " devices, shards [" + std::to_string(k) + ", " + std::to_string(e) + "), " +
              dname(dt) + (sharded_value ? ", sharded value" : ", replicated value") +
              (realized ? ", realized" : ", lazy"),
          [&] {
            Tensor base = place(old_v, dt, l);
            if (realized) base.realize();
            Tensor before = base.sum({1});
            Tensor view = base.shrink(r);
            view.assign(sharded_value ? place(value, dt, l) : place(value, dt, {l.devs, std::nullopt}));
            expect_layout(base, write(old_v, r, value), l);
            expect_layout(before,
                          make_arr({2 * ndev},
                                   [&](int64_t row) {
                                     double s = 0;
                                     for (int64_t c = 0; c < 4; ++c) s += old_v.v[static_cast<size_t>(row * 4 + c)];
                                     return s;
                                   }),
                          l);
            if (e - k == 1) expect_layout(view, value, {l.devs, std::nullopt});  // one shard reads replicated
          });
  }
}

// A shrink on the sharded axis that is not whole shards: a ShapeError naming ASSIGN, the shape and
// the axis; the base is unchanged.
BOOST_DATA_TEST_CASE(assign_into_part_of_a_shard_is_a_shape_error, bdata::xrange(2, 9), ndev) {
  Layout l{ringrt::cpu_devices(ndev), 0};
  Shape shape{2 * ndev, 3};
  Arr old_v = make_arr(shape, [](int64_t f) { return static_cast<double>(f); });
  Tensor base = place(old_v, DType::float32, l);
  base.realize();
  for (Region r : {Region{{0, 3}, {0, 3}}, Region{{1, 2}, {0, 3}}, Region{{1, 2 * ndev}, {1, 2}}}) {
    Tensor view = base.shrink(r);
    Tensor value =
        place(make_arr(slice(old_v, r).shape, [](int64_t) { return 9.0; }), DType::float32, {l.devs, std::nullopt});
    BOOST_CHECK_EXCEPTION(view.assign(value), ShapeError, message_has({"ASSIGN", shape_text(shape), "axis 0"}));
  }
  expect_layout(base, old_v, l);
}

// Shrinks of shrinks compose: a write through the inner view lands in the base, on every layout.
BOOST_DATA_TEST_CASE(assign_into_chained_shrinks, bdata::xrange(1, 9), ndev) {
  auto devs = ringrt::cpu_devices(ndev);
  for (std::optional<int> axis : {std::optional<int>{}, std::optional<int>{0}, std::optional<int>{1}}) {
    Layout l{devs, axis};
    Shape shape{2 * ndev, 2 * ndev};
    Arr old_v = make_arr(shape, [](int64_t f) { return static_cast<double>(f % 7); });
    // outer: everything but the last column (rows whole); inner: columns [1, 2n-1) of it, rows whole.
    Region outer{{0, 2 * ndev}, {0, 2 * ndev - 1}};
    Region inner{{0, 2 * ndev}, {1, 2 * ndev - 1}};
    if (axis == 1) {
      std::swap(outer[0], outer[1]);
      std::swap(inner[0], inner[1]);
    }
    Region total = inner;  // inner in the base's coordinates
    for (size_t k = 0; k < 2; ++k) total[k] = {outer[k].first + inner[k].first, outer[k].first + inner[k].second};
    DType dt = kDtypes[static_cast<size_t>(ndev + (axis ? *axis + 1 : 0)) % kDtypes.size()];
    guard(axis_text(axis) + ", " + dname(dt), [&] {
      Tensor base = place(old_v, dt, l);
      Tensor view = base.shrink(outer).shrink(inner);
      Arr value = make_arr(slice(old_v, total).shape, [](int64_t f) { return 30.0 + static_cast<double>(f); });
      view.assign(place(value, dt, l));
      expect_layout(base, write(old_v, total, value), l);
      expect_layout(view, value, l);
    });
  }
}

// The value reads the destination (view.assign(view * 2 + base region)); writing twice through one
// view; a reader of the view made between the writes sees the first.
BOOST_DATA_TEST_CASE(assign_into_shrink_reading_itself, bdata::xrange(1, 9), ndev) {
  Layout l{ringrt::cpu_devices(ndev), ndev % 2 ? std::optional<int>{} : std::optional<int>{0}};
  Shape shape{2 * ndev, 4};
  Arr old_v = make_arr(shape, [](int64_t f) { return static_cast<double>(f % 9); });
  Region r{{0, 2 * ndev}, {1, 3}};
  Tensor base = place(old_v, DType::int32, l);
  base.realize();
  Tensor view = base.shrink(r);
  view.assign(view * 2 + 1);
  Arr inside = slice(old_v, r);
  Arr first = make_arr(inside.shape, [&](int64_t f) { return 2 * inside.v[static_cast<size_t>(f)] + 1; });
  Tensor seen = view + 0;
  view.assign(base.shrink({{0, 2 * ndev}, {0, 2}}));  // overlapping read of the destination
  Arr mid = write(old_v, r, first);
  Arr second = slice(mid, {{0, 2 * ndev}, {0, 2}});
  expect_layout(base, write(mid, r, second), l);
  expect_layout(seen, first, l);
}

// =============================================================================================
// item 5 — contiguous() of a contiguous range of a realized buffer is a view of it: no kernel

namespace views {
// t (a contiguous() of a view of base, base realized) schedules nothing, realizes without building a
// program, ends up reading base's buffer, and holds want on every device.
void expect_buffer_view(Tensor t, const Tensor& base, const Arr& want, const Layout& l) {
  ringrt::Schedule s = t.schedule();
  BOOST_TEST(s.kernels() == 0);
  BOOST_TEST(s.copies().empty());
  size_t built = Tensor::programs_built();
  t.realize();
  BOOST_TEST(Tensor::programs_built() == built);  // nothing lowered, planned, compiled or run
  BOOST_TEST((buffer_under(t) == buffer_under(base)));
  BOOST_TEST(t.schedule().kernels() == 0);
  BOOST_TEST(Tensor::programs_built() == built);
  expect_layout(t, want, l);
}

// A view of a (6, 2n) tensor x that is one range of each device's buffer: its name, the layout of the base, the view
// and its values.
struct RangeCase {
  const char* name;
  Layout layout;
  std::function<Tensor(const Tensor&)> view;
  Arr want;
};

// The replicated and axis-1-sharded views of x (6, 2n) on devs whose contiguous() is a range of the buffer.
std::vector<RangeCase> buffer_range_cases(const std::vector<std::string>& devs, const Arr& x, int64_t n) {
  return {
      {"replicated, rows [1, 4)",
       {devs, std::nullopt},
       [n](const Tensor& t) {
         return t.shrink({{1, 4}, {0, 2 * n}});
       },
       slice(x, {{1, 4}, {0, 2 * n}})},
      {"replicated, reshape (12n,) then [3, 9)",
       {devs, std::nullopt},
       [n](const Tensor& t) {
         return t.reshape({12 * n}).shrink({{3, 9}});
       },
       slice(reshape(x, {12 * n}), {{3, 9}})},
      {"replicated, chained shrinks rows [1, 6) then [2, 4)",
       {devs, std::nullopt},
       [n](const Tensor& t) {
         return t.shrink({{1, 6}, {0, 2 * n}}).shrink({{2, 4}, {0, 2 * n}});
       },
       slice(x, {{3, 5}, {0, 2 * n}})},
      {"replicated, the whole tensor", {devs, std::nullopt}, [](const Tensor& t) { return t; }, x},
      {"replicated, reshape (3, 4n) then rows [1, 3), then reshape",
       {devs, std::nullopt},
       [n](const Tensor& t) {
         return t.reshape({3, 4 * n}).shrink({{1, 3}, {0, 4 * n}}).reshape({8 * n});
       },
       reshape(slice(reshape(x, {3, 4 * n}), {{1, 3}, {0, 4 * n}}), {8 * n})},
      // sharded on axis 1: each shard is (6, 2); rows [2, 5) of each shard are elements [4, 10) of it
      {"sharded on axis 1, rows [2, 5) of each shard",
       {devs, 1},
       [n](const Tensor& t) {
         return t.shrink({{2, 5}, {0, 2 * n}});
       },
       slice(x, {{2, 5}, {0, 2 * n}})},
      {"sharded on axis 1, chained shrinks",
       {devs, 1},
       [n](const Tensor& t) {
         return t.shrink({{1, 6}, {0, 2 * n}}).shrink({{0, 2}, {0, 2 * n}});
       },
       slice(x, {{1, 3}, {0, 2 * n}})},
  };
}

// Sharded on axis 0 of (n, 3, 4): each shard is (1, 3, 4); a shrink of axis 1 is a range of it, and a reshape of the
// shard keeps the shard axis; the view then feeds an allreduce and a copy.
void check_axis0_shard_range(const std::vector<std::string>& devs, DType dt, int64_t n) {
  Arr y = make_arr({n, 3, 4}, [](int64_t f) { return static_cast<double>(f % 97); });
  guard("sharded on axis 0, axis 1 rows [1, 3) of each shard, then a reshape", [&] {
    Layout l{devs, 0};
    Tensor base = place(y, dt, l);
    base.realize();
    Tensor v = base.shrink({{0, n}, {1, 3}, {0, 4}}).reshape({n, 8}).contiguous();
    expect_buffer_view(v, base, reshape(slice(y, {{0, n}, {1, 3}, {0, 4}}), {n, 8}), l);
    // the view feeds later work: a reduction over the shard axis (an allreduce) and a copy
    Arr sums = make_arr({8}, [&](int64_t j) {
      double s = 0;
      for (int64_t d = 0; d < n; ++d) s += y.v[static_cast<size_t>(d * 12 + 4 + j)];
      return s;
    });
    expect_layout(v.cast(DType::float32).sum({0}), sums, {devs, std::nullopt});
    expect_equal(read(v.to("CPU:0")), reshape(slice(y, {{0, n}, {1, 3}, {0, 4}}), {n, 8}));
  });
}

// x (6, 2n) on one device (CPU:0): a reshape then a shrink is a range of its buffer.
void check_one_device_range(const Arr& x, DType dt, int64_t n) {
  guard("one device, reshape then shrink", [&] {
    Tensor base = make_tensor(x, dt, "CPU:0");
    base.realize();
    Tensor v = base.reshape({3, 4 * n}).shrink({{2, 3}, {0, 4 * n}}).contiguous();
    expect_buffer_view(v, base, slice(reshape(x, {3, 4 * n}), {{2, 3}, {0, 4 * n}}), {{"CPU:0"}, std::nullopt});
  });
}
}  // namespace views

BOOST_DATA_TEST_CASE(contiguous_of_a_buffer_range_is_a_view, bdata::xrange(1, 9), ndev) {
  auto devs = ringrt::cpu_devices(ndev);
  int64_t n = ndev;
  DType dt = kDtypes[static_cast<size_t>(ndev) % kDtypes.size()];
  Arr x = make_arr({6, 2 * n}, [](int64_t f) { return static_cast<double>(f % 101); });
  for (const RangeCase& c : buffer_range_cases(devs, x, n)) {
    guard(std::string(c.name) + ", " + std::to_string(ndev) + " devices, " + dname(dt), [&] {
      Tensor base = place(x, dt, c.layout);
      base.realize();
      expect_buffer_view(c.view(base).contiguous(), base, c.want, c.layout);
    });
  }
  check_axis0_shard_range(devs, dt, n);
  check_one_device_range(x, dt, n);
}

// Views that are not one contiguous range still run a kernel, with the right values.
BOOST_DATA_TEST_CASE(contiguous_of_a_strided_view_runs_a_kernel, bdata::xrange(1, 9, 3), ndev) {
  auto devs = ringrt::cpu_devices(ndev);
  int64_t n = ndev;
  Arr x = make_arr({2 * n, 4}, [](int64_t f) { return static_cast<double>(f); });
  Tensor base = place(x, DType::float32, {devs, 0});
  base.realize();
  Tensor cols = base.shrink({{0, 2 * n}, {1, 3}}).contiguous();  // columns: a stride per row
  BOOST_TEST(cols.schedule().kernels() == 1);
  expect_layout(cols, slice(x, {{0, 2 * n}, {1, 3}}), {devs, 0});
  Tensor flipped = base.flip({1}).contiguous();
  BOOST_TEST(flipped.schedule().kernels() == 1);
  if (n > 1) {  // one shard: copied to every device, not a view of any one buffer
    Tensor rows = base.shrink({{2, 4}, {0, 4}}).contiguous();
    ringrt::Schedule s = rows.schedule();
    BOOST_TEST(s.kernels() + s.copies().size() > 0);
    expect_layout(rows, slice(x, {{2, 4}, {0, 4}}), {devs, std::nullopt});
  }
}

// The decision: a borrowed view is a value. A write into the base afterwards (whole, or through a
// view; the view realized before or still lazy) leaves it unchanged; a write into it leaves the base
// unchanged.
BOOST_DATA_TEST_CASE(buffer_view_keeps_its_value_when_the_base_is_written, bdata::xrange(1, 9), ndev) {
  auto devs = ringrt::cpu_devices(ndev);
  int64_t n = ndev;
  std::optional<int> axis = ndev % 3 == 0 ? std::optional<int>{} : std::optional<int>{1};
  Layout l{devs, axis};
  DType dt = kDtypes[static_cast<size_t>(ndev + 2) % kDtypes.size()];
  Arr x = make_arr({5, 2 * n}, [](int64_t f) { return static_cast<double>(f % 50); });
  Arr fresh = make_arr({5, 2 * n}, [](int64_t f) { return 200.0 - static_cast<double>(f % 50); });
  Region rows{{1, 4}, {0, 2 * n}};
  for (int how = 0; how < 4; ++how) {
    bool realize_view = how % 2 == 0, through_view = how / 2 == 1;
    guard(std::string(realize_view ? "view realized" : "view lazy") +
              (through_view ? ", base written through a shrink" : ", base assigned"),
          [&] {
            Tensor base = place(x, dt, l);
            base.realize();
            Tensor v = base.shrink(rows).contiguous();
            if (realize_view) {
              v.realize();
              BOOST_TEST((buffer_under(v) == buffer_under(base)));
            }
            Arr want_base = fresh;
            if (through_view) {
              Region r{{2, 5}, {0, 2 * n}};
              base.shrink(r).assign(place(slice(fresh, r), dt, l));
              want_base = write(x, r, slice(fresh, r));
            } else {
              base.assign(place(fresh, dt, l));
              base.realize();
            }
            expect_layout(v, slice(x, rows), l);
            expect_layout(base, want_base, l);
          });
  }
  guard("writing into the borrowed view leaves the base", [&] {
    Tensor base = place(x, dt, l);
    base.realize();
    Tensor v = base.shrink(rows).contiguous();
    v.realize();
    v.assign(place(slice(fresh, rows), dt, l));
    v.realize();
    expect_layout(v, slice(fresh, rows), l);
    expect_layout(base, x, l);
    BOOST_TEST((buffer_under(v) != buffer_under(base)));
  });
  guard("writing into a shrink of the borrowed view leaves the base", [&] {
    Tensor base = place(x, dt, l);
    base.realize();
    Tensor v = base.shrink(rows).contiguous();
    v.realize();
    Region r{{0, 1}, {0, 2 * n}};
    v.shrink(r).assign(place(slice(fresh, r), dt, l));
    expect_layout(v, write(slice(x, rows), r, slice(fresh, r)), l);
    expect_layout(base, x, l);
  });
}

// A borrowed view as the value of a write into its own buffer: the write reads the old elements (the
// second half of a 1-D buffer takes the first half, and a shrink of rows takes rows that overlap it).
BOOST_DATA_TEST_CASE(buffer_view_as_the_value_of_a_write_into_its_buffer, bdata::xrange(1, 9), ndev) {
  auto devs = ringrt::cpu_devices(ndev);
  int64_t n = ndev;
  DType dt = kDtypes[static_cast<size_t>(ndev + 3) % kDtypes.size()];
  for (std::optional<int> axis : {std::optional<int>{}, std::optional<int>{1}}) {
    guard(axis_text(axis) + ", " + dname(dt), [&] {
      Layout l{devs, axis};
      Arr x = make_arr({4, 2 * n}, [](int64_t f) { return static_cast<double>(f % 60); });
      Tensor base = place(x, dt, l);
      base.realize();
      Tensor first = base.shrink({{0, 2}, {0, 2 * n}}).contiguous();
      first.realize();
      base.shrink({{2, 4}, {0, 2 * n}}).assign(first);
      Arr half = slice(x, {{0, 2}, {0, 2 * n}});
      Arr want = write(x, {{2, 4}, {0, 2 * n}}, half);
      expect_layout(base, want, l);
      expect_layout(first, half, l);
      Tensor mid = base.shrink({{1, 3}, {0, 2 * n}}).contiguous();
      mid.realize();
      base.shrink({{0, 2}, {0, 2 * n}}).assign(mid + 1);  // overlaps what it reads
      Arr plus = slice(want, {{1, 3}, {0, 2 * n}});
      for (double& v : plus.v) v += 1;
      expect_layout(base, write(want, {{0, 2}, {0, 2 * n}}, plus), l);
      expect_layout(mid, slice(want, {{1, 3}, {0, 2 * n}}), l);
    });
  }
}

BOOST_AUTO_TEST_SUITE_END()
