// The Tensor ops of runtime/api/tensor_ops.cpp, part one: the dtypes int16/uint32 and elementwise ops, each on 1 to 8
// cpu devices, replicated and sharded, under every allreduce algorithm where a reduction crosses the shard axis.
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
#include "runtime/api/internal.hpp"
#include "runtime/device/device.hpp"
#include "test/runtime/api/tensor_ops.hpp"

BOOST_AUTO_TEST_SUITE(test_tensor_ops)

namespace bdata = boost::unit_test::data;
namespace tt = boost::test_tools;

using namespace ops;
// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(dtypes)

// int16 and uint32 arithmetic wraps like C++ on every device count, sharded on axis 0.
BOOST_DATA_TEST_CASE(int16_uint32_arithmetic, bdata::make(kCounts), n) {
  const int64_t rows = 8 * 3 * 5 * 7, cols = 2;  // divisible by 1..8
  std::vector<int16_t> a16, b16;
  std::vector<uint32_t> a32, b32;
  for (int64_t i = 0; i < rows * cols; ++i) {
    a16.push_back(static_cast<int16_t>(i % 5 == 0 ? 32767 - i % 3 : i % 5 == 1 ? -32768 + i % 4 : i * 37 - 700));
    b16.push_back(static_cast<int16_t>(i % 3 == 0 ? 3 : i % 3 == 1 ? -2 : 301 - i));
    a32.push_back(i % 4 == 0 ? 0xffffffffu - static_cast<uint32_t>(i) : static_cast<uint32_t>(i) * 0x9e3779b9u);
    b32.push_back(i % 5 == 0 ? 0u : static_cast<uint32_t>(i) * 2654435761u + 1u);
  }
  auto sh = [&](auto v) { return Tensor::from_vector(v, {rows, cols}).shard(devs(n), 0); };
  Tensor x = sh(a16), y = sh(b16), u = sh(a32), w = sh(b32);
  BOOST_TEST(x.dtype() == DType::int16);
  BOOST_TEST(u.dtype() == DType::uint32);
  std::vector<Tensor> r{x + y,
                        x - y,
                        x * y,
                        -x,
                        x.maximum(y),
                        x.binary(ringrt::BinaryOp::less, y),
                        u + w,
                        u - w,
                        u * w,
                        -u,
                        u.binary(ringrt::BinaryOp::less, w),
                        u.binary(ringrt::BinaryOp::idiv, w + 1u),
                        u.binary(ringrt::BinaryOp::mod, w + 1u),
                        u.minimum(w)};
  Tensor::realize_all(r);
  auto i16 = [](int64_t v) { return static_cast<int16_t>(static_cast<uint16_t>(v)); };
  std::vector<std::vector<int64_t>> got;
  for (const Tensor& t : r) got.push_back(t.to_vector<int64_t>());
  for (size_t i = 0; i < a16.size(); ++i) {
    int64_t p = a16[i], q = b16[i];
    BOOST_TEST(got[0][i] == i16(p + q));
    BOOST_TEST(got[1][i] == i16(p - q));
    BOOST_TEST(got[2][i] == i16(p * q));
    BOOST_TEST(got[3][i] == i16(-p));
    BOOST_TEST(got[4][i] == std::max(p, q));
    BOOST_TEST(got[5][i] == (p < q));
    uint32_t s = a32[i], t = b32[i];
    BOOST_TEST(got[6][i] == static_cast<uint32_t>(s + t));
    BOOST_TEST(got[7][i] == static_cast<uint32_t>(s - t));
    BOOST_TEST(got[8][i] == static_cast<uint32_t>(s * t));
    BOOST_TEST(got[9][i] == static_cast<uint32_t>(0u - s));
    BOOST_TEST(got[10][i] == (s < t));  // unsigned: 0x80000000 > 1
    uint32_t den = t + 1u;              // x / 0 and x % 0 are 0 (the interpreter's rule)
    BOOST_TEST(got[11][i] == (den ? s / den : 0u));
    BOOST_TEST(got[12][i] == (den ? s % den : 0u));
    BOOST_TEST(got[13][i] == std::min(s, t));
  }
}

// Promotion as tinygrad and numpy: int8+uint8 -> int16, int16+uint32 -> int64, uint32*float32 -> float32;
// casts from float truncate and wrap; sums over the shard axis wrap in the dtype under every algorithm.
BOOST_DATA_TEST_CASE(promotion_casts_and_allreduce, bdata::make(variants()), v) {
  ScopedSettings scope(settings_for(v.algo));
  int n = v.ndev;
  const int64_t len = 8 * n;
  std::vector<int8_t> s8;
  std::vector<uint8_t> u8;
  std::vector<uint32_t> big;
  std::vector<int16_t> small;
  std::vector<float> fl;
  for (int64_t i = 0; i < len; ++i) {
    s8.push_back(static_cast<int8_t>(i % 2 ? -128 + i : 127 - i));
    u8.push_back(static_cast<uint8_t>(255 - i));
    big.push_back(0xf0000000u + static_cast<uint32_t>(i));
    small.push_back(static_cast<int16_t>(30000 - 17 * i));
    fl.push_back(static_cast<float>(i) * 1.75f - 3.9f);
  }
  auto sh = [&](auto vec) { return Tensor::from_vector(vec, {len}).shard(devs(n), 0); };
  Tensor a = sh(s8) + sh(u8), b = sh(small) + sh(big), c = sh(big) * sh(fl), d = sh(fl).cast(DType::uint32),
         e = sh(big).sum(), f = sh(small).max(), g = sh(small).sum();
  BOOST_TEST(a.dtype() == DType::int16);
  BOOST_TEST(b.dtype() == DType::int64);
  BOOST_TEST(c.dtype() == DType::float32);
  if (n > 1) BOOST_TEST(e.schedule().algorithms == std::vector<std::string>{algo_name(v.algo)});
  Tensor::realize_all({a, b, c, d, e, f, g});
  auto av = a.to_vector<int64_t>(), bv = b.to_vector<int64_t>(), dv = d.to_vector<int64_t>();
  auto cv = c.to_vector<float>();
  uint32_t esum = 0;
  int16_t gsum = 0, fmax = std::numeric_limits<int16_t>::min();
  for (int64_t i = 0; i < len; ++i) {
    auto k = static_cast<size_t>(i);
    BOOST_TEST(av[k] == s8[k] + u8[k]);
    BOOST_TEST(bv[k] == static_cast<int64_t>(small[k]) + static_cast<int64_t>(big[k]));
    BOOST_TEST(cv[k] == static_cast<float>(big[k]) * fl[k]);
    BOOST_TEST(dv[k] == static_cast<uint32_t>(static_cast<int64_t>(fl[k])));  // truncation, then the wrap
    esum = static_cast<uint32_t>(esum + big[k]);
    gsum = static_cast<int16_t>(static_cast<uint16_t>(gsum + small[k]));
    fmax = std::max(fmax, small[k]);
  }
  BOOST_TEST(e.dtype() == DType::uint32);
  BOOST_TEST(e.to_vector<int64_t>().at(0) == esum);
  BOOST_TEST(f.to_vector<int64_t>().at(0) == fmax);
  BOOST_TEST(g.to_vector<int64_t>().at(0) == gsum);
}

#ifdef RINGRT_HAVE_HIP
// The HIP renderer's kernels over int16 and uint32 (storage types, literals, wrapping casts, bitcasts,
// a reduction) compile with hipRTC for gfx90a; no GPU needed.
BOOST_AUTO_TEST_CASE(hip_kernels_compile) {
  auto d = devs(2);
  Tensor x = Tensor::from_vector(std::vector<int16_t>{-32768, -3, 5, 32767}, {4}).shard(d, 0);
  Tensor u = Tensor::from_vector(std::vector<uint32_t>{0u, 7u, 0x80000000u, 0xffffffffu}, {4}).shard(d, 0);
  Tensor r = (x * x - x).neg().abs().cast(DType::uint32) + u.binary(ringrt::BinaryOp::idiv, u + 1u) +
             u.bitcast(DType::float32).exp().cast(DType::uint32) + x.cast(DType::uint32).sum() +
             x.bitcast(DType::float16).cast(DType::uint32) + u.max();
  ringrt::Schedule s = r.schedule();
  BOOST_TEST_REQUIRE(!s.kernel_items.empty());
  ringrt::codegen::HiprtcCompiler cc(RINGRT_TEST_GPU_ARCH);
  for (size_t i = 0; i < s.kernel_items.size(); ++i)
    BOOST_CHECK_NO_THROW(cc.compile(s.source(i, "hip"), s.kernel_items[i].name));
}
#endif

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(elementwise)

// neg, abs, exp, log, sqrt, reciprocal, exp2, log2 against std:: on sharded and replicated float32.
BOOST_DATA_TEST_CASE(unary_math, bdata::make(kCounts), n) {
  const int64_t rows = 840, cols = 3;
  auto x = data(rows * cols);
  x[0] = -0.0f;
  x[1] = std::numeric_limits<float>::infinity();
  x[2] = std::numeric_limits<float>::quiet_NaN();
  Tensor t = Tensor::from_vector(x, {rows, cols});
  Tensor s = n % 2 ? t.shard(devs(n), 0) : t.shard(devs(n), std::nullopt);
  Tensor pos = s.abs() + 0.25;
  std::vector<Tensor> r{s.neg(), s.abs(), s.exp(), pos.log(), pos.sqrt(), s.reciprocal(), s.exp2(), pos.log2()};
  Tensor::realize_all(r);
  std::vector<std::vector<double>> want(r.size());
  for (float f : x) {
    double p = std::fabs(f) + 0.25;
    want[0].push_back(-f);
    want[1].push_back(std::fabs(f));
    want[2].push_back(std::exp(static_cast<double>(f)));
    want[3].push_back(std::log(p));
    want[4].push_back(std::sqrt(p));
    want[5].push_back(1.0 / f);
    want[6].push_back(std::exp2(static_cast<double>(f)));
    want[7].push_back(std::log2(p));
  }
  for (size_t k = 0; k < r.size(); ++k) {
    BOOST_TEST_CONTEXT("op " << k) {
      BOOST_TEST(r[k].dtype() == DType::float32);
      BOOST_TEST((r[k].shard_axis() == s.shard_axis()));
      check_close(r[k].to_vector<float>(), want[k], 1e-5);
    }
  }
  BOOST_TEST(std::signbit(r[1].to_vector<float>()[0]));  // abs(-0.0) is -0.0, as tinygrad's x * sign(x)
}

// Integer and bool operands: neg and abs wrap at the minimum, neg of bool is logical not, the float ops
// compute in float32; float16 results equal the interpreter's bit for bit.
BOOST_DATA_TEST_CASE(unary_dtypes, bdata::make(std::vector<int>{1, 2, 4, 8}), n) {
  std::vector<int32_t> iv{INT32_MIN, -5, 0, 7, INT32_MAX, -1, 3, 4};
  std::vector<int16_t> sv{INT16_MIN, -5, 0, 7, INT16_MAX, -1, 3, 4};
  std::vector<bool> bv{true, false, false, true, true, true, false, false};
  Tensor i = Tensor::from_vector(iv, {8}).shard(devs(n), 0), s = Tensor::from_vector(sv, {8}).shard(devs(n), 0);
  Tensor b = Tensor::from_vector(bv, {8}).shard(devs(n), 0);
  Tensor h = Tensor::from_vector(data(8), {8}).cast(DType::float16).shard(devs(n), 0);
  std::vector<Tensor> r{i.neg(), i.abs(), s.neg(), s.abs(), b.neg(), i.exp(), s.sqrt(), h.exp(), h.log(), h.abs()};
  Tensor::realize_all(r);
  auto in = r[0].to_vector<int64_t>(), ia = r[1].to_vector<int64_t>(), sn = r[2].to_vector<int64_t>(),
       sa = r[3].to_vector<int64_t>(), bn = r[4].to_vector<int64_t>();
  auto ie = r[5].to_vector<float>(), ss = r[6].to_vector<float>();
  for (size_t k = 0; k < 8; ++k) {
    int64_t wrap_neg = static_cast<int32_t>(0u - static_cast<uint32_t>(iv[k]));
    BOOST_TEST(in[k] == wrap_neg);
    BOOST_TEST(ia[k] == (iv[k] < 0 ? wrap_neg : iv[k]));
    int64_t sneg = static_cast<int16_t>(static_cast<uint16_t>(-static_cast<int>(sv[k])));
    BOOST_TEST(sn[k] == sneg);
    BOOST_TEST(sa[k] == (sv[k] < 0 ? sneg : sv[k]));
    BOOST_TEST(bn[k] == !bv[k]);
    BOOST_TEST(close(ie[k], std::exp(static_cast<double>(iv[k]))));
    BOOST_TEST((std::isnan(ss[k]) ? sv[k] < 0 : close(ss[k], std::sqrt(static_cast<double>(sv[k])))));
  }
  BOOST_TEST(r[5].dtype() == DType::float32);
  BOOST_TEST(r[4].dtype() == DType::bool_);
  for (size_t k = 7; k < r.size(); ++k) {
    BOOST_TEST(r[k].dtype() == DType::float16);
    BOOST_TEST((r[k].host() == r[k].interpret()));
  }
}

// where: condition sharded, branches replicated, single-device or scalar; promotion of the branches.
BOOST_DATA_TEST_CASE(where_broadcast_and_sharding, bdata::make(kCounts), n) {
  const int64_t rows = 8 * n, cols = 3;
  auto x = data(rows * cols), y = data(rows * cols, 5);
  std::vector<int32_t> row(cols);
  for (int64_t j = 0; j < cols; ++j) row[static_cast<size_t>(j)] = static_cast<int32_t>(100 + j);
  Tensor tx = Tensor::from_vector(x, {rows, cols}).shard(devs(n), 0);
  Tensor ty = Tensor::from_vector(y, {rows, cols}).shard(devs(n), std::nullopt);
  Tensor tr = Tensor::from_vector(row, {cols}).shard(devs(n), std::nullopt);  // broadcast along rows
  Tensor cond = tx.binary(ringrt::BinaryOp::less, ty);
  std::vector<Tensor> r{cond.where(tx, ty), cond.where(tr, ty), cond.where(tx, -1.0), cond.where(7.0, tr),
                        tx.where(tx, ty)};
  BOOST_TEST(r[1].dtype() == DType::float32);  // int32 and float32 promote
  BOOST_TEST(r[3].dtype() == DType::int32);    // an integral scalar takes the tensor's dtype
  BOOST_TEST((r[0].shard_axis() == std::optional<int>(0)));
  Tensor::realize_all(r);
  std::vector<std::vector<double>> want(r.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      size_t k = static_cast<size_t>(i * cols + j);
      bool c = x[k] < y[k];
      want[0].push_back(c ? x[k] : y[k]);
      want[1].push_back(c ? row[static_cast<size_t>(j)] : y[k]);
      want[2].push_back(c ? x[k] : -1.0);
      want[3].push_back(c ? 7.0 : row[static_cast<size_t>(j)]);
      want[4].push_back(x[k] != 0 ? x[k] : y[k]);  // a float condition is cast to bool
    }
  for (size_t k = 0; k < r.size(); ++k) BOOST_TEST_CONTEXT("case " << k) {
      check_close(r[k].to_vector<float>(), want[k], 0);
    }
  BOOST_CHECK_THROW(cond.where(Tensor::from_vector(data(5), {5}), ty), ShapeError);
}

// bitcast keeps the bits: float32 <-> uint32/int32, float16 <-> int16, on sharded tensors.
BOOST_DATA_TEST_CASE(bitcast_keeps_bits, bdata::make(std::vector<int>{1, 2, 3, 8}), n) {
  auto x = data(24);
  x[0] = -0.0f;
  x[1] = std::numeric_limits<float>::infinity();
  Tensor f = Tensor::from_vector(x, {24}).shard(devs(n), 0);
  Tensor u = f.bitcast(DType::uint32), i = f.bitcast(DType::int32), back = u.bitcast(DType::float32);
  Tensor h = f.cast(DType::float16), hi = h.bitcast(DType::int16);
  Tensor::realize_all({u, i, back, h, hi});
  auto uv = u.to_vector<int64_t>(), iv = i.to_vector<int64_t>(), hv = hi.to_vector<int64_t>();
  HostBuffer hb = h.host(), bb = back.host();
  for (size_t k = 0; k < x.size(); ++k) {
    BOOST_TEST(uv[k] == std::bit_cast<uint32_t>(x[k]));
    BOOST_TEST(iv[k] == std::bit_cast<int32_t>(x[k]));
    uint16_t hbits;
    std::memcpy(&hbits, hb.bytes.data() + 2 * k, 2);
    BOOST_TEST(hv[k] == static_cast<int16_t>(hbits));
  }
  BOOST_TEST((bb == Tensor::from_vector(x, {24}).host()));
  BOOST_CHECK_THROW(f.bitcast(DType::float16), ShapeError);
  BOOST_CHECK_THROW(f.cast(DType::uint8).bitcast(DType::bool_), ShapeError);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
