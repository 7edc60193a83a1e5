// The memory of one run of a Program (runtime/engine/executor.hpp): what the executor binds for a run
// (executor.cpp) and what the trace of a finished run reads (run_trace.cpp). Internal to runtime/engine.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "runtime/device/cluster.hpp"
#include "runtime/engine/binding.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/engine/pending.hpp"

namespace ringrt {

// The devices of a value's DeviceSpec by name: its tuple's, or its one device. Throws InternalError for a
// value without a device.
inline std::vector<std::string> names_of(const DeviceSpec& d) {
  if (d.tuple()) return d.names();
  if (d.single()) return {d.name()};
  throw InternalError("memory for a value without a device");
}

namespace {
// The memory of a run that ended early while items may still use it; freed with the last reference.
struct Leftovers {
  std::vector<Block> temps;
  std::vector<std::shared_ptr<DeviceStorage>> held;
  std::vector<std::shared_ptr<DeviceStorage>> outputs;
  ~Leftovers() {
    for (const Block& b : temps) b.device->free(b.ptr, b.bytes);
  }
};
}  // namespace

// The memory one run binds: its slots (the caller's output blocks, the input storages, held for the
// run, and fresh blocks for intermediates and scratch slots, freed by release()) and the binding plan
// that says which of them each item reads and writes. Not thread-safe: one run, one thread.
class Program::RunMemory {
 public:
  RunMemory(std::shared_ptr<const BindingPlan> plan, RunSlots slots) : plan(std::move(plan)), slots(std::move(slots)) {
    size_t n = 0;
    for (const auto& t : this->plan->temps) n += t.devices.size();
    this->slots.temps.reserve(n);
    try {
      for (const auto& t : this->plan->temps)
        for (Device* dev : t.devices)
          this->slots.temps.push_back({dev, allocate_after_in_flight(*dev, t.bytes), t.bytes});
    } catch (...) {  // out of device memory: what was allocated goes back
      release();
      throw;
    }
  }

  bool elided(size_t i) const { return plan->elided[i] != 0; }
  // Whether kernel item i's launch writes its peer copies too (runtime.peer_writes, binding.cpp).
  bool peer_writer(size_t i) const {
    const auto& launches = plan->launches[i];
    return !launches.empty() && launches[0].peer;
  }
  uint64_t run = 0;  // this process's count of runs across ranks, this one's (1, 2, ...); 0: one rank
  std::chrono::steady_clock::time_point deadline;  // the watchdog's, for submit (settled kernels) and wait
  std::shared_ptr<const BindingPlan> plan;
  RunSlots slots;

  // Every item finished: frees the run's fresh blocks.
  void release() {
    for (const Block& b : slots.temps) b.device->free(b.ptr, b.bytes);
    slots.temps.clear();
  }

  // Ending early (a timeout, an item's error) while items may still run: this run's memory is freed by the last of
  // them to complete (never, if one never does), on a device thread; devices are never destroyed, exit waits for
  // these items first (drain_devices_at_exit); across ranks the transport's thread tests its transfers now.
  void release_when_done(const Events& events, const std::vector<std::shared_ptr<DeviceStorage>>& outputs) {
    drain_devices_at_exit();
    if (Cluster* c = run ? cluster() : nullptr) c->unattended();
    auto left = std::make_shared<Leftovers>();
    left->temps = std::move(slots.temps);
    slots.temps.clear();
    left->held = std::move(slots.held);
    left->outputs = outputs;
    for (const auto& evs : events)
      for (const Event& e : evs) e.on_done([left] {});
  }
  // An asynchronous run's: its memory goes once `work` (the run's tails) has completed.
  void release_when_done(const PendingWork& work) {
    drain_devices_at_exit();
    auto left = std::make_shared<Leftovers>();
    left->temps = std::move(slots.temps);
    slots.temps.clear();
    left->held = std::move(slots.held);
    work.when_done([left]() mutable { left.reset(); });
  }
};

}  // namespace ringrt
