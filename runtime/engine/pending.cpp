// Work in flight (see pending.hpp).
#include "runtime/engine/pending.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <future>
#include <mutex>

#include "core/errors.hpp"
#include "core/params_internal.hpp"

namespace ringrt {

PendingWork::PendingWork(std::vector<Event> tails, std::string what, Late late, std::shared_ptr<const void> keep)
    : tails_(std::move(tails)), what_(std::move(what)), late_(std::move(late)), keep_(std::move(keep)) {}

bool PendingWork::done() const {
  return std::all_of(tails_.begin(), tails_.end(), [](const Event& e) { return e.done(); });
}

void PendingWork::wait(std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const Event& e : tails_) {
    if (e.succeeded()) continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (!e.wait_for(std::max(left, std::chrono::milliseconds(0))))  // rethrows the work's error
      throw TimeoutError(late(timeout));
  }
}

void PendingWork::when_done(std::function<void()> fn) const {
  struct Countdown {
    std::atomic<size_t> left;
    std::function<void()> fn;
  };
  if (tails_.empty()) return fn();
  auto c = std::make_shared<Countdown>();
  c->left = tails_.size();
  c->fn = std::move(fn);
  for (const Event& e : tails_)
    e.on_done([c] {
      if (c->left.fetch_sub(1) == 1) c->fn();
    });
}

void PendingWork::watch_settled() const {
  when_done([settled = settled_] { settled->store(true, std::memory_order_release); });
}

std::string PendingWork::late(std::chrono::milliseconds timeout) const {
  if (late_) return late_(timeout);
  return fmt::format("{} did not complete within {} ms", what_, timeout.count());
}

namespace {

struct InFlight {
  std::mutex mu;
  std::deque<std::shared_ptr<const PendingWork>> works;  // oldest first
};
InFlight& in_flight() {
  static auto* f = new InFlight;  // never destroyed: exit handlers may still wait
  return *f;
}

}  // namespace

void track_in_flight(std::shared_ptr<const PendingWork> work) {
  std::shared_ptr<const PendingWork> oldest;
  {
    auto& f = in_flight();
    std::lock_guard<std::mutex> lock(f.mu);
    while (!f.works.empty() && f.works.front()->settled()) f.works.pop_front();
    work->watch_settled();
    f.works.push_back(std::move(work));
    if (f.works.size() > kMaxInFlight) {
      oldest = std::move(f.works.front());
      f.works.pop_front();
    }
  }
  if (!oldest) return;
  try {
    oldest->wait(watchdog_timeout());  // a TimeoutError: a device hangs, and this caller hears of it
  } catch (const TimeoutError&) {
    throw;
  } catch (...) {  // its error reaches whoever reads its results (DeviceStorage::wait_pending)
  }
}

namespace {
// Waits until the backends have completed every tail of `work` and run its callbacks (freeing memory
// the work held), after wait() saw it done; at most `timeout`.
void settle(const PendingWork& work, std::chrono::milliseconds timeout) {
  auto settled = std::make_shared<std::promise<void>>();
  std::future<void> f = settled->get_future();
  work.when_done([settled] { settled->set_value(); });
  f.wait_for(timeout);
}
}  // namespace

void wait_in_flight(std::chrono::milliseconds timeout) {
  for (;;) {
    std::shared_ptr<const PendingWork> next;
    {
      auto& f = in_flight();
      std::lock_guard<std::mutex> lock(f.mu);
      if (f.works.empty()) return;
      next = f.works.front();
    }
    try {
      next->wait(timeout);
      settle(*next, timeout);
    } catch (const TimeoutError&) {
      throw;  // still in flight: stays tracked
    } catch (...) {
      std::lock_guard<std::mutex> lock(in_flight().mu);
      auto& w = in_flight().works;
      if (!w.empty() && w.front() == next) w.pop_front();  // failed: reported once here
      throw;
    }
    std::lock_guard<std::mutex> lock(in_flight().mu);
    auto& w = in_flight().works;
    if (!w.empty() && w.front() == next) w.pop_front();
  }
}

void* allocate_after_in_flight(Device& dev, size_t bytes) {
  try {
    return dev.allocate(bytes);
  } catch (const DeviceError&) {
    if (in_flight_count() == 0) throw;
  }
  while (in_flight_count() > 0) {
    try {
      wait_in_flight(watchdog_timeout());
    } catch (const TimeoutError&) {
      throw;
    } catch (...) {  // a failed work's error reaches its readers; its memory is back all the same
    }
  }
  return dev.allocate(bytes);
}

size_t in_flight_count() {
  auto& f = in_flight();
  std::lock_guard<std::mutex> lock(f.mu);
  std::erase_if(f.works, [](const auto& w) { return w->settled(); });
  return f.works.size();
}

}  // namespace ringrt
