// The hip backend's memory and peer access (internal to runtime/hip/): a device's cache of hipMalloc
// blocks, its pool of pinned host buffers, the copies staged through them, and the process-wide
// peer-access table keyed by GPU (hip_device.hpp "Memory", "Peer copies", "Logical devices"). Include
// only where HIP is built (RINGRT_HAVE_HIP).
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/device/device.hpp"
#include "runtime/device/memory.hpp"
#include "runtime/hip/hip_check.hpp"

namespace ringrt::hip_detail {

// Pinned host buffers (hipHostMalloc) for copies staged through the host, kept by size class
// (hip_launch::cache_block_size) up to hip_launch::kPinnedCacheCap bytes; a buffer given back beyond
// the cap is freed at once. Thread-safe.
class PinnedPool {
 public:
  explicit PinnedPool(std::string name) : name_(std::move(name)) {}
  // A buffer of at least `bytes`: a kept one of the same class, else hipHostMalloc; on
  // hipErrorOutOfMemory the kept buffers are freed and the allocation retried once. Throws DeviceError.
  void* take(size_t bytes);
  // Returns p, taken for `bytes`: kept when the cap allows, else hipHostFree (logged on failure).
  void give(size_t bytes, void* p) noexcept;
  // hipHostFree of every kept buffer; returns their total size in bytes. Logs failures, never throws.
  size_t release() noexcept;
  // take(bytes) for queued work: the buffer goes back with the last copy of the pointer, or leaks when
  // `device` is poisoned by then (a faulted GPU may still touch it). The pool must outlive the lease.
  std::shared_ptr<void> lease(size_t bytes, std::shared_ptr<const std::atomic<bool>> poisoned);

 private:
  const std::string name_;
  std::mutex mu_;  // pinned_, cached_
  std::map<size_t, std::vector<void*>> pinned_;
  size_t cached_ = 0;  // bytes kept in pinned_
};

// Device memory of one HIP device (named `name`, on GPU `gpu`): hipMalloc through a cache of freed
// blocks by size class (hip_launch::cache_block_size), keeping at most `cap` bytes (set_cap; 0 until
// then: nothing is kept). Thread-safe.
class BlockCache {
 public:
  // `pinned`: the same device's staging buffers, released too when device memory runs out.
  BlockCache(int gpu, std::string name, PinnedPool& pinned) : gpu_(gpu), name_(std::move(name)), pinned_(pinned) {}
  // The most bytes of freed blocks kept (hip_launch::device_cache_cap).
  void set_cap(size_t cap);
  // A block of at least `bytes`: a cached one of the same size class, else hipMalloc on the GPU; on
  // hipErrorOutOfMemory both caches (this one and the pinned buffers) are released once and the
  // allocation retried. Throws DeviceError (naming the device, the size and whether it retried).
  void* allocate(size_t bytes);
  // Returns ptr (of `bytes`, as allocated) at once: the caller has waited for its uses. Kept in the
  // cache when the cap allows, else hipFree (which may wait for the GPU; logged on failure, never
  // throws; after the exit handler the block leaks instead, hip_support.hpp g_hip_gone).
  void free(void* ptr, size_t bytes);
  // hipFree of every cached block; returns their total size in bytes. Logs failures, never throws.
  size_t release() noexcept;
  MemoryStats stats() const { return memory_.stats(); }
  void reset_peak() { memory_.reset_peak(); }

 private:
  const int gpu_;
  const std::string name_;
  PinnedPool& pinned_;
  std::mutex mu_;  // free_blocks_, cached_, cap_
  std::map<size_t, std::vector<void*>> free_blocks_;
  size_t cached_ = 0, cap_ = 0;  // bytes kept in free_blocks_; the most kept
  MemoryCounter memory_;         // in use, peak and cached bytes
};

// ---- peer access: process-wide, keyed by GPU ordinal (it is context state of the HIP runtime, shared
// by every logical device on a GPU).

// Whether GPU `gpu` can read GPU `peer`'s memory: true for gpu == peer; otherwise decided once per
// pair and cached: hipDeviceCanAccessPeer, then hipDeviceEnablePeerAccess on gpu. Access enabled
// already (hipErrorPeerAccessAlreadyEnabled: by someone else in this process) counts as access but
// is not ours, so it is never disabled here. Any failure (of either call) is logged once to stderr
// and cached as "no access": callers stage the copy through the host. `name` starts the messages.
// Never throws for a HIP error; thread-safe; the calling thread's current device is restored.
bool peer_access(int gpu, int peer, const std::string& name);
// A HIP device on `gpu` starts / stops using the table. When the last one on a GPU stops, the peer
// access enabled from that GPU by peer_access is disabled (hipDeviceDisablePeerAccess, logged on
// failure) and its decisions are forgotten. gpu_user_gone never throws.
void gpu_user_added(int gpu);
void gpu_user_gone(int gpu, const std::string& name) noexcept;

}  // namespace ringrt::hip_detail
