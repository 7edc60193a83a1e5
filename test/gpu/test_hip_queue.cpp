// The hip backend's queue (runtime/hip/hip_queue.hpp, hip_device.hpp "Queue"); label gpu (and simgpu,
// where every case runs on the simulated GPUs of runtime/hip/sim/).
//
// Submission never waits for the GPU: a chain of work across two devices, behind host work that blocks
// the first device's queue, is enqueued while that host work still blocks, and then runs in order on the
// GPUs (values against host arithmetic). Host-side events (a cpu device's work, host functions) gate the
// streams of the GPU work that waits for them; their errors fail that work and nothing else. Several
// threads submit to one device at once. Trace times come from the GPU's timing events, in queue order.
// On the simulated GPUs only: a kernel fault poisons its device (its work fails with the fault, new work
// is refused, another device's work that waits for it fails), and the same chain runs with host work
// ordered by the spinning-kernel fallback instead of hipStreamWaitValue32. Built without HIP, the one
// case exits 77, which CTest reports as skipped.
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <cstdlib>

#include "test/gpu/skip_without_hip.hpp"

#ifdef RINGRT_HAVE_HIP

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "codegen/kernel.hpp"
#include "core/errors.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/device/device.hpp"
#include "runtime/hip/hip_device.hpp"
#include "test/gpu/hip_test_support.hpp"
#include "test/support/checks.hpp"
#endif

BOOST_AUTO_TEST_SUITE(test_hip_queue)
RINGRT_SKIP_WITHOUT_HIP()

#ifdef RINGRT_HAVE_HIP

using namespace hip_test;
using ringrt::test::message_has;

namespace {

// a + a over n float32 elements, compiled for dev.
std::shared_ptr<ringrt::CompiledKernel> doubling(Device& dev, Graph& g, int64_t n) {
  UOp a = g.buffer(ringrt::DeviceSpec(dev.name()), DType::float32, n, 1);
  return dev.compile(codegen::lower_kernel(a + a));
}

// HIP:0 doubles `in` (behind whatever HIP:0's queue holds), HIP:1 copies the result over and doubles
// it again: 4 * in on HIP:1. Checks the values once done.
struct Chain {
  static constexpr int64_t n = 4099;
  static constexpr size_t bytes = n * sizeof(float);
  Device& d0 = ringrt::device("HIP:0");
  Device& d1 = ringrt::device("HIP:1");
  Graph g;
  std::vector<float> in;
  void *in0 = nullptr, *out0 = nullptr, *in1 = nullptr, *out1 = nullptr;
  Event last;

  Chain() {
    for (int64_t i = 0; i < n; ++i) in.push_back(static_cast<float>(i % 97) - 40.0f);
    in0 = d0.allocate(bytes), out0 = d0.allocate(bytes), in1 = d1.allocate(bytes), out1 = d1.allocate(bytes);
    d0.copy_in(in0, in.data(), bytes);
  }
  ~Chain() {
    for (auto [d, p] : {std::pair{&d0, in0}, {&d0, out0}, {&d1, in1}, {&d1, out1}}) d->free(p, bytes);
  }
  void submit(const std::vector<Event>& after = {}) {
    Event e0 = d0.launch(*doubling(d0, g, n), {out0, in0}, 0, after);
    Event e1 = d1.copy_from(d0, out0, in1, bytes, {e0});
    last = d1.launch(*doubling(d1, g, n), {out1, in1}, 0, {e1});
  }
  void check() {
    wait(last, "the chain's last kernel");
    std::vector<float> got(n);
    d1.copy_out(got.data(), out1, bytes);
    for (int64_t i = 0; i < n; ++i) BOOST_TEST(got[static_cast<size_t>(i)] == 4 * in[static_cast<size_t>(i)], i);
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(two_devices, *ringrt::testing::needs({"HIP", 2}))

// The chain is submitted while HIP:0's queue is blocked: the submitting thread waits for no GPU work
// (every launch and copy returns, none of it done), then, released, the work runs in order.
BOOST_AUTO_TEST_CASE(submission_does_not_wait_for_the_gpu) {
  Chain chain;
  doubling(chain.d0, chain.g, Chain::n), doubling(chain.d1, chain.g, Chain::n);  // compiled before
  Blocker blocker(chain.d0);
  chain.submit();
  BOOST_TEST(!blocker.released());  // (a host wait above would have waited for it: 20 s, then released)
  BOOST_TEST(!chain.last.done());
  blocker.release();
  chain.check();
  BOOST_TEST(blocker.done().succeeded());
}

// The same chain after host work of HIP:0 that writes HIP:0's input late (a host function may call HIP)
// and after a cpu device's event: both gate the GPU work, which reads what they wrote.
BOOST_AUTO_TEST_CASE(host_events_gate_the_streams) {
  Chain chain;
  Device& cpu = ringrt::device("CPU:0");
  std::vector<float> late(chain.in.size());
  for (size_t i = 0; i < late.size(); ++i) late[i] = 3.0f * static_cast<float>(i % 11);
  Event written = chain.d0.submit(
      [&] {
        std::this_thread::sleep_for(50ms);
        chain.d0.copy_in(chain.in0, late.data(), Chain::bytes);
      },
      {});
  std::atomic<bool> cpu_ran{false};
  Event cpu_work = cpu.submit(
      [&] {
        std::this_thread::sleep_for(30ms);
        cpu_ran = true;
      },
      {});
  chain.in = late;
  chain.submit({written, cpu_work});
  chain.check();
  BOOST_TEST(cpu_ran.load());
}

// GPU work on HIP:1 that waits for HIP:0's host work: ordered by HIP:0's gate, on HIP:1's stream.
BOOST_AUTO_TEST_CASE(another_devices_host_work_is_waited_for_on_the_gpu) {
  Chain chain;
  Blocker blocker(chain.d0);
  std::vector<float> zeros(Chain::n, 0.0f);
  chain.d1.copy_in(chain.out1, zeros.data(), Chain::bytes);
  Event copied = chain.d1.copy_from(chain.d0, chain.in0, chain.out1, Chain::bytes, {blocker.done()});
  std::this_thread::sleep_for(20ms);
  BOOST_TEST(!copied.done());  // HIP:1's stream waits for the gate
  blocker.release();
  wait(copied, "the copy after HIP:0's host work");
  std::vector<float> got(Chain::n);
  chain.d1.copy_out(got.data(), chain.out1, Chain::bytes);
  BOOST_TEST((got == chain.in));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(one_device, *ringrt::testing::needs({"HIP", 1}))

// DeviceClock on a GPU: its markers are timing events in the queue; host work of 30 ms queued between
// them (it gates the stream) is inside the time.
BOOST_AUTO_TEST_CASE(a_device_clock_times_the_queue_on_the_gpu) {
  ringrt::DeviceClock clock({"HIP:0"});
  Event slept = ringrt::device("HIP:0").submit([] { std::this_thread::sleep_for(30ms); }, {});
  double seconds = clock.stop();
  BOOST_TEST(slept.done());
  BOOST_TEST(seconds >= 0.029);  // (timing events: the GPU's clock, in ms resolution of float)
  BOOST_TEST(seconds < 60.0);
}

// A failed host event fails the GPU work that waits for it, with its error; work after it in queue
// order, waiting for nothing, succeeds.
BOOST_AUTO_TEST_CASE(an_error_reaches_only_the_work_that_waits_for_it) {
  Device& dev = ringrt::device("HIP:0");
  Device& cpu = ringrt::device("CPU:0");
  Graph g;
  constexpr int64_t n = 1000;
  auto k = doubling(dev, g, n);
  void* a = dev.allocate(n * 4);
  void* b = dev.allocate(n * 4);
  Event bad = cpu.submit(
      [] {
        std::this_thread::sleep_for(20ms);
        throw std::runtime_error("cpu work failed");
      },
      {});
  Event waits = dev.launch(*k, {b, a}, 0, {bad});
  Event after = dev.launch(*k, {a, b}, 0, {});
  BOOST_CHECK_EXCEPTION(waits.wait_for(kWait), std::runtime_error, message_has({"cpu work failed"}));
  BOOST_TEST(after.wait_for(kWait));
  Event known_bad = dev.launch(*k, {b, a}, 0, {bad});  // failed already: not enqueued, fails at once
  BOOST_TEST(known_bad.done());
  BOOST_CHECK_THROW(known_bad.wait_for(0ms), std::runtime_error);
  dev.synchronize();
  dev.free(a, n * 4);
  dev.free(b, n * 4);
}

// Four threads submit 100 launches each to one device, each thread into buffers of its own: every value
// right (the queue serializes its submitters).
BOOST_AUTO_TEST_CASE(threads_submit_to_one_device_at_once) {
  Device& dev = ringrt::device("HIP:0");
  Graph g;
  constexpr int64_t n = 300;
  auto k = doubling(dev, g, n);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      try {
        std::vector<float> v(n, static_cast<float>(t + 1)), got(n);
        void* x = dev.allocate(n * 4);
        void* y = dev.allocate(n * 4);
        dev.copy_in(x, v.data(), n * 4);
        Event e;
        for (int i = 0; i < 100; ++i)
          e = dev.launch(*k, i % 2 ? std::vector<void*>{x, y} : std::vector<void*>{y, x}, 0, {});
        if (!e.wait_for(kWait)) throw std::runtime_error("not done");
        dev.copy_out(got.data(), x, n * 4);  // 100 doublings: x = v * 2^100, exact in float32
        for (float f : got)
          if (f != static_cast<float>(t + 1) * 0x1p100f) throw std::runtime_error(fmt::format("thread {}: {}", t, f));
        dev.free(x, n * 4);
        dev.free(y, n * 4);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(t)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors) BOOST_TEST(e.empty(), e);
}

// While a trace records, GPU work's times come from the GPU's timing events: each start <= end, and the
// queue's work in order.
BOOST_AUTO_TEST_CASE(trace_times_come_from_the_gpu) {
  Device& dev = ringrt::device("HIP:0");
  Graph g;
  constexpr int64_t n = 1 << 14;
  auto k = doubling(dev, g, n);
  void* a = dev.allocate(n * 4);
  void* b = dev.allocate(n * 4);
  ringrt::set_trace_timing(true);
  std::vector<Event> events;
  for (int i = 0; i < 4; ++i)
    events.push_back(dev.launch(*k, i % 2 ? std::vector<void*>{a, b} : std::vector<void*>{b, a}, 0, {}));
  ringrt::set_trace_timing(false);
  for (const Event& e : events) wait(e, "a traced launch");
  std::optional<Event::Times> prev;
  for (size_t i = 0; i < events.size(); ++i) {
    std::optional<Event::Times> t = events[i].times();
    BOOST_TEST_REQUIRE(t.has_value(), "launch " << i << " has times");
    BOOST_TEST((t->start <= t->end), "launch " << i);
    if (prev) BOOST_TEST((prev->end <= t->start), "launch " << i << " starts after the one before ends");
    prev = t;
  }
  dev.free(a, n * 4);
  dev.free(b, n * 4);
}

BOOST_AUTO_TEST_SUITE_END()

#ifdef RINGRT_GPU_SIM
// The simulated GPUs can fault a kernel on purpose (RINGRT_SIM_FAULT_KERNEL) and do without
// hipStreamWaitValue32 (RINGRT_SIM_WAIT_VALUE=0): each case runs again in a child process with that set.
BOOST_AUTO_TEST_SUITE(simulated, *ringrt::testing::needs({"HIP", 2}))

BOOST_AUTO_TEST_CASE(a_kernel_fault_poisons_its_device) {
  RINGRT_RUN_IN_CHILD();  // the fault poisons HIP:0 for the rest of the process
  Graph g;
  UOp a = g.buffer(ringrt::DeviceSpec(std::string("HIP:0")), DType::float32, 64, 1);
  codegen::Kernel kernel = codegen::lower_kernel(a * a + a);
  setenv("RINGRT_SIM_FAULT_KERNEL", kernel.name.c_str(), 1);
  Device& d0 = ringrt::device("HIP:0");
  Device& d1 = ringrt::device("HIP:1");
  void* p = d0.allocate(256);
  void* q = d1.allocate(256);
  Event fault = d0.launch(*d0.compile(kernel), {p, p}, 0, {});
  Event next = d1.copy_from(d0, p, q, 256, {fault});
  BOOST_CHECK_EXCEPTION(fault.wait_for(kWait), ringrt::DeviceError, message_has({"HIP:0", "hipErrorIllegalAddress"}));
  BOOST_CHECK_EXCEPTION(next.wait_for(kWait), ringrt::DeviceError, message_has({"HIP:0"}));
  BOOST_CHECK_EXCEPTION(d0.launch(*d0.compile(kernel), {p, p}, 0, {}), ringrt::DeviceError,
                        message_has({"HIP:0", "not run", "unusable after an earlier GPU error"}));
  BOOST_CHECK_EXCEPTION(d0.synchronize(), ringrt::DeviceError, message_has({"HIP:0"}));
  wait(d1.copy_from(d1, q, q, 0, {}), "HIP:1 still works");
}

BOOST_AUTO_TEST_CASE(host_work_is_ordered_without_wait_value) {
  if (!in_child_with("RINGRT_SIM_WAIT_VALUE", "0")) return;
  Chain chain;
  Blocker blocker(chain.d0);
  chain.submit({blocker.done()});
  BOOST_TEST(!chain.last.done());
  blocker.release();
  chain.check();
}

BOOST_AUTO_TEST_SUITE_END()
#endif

#endif

BOOST_AUTO_TEST_SUITE_END()
