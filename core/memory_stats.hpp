// One device's memory statistics (public value type): runtime/api/devices.hpp memory_stats() returns them.
// Reference: PyTorch's caching allocator statistics (torch.cuda.memory_stats: allocated, peak, reserved);
// tinygrad GlobalCounters.mem_used.
#pragma once

#include <cstdint>

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

}  // namespace ringrt
