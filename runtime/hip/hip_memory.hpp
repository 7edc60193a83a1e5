// The hip backend's memory and peer access (internal to runtime/hip/): a device's cache of hipMalloc
// blocks, its pool of pinned host buffers for staged copies, and the process-wide peer-access table
// keyed by GPU (hip_device.hpp "Memory", "Peer copies", "Logical devices"). Include only where HIP is
// built (RINGRT_HAVE_HIP).
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/device/memory.hpp"

namespace ringrt::hip_detail {

// Device memory of one HIP device (named `name`, on GPU `gpu`): hipMalloc through a cache of freed
// blocks by size; sizes round up to 256 bytes. Thread-safe.
class BlockCache {
 public:
  BlockCache(int gpu, std::string name) : gpu_(gpu), name_(std::move(name)) {}
  // A block of at least `bytes`: a cached one of the same rounded size, else hipMalloc on the GPU; on
  // hipErrorOutOfMemory the cache is released once and the allocation retried. Throws DeviceError
  // (naming the device, the size and whether it retried).
  void* allocate(size_t bytes);
  // Returns ptr (of `bytes`, as allocated) to the cache at once: the caller has waited for its uses.
  void free(void* ptr, size_t bytes);
  // hipFree of every cached block; returns their total size in bytes. Logs failures, never throws.
  size_t release() noexcept;
  MemoryStats stats() const { return memory_.stats(); }
  void reset_peak() { memory_.reset_peak(); }

 private:
  static size_t round_up(size_t bytes) { return (std::max<size_t>(bytes, 1) + 255) / 256 * 256; }
  const int gpu_;
  const std::string name_;
  std::mutex mu_;  // free_blocks_
  std::map<size_t, std::vector<void*>> free_blocks_;
  MemoryCounter memory_;  // in use, peak and cached bytes
};

// Pinned host buffers (hipHostMalloc) kept by exact size, for copies staged through the host.
// Thread-safe.
class PinnedPool {
 public:
  explicit PinnedPool(std::string name) : name_(std::move(name)) {}
  // A buffer of `bytes`: a kept one, else hipHostMalloc. Throws DeviceError.
  void* take(size_t bytes);
  void give(size_t bytes, void* p);
  // hipHostFree of every kept buffer; logs failures, never throws.
  void release() noexcept;

 private:
  const std::string name_;
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> pinned_;
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
