// Per-device memory accounting, readable from the public API. Reference: PyTorch's caching allocator
// statistics (torch.cuda.memory_stats: allocated, peak, reserved); tinygrad GlobalCounters.mem_used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace ringrt {

// One device's memory, in bytes. in_use and peak count the bytes asked for (a tensor of n float32
// elements on a device adds 4n there); cached counts whole blocks as the allocator holds them
// (rounded up to its granularity: 64 bytes on the cpu backend; on hip, its size classes,
// hip_launch::cache_block_size).
struct MemoryStats {
  int64_t in_use = 0;       // handed out to live allocations (tensor storages, an executor's scratch)
  int64_t peak = 0;         // the highest in_use since the device was created or reset_peak_memory
  int64_t cached = 0;       // freed blocks the allocator keeps for reuse (not in in_use)
  int64_t allocations = 0;  // live allocations
  bool operator==(const MemoryStats&) const = default;
};

// The statistics of device `device` ("CPU:0", "HIP:1"); creates the device like every other call.
// Throws DeviceError for an unknown device. Thread-safe; a snapshot (other threads may allocate).
MemoryStats memory_stats(const std::string& device);
// Sets device's peak to its current in_use (to measure the peak of one step). Throws DeviceError.
void reset_peak_memory(const std::string& device);

// For backends: the bookkeeping behind Device::memory_stats. Thread-safe.
class MemoryCounter {
 public:
  // An allocation of `bytes` handed out; `reused` of them came from the cache (0 for a fresh block).
  void allocated(size_t bytes, size_t reused_block) {
    std::lock_guard<std::mutex> lock(mu_);
    s_.in_use += static_cast<int64_t>(bytes);
    s_.cached -= static_cast<int64_t>(reused_block);
    ++s_.allocations;
    if (s_.in_use > s_.peak) s_.peak = s_.in_use;
  }
  // An allocation of `bytes` given back and kept in the cache as a block of `block` bytes.
  void freed(size_t bytes, size_t block) {
    std::lock_guard<std::mutex> lock(mu_);
    s_.in_use -= static_cast<int64_t>(bytes);
    s_.cached += static_cast<int64_t>(block);
    --s_.allocations;
  }
  // Cached blocks of `bytes` in all returned to the system.
  void released(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    s_.cached -= static_cast<int64_t>(bytes);
  }
  MemoryStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return s_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mu_);
    s_.peak = s_.in_use;
  }

 private:
  mutable std::mutex mu_;
  MemoryStats s_;
};

}  // namespace ringrt
