// Work in flight (internal to runtime/engine): what an asynchronous realize or host write left queued on
// the devices, for whoever must wait for it. Reference: PyTorch's CUDA caching allocator (a block freed
// while a stream still uses it is reused only after the stream's recorded event), CUDA's stream-ordered
// semantics.
//
// On devices that queue asynchronously (Device::asynchronous: GPU streams) a run returns once its work
// is enqueued (runtime/engine/executor.cpp "Asynchronous runs"). Its PendingWork is then attached to
// every storage the run reads or writes (DeviceStorage::set_pending), and kept in a process-wide list
// until it completes:
//   - reading a storage on the host, or writing it from the host, waits for its pending work first
//     (DeviceStorage::wait_pending: the watchdog applies, and a TimeoutError names the late item);
//   - a later run's first items wait, on the devices, for the pending work of the storages it uses
//     (fences: Program::run), so a kernel never reads a buffer before an earlier run wrote it, nor
//     overwrites one an earlier run still reads, on whichever device;
//   - a storage freed while its pending work runs goes back to its device's cache only once that work
//     completed (when_done), and so does a run's scratch memory;
//   - synchronize() waits for every pending work of the process; more than kMaxInFlight of them in
//     flight make the next one wait for the oldest (a bound on the memory they hold).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device/device.hpp"

namespace ringrt {

class PendingWork {
 public:
  // Says what is late after a timeout (a TimeoutError's message).
  using Late = std::function<std::string(std::chrono::milliseconds timeout)>;
  // `tails`: the last event of each device queue the work used (the queues are in order: once these
  // are done, all of it is). `what` describes it ("a host write of 4096 bytes to buffer 7"): "WHAT did
  // not complete within T ms", unless `late` says more precisely what is late (an executor's run names
  // its item); `keep` stays alive as long as the work (what `late` reads: a program's cache entry).
  PendingWork(std::vector<Event> tails, std::string what, Late late = {}, std::shared_ptr<const void> keep = {});
  ~PendingWork() = default;
  PendingWork(const PendingWork&) = delete;
  PendingWork& operator=(const PendingWork&) = delete;

  const std::vector<Event>& tails() const { return tails_; }
  // Every tail done (polled: never blocks).
  bool done() const;
  // Waits on the host until every tail is done, at most `timeout` in all. Throws TimeoutError with
  // late(timeout)'s message when the time runs out, or the error of the work's first failed item.
  void wait(std::chrono::milliseconds timeout) const;
  // Runs fn once every tail has completed (with or without an error): at once when all have, else on
  // the thread that completes the last. fn must be quick and must not throw.
  void when_done(std::function<void()> fn) const;
  // Whether the backends have completed every tail and run the callbacks registered before
  // watch_settled() (a run's memory freed): set by a when_done callback of watch_settled's.
  bool settled() const { return settled_->load(std::memory_order_acquire); }
  void watch_settled() const;

 private:
  std::string late(std::chrono::milliseconds timeout) const;

  std::vector<Event> tails_;
  std::string what_;
  Late late_;
  std::shared_ptr<const void> keep_;
  std::shared_ptr<std::atomic<bool>> settled_ = std::make_shared<std::atomic<bool>>(false);
};

// The most works in flight at once (runs and host writes of the process): past it, the oldest is waited
// for before another is added. Each holds its run's scratch memory until it completes.
inline constexpr size_t kMaxInFlight = 64;

// Adds `work` to the process's works in flight (watch_settled): first drops the settled ones, then,
// with more than kMaxInFlight, waits for the oldest (watchdog_timeout(): TimeoutError; its error is left
// to its readers). Thread-safe.
void track_in_flight(std::shared_ptr<const PendingWork> work);
// Waits for every work in flight, oldest first, at most `timeout` for each, until its backends have
// completed it (the memory it held is freed); rethrows the first error or TimeoutError (the works after
// it stay tracked). Thread-safe.
void wait_in_flight(std::chrono::milliseconds timeout);
// How many works are in flight now (the settled ones are dropped first).
size_t in_flight_count();
// dev.allocate(bytes); when that throws DeviceError (out of memory) while works are in flight, whose
// memory goes back as they complete, waits for all of them (wait_in_flight, watchdog_timeout(); their
// errors are left to their readers) and tries once more: a loop of queued runs that outgrows the device
// waits instead of failing. Throws the second DeviceError, or TimeoutError from the wait.
void* allocate_after_in_flight(Device& dev, size_t bytes);

}  // namespace ringrt
