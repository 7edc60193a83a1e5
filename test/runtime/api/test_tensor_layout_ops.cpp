// The Tensor ops of runtime/api/tensor_ops.cpp, part two: reductions, matmul, cat and stack, resharding,
// creation (like, rand) and memory accounting, each on 1 to 8 cpu devices,
// replicated and sharded, under every allreduce algorithm where a reduction crosses the shard axis.
//
// Every expected value is computed here by host loops over the unsharded data (C++ arithmetic in the
// dtype, std:: math); 16-bit float results are compared with the reference interpreter (the oracle).
// Results are realized several at a time (Tensor::realize_all) so that each sample compiles once.
// Boost.Test's module header first, then its data-test headers.
// clang-format off
#include <boost/test/unit_test.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
// clang-format on

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "codegen/compiler.hpp"
#include "core/dtype.hpp"
#include "core/errors.hpp"
#include "core/settings.hpp"
#include "runtime/api/devices.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/device/device.hpp"
#include "test/runtime/api/tensor_ops.hpp"

BOOST_AUTO_TEST_SUITE(test_tensor_layout_ops)

namespace bdata = boost::unit_test::data;
namespace tt = boost::test_tools;

using namespace ops;
// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(reductions)

// mean over the shard axis is an allreduce (every algorithm), over another axis it stays sharded;
// integers give float32, float16 stays float16 (summed in float32).
BOOST_DATA_TEST_CASE(mean_over_and_across_shards, bdata::make(variants()), v) {
  ScopedSettings scope(settings_for(v.algo));
  int n = v.ndev;
  const int64_t rows = 4 * n, cols = 6;
  auto x = data(rows * cols);
  std::vector<int32_t> xi(x.size());
  for (size_t k = 0; k < x.size(); ++k) xi[k] = static_cast<int32_t>(x[k] * 4);
  Tensor t = Tensor::from_vector(x, {rows, cols}).shard(devs(n), 0);
  Tensor ti = Tensor::from_vector(xi, {rows, cols}).shard(devs(n), 0);
  Tensor m0 = t.mean({0}), m1 = t.mean({-1}), all = t.mean(), mi = ti.mean({0}), mh = t.cast(DType::float16).mean({0});
  if (n > 1) BOOST_TEST(m0.schedule().algorithms == std::vector<std::string>{algo_name(v.algo)});
  BOOST_TEST(m1.schedule().algorithms.empty());
  BOOST_TEST((m1.shard_axis() == std::optional<int>(0)));
  BOOST_TEST(mi.dtype() == DType::float32);
  BOOST_TEST(mh.dtype() == DType::float16);
  Tensor::realize_all({m0, m1, all, mi, mh});
  std::vector<double> w0(cols, 0), w1(static_cast<size_t>(rows), 0), wi(cols, 0);
  double wall = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      size_t k = static_cast<size_t>(i * cols + j);
      w0[static_cast<size_t>(j)] += x[k] / static_cast<double>(rows);
      w1[static_cast<size_t>(i)] += x[k] / static_cast<double>(cols);
      wi[static_cast<size_t>(j)] += xi[k] / static_cast<double>(rows);
      wall += x[k] / static_cast<double>(rows * cols);
    }
  check_close(m0.to_vector<float>(), w0);
  check_close(m1.to_vector<float>(), w1);
  check_close(all.to_vector<float>(), {wall});
  check_close(mi.to_vector<float>(), wi);
  check_close(mh.to_vector<float>(), w0, 1e-3);
}

// A tensor-parallel linear layer: x sharded on its last axis, W on its first; one line, lowered to a
// local matmul plus one allreduce (each algorithm), values as host loops.
BOOST_DATA_TEST_CASE(matmul_tensor_parallel, bdata::make(variants()), v) {
  ScopedSettings scope(settings_for(v.algo));
  int n = v.ndev;
  const int64_t M = 3, K = 2 * n, N = 5;
  auto xs = data(M * K), ws = data(K * N, 3);
  std::vector<int32_t> xi(xs.size()), wi(ws.size());
  for (size_t k = 0; k < xs.size(); ++k) xi[k] = static_cast<int32_t>(xs[k] * 4);
  for (size_t k = 0; k < ws.size(); ++k) wi[k] = static_cast<int32_t>(ws[k] * 4);
  Tensor x = Tensor::from_vector(xs, {M, K}).shard(devs(n), 1), w = Tensor::from_vector(ws, {K, N}).shard(devs(n), 0);
  Tensor y = x.matmul(w);
  Tensor yi = Tensor::from_vector(xi, {M, K}).shard(devs(n), 1).dot(Tensor::from_vector(wi, {K, N}).shard(devs(n), 0));
  BOOST_TEST(y.shape() == Shape({M, N}));
  BOOST_TEST(yi.dtype() == DType::int32);
  if (n > 1) {
    BOOST_TEST(y.schedule().algorithms == std::vector<std::string>{algo_name(v.algo)});
    BOOST_TEST(!y.shard_axis().has_value());  // the allreduce leaves it replicated
  }
  Tensor::realize_all({y, yi});
  std::vector<double> want;
  std::vector<int64_t> wanti;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      int64_t si = 0;
      for (int64_t k = 0; k < K; ++k) {
        s += static_cast<double>(xs[static_cast<size_t>(i * K + k)]) * ws[static_cast<size_t>(k * N + j)];
        si += static_cast<int64_t>(xi[static_cast<size_t>(i * K + k)]) * wi[static_cast<size_t>(k * N + j)];
      }
      want.push_back(s);
      wanti.push_back(si);
    }
  check_close(y.to_vector<float>(), want);
  BOOST_TEST(yi.to_vector<int64_t>() == wanti, tt::per_element());
}

// The other layouts: data parallel (x sharded on rows, W replicated) and column parallel (W sharded on
// its columns) need no allreduce and stay sharded; 1-D operands and a batch broadcast as tinygrad's dot.
BOOST_DATA_TEST_CASE(matmul_layouts_and_shapes, bdata::make(std::vector<int>{1, 2, 4, 8}), n) {
  const int64_t M = 2 * n, K = 3, N = 2 * n;
  auto xs = data(M * K), ws = data(K * N, 1), bs = data(2 * M * K, 2);
  Tensor x = Tensor::from_vector(xs, {M, K}), w = Tensor::from_vector(ws, {K, N});
  Tensor dp = x.shard(devs(n), 0).matmul(w.shard(devs(n), std::nullopt));
  Tensor cp = x.shard(devs(n), std::nullopt).matmul(w.shard(devs(n), 1));
  Tensor vec = Tensor::from_vector(data(K, 4), {K});
  Tensor xv = x.dot(vec), vw = vec.dot(w), vv = vec.dot(vec), batch = Tensor::from_vector(bs, {2, M, K}).matmul(w);
  BOOST_TEST(dp.schedule().algorithms.empty());
  BOOST_TEST(cp.schedule().algorithms.empty());
  if (n > 1) {
    BOOST_TEST((dp.shard_axis() == std::optional<int>(0)));
    BOOST_TEST((cp.shard_axis() == std::optional<int>(1)));
  }
  BOOST_TEST(xv.shape() == Shape({M}));
  BOOST_TEST(vw.shape() == Shape({N}));
  BOOST_TEST(vv.shape() == Shape({}));
  BOOST_TEST(batch.shape() == Shape({2, M, N}));
  Tensor::realize_all({dp, cp, xv, vw, vv, batch});
  auto vecv = data(K, 4);
  std::vector<double> mm, wxv, wvw, wb;
  double wvv = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += static_cast<double>(xs[static_cast<size_t>(i * K + k)]) * ws[static_cast<size_t>(k * N + j)];
      mm.push_back(s);
    }
  for (int64_t i = 0; i < M; ++i) {
    double s = 0;
    for (int64_t k = 0; k < K; ++k)
      s += static_cast<double>(xs[static_cast<size_t>(i * K + k)]) * vecv[static_cast<size_t>(k)];
    wxv.push_back(s);
  }
  for (int64_t j = 0; j < N; ++j) {
    double s = 0;
    for (int64_t k = 0; k < K; ++k)
      s += static_cast<double>(vecv[static_cast<size_t>(k)]) * ws[static_cast<size_t>(k * N + j)];
    wvw.push_back(s);
  }
  for (int64_t k = 0; k < K; ++k)
    wvv += static_cast<double>(vecv[static_cast<size_t>(k)]) * vecv[static_cast<size_t>(k)];
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += static_cast<double>(bs[static_cast<size_t>((b * M + i) * K + k)]) * ws[static_cast<size_t>(k * N + j)];
        wb.push_back(s);
      }
  check_close(dp.to_vector<float>(), mm);
  check_close(cp.to_vector<float>(), mm);
  check_close(xv.to_vector<float>(), wxv);
  check_close(vw.to_vector<float>(), wvw);
  check_close(vv.to_vector<float>(), {wvv});
  check_close(batch.to_vector<float>(), wb);
  BOOST_CHECK_THROW(x.matmul(x), ShapeError);
  BOOST_CHECK_THROW(Tensor::constant(1).dot(x), ShapeError);
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(concatenation)

// cat along an unsharded axis of sharded tensors; along the shard axis a ShapeError; stack; mixed
// dtypes promote; -0.0 survives.
BOOST_DATA_TEST_CASE(cat_and_stack, bdata::make(kCounts), n) {
  const int64_t rows = 2 * n;
  auto a = data(rows * 2), b = data(rows * 3, 1);
  a[0] = -0.0f;
  std::vector<int16_t> c16(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) c16[static_cast<size_t>(i)] = static_cast<int16_t>(1000 * i - 7);
  Tensor ta = Tensor::from_vector(a, {rows, 2}).shard(devs(n), 0),
         tb = Tensor::from_vector(b, {rows, 3}).shard(devs(n), 0);
  Tensor tc = Tensor::from_vector(c16, {rows, 1}).shard(devs(n), 0);
  Tensor c = Tensor::cat({ta, tb, tc}, -1);
  Tensor s = Tensor::stack({ta, ta * 2.0}, 1);
  Tensor single =
      Tensor::cat({Tensor::from_vector(a, {rows, 2}),
                   Tensor::from_vector(c16, {rows, 1}).reshape({1, rows}).expand({2, rows}).permute({1, 0})},
                  0);
  BOOST_TEST(c.shape() == Shape({rows, 6}));
  BOOST_TEST(c.dtype() == DType::float32);
  BOOST_TEST((c.shard_axis() == std::optional<int>(0)));
  BOOST_TEST(s.shape() == Shape({rows, 2, 2}));
  BOOST_TEST(single.shape() == Shape({2 * rows, 2}));
  Tensor::realize_all({c, s, single});
  auto cv = c.to_vector<float>(), sv = s.to_vector<float>(), gv = single.to_vector<float>();
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < 6; ++j) {
      double want = j < 2   ? a[static_cast<size_t>(i * 2 + j)]
                    : j < 5 ? b[static_cast<size_t>(i * 3 + j - 2)]
                            : c16[static_cast<size_t>(i)];
      BOOST_TEST(cv[static_cast<size_t>(i * 6 + j)] == want);
    }
    for (int64_t j = 0; j < 2; ++j) {
      BOOST_TEST(sv[static_cast<size_t>(i * 4 + j)] == a[static_cast<size_t>(i * 2 + j)]);
      BOOST_TEST(sv[static_cast<size_t>(i * 4 + 2 + j)] == 2 * a[static_cast<size_t>(i * 2 + j)]);
      BOOST_TEST(gv[static_cast<size_t>(i * 2 + j)] == a[static_cast<size_t>(i * 2 + j)]);
      BOOST_TEST(gv[static_cast<size_t>((rows + i) * 2 + j)] == c16[static_cast<size_t>(i)]);
    }
  }
  BOOST_TEST(std::signbit(cv[0]));
  BOOST_TEST(std::signbit(gv[0]));
  if (n > 1) BOOST_CHECK_THROW(Tensor::cat({ta, ta}, 0), ShapeError);  // the shard axis
  BOOST_CHECK_THROW(Tensor::cat({ta, tb}, 0), ShapeError);             // shapes differ off the axis
  BOOST_CHECK_THROW(Tensor::cat({}, 0), ShapeError);
  BOOST_CHECK_THROW(Tensor::stack({ta, tb}, 0), ShapeError);
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(resharding)

// shard() of a multi-device tensor: onto another axis, replicated <-> sharded, onto another device tuple;
// the logical values and every device's shard are as host loops say, under every algorithm.
BOOST_DATA_TEST_CASE(reshard_round_trips, bdata::make(variants()), v) {
  ScopedSettings scope(settings_for(v.algo));
  int n = v.ndev;
  const int64_t rows = 2 * n, cols = n;
  auto x = data(rows * cols);
  Tensor base = Tensor::from_vector(x, {rows, cols});
  Tensor s0 = base.shard(devs(n), 0);
  Tensor s1 = s0.shard(devs(n), 1);              // axis 0 -> axis 1
  Tensor rep = s1.shard(devs(n), std::nullopt);  // sharded -> replicated
  Tensor back = rep.shard(devs(n), 0);           // replicated -> sharded, in place
  Tensor lazy = (s0 * 2.0).shard(devs(n), 1);    // a computed value: realized first
  std::vector<std::string> other = n > 1 ? devs(n - 1) : std::vector<std::string>{"CPU:1", "CPU:0"};
  int64_t on = static_cast<int64_t>(other.size());
  Tensor moved = s0.shard(other, on == 1 || rows % on ? std::nullopt : std::optional<int>(0));  // another tuple
  BOOST_TEST((s1.shard_axis() == std::optional<int>(1)));
  BOOST_TEST((!rep.shard_axis()));
  BOOST_TEST((back.shard_axis() == std::optional<int>(0)));
  BOOST_TEST(moved.devices() == other);
  // onto another axis: an alltoall, direct whatever the setting (rewrite/rules/collectives.cpp)
  if (n > 1) BOOST_TEST(s1.schedule().algorithms == std::vector<std::string>{"all2all"});
  Tensor::realize_all({s1, rep, back, lazy, moved});
  HostBuffer want = base.host();
  for (const Tensor* t : {&s1, &rep, &back, &moved}) BOOST_TEST((t->host() == want));
  std::vector<float> twice;
  for (float f : x) twice.push_back(2 * f);
  BOOST_TEST(lazy.to_vector<float>() == twice, tt::per_element());
  // every device holds its part: axis 1 splits the columns
  auto shards = s1.shards();
  BOOST_TEST_REQUIRE(shards.size() == static_cast<size_t>(n));
  for (int d = 0; d < n; ++d) {
    auto sv = shards[static_cast<size_t>(d)].to_vector<float>();
    BOOST_TEST_REQUIRE(sv.size() == static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) BOOST_TEST(sv[static_cast<size_t>(i)] == x[static_cast<size_t>(i * cols + d)]);
  }
  for (const Tensor& r : rep.shards()) BOOST_TEST((r.host() == want));
  BOOST_TEST(rep.shard(devs(n), 0).schedule().copies().empty());  // replicated -> sharded moves no data
  BOOST_CHECK_THROW(s0.shard(devs(n), 5), ShapeError);
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(creation)

// empty_like and full_like keep shape, dtype, devices and shard axis.
BOOST_DATA_TEST_CASE(like_keeps_layout, bdata::make(std::vector<int>{1, 2, 3, 8}), n) {
  Tensor one = Tensor::from_vector(data(24), {24, 1}).cast(DType::int16);
  Tensor rep = one.shard(devs(n), std::nullopt), sh = one.shard(devs(n), 0);
  for (const Tensor* t : {&one, &rep, &sh}) {
    Tensor e = t->empty_like(), f = t->full_like(-3), z = t->zeros_like();
    for (const Tensor* l : {&e, &f, &z}) {
      BOOST_TEST(l->shape() == t->shape());
      BOOST_TEST(l->dtype() == DType::int16);
      BOOST_TEST(l->devices() == t->devices());
      BOOST_TEST((l->shard_axis() == t->shard_axis()));
    }
    BOOST_TEST(f.to_vector<int64_t>() == std::vector<int64_t>(24, -3), tt::per_element());
    BOOST_TEST(z.to_vector<int64_t>() == std::vector<int64_t>(24, 0), tt::per_element());
    BOOST_TEST(e.to_vector<int64_t>().size() == 24u);
    BOOST_TEST(((*t + e).shape() == t->shape()));
  }
}

// Counter-based random numbers: a function of (seed, index) alone, so any sharding gives the same bits.
BOOST_AUTO_TEST_CASE(rand_is_counter_based) {
  const Shape shape{40, 6};
  HostBuffer r1 = Tensor::rand(shape, 42).host();
  BOOST_TEST((Tensor::rand(shape, 42).host() == r1));
  BOOST_TEST(!(Tensor::rand(shape, 43).host() == r1));
  for (int n = 1; n <= 8; ++n) {
    for (std::optional<int> axis : {std::optional<int>(0), std::optional<int>(), std::optional<int>(-1)}) {
      if (axis && shape[static_cast<size_t>(*axis < 0 ? *axis + 2 : *axis)] % n) continue;
      BOOST_TEST_CONTEXT(n << " devices, axis " << (axis ? std::to_string(*axis) : "none")) {
        Tensor s = Tensor::rand(shape, 42, devs(n), axis);
        BOOST_TEST(s.devices() == devs(n));
        BOOST_TEST((s.host() == r1));
        BOOST_TEST((Tensor::rand(shape, 42).shard(devs(n), axis).host() == r1));
      }
    }
  }
  for (DType d : {DType::float32, DType::float16, DType::bfloat16, DType::float64}) {
    auto v = Tensor::rand({4096}, 7, d).to_vector<double>();
    BOOST_TEST(*std::min_element(v.begin(), v.end()) >= 0.0);
    BOOST_TEST(*std::max_element(v.begin(), v.end()) < 1.0);
  }
  BOOST_CHECK_THROW(Tensor::rand({4}, 1, DType::int32), ShapeError);
}

// 10^6 uniforms: the mean is 0.5 within 0.01 (its standard deviation is 0.0003); 10^5 normals: mean 0 and
// variance 1 within 0.03 (standard deviations 0.003 and 0.0045). The values are fixed by the seeds.
BOOST_AUTO_TEST_CASE(rand_statistics) {
  auto u = Tensor::rand({1000, 1000}, 2024).to_vector<double>();
  double mu = 0;
  for (double x : u) mu += x;
  mu /= static_cast<double>(u.size());
  BOOST_TEST(std::fabs(mu - 0.5) < 0.01);
  auto z = Tensor::randn({100000}, 99).to_vector<double>();
  double m = 0, m2 = 0;
  for (double x : z) m += x;
  m /= static_cast<double>(z.size());
  for (double x : z) m2 += (x - m) * (x - m);
  m2 /= static_cast<double>(z.size());
  BOOST_TEST(std::fabs(m) < 0.03);
  BOOST_TEST(std::fabs(m2 - 1.0) < 0.03);
  // the device-side mean of a sharded rand agrees with the host's
  double dm = Tensor::rand({1000, 1000}, 2024, devs(4), 0).mean().to_vector<double>().at(0);
  BOOST_TEST(std::fabs(dm - mu) < 1e-3);  // float32 sums on the devices
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(memory)

// A tensor's storage raises in_use by its bytes on each device it lives on, freeing it lowers it again
// (the block goes to the cache); peak >= in_use; reset_peak_memory sets peak to in_use.
BOOST_AUTO_TEST_CASE(accounting_per_device) {
  auto d = devs(4);
  for (const auto& name : d) ringrt::device(name).synchronize();  // nothing from earlier tests in flight
  std::vector<ringrt::MemoryStats> before;
  for (const auto& name : d) before.push_back(ringrt::memory_stats(name));
  {
    Tensor t = Tensor::rand({4, 1000}, 1, d, 0);               // 1000 float32 = 4000 bytes per device
    Tensor one = Tensor::empty({300}, DType::int16, "CPU:2");  // 600 more bytes on CPU:2
    for (size_t i = 0; i < d.size(); ++i) {
      auto s = ringrt::memory_stats(d[i]);
      int64_t extra = 4000 + (i == 2 ? 600 : 0);
      BOOST_TEST(s.in_use == before[i].in_use + extra);
      BOOST_TEST(s.allocations == before[i].allocations + (i == 2 ? 2 : 1));
      BOOST_TEST(s.peak >= s.in_use);
    }
  }
  for (size_t i = 0; i < d.size(); ++i) {
    auto s = ringrt::memory_stats(d[i]);
    BOOST_TEST(s.in_use == before[i].in_use);
    BOOST_TEST(s.cached >= 4000);
    BOOST_TEST(s.peak >= before[i].in_use + 4000);
    ringrt::reset_peak_memory(d[i]);
    BOOST_TEST(ringrt::memory_stats(d[i]).peak == s.in_use);
  }
  BOOST_CHECK_THROW(ringrt::memory_stats("CPU:9999"), ringrt::DeviceError);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
