// Helpers of the multi-device regression cases C01..C15 (shared/cases/multi-device-regressions.md;
// test/runtime/api/regressions/test_*.cpp, one file per feature): the allreduce algorithms under
// test and their settings, the (device count, algorithm) samples, and checks of a tensor's value on
// every device. Expected values come from the host oracle (test/support/host_oracle.hpp).
// Include after <boost/test/unit_test.hpp>.
#pragma once

#include <algorithm>
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

#include "core/dtype.hpp"
#include "core/errors.hpp"
#include "core/settings.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/api/internal.hpp"
#include "test/support/checks.hpp"
#include "test/support/host_oracle.hpp"

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

using namespace ringrt::test::host;  // NOLINT: the oracle
using ringrt::test::message_has;

// ---------------------------------------------------------------------------------------------
// settings: the allreduce algorithms under test

enum class Algo { naive, ring, all2all, hier, hier_leaders, hier_ring };

inline std::ostream& operator<<(std::ostream& os, Algo a) {
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

inline bool is_hier(Algo a) { return a == Algo::hier || a == Algo::hier_leaders || a == Algo::hier_ring; }

// What Schedule::algorithms reports for the one allreduce of a reduction under these settings.
inline std::string algo_name(Algo a) {
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

inline std::string dev(int i) { return "CPU:" + std::to_string(i); }

// Tests that copy to a device outside the tuple (D5, CPU:n, CPU:9) create CPU:0..CPU:9 first; a
// tuple is then the first n of them (cpu_devices never removes devices).
inline void create_outside_devices() { ringrt::cpu_devices(10); }

// Groups: two halves ({D0..D(h-1)}, {Dh..}, h = ceil(n/2)), leaders by default the first device of each;
// or pairs {D0,D1},{D2,D3},... led by their last device (REDUCE_LEADERS).
inline AllreduceSettings settings_for(Algo a, int ndev) {
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
inline std::ostream& operator<<(std::ostream& os, const Variant& v) { return os << v.ndev << " devices, " << v.algo; }

inline const std::vector<Algo> kFlat = {Algo::naive, Algo::ring, Algo::all2all};
inline const std::vector<Algo> kHier = {Algo::hier, Algo::hier_leaders, Algo::hier_ring};
inline const std::vector<Algo> kAll = {Algo::naive, Algo::ring,         Algo::all2all,
                                       Algo::hier,  Algo::hier_leaders, Algo::hier_ring};

// Every (ndev, algo) pair; hierarchical variants need at least 3 devices (2 groups, one of >1 device).
inline std::vector<Variant> variants(const std::vector<int>& ndevs, const std::vector<Algo>& algos) {
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
inline size_t rot(const Variant& v) { return static_cast<size_t>(v.ndev * 7 + static_cast<int>(v.algo)); }

// ---------------------------------------------------------------------------------------------
// checks of a tensor's value on every device

inline void expect_values(const Tensor& t, const std::vector<double>& want) {
  Arr got = read(t);
  BOOST_TEST(got.v == want, tt::per_element());
}

// A value that lives on every device of devs (an allreduce result, a replicated tensor): every
// device's copy equals want, and the tensor's logical value too.
inline void expect_replicated(const Tensor& t, const Arr& want, const std::vector<std::string>& devs) {
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
inline void expect_sharded(Tensor t, const Arr& want, int axis, const std::vector<std::string>& devs) {
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
inline void expect_reduced(const Tensor& t, const Arr& want, int shard_axis, std::vector<int> axes,
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
inline void expect_algorithms(const Tensor& t, const std::vector<std::string>& want) {
  BOOST_TEST(t.schedule().algorithms == want, tt::per_element());
}

// What a case allowing either answer gets from ringrt today: its refusal, or values. A case states it, so a
// change either way fails until the case is updated (a regression to a refusal must not pass as "allowed").
enum class Expect { refusal, values };

// For cases whose specification allows either answer ("ShapeError, or if supported, these values"): run()
// either throws ShapeError naming every part, or returns a tensor that check() accepts; `expect` says which
// ringrt does today, and the other is an error. With device_error_too, a DeviceError naming every part counts
// as the refusal (a value on other devices).
inline void shape_error_or(Expect expect, const std::vector<std::string>& parts, const std::function<Tensor()>& run,
                           const std::function<void(Tensor)>& check, bool device_error_too = false) {
  std::optional<Tensor> result;
  auto refused = [&](const char* kind, const std::exception& e) {
    BOOST_TEST(message_has(parts)(e), kind << " names " << parts.size() << " parts: " << e.what());
    if (expect == Expect::values) BOOST_ERROR("ringrt now refuses where it gave values: " << e.what());
  };
  try {
    result = run();
    result->realize();
  } catch (const ShapeError& e) {
    refused("ShapeError", e);
    return;
  } catch (const ringrt::DeviceError& e) {
    if (!device_error_too) throw;
    refused("DeviceError", e);
    return;
  }
  if (expect == Expect::refusal)
    BOOST_ERROR("ringrt now gives values where it refused: check them below, then expect Expect::values");
  check(*result);
}

inline const std::vector<DType> kDTypes = {DType::int32, DType::float32, DType::float16, DType::bfloat16};

// Chunk sizes of ringrt's ring plan.
inline std::vector<int64_t> plan_sizes(int64_t numel, int64_t ndev) {
  std::vector<int64_t> out;
  for (auto [a, b] : ringrt::allreduce_chunks(numel, ndev)) out.push_back(b - a);
  return out;
}

// The chunk plan as the case file states it, written independently.
inline std::vector<int64_t> stated_plan(int64_t numel, int64_t ndev) {
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
inline Arr reduce_data(Op op, const Shape& s) {
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
