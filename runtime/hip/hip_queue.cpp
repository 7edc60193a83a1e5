// The queue of one HIP device (see hip_queue.hpp and hip_device.hpp "Queue").
#include "runtime/hip/hip_queue.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <utility>

#include "core/errors.hpp"
#include "runtime/hip/hip_device.hpp"

namespace ringrt::hip_detail {

using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------------
// the native handle

HipNative::~HipNative() {
  std::lock_guard<std::mutex> lock(pool->mu);
  if (event) (start ? pool->free_timing : pool->free).push_back(event);
  if (start) pool->free_timing.push_back(start);
}

Event::Native::Poll HipNative::poll() const noexcept {
  if (!event || pool->poisoned || doomed) return Poll::unknown;
  hipError_t rc = hipEventQuery(event);
  if (rc == hipErrorNotReady) return Poll::pending;
  if (rc != hipSuccess) {
    (void)hipGetLastError();
    return Poll::failed;
  }
  for (const Event& d : host_deps)
    if (!d.succeeded()) return Poll::unknown;  // failed: its error is this work's (the queue says so)
  for (const auto& p : dep_pools)
    if (p->poisoned) return Poll::unknown;  // what it waited for may have failed: the queue says
  return Poll::complete;
}

std::optional<Event::Times> HipNative::times() const {
  if (!start || !base || poll() != Poll::complete) return std::nullopt;
  float from = 0, to = 0;
  if (hipEventElapsedTime(&from, base->event, start) != hipSuccess ||
      hipEventElapsedTime(&to, base->event, event) != hipSuccess) {
    (void)hipGetLastError();
    return std::nullopt;
  }
  auto at = [&](float ms) {
    return base->at + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double, std::milli>(ms));
  };
  return Event::Times{at(from), at(to)};
}

// ---------------------------------------------------------------------------------------------
// construction

HipQueue::HipQueue(int gpu, std::string name, SpinWait spin_wait)
    : gpu_(gpu), name_(std::move(name)), pool_(std::make_shared<EventPool>(name_)), spin_wait_(std::move(spin_wait)) {
  try {
    DeviceGuard guard(gpu_, name_);
    RINGRT_HIP_CHECK(name_, hipStreamCreateWithFlags(&stream_, hipStreamNonBlocking));
    void* word = nullptr;
    RINGRT_HIP_CHECK(name_, hipHostMalloc(&word, 64, hipHostMallocMapped | hipHostMallocPortable));
    gate_host_ = static_cast<uint32_t*>(word);
    *gate_host_ = 0;
    RINGRT_HIP_CHECK(name_, hipHostGetDevicePointer(&gate_dev_, word, 0));
  } catch (...) {
    release();
    throw;
  }
  completer_ = std::thread([this] { complete_loop(); });
}

HipQueue::~HipQueue() { stop(std::chrono::steady_clock::now() + 3s); }

// ---------------------------------------------------------------------------------------------
// enqueueing: the submitting thread

void HipQueue::check_open(const std::string& what) const {
  if (stopping_) throw DeviceError(hip_launch::shut_down_message(name_, what));
  if (auto error = pool_->poison_error()) throw DeviceError(hip_launch::poisoned_message(name_, what, *error));
}

hipEvent_t HipQueue::take_event(bool timing) {
  {
    std::lock_guard<std::mutex> lock(pool_->mu);
    auto& list = timing ? pool_->free_timing : pool_->free;
    if (!list.empty()) {
      hipEvent_t e = list.back();
      list.pop_back();
      return e;
    }
  }
  hipEvent_t e = nullptr;
  // Blocking sync: the completer's hipEventSynchronize sleeps until the GPU signals the event instead of
  // spinning a core per device (waiters that want an answer sooner poll with hipEventQuery).
  RINGRT_HIP_CHECK(name_, hipEventCreateWithFlags(&e, hipEventBlockingSync | (timing ? 0 : hipEventDisableTiming)));
  return e;
}

std::shared_ptr<const TimeBase> HipQueue::time_base() {
  if (!base_) {  // once per queue, the first time a trace records: a timing event the host waits for
    auto base = std::make_shared<TimeBase>();
    base->event = take_event(true);
    RINGRT_HIP_CHECK(name_, hipEventRecord(base->event, stream_));
    RINGRT_HIP_CHECK(name_, hipEventSynchronize(base->event));
    base->at = std::chrono::steady_clock::now();
    base_ = base;  // (its event is never returned to the pool)
  }
  return base_;
}

std::shared_ptr<HipNative> HipQueue::gpu_native(std::vector<Event> host_deps, bool timed) {
  auto native = std::make_shared<HipNative>(pool_);
  native->host_deps = std::move(host_deps);
  if (timed || trace_timing()) {
    native->base = time_base();
    native->start = take_event(true);
    RINGRT_HIP_CHECK(name_, hipEventRecord(native->start, stream_));
  }
  native->event = take_event(native->start != nullptr);
  return native;
}

void HipQueue::wait_gate(hipStream_t stream, void* gate, uint32_t value) {
  if (wait_value_) {
    hipError_t rc = hipStreamWaitValue32(stream, gate, value, hipStreamWaitValueGte, 0xffffffffu);
    if (rc == hipSuccess) return;
    (void)hipGetLastError();
    wait_value_ = false;
    std::fprintf(stderr, "ringrt: %s: hipStreamWaitValue32 failed (%s); host work is ordered by a spinning kernel\n",
                 name_.c_str(), hipGetErrorName(rc));
  }
  spin_wait_(stream, gate, value);
}

void HipQueue::open_gate(uint32_t value) {
  std::atomic_ref<uint32_t> word(*gate_host_);
  uint32_t now = word.load(std::memory_order_relaxed);
  if (static_cast<int32_t>(value - now) > 0) word.store(value, std::memory_order_release);
}

Event HipQueue::push_host(std::string what, std::vector<Event> after, std::function<void()> fn) {
  Event e;
  auto native = std::make_shared<HipNative>(pool_);
  native->gate = gate_dev_;
  native->gate_value = ++gates_;
  wait_gate(stream_, gate_dev_, native->gate_value);
  e.set_native(native);
  Entry entry;
  entry.host = true;
  entry.done = e;
  entry.what = std::move(what);
  entry.native = std::move(native);
  entry.after = std::move(after);
  entry.fn = std::move(fn);
  pending_.push_back(std::move(entry));
  return e;
}

template <class Body>
Event HipQueue::locked(const std::string& what, Body body) {
  Event e;
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    check_open(what);
    try {
      DeviceGuard guard(gpu_, name_);
      body(e);
    } catch (...) {
      error = std::current_exception();
    }
  }
  cv_.notify_all();
  if (error) {
    e = Event();
    e.set_done(error);  // outside the lock: callbacks may use this device
  }
  return e;
}

void HipQueue::push_gpu(const Event& e, std::string what, std::shared_ptr<HipNative> native, const GpuWork& work,
                        std::vector<Event> gpu_deps) {
  Resources keep = work(stream_);
  RINGRT_HIP_CHECK(name_, hipEventRecord(native->event, stream_));
  e.set_native(native);
  Entry entry;
  entry.done = e;
  entry.what = std::move(what);
  entry.native = std::move(native);
  entry.keep = std::move(keep);
  entry.gpu_deps = std::move(gpu_deps);
  pending_.push_back(std::move(entry));
}

Event HipQueue::enqueue(std::string what, const std::vector<Event>& after, const GpuWork& work) {
  return locked(what, [&](Event& e) {
    std::vector<Event> on_host;  // what only the host can wait for
    std::vector<Event> gpu_deps;
    std::vector<std::shared_ptr<EventPool>> dep_pools;
    for (const Event& a : after) {
      if (a.succeeded()) continue;
      if (a.done()) a.wait_for(0ms);  // rethrows its error: the work is not enqueued
      auto hn = std::dynamic_pointer_cast<const HipNative>(a.native());
      if (!hn) {
        on_host.push_back(a);
      } else if (hn->pool != pool_) {  // this queue's own work is earlier in the stream
        if (auto bad = hn->pool->poison_error())
          throw DeviceError(hip_launch::poisoned_message(name_, what, fmt::format("{} ({})", hn->pool->device, *bad)));
        if (hn->event)
          RINGRT_HIP_CHECK(name_, hipStreamWaitEvent(stream_, hn->event, 0));
        else
          wait_gate(stream_, hn->gate, hn->gate_value);
        gpu_deps.push_back(a);
        dep_pools.push_back(hn->pool);
      }
    }
    std::vector<Event> host_deps;
    if (!on_host.empty()) host_deps.push_back(push_host("wait for " + what, std::move(on_host), {}));
    std::shared_ptr<HipNative> native = gpu_native(std::move(host_deps));
    native->dep_pools = std::move(dep_pools);
    push_gpu(e, std::move(what), std::move(native), work, std::move(gpu_deps));
  });
}

Event HipQueue::enqueue_host(std::string what, std::vector<Event> after, std::function<void()> host,
                             const GpuWork& gpu) {
  return locked(what, [&](Event& e) {
    Event host_done = push_host(gpu ? "host part of the " + what : what, std::move(after), std::move(host));
    if (!gpu) return void(e = host_done);
    push_gpu(e, std::move(what), gpu_native({host_done}), gpu, {});
  });
}

Event HipQueue::marker() {
  return locked("marker", [&](Event& e) {
    push_gpu(e, "marker", gpu_native({}, true), [](hipStream_t) { return Resources{}; }, {});
  });
}

bool HipQueue::wait_all(std::chrono::milliseconds timeout) {
  Event marker = enqueue("synchronize", {}, [](hipStream_t) { return Resources{}; });
  return marker.wait_for(timeout);
}

// ---------------------------------------------------------------------------------------------
// completion: the completer thread

void HipQueue::complete_loop() {
  (void)hipSetDevice(gpu_);  // only for tidiness: hipEventSynchronize does not need it
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_complete_ || !pending_.empty(); });
    if (pending_.empty()) break;
    if (pending_.front().host) {
      Entry e = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      run_host(e);
      lock.lock();
      cv_.notify_all();  // stop() waits for the queue to empty
      continue;
    }
    // The GPU work at the front, up to the next host work: one wait for the last of it (the stream is in
    // order), then each completes in turn.
    size_t n = 0;
    while (n < pending_.size() && !pending_[n].host) ++n;
    std::shared_ptr<const HipNative> last = pending_[n - 1].native;
    std::optional<std::string> poisoned = pool_->poison_error();
    lock.unlock();
    hipError_t rc = poisoned ? hipSuccess : hipEventSynchronize(last->event);
    lock.lock();
    std::vector<Entry> batch;  // (stop() takes nothing before the first host work: these are still here)
    for (bool more = true; more && !pending_.empty() && !pending_.front().host;) {
      more = pending_.front().native != last;
      batch.push_back(std::move(pending_.front()));
      pending_.pop_front();
    }
    last.reset();
    lock.unlock();
    complete_gpu(batch, rc);
    lock.lock();
    cv_.notify_all();
  }
  completer_exited_ = true;
  cv_.notify_all();
}

void HipQueue::run_host(Entry& e) {
  std::exception_ptr error;
  try {
    if (auto bad = pool_->poison_error()) throw DeviceError(hip_launch::poisoned_message(name_, e.what, *bad));
    for (const Event& a : e.after) {
      while (!a.wait_for(100ms))  // rethrows its error: `fn` does not run
        if (abandon_) throw DeviceError(hip_launch::shut_down_message(name_, e.what));
    }
    auto start = trace_now();
    (void)hipSetDevice(gpu_);  // host work may call HIP; earlier host work may have changed the device
    if (e.fn) e.fn();
    if (start) e.done.set_times(*start, std::chrono::steady_clock::now());
  } catch (...) {
    error = std::current_exception();
  }
  e.done.set_done(error);  // before the gate opens: GPU work behind it sees it done
  open_gate(e.native->gate_value);
}

void HipQueue::complete_gpu(std::vector<Entry>& batch, hipError_t rc) {
  std::optional<std::string> poisoned = pool_->poison_error();
  if (!poisoned && rc != hipSuccess) {
    std::string msg = hip_error_message(name_, "hipEventSynchronize(event)", rc, __FILE__, __LINE__);
    msg = fmt::format("{} (after the {}{})", msg, batch.back().what, batch.size() > 1 ? " or work before it" : "");
    pool_->poison(msg);
    poisoned = msg;
  }
  for (Entry& e : batch) {
    std::exception_ptr error;
    if (poisoned) {
      error = std::make_exception_ptr(DeviceError(hip_launch::poisoned_message(name_, e.what, *poisoned)));
    } else {
      // The host work and other devices' work it waited for: their errors are its own (those devices'
      // completers may not have completed their events yet: wait for them).
      for (const std::vector<Event>* deps : {&e.native->host_deps, const_cast<const std::vector<Event>*>(&e.gpu_deps)})
        for (const Event& d : *deps)
          if (!error && !d.succeeded()) try {
              d.wait_for(watchdog_timeout());
            } catch (...) {
              error = std::current_exception();
            }
    }
    e.gpu_deps.clear();
    e.keep = {};  // a staging buffer goes back to its pool, unless the GPU faulted (PinnedPool::lease)
    e.native.reset();
    e.done.set_done(error);
  }
}

// ---------------------------------------------------------------------------------------------
// shutdown

bool HipQueue::stop(std::chrono::steady_clock::time_point deadline) noexcept {
  std::vector<Entry> failed;  // host work not started, and the GPU work queued after it: failed now
  uint32_t open_to = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return *stopped_;
    stopping_ = true;
    bool after_host = false;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->host) {
        open_to = it->native->gate_value;
        after_host = true;
      } else if (!after_host) {
        ++it;
        continue;
      } else {
        it->native->doomed = true;  // its GPU part may still run: its resources wait in graveyard_
      }
      failed.push_back(std::move(*it));
      it = pending_.erase(it);
    }
  }
  for (Entry& e : failed)
    e.done.set_done(std::make_exception_ptr(DeviceError(hip_launch::shut_down_message(name_, e.what))));
  if (open_to) open_gate(open_to);  // the GPU work behind the gates goes on
  std::unique_lock<std::mutex> lock(mu_);
  for (Entry& e : failed)
    if (!e.host) graveyard_.push_back(std::move(e));
  bool idle = cv_.wait_until(lock, deadline, [&] { return pending_.empty(); });
  stop_complete_ = true;
  if (!idle) abandon_ = true;
  cv_.notify_all();
  bool exited = cv_.wait_until(lock, deadline, [&] { return completer_exited_; });
  lock.unlock();
  exited ? completer_.join() : completer_.detach();
  stopped_ = idle && exited;
  if (*stopped_) release();  // the stream and events; the queue refuses work from now on
  return *stopped_;
}

void HipQueue::release() noexcept {
  if (g_hip_gone) return;  // after the exit handler: the HIP runtime may be gone, leak instead
  try {
    DeviceGuard guard(gpu_, name_);
    if (stream_) {
      RINGRT_HIP_LOG(name_, hipStreamSynchronize(stream_));
      RINGRT_HIP_LOG(name_, hipStreamDestroy(stream_));
      stream_ = nullptr;
    }
    graveyard_.clear();
    if (gate_host_) RINGRT_HIP_LOG(name_, hipHostFree(gate_host_));
    gate_host_ = nullptr;
    std::lock_guard<std::mutex> lock(pool_->mu);  // events still held by handles: ~EventPool
    for (auto* list : {&pool_->free, &pool_->free_timing})
      for (hipEvent_t e : *list) RINGRT_HIP_LOG(name_, hipEventDestroy(e));
    pool_->free.clear();
    pool_->free_timing.clear();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringrt: %s: queue teardown stopped early: %s\n", name_.c_str(), e.what());
  }
}

}  // namespace ringrt::hip_detail
