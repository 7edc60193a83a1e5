// The queue of one HIP device (internal to runtime/hip/; the design is hip_device.hpp's "Queue"): GPU
// work enqueued on the device's stream by the thread that submits it, ordered after other devices' work
// on the GPU (hipStreamWaitEvent, or a wait for a gate value), completed in order by one background
// thread that nobody waits for (waiters poll the device themselves: Event::Native::poll), and host work
// (host functions, waits for events of other backends, the host half of staged copies) run in queue
// order by that same thread, each opening a gate that the stream waits on.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/device/device.hpp"
#include "runtime/hip/hip_memory.hpp"
#include "runtime/hip/hip_support.hpp"

namespace ringrt::hip_detail {

// What queued GPU work holds until it completes: the module of a kernel (not unloaded under the launch),
// a pinned staging buffer (PinnedPool::lease: back to its pool once the copy has run).
struct Resources {
  std::shared_ptr<Module> module;
  std::shared_ptr<void> staging;
};

// A device's clock for traces: a timing event that completed at host time `at`; the times of work are
// `at` plus the GPU's elapsed time since it (hipEventElapsedTime).
struct TimeBase {
  hipEvent_t event = nullptr;
  std::chrono::steady_clock::time_point at;
};

// The Event::Native of work queued on a HIP device. GPU work: the event recorded after it (`event`), and
// while tracing one recorded before it (`start`, both from the timing pool). Host work: its gate, the
// value the queue's gate word (`gate`, device-accessible) reaches once it has run. The events return
// to the pool only when the last holder lets go, so an event is never recorded again while another
// queue may still wait on it.
struct HipNative final : Event::Native {
  std::shared_ptr<EventPool> pool;
  hipEvent_t event = nullptr, start = nullptr;
  std::shared_ptr<const TimeBase> base;               // with `start`
  std::vector<Event> host_deps;                       // host work this GPU work waited for: their errors are its own
  std::vector<std::shared_ptr<EventPool>> dep_pools;  // of other devices' work it waited for on the GPU
  void* gate = nullptr;
  uint32_t gate_value = 0;
  mutable std::atomic<bool> doomed{false};  // completed with the shut-down error: poll says unknown

  explicit HipNative(std::shared_ptr<EventPool> p) : pool(std::move(p)) {}
  ~HipNative() override;
  // GPU work: hipEventQuery of `event` (complete only when the host work it waited for succeeded too,
  // and unknown once a device whose work it waited for is poisoned); host work: unknown (the queue
  // completes its Event).
  Poll poll() const noexcept override;
  // GPU work traced (`start` set) and complete: its times on the device's clock (TimeBase).
  std::optional<Event::Times> times() const override;
};

class HipQueue {
 public:
  // The GPU part of queued work: enqueues it on `stream` (this device is current), returns what it
  // holds until done. Throws DeviceError when a HIP call fails.
  using GpuWork = std::function<Resources(hipStream_t stream)>;

  // Enqueues on `stream` a wait until the 32-bit word at `gate` (device-accessible) reaches `value`
  // (wrapping compare), without hipStreamWaitValue32: the fallback where that fails (a kernel that spins).
  using SpinWait = std::function<void(hipStream_t stream, void* gate, uint32_t value)>;

  // The queue of device `name` on GPU `gpu`: its stream, event pool and gate word; starts the completer.
  // Throws DeviceError when a HIP call fails.
  HipQueue(int gpu, std::string name, SpinWait spin_wait);
  ~HipQueue();  // stop() if not stopped
  HipQueue(const HipQueue&) = delete;
  HipQueue& operator=(const HipQueue&) = delete;

  // GPU work, enqueued now from the calling thread, after `after`: nothing for this device's own work
  // (the stream is in order) or done events; hipStreamWaitEvent for another HIP device's GPU work, a wait
  // for the gate of its host work; host work of this queue that waits for any other event (another
  // backend's, an MPI transfer's) on the host, gating the stream. An `after` that failed fails the work
  // without enqueueing it. Its Event carries a HipNative. Throws DeviceError when the device is shut
  // down or poisoned; a failed HIP call fails the Event instead. Thread-safe (one submitter at a time).
  Event enqueue(std::string what, const std::vector<Event>& after, const GpuWork& work);
  // A marker (Device::marker): an empty piece of GPU work with timing events, whatever trace_timing().
  Event marker();
  // Host work: `host` runs on the completer after every earlier piece of this queue's work has completed
  // and after `after` (waited for on the host; an error fails it without running `host`); the stream
  // waits for its gate, so later GPU work starts after it. With `gpu`, that GPU part is enqueued behind
  // the gate (a staged copy: `host` fills the buffer it copies) and its Event is returned, failed when
  // `host` fails; else the host work's own Event. Throws as enqueue.
  Event enqueue_host(std::string what, std::vector<Event> after, std::function<void()> host, const GpuWork& gpu = {});
  // Waits at most `timeout` until everything enqueued so far has run (a marker through the queue);
  // false when some of it still runs. Throws DeviceError when shut down or poisoned.
  bool wait_all(std::chrono::milliseconds timeout);
  // Stops the queue by `deadline`: refuses new work (DeviceError, shut down), fails host work that has not
  // started (and the GPU work queued after it) with the shut-down message, lets the rest complete. True
  // when everything completed and the completer exited: then the stream and events are freed at once
  // (else leaked: the abandoned work may still use them). Idempotent; never throws.
  bool stop(std::chrono::steady_clock::time_point deadline) noexcept;
  // The first GPU error, once the device is poisoned (hip_device.hpp "Poisoned devices").
  std::optional<std::string> poisoned() const { return pool_->poison_error(); }
  // The device's poisoned flag, for what outlives queued work (PinnedPool::lease).
  std::shared_ptr<const std::atomic<bool>> poison_flag() const { return {pool_, &pool_->poisoned}; }

 private:
  struct Entry {
    bool host = false;
    Event done;
    std::string what;
    std::shared_ptr<const HipNative> native;
    Resources keep;               // GPU work
    std::vector<Event> gpu_deps;  // GPU work: other devices' work it waited for (their errors are its own)
    std::vector<Event> after;     // host work: waited for on the host
    std::function<void()> fn;     // host work (empty: a wait only)
  };

  void check_open(const std::string& what) const;  // under mu_
  // Under mu_, after check_open (a DeviceError then), with this GPU current: body(e) enqueues work and
  // sets up e, its Event; an exception of body fails a fresh Event instead (outside the lock). Wakes the
  // completer.
  template <class Body>
  Event locked(const std::string& what, Body body);
  // The host work entry (gate value ++gates_), the stream's wait for it, pushed; its Event. Under mu_.
  Event push_host(std::string what, std::vector<Event> after, std::function<void()> fn);
  // The GPU work `work` enqueued now, after what the stream already waits for, the event of `native`
  // recorded after it and attached to e, its entry pushed. Under mu_. Throws DeviceError.
  void push_gpu(const Event& e, std::string what, std::shared_ptr<HipNative> native, const GpuWork& work,
                std::vector<Event> gpu_deps);
  void wait_gate(hipStream_t stream, void* gate, uint32_t value);  // on this device's stream
  void open_gate(uint32_t value);
  std::shared_ptr<HipNative> gpu_native(std::vector<Event> host_deps, bool timed = false);
  hipEvent_t take_event(bool timing);
  std::shared_ptr<const TimeBase> time_base();
  void complete_loop();
  void run_host(Entry& e);
  void complete_gpu(std::vector<Entry>& batch, hipError_t rc);
  void release() noexcept;

  const int gpu_;
  const std::string name_;
  std::shared_ptr<EventPool> pool_;
  hipStream_t stream_ = nullptr;
  uint32_t* gate_host_ = nullptr;  // pinned, mapped: the host opens gates here
  void* gate_dev_ = nullptr;       // the same word as the GPU addresses it
  bool wait_value_ = true;         // hipStreamWaitValue32 works (else spin_wait_)
  SpinWait spin_wait_;
  std::shared_ptr<const TimeBase> base_;

  mutable std::mutex mu_;  // the stream's enqueue order, pending_, gates_, the flags below
  std::condition_variable cv_;
  std::deque<Entry> pending_;
  std::vector<Entry> graveyard_;  // GPU work stop() failed early, held until the stream is idle (release)
  uint32_t gates_ = 0;            // gate values handed out (host work pushed)
  bool stopping_ = false, stop_complete_ = false, completer_exited_ = false;
  std::atomic<bool> abandon_{false};  // shutdown's deadline passed: host waits give up
  std::optional<bool> stopped_;       // stop()'s result
  std::thread completer_;
};

}  // namespace ringrt::hip_detail
