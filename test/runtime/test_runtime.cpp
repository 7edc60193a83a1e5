// The runtime: device registry, the cpu backend, the executor's watchdog, reuse of compiled
// programs, many schedules in flight, and randomly generated sharded programs against the
// reference interpreter.
#define BOOST_TEST_MODULE runtime
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <random>
#include <thread>

#include "rewrite/errors.hpp"
#include "runtime/device.hpp"
#include "runtime/executor.hpp"
#include "runtime/tensor.hpp"

namespace bdata = boost::unit_test::data;
using namespace ringrt;

BOOST_AUTO_TEST_CASE(unknown_device_names_it_and_the_devices_that_exist) {
  cpu_devices(4);
  for (const char* bad : {"CPU:99", "GPU:0", "banana", "", "CPU:-1", "HIP:0"}) {
    BOOST_CHECK_EXCEPTION(device(bad), DeviceError, [&](const DeviceError& e) {
      std::string m = e.what();
      return m.find(std::string("'") + bad + "'") != std::string::npos && m.find("CPU:3") != std::string::npos;
    });
    BOOST_CHECK_THROW(Tensor::arange(4).to(bad), DeviceError);
  }
  BOOST_TEST(device("CPU:2").name() == "CPU:2");
  BOOST_TEST(hip_devices().empty());  // no GPU on the machines this suite runs on
}

BOOST_AUTO_TEST_CASE(cpu_memory_is_reused) {
  Device& d = device("CPU:0");
  void* a = d.allocate(1000);
  d.free(a, 1000);
  void* b = d.allocate(1000);
  BOOST_TEST(a == b);  // the cached block comes back
  d.free(b, 1000);
}

BOOST_AUTO_TEST_CASE(watchdog_turns_a_stuck_item_into_a_timeout_and_the_process_stays_usable) {
  auto devs = cpu_devices(2);
  Tensor x = Tensor::arange(64).reshape({2, 32}).shard(devs, 0);
  x.realize();
  std::atomic<bool> release{false};
  // an item that never finishes (until released): it blocks CPU:1's in-order queue
  device("CPU:1").submit([&] {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }, {});
  set_watchdog_timeout(std::chrono::milliseconds(300));
  BOOST_CHECK_EXCEPTION(x.sum({0}).realize(), TimeoutError, [](const TimeoutError& e) {
    std::string m = e.what();
    BOOST_TEST_MESSAGE(m);
    return m.find("item") != std::string::npos && m.find("did not complete within 300 ms") != std::string::npos;
  });
  release = true;
  set_watchdog_timeout(std::chrono::milliseconds(60000));
  device("CPU:1").synchronize();
  std::vector<float> v = x.sum({0}).to_vector<float>();  // usable again
  for (int j = 0; j < 32; ++j) BOOST_TEST(v[static_cast<size_t>(j)] == static_cast<float>(2 * j + 32));
}

BOOST_AUTO_TEST_CASE(the_same_computation_is_built_once) {
  Tensor x = Tensor::arange(4 * 48).reshape({4, 48}).shard(cpu_devices(4), 0);
  x.realize();
  Tensor y = x.sum({0});
  std::vector<float> first = y.to_vector<float>();
  size_t built = Tensor::programs_built();
  for (int i = 0; i < 3; ++i) BOOST_TEST(x.sum({0}).to_vector<float>() == first, boost::test_tools::per_element());
  BOOST_TEST(Tensor::programs_built() == built);  // no lowering, scheduling or compiling again
  AllreduceSettings s = current_settings();
  s.ring = 2;
  ScopedSettings scope(s);  // other settings: another program
  BOOST_TEST(x.sum({0}).to_vector<float>() == first, boost::test_tools::per_element());
  BOOST_TEST(Tensor::programs_built() == built + 1);
}

BOOST_AUTO_TEST_CASE(many_schedules_in_flight_from_several_threads) {
  auto devs = cpu_devices(4);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      AllreduceSettings s;
      s.ring = t % 3;
      s.all2all = t == 3 ? 2 : 0;
      ScopedSettings scope(s);
      for (int i = 0; i < 10; ++i) {
        int64_t cols = 8 * (i % 3 + 1);
        Tensor x = Tensor::full({4, cols}, static_cast<double>(t + i)).contiguous().shard(devs, 0);
        std::vector<float> v = (x.sum({0}) * 2.0).to_vector<float>();
        for (float f : v)
          if (f != static_cast<float>(8 * (t + i))) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  BOOST_TEST(wrong.load() == 0);
}

namespace {

// A random sharded program: a few ops of the kinds the sharding rules handle, on int32 or float32
// data whose results are exact, so the runtime must match the interpreter bit for bit.
Tensor random_program(std::mt19937& rng, const std::vector<std::string>& devs) {
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  int64_t n = static_cast<int64_t>(devs.size());
  Shape shape{n * (1 + pick(3)), 2 + pick(3)};
  DType dtype = pick(2) ? DType::int32 : DType::float32;
  HostBuffer data(dtype, shape);
  for (int64_t i = 0; i < data.numel(); ++i) data.set_int(i, pick(19) - 9);
  Tensor x = Tensor::from_host(data).shard(devs, 0);
  Tensor other = Tensor::from_host(data).shard(devs, 0) * 2.0;
  int steps = 1 + pick(4);
  for (int s = 0; s < steps; ++s) {
    switch (pick(7)) {
      case 0: x = x + static_cast<double>(pick(5)); break;
      case 1: if (x.shape() == other.shape()) x = x * other; break;
      case 2: if (x.shape().size() == 2) x = x.maximum(x * -1.0); break;
      case 3: if (x.shape().size() == 2) x = x.sum({1}).reshape({x.shape()[0], 1}).expand(x.shape()); break;
      case 4: x = x.contiguous(); break;
      case 5: x = x.cast(DType::float32) + 0.5; break;
      default: break;
    }
  }
  return pick(2) ? x.sum({0}) : x.max({0});  // ends with an allreduce
}

}  // namespace

// 500 programs in 10 batches; each batch is realized with one schedule. Reproduce a failure from the
// batch number printed: the generator is seeded with it.
BOOST_DATA_TEST_CASE(random_programs_match_the_interpreter, bdata::xrange(10), batch) {
  std::mt19937 rng(static_cast<uint32_t>(1000 + batch));
  AllreduceSettings s;
  s.ring = batch % 3;
  s.all2all = batch % 4 == 3 ? 2 : 0;
  s.ring_threshold = 16;
  ScopedSettings scope(s);
  std::vector<Tensor> programs;
  std::vector<HostBuffer> want;
  for (int i = 0; i < 50; ++i) {
    auto devs = cpu_devices(2 + static_cast<int>(rng() % 4));
    programs.push_back(random_program(rng, devs));
    want.push_back(programs.back().interpret());  // the logical graph, evaluated directly
  }
  Tensor::realize_all(programs);
  for (size_t i = 0; i < programs.size(); ++i) {
    BOOST_TEST_CONTEXT("batch " << batch << " program " << i) {
      HostBuffer got = programs[i].host();
      BOOST_TEST((got.shape == want[i].shape));
      BOOST_TEST((got.bytes == want[i].bytes));
    }
  }
}
