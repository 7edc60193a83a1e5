// The hip backend's building blocks (internal to runtime/hip/): the GPUs and the HIP devices on them,
// the current-device guard, the event pool, loaded modules and compiled
// kernels, the Device handed out (DeviceOwner), and the exit-time flag after which no destructor
// calls HIP (hip_device.hpp "Teardown"). Memory and peer access are in hip_memory.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/kernel.hpp"
#include "runtime/device/device.hpp"
#include "runtime/hip/hip_check.hpp"

namespace ringrt::hip_detail {

using namespace std::chrono_literals;

// The GPUs the HIP runtime reports and the HIP devices ("HIP:i", logical) on them, from the first call
// on (hip_device_names() returns `names`). Throws as hip_device_names does; thread-safe.
struct HipTopology {
  int gpus = 0;                    // GPUs the HIP runtime reports
  std::vector<std::string> names;  // HIP:0 .. HIP:n-1; HIP:i is on GPU hip_physical_gpu(i, gpus)
};
const HipTopology& hip_topology();

// Makes GPU `index` the calling thread's current device for the guard's lifetime (hipSetDevice is
// per-thread state); restores the previous device afterwards, logging a failure.
class DeviceGuard {
 public:
  DeviceGuard(int index, std::string name) : name_(std::move(name)) {
    if (hipGetDevice(&prev_) != hipSuccess) prev_ = -1;
    if (prev_ != index) RINGRT_HIP_CHECK(name_, hipSetDevice(index));
    restore_ = prev_ >= 0 && prev_ != index;
  }
  ~DeviceGuard() {
    if (restore_) RINGRT_HIP_LOG(name_, hipSetDevice(prev_));
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  std::string name_;
  int prev_ = -1;
  bool restore_ = false;
};

// Exit-time teardown (see hip_device.hpp "Teardown"). True once the exit handler has shut every
// device down: from then on no destructor makes a HIP call (the HIP runtime may be gone), it leaks.
inline std::atomic<bool> g_hip_gone{false};

// The hipEvents of one device, reused: an event returns here when the last holder of its handle
// (HipNative, hip_queue.hpp) lets go, so an event is never recorded again while another queue may still
// wait on it. `free` holds events without timing, `free_timing` events with it (for traces). Also the
// device's poisoned state (hip_device.hpp "Poisoned devices"), which the handles carry to the queues of
// other devices that would wait for this one's events on their GPU.
struct EventPool {
  std::string device;
  std::mutex mu;  // free, free_timing, first_error
  std::vector<hipEvent_t> free, free_timing;
  std::atomic<bool> poisoned{false};
  std::string first_error;  // set once, with poisoned
  explicit EventPool(std::string d) : device(std::move(d)) {}
  // Marks the device unusable after a GPU error (`error`, its message); the first error is kept.
  void poison(const std::string& error) {
    std::lock_guard<std::mutex> lock(mu);
    if (poisoned) return;
    first_error = error;
    poisoned = true;
  }
  // The first GPU error of the device; none while it is usable.
  std::optional<std::string> poison_error() {
    if (!poisoned) return std::nullopt;
    std::lock_guard<std::mutex> lock(mu);
    return first_error;
  }
  ~EventPool() {
    if (g_hip_gone) return;
    for (auto* list : {&free, &free_timing})
      for (hipEvent_t e : *list) RINGRT_HIP_LOG(device, hipEventDestroy(e));
  }
};

// A module loaded on GPU `index`; unloaded (on that GPU) with the last kernel that uses it.
struct Module {
  int index;  // the GPU ordinal
  std::string device;
  hipModule_t handle = nullptr;
  Module(int i, std::string d) : index(i), device(std::move(d)) {}
  ~Module() {
    if (!handle || g_hip_gone) return;
    try {
      DeviceGuard guard(index, device);
      RINGRT_HIP_LOG(device, hipModuleUnload(handle));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ringrt: %s; module not unloaded\n", e.what());
    }
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
};

struct HipKernel : CompiledKernel {
  codegen::Kernel k;
  int index = -1;  // the (logical) HIP device that compiled it: only that device launches it
  std::shared_ptr<Module> module;
  hipFunction_t fn = nullptr;
  unsigned blocks = 0;  // of each launch (hip_launch::launch_blocks on the compiling device)
  const codegen::Kernel& kernel() const override { return k; }
};

// The Device make_hip_device hands out: owns a HIP device (`d`, its class private to hip_device.cpp)
// and, when destroyed, unregisters it from the exit handler and calls `shutdown` (true: it stopped
// cleanly), then destroys it, or leaks it when its shutdown abandoned work, as the threads still
// running then use it (hip_device.hpp "Teardown"). Forwards every call, unwrapping peer devices.
class DeviceOwner final : public Device {
 public:
  DeviceOwner(Device* d, std::function<bool()> shutdown) : d_(d), shutdown_(std::move(shutdown)) {}
  ~DeviceOwner() override;
  DeviceOwner(const DeviceOwner&) = delete;
  DeviceOwner& operator=(const DeviceOwner&) = delete;

  const std::string& name() const override { return d_->name(); }
  bool can_read_peer(const Device& peer) const override { return d_->can_read_peer(unwrap(peer)); }
  void* allocate(size_t bytes) override { return d_->allocate(bytes); }
  void free(void* ptr, size_t bytes) override { d_->free(ptr, bytes); }
  MemoryStats memory_stats() const override { return d_->memory_stats(); }
  void reset_peak_memory() override { d_->reset_peak_memory(); }
  void copy_in(void* dst, const void* host, size_t bytes) override { d_->copy_in(dst, host, bytes); }
  void copy_out(void* host, const void* src, size_t bytes) override { d_->copy_out(host, src, bytes); }
  Event copy_in_async(void* dst, const void* host, size_t bytes, std::vector<Event> after) override {
    return d_->copy_in_async(dst, host, bytes, std::move(after));
  }
  std::shared_ptr<CompiledKernel> compile(const codegen::Kernel& k) override { return d_->compile(k); }
  Event launch(const CompiledKernel& k, std::vector<void*> bufs, int32_t dnum, std::vector<Event> after) override {
    return d_->launch(k, std::move(bufs), dnum, std::move(after));
  }
  Event copy_from(Device& from, const void* src, void* dst, size_t bytes, std::vector<Event> after) override {
    return d_->copy_from(unwrap(from), src, dst, bytes, std::move(after));
  }
  std::vector<Event> launch_collective(std::vector<CollectiveLaunch> launches, const CollectiveCall& call,
                                       const std::vector<Event>& after) override {
    for (CollectiveLaunch& l : launches) l.device = &unwrap(*l.device);
    return d_->launch_collective(std::move(launches), call, after);
  }
  Event submit(std::function<void()> fn, std::vector<Event> after) override {
    return d_->submit(std::move(fn), std::move(after));
  }
  void synchronize() override { d_->synchronize(); }
  bool drain(std::chrono::milliseconds timeout) override { return d_->drain(timeout); }
  std::unique_ptr<DeviceGraph> make_graph() override { return d_->make_graph(); }
  // The device it owns.
  const Device& owned() const { return *d_; }
  bool asynchronous() const override { return d_->asynchronous(); }
  Event marker() override { return d_->marker(); }
  void* allocate_staging(size_t bytes) override { return d_->allocate_staging(bytes); }
  void free_staging(void* ptr, size_t bytes) noexcept override { d_->free_staging(ptr, bytes); }

 private:
  // The owned device of an owner; any other device as it is.
  template <class D>
  static D& unwrap(D& dev) {
    if (const auto* owner = dynamic_cast<const DeviceOwner*>(&dev)) return *owner->d_;
    return dev;
  }
  Device* d_;
  std::function<bool()> shutdown_;
};

// The HIP devices alive in this process, for the exit handler. register_live is called at the end of a
// device's constructor, so after the HIP runtime initialized itself: the exit handler it registers
// (once) runs before the ones the runtime registered while initializing. That handler calls every live
// device's shutdown while the HIP runtime is still up (the registry's devices are destroyed after exit
// handlers registered later than the registry was built, such as the HIP runtime's own), then sets
// g_hip_gone, so that later destructors (of the devices, of modules held by cached programs, of event
// pools) make no HIP call and leak instead. Thread-safe.
void register_live(const void* device, std::function<void()> shutdown);
void unregister_live(const void* device);

// The GPU ordinal of a device of the hip backend (a DeviceOwner's too), -1 for any other device
// (hip_device.cpp).
int hip_gpu_of(const Device& device);

// Now, while a Trace records (trace_timing(): hip_device.hpp "Timing"); else nullopt.
inline std::optional<std::chrono::steady_clock::time_point> trace_now() {
  return trace_timing() ? std::optional(std::chrono::steady_clock::now()) : std::nullopt;
}

}  // namespace ringrt::hip_detail
