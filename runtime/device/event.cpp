// Event: completion of submitted device work (runtime/device/device.hpp).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/errors.hpp"
#include "runtime/device/device.hpp"

namespace ringrt {

struct Event::State {
  mutable std::mutex mu;
  mutable std::condition_variable cv;
  std::atomic<bool> done{false};               // written under mu (after error), read without it (done(), succeeded())
  std::exception_ptr error;                    // set before done, never after
  std::shared_ptr<const Native> native;        // set once, under mu
  std::atomic<const Native*> polled{nullptr};  // native.get(), readable without mu (it is never reset)
  std::optional<Times> times;
  std::vector<std::function<void()>> on_done;  // run by set_done
  bool calling = false;  // set_done is running callbacks: on_done appends, so every callback runs in order
};

Event::Event() : s_(std::make_shared<State>()) {}

namespace {
void run_noexcept(const std::function<void()>& fn) noexcept { fn(); }  // a throw ends the process
}  // namespace

namespace {
// The device's report on work an event stands for (Native::poll); unknown without a native handle.
Event::Native::Poll poll(const std::atomic<const Event::Native*>& polled) {
  const Event::Native* n = polled.load(std::memory_order_acquire);
  return n ? n->poll() : Event::Native::Poll::unknown;
}
}  // namespace

bool Event::done() const {
  return s_->done.load(std::memory_order_acquire) || poll(s_->polled) == Native::Poll::complete;
}

bool Event::succeeded() const {
  if (s_->done.load(std::memory_order_acquire)) return !s_->error;
  return poll(s_->polled) == Native::Poll::complete;
}

bool Event::wait_for(std::chrono::milliseconds timeout) const {
  using Clock = std::chrono::steady_clock;
  if (!s_->done.load(std::memory_order_acquire) && s_->polled.load(std::memory_order_acquire)) {
    // Poll the device: spin briefly, then sleep in growing slices, woken early by set_done; stop polling
    // when the device cannot say or reports a failure (the backend completes the event with it).
    auto start = Clock::now(), deadline = start + timeout;
    auto slice = std::chrono::microseconds(20);
    for (;;) {
      Native::Poll p = poll(s_->polled);
      if (p == Native::Poll::complete) return true;
      if (p != Native::Poll::pending || s_->done.load(std::memory_order_acquire)) break;
      auto now = Clock::now();
      if (now >= deadline) return false;
      if (now - start < std::chrono::microseconds(50)) {
        std::this_thread::yield();
        continue;
      }
      std::unique_lock<std::mutex> lock(s_->mu);
      auto until = std::min<Clock::time_point>(deadline, now + slice);
      if (s_->cv.wait_until(lock, until, [&] { return s_->done.load(); })) break;
      slice = std::min<std::chrono::microseconds>(slice * 2, std::chrono::milliseconds(1));
    }
    timeout = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()) +
              std::chrono::milliseconds(1);  // what is left (rounded up): the backend completes the event
  }
  std::unique_lock<std::mutex> lock(s_->mu);  // done already: no clock read (the condition's wait_for reads one)
  // not done: a poll (timeout 0, the waits across ranks' loop) returns at once, with no timed wait (a system call)
  if (!s_->done.load() &&
      (timeout <= std::chrono::milliseconds(0) || !s_->cv.wait_for(lock, timeout, [&] { return s_->done.load(); })))
    return false;
  if (s_->error) std::rethrow_exception(s_->error);
  return true;
}

void Event::set_done(std::exception_ptr error) const {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->error = error;
    s_->done.store(true, std::memory_order_release);
    s_->calling = true;
    callbacks.swap(s_->on_done);
  }
  s_->cv.notify_all();
  for (;;) {  // callbacks added meanwhile (on_done while calling) run after these, on this thread
    for (auto& fn : callbacks) run_noexcept(fn);
    callbacks.clear();
    std::lock_guard<std::mutex> lock(s_->mu);
    if (s_->on_done.empty()) {
      s_->calling = false;
      return;
    }
    callbacks.swap(s_->on_done);
  }
}

void Event::on_done(std::function<void()> fn) const {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (!s_->done || s_->calling) {
      s_->on_done.push_back(std::move(fn));
      return;
    }
  }
  run_noexcept(fn);
}

void Event::set_native(std::shared_ptr<const Native> native) const {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (s_->native) return;  // attached once
    s_->native = std::move(native);
    s_->polled.store(s_->native.get(), std::memory_order_release);
  }
  s_->cv.notify_all();
}

std::shared_ptr<const Event::Native> Event::native() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->native;
}

bool Event::wait_ready(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(s_->mu);
  return s_->cv.wait_for(lock, timeout, [&] { return s_->done || s_->native; });
}

void Event::set_times(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point end) const {
  std::lock_guard<std::mutex> lock(s_->mu);
  s_->times = Times{start, end};
}

std::optional<Event::Times> Event::times() const {
  const Native* n = nullptr;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (s_->times) return s_->times;
    n = s_->native.get();
  }
  return n ? n->times() : std::nullopt;
}

Event Device::copy_in_async(void* dst, const void* host, size_t bytes, std::vector<Event> after) {
  for (const Event& e : after)
    if (!e.wait_for(watchdog_timeout()))  // rethrows its error
      throw TimeoutError(name() + ": a host write waited longer than runtime.watchdog_s for the work before it");
  copy_in(dst, host, bytes);
  Event done;
  done.set_done();
  return done;
}

Event Device::marker() {
  Event mark;
  submit(
      [mark] {
        auto now = std::chrono::steady_clock::now();
        mark.set_times(now, now);
        mark.set_done();
      },
      {});
  return mark;
}

namespace {
std::atomic<bool> g_trace_timing{false};
}  // namespace

bool trace_timing() { return g_trace_timing.load(std::memory_order_relaxed); }
void set_trace_timing(bool on) { g_trace_timing.store(on, std::memory_order_relaxed); }

}  // namespace ringrt
