// The cpu backend's cost figures (rewrite/cost_model.hpp), measured once per machine on two private cpu
// devices (never the user's CPU:i, whose queues may be busy) in about 20 ms, at most 0.4 s on a loaded
// machine, every loop bounded by a count and a deadline:
// - launch_us: a 64-byte copy between the devices, which runs inline on the calling thread as a small
//   kernel does (cpu_device.cpp run_inline): the per-launch cost without the work.
// - step_us: what a step across devices costs on this backend: the done flag of one device's work
//   seen by another core and its own seen back (a cache line's round trip between two threads) plus the join of a
//   parallel loop over the devices' pieces (a fused form's phase ends so, run_collective_inline; an
//   unfused step's work is split so too).
// - gbps: a 256 KiB copy between the devices, inline and split across the TBB workers (copy_split):
//   bytes read and written per second by the cores that every cpu device shares (shared: true).
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "rewrite/cost_model.hpp"
#include "runtime/cpu/cpu_device.hpp"

namespace ringrt {
namespace {

using Clock = std::chrono::steady_clock;

// The least mean time of `reps` calls of fn over `blocks` blocks, microseconds; stops early past deadline.
template <class F>
double best_us(int blocks, int reps, Clock::time_point deadline, F&& fn) {
  double best = 1e300;
  for (int b = 0; b < blocks && (b == 0 || Clock::now() < deadline); ++b) {
    auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) fn();
    best = std::min(best, std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / reps);
  }
  return best;
}

// A round trip of a flag between this thread and another, microseconds: the least of up to 1000 (the
// mechanism's cost; a median measured 95 us inside a busy process whose TBB workers spun on both cores of
// this machine, the scheduler's slice). Each wait gives up at the deadline and yields now and then
// (fewer cores than threads: the other must get to run).
double handoff_us(Clock::time_point deadline) {
  std::atomic<int64_t> ball{0};
  std::atomic<bool> stop{false};
  std::thread other([&] {
    for (int64_t seen = 0, spins = 0; !stop.load(std::memory_order_relaxed);) {
      int64_t v = ball.load(std::memory_order_acquire);
      if (v == seen + 1) ball.store(seen = v + 1, std::memory_order_release);
      if (++spins % 64 == 0) std::this_thread::yield();
    }
  });
  std::vector<double> trips;
  for (int64_t at = 0; trips.size() < 1000 && Clock::now() < deadline;) {
    auto t0 = Clock::now();
    ball.store(++at, std::memory_order_release);
    for (int64_t spins = 0; ball.load(std::memory_order_acquire) != at + 1 && Clock::now() < deadline;)
      if (++spins % 64 == 0) std::this_thread::yield();
    trips.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    at = ball.load(std::memory_order_acquire);
  }
  stop = true;
  other.join();
  return trips.empty() ? 0 : *std::min_element(trips.begin(), trips.end());
}

CostFigures measure_cpu() {
  constexpr size_t kBytes = size_t{256} << 10;
  Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(400);
  std::unique_ptr<Device> a = make_cpu_device("CPU:cost-a"), b = make_cpu_device("CPU:cost-b");
  void* pa = a->allocate(kBytes);
  void* pb = b->allocate(kBytes);
  std::fill_n(static_cast<char*>(pa), kBytes, 1);
  auto copy = [&](size_t bytes) {
    if (!b->copy_from(*a, pa, pb, bytes, {}).wait_for(std::chrono::seconds(10)))
      throw TimeoutError("the cpu cost measurement's copy did not finish");
  };
  CostFigures f;
  // first, after a pause: TBB workers that just ran a loop (the rewrite's, the user's) spin on the cores for
  // a while, and a partner thread sharing a core measured a context switch (3.7 us), not a hand-off; other
  // processes do so too on a loaded machine: tries 10 ms apart until one saw the two threads on two cores
  // (under 1 us) or the deadline passed (the figure is then kept as measured: README "Tuned per machine")
  double handoff = 1e300;
  for (int i = 0; i < 20 && handoff > 1.0 && Clock::now() < deadline; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(i == 0 ? 5 : 10));
    handoff = std::min(handoff, handoff_us(deadline));
  }
  f.launch_us = best_us(5, 500, deadline, [&] { copy(64); });
  f.gbps = 2.0 * kBytes / best_us(5, 20, deadline, [&] { copy(kBytes); }) / 1e3;  // B/us -> GB/s
  a->free(pa, kBytes);
  b->free(pb, kBytes);
  std::atomic<int> sink{0};
  double join_us = best_us(5, 200, deadline, [&] {
    tbb::parallel_for(tbb::blocked_range<int>(0, 4, 1),
                      [&](const tbb::blocked_range<int>& r) { sink.fetch_add(r.begin(), std::memory_order_relaxed); });
  });
  f.step_us = handoff + join_us;
  f.shared = true;
  f.peer = true;
  return f;
}

// Registered at load: the rewrite asks for it at the first automatic choice on cpu devices.
const bool kRegistered = (register_cost_measure("CPU", measure_cpu), true);

}  // namespace
}  // namespace ringrt
