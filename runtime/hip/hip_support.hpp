// The hip backend's building blocks (internal to runtime/hip/): the GPUs and the HIP devices on them,
// the current-device guard, the event pool and the native event handle, loaded modules and compiled
// kernels, and the exit-time flag after which no destructor calls HIP (hip_device.hpp "Teardown").
// Memory and peer access are in hip_memory.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
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

// Waits for e, forever; true when e completed without an error. `rethrow`: rethrow e's error.
inline bool wait_event(const Event& e, bool rethrow) {
  try {
    while (!e.wait_for(100ms)) {
    }
    return true;
  } catch (...) {
    if (rethrow) throw;
    return false;
  }
}

// Exit-time teardown (see hip_device.hpp "Teardown"). True once the exit handler has shut every
// device down: from then on no destructor makes a HIP call (the HIP runtime may be gone), it leaks.
inline std::atomic<bool> g_hip_gone{false};

// The hipEvents of one device, reused: an event returns here when the last holder of its handle
// (HipNative) lets go, so an event is never recorded again while another queue may still wait on it.
struct EventPool {
  std::string device;
  std::mutex mu;
  std::vector<hipEvent_t> free;
  explicit EventPool(std::string d) : device(std::move(d)) {}
  ~EventPool() {
    if (g_hip_gone) return;
    for (hipEvent_t e : free) RINGRT_HIP_LOG(device, hipEventDestroy(e));
  }
};

// The Event::Native of GPU work on HIP:index: the hipEvent recorded after it on its stream.
struct HipNative final : Event::Native {
  int index;
  hipEvent_t event;
  std::shared_ptr<EventPool> pool;
  HipNative(int i, hipEvent_t e, std::shared_ptr<EventPool> p) : index(i), event(e), pool(std::move(p)) {}
  ~HipNative() override {
    std::lock_guard<std::mutex> lock(pool->mu);
    pool->free.push_back(event);
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
  const codegen::Kernel& kernel() const override { return k; }
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

}  // namespace ringrt::hip_detail
