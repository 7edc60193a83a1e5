// The user's tests of their training step (train_step.hpp), with ringrt's testing library: the whole program is
// BOOST_TEST_MODULE, <ringrt/testing.hpp> and these cases, linked to ringrt::testing. CMakeLists.txt registers
// each case as a CTest test (ringrt_add_boost_tests).
#define BOOST_TEST_MODULE train_step
#include <cstdint>
#include <ringrt/testing.hpp>
#include <string>
#include <vector>

#include "train_step.hpp"

namespace data = ringrt::testing::data;
using ringrt::DType;
using ringrt::HostBuffer;
using ringrt::Tensor;

namespace {

constexpr int64_t kFeatures = 5;
constexpr int64_t kRowsPerDevice = 3;  // odd: no device's rows split evenly into anything

// Small integers, so that every sum in float32 is exact and the host's answer is the answer.
double value(int64_t seed, int64_t i) { return static_cast<double>((i * 7 + seed * 13) % 5) - 2; }

HostBuffer filled(ringrt::Shape shape, int64_t seed) {
  HostBuffer b(DType::float32, shape);
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, value(seed, i));
  return b;
}

// A batch of kRowsPerDevice rows per device, its targets and the weights, on `devices`.
struct Batch {
  HostBuffer x, y, w;
  Tensor xs, ys, ws;
  explicit Batch(const std::vector<std::string>& devices)
      : x(filled({static_cast<int64_t>(devices.size()) * kRowsPerDevice, kFeatures}, 1)),
        y(filled({static_cast<int64_t>(devices.size()) * kRowsPerDevice, 1}, 2)),
        w(filled({kFeatures, 1}, 3)),
        xs(Tensor::from_host(x).shard(devices, 0)),
        ys(Tensor::from_host(y).shard(devices, 0)),
        ws(Tensor::from_host(w).shard(devices, std::nullopt)) {}

  // Each device's own part of the gradient, computed on the host: the terms the allreduce sums, one (1, F) row
  // per device.
  std::vector<HostBuffer> partial_gradients(size_t ndev) const {
    std::vector<HostBuffer> out;
    for (size_t d = 0; d < ndev; ++d) {
      HostBuffer g(DType::float32, {1, kFeatures});
      for (int64_t r = static_cast<int64_t>(d) * kRowsPerDevice; r < static_cast<int64_t>(d + 1) * kRowsPerDevice;
           ++r) {
        double error = -y.get(r);
        for (int64_t f = 0; f < kFeatures; ++f) error += x.get(r * kFeatures + f) * w.get(f);
        for (int64_t f = 0; f < kFeatures; ++f) g.set(f, g.get(f) + x.get(r * kFeatures + f) * error);
      }
      out.push_back(g);
    }
    return out;
  }
};

}  // namespace

// The gradient on 2 and 4 cpu devices with each allreduce algorithm forced, against the host's sum of the devices'
// partial gradients (ringrt::testing::check_result: the rules `ringrt run` checks by).
BOOST_DATA_TEST_CASE(gradient_matches_the_host,
                     data::device_counts({2, 4}) * data::algorithms({"naive", "ring", "all2all"}), ndev, algo) {
  std::vector<std::string> devices = ringrt::cpu_devices(ndev);
  ringrt::ScopedSettings forced(ringrt::testing::algorithm_settings(algo, devices));
  Batch batch(devices);
  Tensor g = train::gradient(batch.xs, batch.ys, batch.ws);
  RINGRT_CHECK_RESULT(ringrt::testing::check_result(
      g, ringrt::testing::reduction_expected(batch.partial_gradients(devices.size()), ringrt::ReduceOp::sum),
      "allreduce"));
}

// Three steps on 4 cpu devices (the fixture's), each against the reference interpreter's value of the same step.
RINGRT_DEVICE_TEST_CASE(steps_match_the_interpreter, ringrt::testing::CpuDevices<4>) {
  Batch batch(devices);
  Tensor w = batch.ws;
  for (int s = 0; s < 3; ++s) {
    BOOST_TEST_CONTEXT("step " << s) {
      Tensor next = train::step(batch.xs, batch.ys, w, 1.0 / 64);
      RINGRT_CHECK_RESULT(ringrt::testing::check_with_interpreter(next, "train step"));
      w = next;
    }
  }
}

// The same gradient on two HIP devices: skipped, with the reason, on a machine without them.
RINGRT_DEVICE_TEST_CASE(gradient_on_two_gpus, ringrt::testing::HipDevices<2>) {
  Batch batch(devices);
  RINGRT_CHECK_RESULT(ringrt::testing::check_result(
      train::gradient(batch.xs, batch.ys, batch.ws),
      ringrt::testing::reduction_expected(batch.partial_gradients(devices.size()), ringrt::ReduceOp::sum),
      "allreduce"));
}
