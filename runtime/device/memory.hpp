// Per-device memory accounting (internal): the bookkeeping behind Device::memory_stats, which the public API reads
// (runtime/api/devices.hpp). Reference: PyTorch's caching allocator
// statistics (torch.cuda.memory_stats: allocated, peak, reserved); tinygrad GlobalCounters.mem_used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/memory_stats.hpp"

namespace ringrt {

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
