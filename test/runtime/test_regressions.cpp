// Multi-device regression cases C01..C15 (shared/cases/multi-device-regressions.md), each made a test
// and widened to the class it stands for: neighbouring device counts, dtypes, algorithms (naive, ring,
// all2all, hierarchical with groups and leaders) and odd sizes.
//
// Every expected value is computed here, independently of ringrt, by straightforward host loops over
// the unsharded data (struct Arr below); values stated in the case file are asserted literally.
// Allreduce results are checked on every device (Tensor::shards()), sharded results shard by shard.
#define BOOST_TEST_MODULE regressions
// Boost.Test's module header first, then its data-test headers.
// clang-format off
#include <boost/test/unit_test.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
// clang-format on

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "rewrite/dtype.hpp"
#include "rewrite/errors.hpp"
#include "rewrite/rules/multi.hpp"
#include "rewrite/settings.hpp"
#include "runtime/engine/internal.hpp"

namespace bdata = boost::unit_test::data;
namespace tt = boost::test_tools;

using ringrt::AllreduceSettings;
using ringrt::DType;
using ringrt::HostBuffer;
using ringrt::ScopedSettings;
using ringrt::Shape;
using ringrt::ShapeError;
using ringrt::Tensor;

namespace regr {

// ---------------------------------------------------------------------------------------------
// settings: the allreduce algorithms under test

enum class Algo { naive, ring, all2all, hier, hier_leaders, hier_ring };

std::ostream& operator<<(std::ostream& os, Algo a) {
  switch (a) {
    case Algo::naive:
      return os << "naive(RING=0)";
    case Algo::ring:
      return os << "ring(RING=2)";
    case Algo::all2all:
      return os << "all2all(ALL2ALL=2)";
    case Algo::hier:
      return os << "hierarchical(two halves)";
    case Algo::hier_leaders:
      return os << "hierarchical(pairs, last device leads)";
    case Algo::hier_ring:
      return os << "hierarchical(two halves, RING=2)";
  }
  return os << "?";
}

bool is_hier(Algo a) { return a == Algo::hier || a == Algo::hier_leaders || a == Algo::hier_ring; }

// What Schedule::algorithms reports for the one allreduce of a reduction under these settings.
std::string algo_name(Algo a) {
  switch (a) {
    case Algo::naive:
      return "naive";
    case Algo::ring:
      return "ring";
    case Algo::all2all:
      return "all2all";
    default:
      return "hierarchical";
  }
}

std::string dev(int i) { return "CPU:" + std::to_string(i); }

// Tests that copy to a device outside the tuple (D5, CPU:n, CPU:9) create CPU:0..CPU:9 first; a
// tuple is then the first n of them (cpu_devices never removes devices).
void create_outside_devices() { ringrt::cpu_devices(10); }

// Groups: two halves ({D0..D(h-1)}, {Dh..}, h = ceil(n/2)), leaders by default the first device of each;
// or pairs {D0,D1},{D2,D3},... led by their last device (REDUCE_LEADERS).
AllreduceSettings settings_for(Algo a, int ndev) {
  AllreduceSettings s;
  s.ring = 0;
  s.all2all = 0;
  switch (a) {
    case Algo::naive:
      break;
    case Algo::ring:
      s.ring = 2;
      break;
    case Algo::all2all:
      s.all2all = 2;
      break;
    case Algo::hier_ring:
      s.ring = 2;
      [[fallthrough]];
    case Algo::hier:
      for (int i = 0; i < ndev; ++i) s.groups[dev(i)] = i < (ndev + 1) / 2 ? 0 : 1;
      break;
    case Algo::hier_leaders:
      for (int i = 0; i < ndev; ++i) s.groups[dev(i)] = i / 2;
      for (int g = 0; 2 * g < ndev; ++g) s.reduce_leaders.push_back(dev(std::min(2 * g + 1, ndev - 1)));
      break;
  }
  return s;
}

struct Variant {
  int ndev;
  Algo algo;
};
std::ostream& operator<<(std::ostream& os, const Variant& v) { return os << v.ndev << " devices, " << v.algo; }

const std::vector<Algo> kFlat = {Algo::naive, Algo::ring, Algo::all2all};
const std::vector<Algo> kHier = {Algo::hier, Algo::hier_leaders, Algo::hier_ring};
const std::vector<Algo> kAll = {Algo::naive, Algo::ring,         Algo::all2all,
                                Algo::hier,  Algo::hier_leaders, Algo::hier_ring};

// Every (ndev, algo) pair; hierarchical variants need at least 3 devices (2 groups, one of >1 device).
std::vector<Variant> variants(const std::vector<int>& ndevs, const std::vector<Algo>& algos) {
  std::vector<Variant> out;
  for (int n : ndevs)
    for (Algo a : algos)
      if (!is_hier(a) || n >= 3) out.push_back({n, a});
  return out;
}

// Class tests run on compiled kernels (about half a second each on a cold compile cache), so they
// cover the dimensions pairwise instead of as a full product: within a sample the dtype, op, size or
// layout rotates, started at an offset that differs between samples (rot), so that across the
// samples every algorithm meets every dtype and op.
size_t rot(const Variant& v) { return static_cast<size_t>(v.ndev * 7 + static_cast<int>(v.algo)); }

// ---------------------------------------------------------------------------------------------
// Arr: the host-side oracle, a dense row-major array of doubles (all test data is exact in every
// dtype used, so a double result is the exact expected value)

struct Arr {
  Shape shape;
  std::vector<double> v;
  int64_t numel() const { return static_cast<int64_t>(v.size()); }
};

int64_t prod_of(const Shape& s) {
  int64_t p = 1;
  for (int64_t x : s) p *= x;
  return p;
}

std::vector<int64_t> unravel(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t k = s.size(); k-- > 0;) {
    idx[k] = flat % s[k];
    flat /= s[k];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t f = 0;
  for (size_t k = 0; k < s.size(); ++k) f = f * s[k] + idx[k];
  return f;
}

Arr make_arr(const Shape& s, const std::function<double(int64_t)>& f) {
  Arr a{s, {}};
  for (int64_t i = 0; i < prod_of(s); ++i) a.v.push_back(f(i));
  return a;
}

Arr iota(const Shape& s, double start = 0) {
  return make_arr(s, [&](int64_t i) { return start + static_cast<double>(i); });
}

enum class Op { sum, max, min, prod };
const std::vector<Op> kOps = {Op::sum, Op::max, Op::min, Op::prod};

const char* op_str(Op op) {
  switch (op) {
    case Op::sum:
      return "sum";
    case Op::max:
      return "max";
    case Op::min:
      return "min";
    case Op::prod:
      return "prod";
  }
  return "?";
}

double combine(Op op, double a, double b) {
  switch (op) {
    case Op::sum:
      return a + b;
    case Op::max:
      return std::max(a, b);
    case Op::min:
      return std::min(a, b);
    case Op::prod:
      return a * b;
  }
  return 0;
}

// Reduce over axes (empty: all), dropping them, like Tensor::sum/max/min/prod.
Arr reduce(const Arr& x, Op op, std::vector<int> axes) {
  if (axes.empty())
    for (size_t k = 0; k < x.shape.size(); ++k) axes.push_back(static_cast<int>(k));
  auto reduced = [&](size_t k) { return std::find(axes.begin(), axes.end(), static_cast<int>(k)) != axes.end(); };
  Shape out_shape;
  for (size_t k = 0; k < x.shape.size(); ++k)
    if (!reduced(k)) out_shape.push_back(x.shape[k]);
  Arr out{out_shape, std::vector<double>(static_cast<size_t>(prod_of(out_shape)), 0.0)};
  std::vector<bool> seen(out.v.size(), false);
  for (int64_t f = 0; f < x.numel(); ++f) {
    auto idx = unravel(f, x.shape);
    std::vector<int64_t> o;
    for (size_t k = 0; k < idx.size(); ++k)
      if (!reduced(k)) o.push_back(idx[k]);
    auto j = static_cast<size_t>(ravel(o, out_shape));
    out.v[j] = seen[j] ? combine(op, out.v[j], x.v[static_cast<size_t>(f)]) : x.v[static_cast<size_t>(f)];
    seen[j] = true;
  }
  return out;
}

Arr permute(const Arr& x, const std::vector<int>& order) {
  Shape s;
  for (int k : order) s.push_back(x.shape[static_cast<size_t>(k)]);
  return make_arr(s, [&](int64_t f) {
    auto idx = unravel(f, s);
    std::vector<int64_t> src(idx.size());
    for (size_t k = 0; k < order.size(); ++k) src[static_cast<size_t>(order[k])] = idx[k];
    return x.v[static_cast<size_t>(ravel(src, x.shape))];
  });
}

Arr flip(const Arr& x, const std::vector<int>& axes) {
  return make_arr(x.shape, [&](int64_t f) {
    auto idx = unravel(f, x.shape);
    for (int k : axes) idx[static_cast<size_t>(k)] = x.shape[static_cast<size_t>(k)] - 1 - idx[static_cast<size_t>(k)];
    return x.v[static_cast<size_t>(ravel(idx, x.shape))];
  });
}

// x[begin:end] along axis
Arr slice(const Arr& x, int axis, int64_t begin, int64_t end) {
  Shape s = x.shape;
  s[static_cast<size_t>(axis)] = end - begin;
  return make_arr(s, [&](int64_t f) {
    auto idx = unravel(f, s);
    idx[static_cast<size_t>(axis)] += begin;
    return x.v[static_cast<size_t>(ravel(idx, x.shape))];
  });
}

Arr map2(const Arr& a, const Arr& b, const std::function<double(double, double)>& f) {
  Arr out = a;
  for (size_t i = 0; i < out.v.size(); ++i) out.v[i] = f(a.v[i], b.v[i]);
  return out;
}

std::string shape_text(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << (s.size() == 1 ? ",)" : ")");
  return os.str();
}

// ---------------------------------------------------------------------------------------------
// building tensors and reading them back

Tensor make_tensor(const Arr& a, DType dt, const std::string& device = "CPU:0") {
  HostBuffer b(dt, a.shape);
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.v[static_cast<size_t>(i)];
    if (ringrt::is_float(dt)) {
      b.set(i, x);
    } else {
      b.set_int(i, static_cast<int64_t>(x));
    }
  }
  return Tensor::from_host(b, device);
}

Arr to_arr(const HostBuffer& b) {
  Arr a{b.shape, {}};
  for (int64_t i = 0; i < b.numel(); ++i) a.v.push_back(b.get(i));
  return a;
}

Arr read(const Tensor& t) { return to_arr(t.host()); }

Tensor apply(const Tensor& t, Op op, std::vector<int> axes) {
  switch (op) {
    case Op::sum:
      return t.sum(std::move(axes));
    case Op::max:
      return t.max(std::move(axes));
    case Op::min:
      return t.min(std::move(axes));
    case Op::prod:
      return t.prod(std::move(axes));
  }
  return t;
}

void expect_equal(const Arr& got, const Arr& want) {
  BOOST_TEST(got.shape == want.shape);
  if (got.v.size() == want.v.size()) {
    BOOST_TEST(got.v == want.v, tt::per_element());
  } else {
    BOOST_ERROR("got " << got.v.size() << " elements, want " << want.v.size());
  }
}

void expect_values(const Tensor& t, const std::vector<double>& want) {
  Arr got = read(t);
  BOOST_TEST(got.v == want, tt::per_element());
}

// A value that lives on every device of devs (an allreduce result, a replicated tensor): every
// device's copy equals want, and the tensor's logical value too.
void expect_replicated(const Tensor& t, const Arr& want, const std::vector<std::string>& devs) {
  std::vector<Tensor> shards = t.shards();
  BOOST_TEST_REQUIRE(shards.size() == devs.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    BOOST_TEST_CONTEXT("copy on " << devs[i]) {
      BOOST_TEST(shards[i].devices() == std::vector<std::string>{devs[i]}, tt::per_element());
      expect_equal(read(shards[i]), want);
    }
  }
  BOOST_TEST_CONTEXT("logical value") { expect_equal(read(t), want); }
}

// A tensor sharded on axis over devs: the logical value is want and device i holds the i-th slice.
void expect_sharded(Tensor t, const Arr& want, int axis, const std::vector<std::string>& devs) {
  t.realize();
  BOOST_TEST(t.shard_axis().value_or(-1) == axis);
  expect_equal(read(t), want);
  std::vector<Tensor> shards = t.shards();
  BOOST_TEST_REQUIRE(shards.size() == devs.size());
  int64_t n = static_cast<int64_t>(devs.size()), len = want.shape[static_cast<size_t>(axis)] / n;
  for (int64_t i = 0; i < n; ++i) {
    BOOST_TEST_CONTEXT("shard on " << devs[static_cast<size_t>(i)]) {
      expect_equal(read(shards[static_cast<size_t>(i)]), slice(want, axis, i * len, (i + 1) * len));
    }
  }
}

// The result of a reduction of a tensor sharded on shard_axis over axes: replicated when the shard
// axis is reduced (an allreduce), else still sharded on the shard axis (renumbered after the drop).
void expect_reduced(const Tensor& t, const Arr& want, int shard_axis, std::vector<int> axes,
                    const std::vector<std::string>& devs) {
  bool over_shard = axes.empty() || std::find(axes.begin(), axes.end(), shard_axis) != axes.end();
  if (over_shard) {
    expect_replicated(t, want, devs);
  } else {
    int new_axis =
        shard_axis - static_cast<int>(std::count_if(axes.begin(), axes.end(), [&](int a) { return a < shard_axis; }));
    expect_sharded(t, want, new_axis, devs);
  }
}

// The allreduce algorithms the schedule of t reports (t's sharded inputs realized).
void expect_algorithms(const Tensor& t, const std::vector<std::string>& want) {
  BOOST_TEST(t.schedule().algorithms == want, tt::per_element());
}

// Runs fn; an unexpected exception becomes a failed check (with what) instead of ending the case,
// so that one failing sample does not hide the others of a loop.
void guard(const std::string& what, const std::function<void()>& fn) {
  try {
    BOOST_TEST_CONTEXT(what) { fn(); }
  } catch (const std::exception& e) {
    BOOST_ERROR(what << ": unexpected exception: " << e.what());
  }
}

// A BOOST_CHECK_EXCEPTION predicate: what() names every part (the op, the shape, the axis, ...).
auto names_all(std::vector<std::string> parts) {
  return [parts = std::move(parts)](const std::exception& e) {
    std::string what = e.what();
    bool ok = true;
    for (const auto& p : parts)
      if (what.find(p) == std::string::npos) {
        BOOST_TEST_MESSAGE("error message '" << what << "' does not name '" << p << "'");
        ok = false;
      }
    return ok;
  };
}

// For cases that allow either answer ("ShapeError, or if supported, these values"): run() either
// throws ShapeError naming every part, or returns a tensor that check() accepts. With
// device_error_too, a DeviceError naming every part is accepted as well (a value on other devices).
void shape_error_or(const std::vector<std::string>& parts, const std::function<Tensor()>& run,
                    const std::function<void(Tensor)>& check, bool device_error_too = false) {
  std::optional<Tensor> result;
  try {
    result = run();
    result->realize();
  } catch (const ShapeError& e) {
    BOOST_TEST(names_all(parts)(e), "ShapeError names " << parts.size() << " parts: " << e.what());
    return;
  } catch (const ringrt::DeviceError& e) {
    if (!device_error_too) throw;
    BOOST_TEST(names_all(parts)(e), "DeviceError names " << parts.size() << " parts: " << e.what());
    return;
  }
  BOOST_TEST_MESSAGE("no error: checking the supported semantics");
  check(*result);
}

const std::vector<DType> kDTypes = {DType::int32, DType::float32, DType::float16, DType::bfloat16};

std::string dname(DType d) { return std::string(ringrt::dtype_name(d)); }

// Chunk sizes of ringrt's ring plan.
std::vector<int64_t> plan_sizes(int64_t numel, int64_t ndev) {
  std::vector<int64_t> out;
  for (auto [a, b] : ringrt::allreduce_chunks(numel, ndev)) out.push_back(b - a);
  return out;
}

// The chunk plan as the case file states it, written independently.
std::vector<int64_t> stated_plan(int64_t numel, int64_t ndev) {
  int64_t factor = 1;
  for (int64_t f : {32, 16, 8, 4, 2})
    if (numel % f == 0) {
      factor = f;
      break;
    }
  int64_t base = numel / factor / ndev, left = numel / factor % ndev;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < ndev; ++i) out.push_back((i < left ? base + 1 : base) * factor);
  return out;
}

// Data for a reduction class test, exact in int32, float32, float16 and bfloat16 for every order
// of combination: sums of |x| <= 3 over <= 80 elements stay below 256; products are +-2^k, k <= 12;
// max runs on all-negative data and min on all-positive data, so an identity or pad of 0 shows.
Arr reduce_data(Op op, const Shape& s) {
  return make_arr(s, [&](int64_t f) -> double {
    switch (op) {
      case Op::sum:
        return static_cast<double>((f * 5) % 7 - 3);
      case Op::max:
        return static_cast<double>(-100 + (f * 37) % 61);
      case Op::min:
        return static_cast<double>(1 + (f * 37) % 61);
      case Op::prod:
        return f % 7 == 0 ? 2.0 : (f % 3 == 0 ? -1.0 : 1.0);
    }
    return 0;
  });
}

}  // namespace regr
using namespace regr;  // NOLINT: the helpers of this file

// =============================================================================================
// C01 — each reduce op keeps its own combine step

namespace regr {
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
}  // namespace regr

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

// =============================================================================================
// C05 — a sharded tensor copied to one device

namespace regr {
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
}  // namespace regr

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

namespace regr {
Tensor c06_input(bool realized, int ndev = 4) {
  Tensor X = Tensor::arange(64, DType::int32).reshape({8, 8}).shard(ringrt::cpu_devices(ndev), 0);
  if (realized) X.realize();
  return X;
}
auto realized_or_not() { return bdata::make({false, true}); }
}  // namespace regr

BOOST_DATA_TEST_CASE(c06a_shrink_one_shard_and_columns, realized_or_not(), realized) {
  Tensor r = c06_input(realized).shrink({{0, 2}, {2, 4}});
  expect_replicated(r, Arr{{2, 2}, {2, 3, 10, 11}}, ringrt::cpu_devices(4));
}

BOOST_DATA_TEST_CASE(c06b_shrink_off_shard_boundary, realized_or_not(), realized) {
  Tensor X = c06_input(realized);
  BOOST_CHECK_EXCEPTION(X.shrink({{0, 3}, {0, 8}}).realize(), ShapeError, names_all({"SHRINK", "(8, 8)", "axis 0"}));
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
  BOOST_CHECK_EXCEPTION(X.pad({{1, 0}, {0, 0}}).realize(), ShapeError, names_all({"PAD", "(8, 8)", "axis 0"}));
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
          BOOST_CHECK_EXCEPTION(r.realize(), ShapeError, names_all({"SHRINK", "(8, 8)", "axis 0"}));
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
      BOOST_CHECK_EXCEPTION(X.pad({rows, {0, 0}}).realize(), ShapeError, names_all({"PAD", "(8, 8)", "axis 0"}));
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

namespace regr {
Tensor c07_input() { return Tensor::arange(8, DType::int32).reshape({2, 2, 2}).shard(ringrt::cpu_devices(2), 1); }
}  // namespace regr

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
      {"FLIP", "(2, 2, 2)", "axis 1"}, [] { return c07_input().flip({1}); },
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
          {"FLIP", shape_text(x.shape), "axis 1"}, [&] { return X.flip(axes); },
          [&](Tensor t) { expect_equal(read(t), want); });
    });
  }
}

// =============================================================================================
// C08 — reshape through the shard axis

namespace regr {
// The oracle: a reshape of a tensor of shape s sharded on axis a over n devices keeps every element
// on its device exactly when some axis b of t satisfies t[b] % n == 0 and, for every flat index f,
// device(f) == coord_b(f) / (t[b] / n). Returns that axis (it is unique for n > 1) or nullopt.
std::optional<int> reshape_keeps_shards(const Shape& s, int a, int64_t n, const Shape& t) {
  int64_t total = prod_of(s);
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
      BOOST_CHECK_EXCEPTION(X.reshape(to).realize(), ShapeError, names_all({"RESHAPE", shape_text(to)}));
    }
  }
}
}  // namespace regr

BOOST_AUTO_TEST_CASE(c08_reshape_keeps_shards) {
  auto devs = ringrt::cpu_devices(3);
  Arr x = iota({2, 6, 2});
  Tensor X = Tensor::arange(24, DType::int32).reshape({2, 6, 2}).shard(devs, 1);
  X.realize();
  const std::vector<std::pair<Shape, int>> cases = {
      {{2, 3, 2, 2}, 1}, {{2, 12}, 1}, {{2, 6, 2, 1}, 1}, {{1, 2, 6, 2}, 2}};
  for (const auto& [to, axis] : cases) {
    guard("reshape to " + shape_text(to), [&] { expect_sharded(X.reshape(to), Arr{to, x.v}, axis, devs); });
  }
}

BOOST_AUTO_TEST_CASE(c08_reshape_moving_elements_is_shape_error) {
  auto devs = ringrt::cpu_devices(3);
  Tensor X = Tensor::arange(24, DType::int32).reshape({2, 6, 2}).shard(devs, 1);
  X.realize();
  for (const Shape& to : {Shape{24}, Shape{12, 2}, Shape{4, 3, 2}}) {
    BOOST_TEST_CONTEXT("reshape to " << shape_text(to)) {
      BOOST_CHECK_EXCEPTION(X.reshape(to).realize(), ShapeError, names_all({"RESHAPE", "(2, 6, 2)", shape_text(to)}));
    }
  }
  Tensor Y = Tensor::full({5, 4}, 1, DType::float32).shard(ringrt::cpu_devices(2), 1);
  BOOST_CHECK_EXCEPTION(Y.reshape({10, 2}).realize(), ShapeError, names_all({"RESHAPE", "(5, 4)", "(10, 2)"}));
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
    shapes_of(prod_of(s), rank, prefix, targets);
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
  BOOST_CHECK_EXCEPTION((A + B).realize(), ShapeError, names_all(parts));
  BOOST_CHECK_EXCEPTION((B * A).realize(), ShapeError, names_all(parts));
  A.realize();
  BOOST_CHECK_EXCEPTION((A - B).realize(), ShapeError, names_all(parts));
}

// Class: every pair of operand layouts (axis 0, axis 1, replicated) x (those, a scalar, a replicated
// row or column to broadcast), with the op and dtype rotating over the pairs; 2..4 devices, every
// algorithm for the mixed-axis allreduce; and matmuls contracting the shard axis.
BOOST_DATA_TEST_CASE(c09_class_layout_pairs, bdata::make(variants({2, 3, 4}, kAll)), var) {
  ScopedSettings scoped(settings_for(var.algo, var.ndev));
  auto devs = ringrt::cpu_devices(var.ndev);
  int64_t n = var.ndev, m = 2 * n;
  enum L { ax0, ax1, repl, scalar, row, col };
  const char* lname[] = {"axis0", "axis1", "replicated", "scalar", "row(1,m) replicated", "column(m,1) replicated"};
  Arr a = make_arr({m, m}, [](int64_t f) { return static_cast<double>((f * 5) % 11 - 5); });
  Arr b = make_arr({m, m}, [](int64_t f) { return static_cast<double>((f * 3) % 7 - 3); });
  auto layout = [&](const Arr& x, L l, DType dt) -> std::pair<Tensor, Arr> {
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
  };
  struct BinOp {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> t;
    std::function<double(double, double)> h;
  };
  const std::vector<BinOp> ops = {
      {"+", [](const Tensor& p, const Tensor& q) { return p + q; }, [](double p, double q) { return p + q; }},
      {"-", [](const Tensor& p, const Tensor& q) { return p - q; }, [](double p, double q) { return p - q; }},
      {"*", [](const Tensor& p, const Tensor& q) { return p * q; }, [](double p, double q) { return p * q; }},
      {"maximum", [](const Tensor& p, const Tensor& q) { return p.maximum(q); },
       [](double p, double q) { return std::max(p, q); }}};
  const std::vector<DType> dts = {DType::int32, DType::float32, DType::bfloat16};
  size_t pair = 0;
  for (L la : {ax0, ax1, repl})
    for (L lb : {ax0, ax1, repl, scalar, row, col}) {
      const BinOp& op = ops[(pair + rot(var)) % ops.size()];
      DType dt = dts[(pair + rot(var)) % dts.size()];
      ++pair;
      guard(dname(dt) + " " + lname[la] + " " + op.name + " " + lname[lb], [&] {
        auto [ta, ha] = layout(a, la, dt);
        auto [tb, hb] = layout(b, lb, dt);
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

// =============================================================================================
// C10 — uneven shards

namespace regr {
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
    BOOST_TEST(names_all(parts)(e), "ShapeError at shard(): " << e.what());
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
}  // namespace regr

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

// =============================================================================================
// C11 — assign between different shard layouts

BOOST_AUTO_TEST_CASE(c11_assign_replicated_from_sharded) {
  auto devs = ringrt::cpu_devices(2);
  Tensor R = Tensor::full({4, 4}, 0, DType::float32).shard(devs, std::nullopt);
  R.realize();
  Arr ones = make_arr({4, 4}, [](int64_t) { return 1.0; });
  shape_error_or(
      {"ASSIGN", "(4, 4)"},
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
      {"ASSIGN", "(4, 4)"},
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
              {"ASSIGN", V.devices()[0], "CPU:1"},
              [&] {
                D.assign(V);
                return D;
              },
              check, true);
        } else {
          shape_error_or(
              {"ASSIGN", shape_text(old_v.shape)},
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

namespace regr {
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
}  // namespace regr

BOOST_AUTO_TEST_CASE(c12_write_after_read_buf_first) { c12_run(true); }
BOOST_AUTO_TEST_CASE(c12_write_after_read_stale_first) { c12_run(false); }

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
  struct Reader {
    const char* name;
    std::function<Tensor(const Tensor&)> make;
    std::function<Arr(const Arr&)> expect;
    bool collective;  // an allreduce: its result lives on every device of the tuple
    bool uses_allreduce;
  };
  const std::vector<Reader> readers = {
      {"copy to CPU:0", [](const Tensor& t) { return t.to("CPU:0"); }, [](const Arr& a) { return a; }, false, true},
      {"copy outside", [&](const Tensor& t) { return t.to(dev(var.ndev)); }, [](const Arr& a) { return a; }, false,
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
  auto check_reader = [&](Tensor r, const Arr& want, bool collective) {
    if (collective) {
      expect_replicated(r, want, devs);
    } else {
      expect_equal(read(r), want);
    }
  };
  for (size_t i = 0; i < readers.size(); ++i) {
    const Reader& rd = readers[i];
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
      check_reader(stale, rd.expect(old_v), rd.collective);
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
      check_reader(fresh, rd.expect(new_v), rd.collective);
      expect_sharded(buf, new_v, 0, devs);
    });
  }
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
        {"ASSIGN", shape_text({2 * n, 2})},
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
  // the case's own form: a 1-D buffer assigned from values still lazy (a full(), an expression) that
  // are sharded as part of the write
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

// =============================================================================================
// C13 — replicas agree bit for bit

namespace regr {
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
}  // namespace regr

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
  // algorithms agree within the float32 rounding of these inputs: 4 * 1e8 * 2^-23 < 48
  for (double v : got.v) BOOST_TEST(std::abs(v - 2.0) <= 48.0);
  if (var.algo == Algo::naive || var.algo == Algo::all2all) {
    expect_equal(got, make_arr({128}, [](int64_t) { return 1.0; }));
  } else if (var.algo == Algo::ring) {
    expect_equal(got, make_arr({128}, [](int64_t j) { return (j / 32) % 2 == 0 ? 1.0 : 0.0; }));
  }
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
    auto [dt, cast] = combos[k];
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

namespace regr {
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
}  // namespace regr

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

namespace regr {
std::multiset<std::string> copy_pairs(const ringrt::Schedule& s) {
  std::multiset<std::string> out;
  for (const auto& c : s.copies()) out.insert(c.src + ">" + c.dst);
  return out;
}
}  // namespace regr

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
  struct Step {
    const char* name;
    std::function<void(AllreduceSettings&)> set;
    std::string algo;
    size_t copies;
    std::multiset<std::string> pairs;  // empty: not checked
  };
  auto flat = [](AllreduceSettings& s) {
    s.ring = 0;
    s.all2all = 0;
  };
  auto groups = [](AllreduceSettings& s) { s.groups = {{"CPU:0", 0}, {"CPU:1", 0}, {"CPU:2", 1}, {"CPU:3", 1}}; };
  // ring edges D_i -> D_(i+1): 24 copies, 6 per edge
  std::multiset<std::string> ring_pairs;
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 6; ++k) ring_pairs.insert(dev(i) + ">" + dev((i + 1) % 4));
  const std::vector<Step> steps = {
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
       [&](AllreduceSettings& s) {
         flat(s);
         groups(s);
       },
       "hierarchical",
       6,
       {"CPU:1>CPU:0", "CPU:3>CPU:2", "CPU:0>CPU:2", "CPU:2>CPU:0", "CPU:0>CPU:1", "CPU:2>CPU:3"}},
      {"groups, leaders D1, D3",
       [&](AllreduceSettings& s) {
         flat(s);
         groups(s);
         s.reduce_leaders = {"CPU:1", "CPU:3"};
       },
       "hierarchical",
       6,
       {"CPU:0>CPU:1", "CPU:2>CPU:3", "CPU:1>CPU:3", "CPU:3>CPU:1", "CPU:1>CPU:0", "CPU:3>CPU:2"}},
      {"groups dropped again", flat, "naive", 12, {}},
  };
  for (const Step& st : steps) {
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
