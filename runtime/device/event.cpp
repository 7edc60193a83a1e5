// Event: completion of submitted device work (runtime/device/device.hpp).
#include <atomic>
#include <condition_variable>
#include <mutex>

#include "runtime/device/device.hpp"

namespace ringrt {

struct Event::State {
  mutable std::mutex mu;
  mutable std::condition_variable cv;
  std::atomic<bool> done{false};  // written under mu (after error), read without it (done(), succeeded())
  std::exception_ptr error;       // set before done, never after
  std::shared_ptr<const Native> native;
  std::optional<Times> times;
  std::vector<std::function<void()>> on_done;  // run by set_done
};

Event::Event() : s_(std::make_shared<State>()) {}

namespace {
void run_noexcept(const std::function<void()>& fn) noexcept { fn(); }  // a throw ends the process
}  // namespace

bool Event::done() const { return s_->done.load(std::memory_order_acquire); }

bool Event::succeeded() const { return s_->done.load(std::memory_order_acquire) && !s_->error; }

bool Event::wait_for(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(s_->mu);  // done already: no clock read (the condition's wait_for reads one)
  if (!s_->done.load() && !s_->cv.wait_for(lock, timeout, [&] { return s_->done.load(); })) return false;
  if (s_->error) std::rethrow_exception(s_->error);
  return true;
}

void Event::set_done(std::exception_ptr error) const {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->error = error;
    s_->done.store(true, std::memory_order_release);
    callbacks.swap(s_->on_done);
  }
  s_->cv.notify_all();
  for (auto& fn : callbacks) run_noexcept(fn);
}

void Event::on_done(std::function<void()> fn) const {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (!s_->done) {
      s_->on_done.push_back(std::move(fn));
      return;
    }
  }
  run_noexcept(fn);
}

void Event::set_native(std::shared_ptr<const Native> native) const {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->native = std::move(native);
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
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->times;
}

namespace {
std::atomic<bool> g_trace_timing{false};
}  // namespace

bool trace_timing() { return g_trace_timing.load(std::memory_order_relaxed); }
void set_trace_timing(bool on) { g_trace_timing.store(on, std::memory_order_relaxed); }

}  // namespace ringrt
