// Run-time scalars (docs/architecture.md "Runtime scalars"): a number that enters arithmetic is a kernel
// argument, so a new value reuses the compiled program; Tensor::variable names one.
//
// Every expected value is host arithmetic in the tensor's dtype (float32 products and differences as
// the kernels compute them, with no contraction; HostBuffer's rounding for 16-bit floats). Counts, never
// times: programs built (program cache misses) and kernels compiled or found in the compile cache.
// The soak: 10,000 steps of SGD with a cosine learning-rate schedule given as a plain double, on 4 cpu
// devices (host write, allreduce, update, one realize): one program built, nothing compiled after the
// first step, and every element equal to host arithmetic's. scripts/bench/bench_runtime.cpp
// BM_SgdCosineStep times the step.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "codegen/compile_cache.hpp"
#include "core/dtype.hpp"
#include "core/errors.hpp"
#include "runtime/api/tensor.hpp"
#include "test/support/checks.hpp"

BOOST_AUTO_TEST_SUITE(test_runtime_scalars)

using ringrt::DType;
using ringrt::HostBuffer;
using ringrt::Tensor;

namespace {

uint64_t compiles_and_lookups() {
  ringrt::codegen::CompileStats s = ringrt::codegen::compile_stats();
  return s.compiles + s.cache_hits;
}

// step k of n of a cosine schedule from lr0 down to 0
double cosine_lr(int k, int n, double lr0) { return 0.5 * lr0 * (1 + std::cos(std::numbers::pi * k / n)); }

// Device d's gradient: dyadic values, so any order of the allreduce's sums is exact in float32.
float grad(int d, int64_t i) { return static_cast<float>(d + 1) * 0x1p-10f + static_cast<float>(i % 16) * 0x1p-14f; }

}  // namespace

BOOST_AUTO_TEST_CASE(sgd_with_a_cosine_schedule_builds_one_program) {
  constexpr int kDevices = 4, kSteps = 10000;
  constexpr int64_t kN = 4096;
  std::vector<std::string> devs = ringrt::cpu_devices(kDevices);
  Tensor w = Tensor::full({kN}, 1.0).shard(devs, std::nullopt).contiguous().realize();
  Tensor grads = Tensor::full({kDevices, kN}, 0.0).shard(devs, 0).contiguous().realize();
  std::vector<HostBuffer> g;
  for (int d = 0; d < kDevices; ++d) {
    g.emplace_back(DType::float32, ringrt::Shape{1, kN});
    for (int64_t i = 0; i < kN; ++i) g.back().set(i, grad(d, i));
  }
  std::vector<float> host(static_cast<size_t>(kN), 1.0f);
  size_t built = 0;
  uint64_t compiled = 0;
  for (int k = 0; k < kSteps; ++k) {
    double lr = cosine_lr(k, kSteps, 0.1);
    grads.write_shards(g);
    w.assign(w - lr * grads.sum({0}));  // the natural way: a plain double
    w.realize();
    for (int64_t i = 0; i < kN; ++i) {
      float sum = grad(0, i) + grad(1, i) + grad(2, i) + grad(3, i);  // exact: dyadic
      float step = static_cast<float>(lr) * sum;
      host[static_cast<size_t>(i)] = host[static_cast<size_t>(i)] - step;
    }
    if (k == 0) built = Tensor::programs_built(), compiled = compiles_and_lookups();
    if (k == 10) BOOST_TEST_REQUIRE(Tensor::programs_built() == built);  // (a program per step: stop here)
  }
  BOOST_TEST(Tensor::programs_built() == built);   // one program for 10,000 learning rates
  BOOST_TEST(compiles_and_lookups() == compiled);  // and no kernel compiled or looked up again
  for (const auto& [dev, v] : w.local_host_shards()) {
    BOOST_TEST_REQUIRE(v.numel() == kN);
    int wrong = 0;
    for (int64_t i = 0; i < kN && wrong < 5; ++i)
      if (static_cast<float>(v.get(i)) != host[static_cast<size_t>(i)]) {
        ++wrong;
        BOOST_ERROR(dev << " element " << i << ": " << v.get(i) << ", host " << host[static_cast<size_t>(i)]);
      }
  }
}

// A new number reuses the program; 0 and 1 (identities) and integers are structure, each a program of
// its own; a named variable is an argument whatever its value.
BOOST_AUTO_TEST_CASE(which_numbers_are_arguments) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {4}).realize();
  auto run = [&](double c) { return (x * c).to_vector<float>(); };
  run(2.5);
  size_t built = Tensor::programs_built();
  for (double c : {3.0, -0.75, 1e-30, 12345.5}) {
    std::vector<float> got = run(c);
    for (size_t i = 0; i < 4; ++i) BOOST_TEST(got[i] == static_cast<float>(i + 1) * static_cast<float>(c));
  }
  BOOST_TEST(Tensor::programs_built() == built);
  BOOST_TEST(run(1.0) == std::vector<float>({1, 2, 3, 4}));  // x * 1: its own program
  BOOST_TEST(Tensor::programs_built() == built + 1);
  run(1.0);
  BOOST_TEST(Tensor::programs_built() == built + 1);

  Tensor n = Tensor::from_vector(std::vector<int32_t>{1, 2, 3}, {3}).realize();
  n.to_vector<int32_t>();
  size_t before = Tensor::programs_built();
  for (int step = 0; step < 4; ++step) {  // a named integer: one program for every value, 0 and 1 included
    std::vector<int32_t> got = (n + Tensor::variable("step", step, DType::int32)).to_vector<int32_t>();
    BOOST_TEST(got == std::vector<int32_t>({1 + step, 2 + step, 3 + step}));
  }
  BOOST_TEST(Tensor::programs_built() == before + 1);
}

// The value crosses in the dtype of its CONST, rounded as a number of that dtype is (the host's
// HostBuffer rounding); bfloat16 and float16 carry 16-bit patterns in their argument words.
BOOST_AUTO_TEST_CASE(scalars_of_every_float_dtype) {
  for (DType dt : {DType::float16, DType::bfloat16, DType::float32, DType::float64}) {
    HostBuffer data(dt, {3});
    for (int64_t i = 0; i < 3; ++i) data.set(i, 0.5 * static_cast<double>(i + 1));
    Tensor x = Tensor::from_host(data).realize();
    for (double c : {0.1, 3.3, -7.25}) {
      HostBuffer got = (x * c - 0.3).host();
      for (int64_t i = 0; i < 3; ++i) {
        HostBuffer want(dt, {}), cc(dt, {}), k(dt, {});
        cc.set(0, c);
        k.set(0, 0.3);
        want.set(0, data.get(i) * cc.get(0));  // rounded to dt after every op, as the kernels do
        want.set(0, want.get(0) - k.get(0));
        BOOST_TEST(got.get(i) == want.get(0), ringrt::dtype_name(dt) << " c=" << c << " element " << i);
      }
    }
  }
}

// Two lazy steps with different learning rates, realized once: two arguments of one program, each
// its own value; the interpreter (no program at all) agrees, named variables included.
BOOST_AUTO_TEST_CASE(lazy_steps_keep_their_own_values) {
  auto devs = ringrt::cpu_devices(2);
  Tensor w = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {4}).shard(devs, std::nullopt).realize();
  Tensor g = Tensor::from_vector(std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2}, {2, 4}).shard(devs, 0).realize();
  Tensor lazy = (w - 0.25 * g.sum({0})) - Tensor::variable("lr", 0.5) * g.sum({0});
  std::vector<float> want;
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) want.push_back(v - 0.25f * 3.0f - 0.5f * 3.0f);
  BOOST_TEST(lazy.interpret().to_vector<float>() == want);
  BOOST_TEST(lazy.to_vector<float>() == want);
}

BOOST_AUTO_TEST_CASE(bad_variables_are_refused) {
  for (std::string name : {"", "2x", "a b", "lr;"})
    BOOST_CHECK_EXCEPTION(Tensor::variable(name, 1.0), ringrt::ConfigError,
                          ringrt::test::message_has({"not a C identifier"}));
  BOOST_CHECK_EXCEPTION(Tensor::variable("n", 1.5, DType::int32), ringrt::ConfigError,
                        ringrt::test::message_has({"n", "1.5", "int32"}));
  BOOST_CHECK_EXCEPTION(Tensor::variable("n", 300, DType::int8), ringrt::ConfigError,
                        ringrt::test::message_has({"300", "int8"}));
  // 2^63 is one past int64's largest value (a double cannot hold 2^63 - 1): refused, where a cast would wrap
  BOOST_CHECK_EXCEPTION(Tensor::variable("n", 0x1p63, DType::int64), ringrt::ConfigError,
                        ringrt::test::message_has({"int64"}));
  Tensor zeros = Tensor::from_vector(std::vector<int64_t>{0, 0}, {2}).realize();
  Tensor lowest = zeros + Tensor::variable("n", -0x1p63, DType::int64);  // int64's smallest: accepted, exact
  BOOST_TEST(lowest.to_vector<int64_t>() == std::vector<int64_t>({INT64_MIN, INT64_MIN}));
}

BOOST_AUTO_TEST_SUITE_END()
