// The memory a run of one sweep size will hold, estimated from its plan before anything is allocated,
// and what the process may still take (a size that does not fit is refused with the
// numbers, exit 2, instead of the kernel killing the process part way).
//
// Estimate: the device buffers are the input (count elements on every device), plus what the schedule
// writes (Schedule: every copy's bytes and every kernel item's numel times the dtype's size on each
// device of its tuple, then 1.5 times that: memory_budget.cpp says what the margin covers, measured);
// the host side is the larger of
// the input's staging (one (1, count) buffer per device, handed to Tensor::from_shards) and the check
// (experiment.cpp's reference: about 20 bytes per element for floats, plus one device's result).
// On the cpu backend device buffers are host memory and count against the same limit; on hip only the
// host side does. Available: min(MemAvailable of /proc/meminfo, RLIMIT_AS minus VmSize, RLIMIT_DATA
// minus VmData), each where it exists.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "runtime/cli/config.hpp"

namespace ringrt {

struct MemoryNeed {
  int64_t device = 0;          // bytes of device buffers, all devices together
  int64_t host = 0;            // bytes of host buffers at the peak (input staging or the check)
  bool device_is_host = true;  // cpu backend: device buffers are host memory
  int64_t total() const { return host + (device_is_host ? device : 0); }
};

// What the process may still allocate, in bytes, and which limit decides it ("MemAvailable",
// "ulimit -v", "ulimit -d"); nullopt when none can be read.
struct MemoryAvailable {
  int64_t bytes = 0;
  std::string limit;
};
std::optional<MemoryAvailable> memory_available();

// The need of one allreduce of `count` elements per device (every count of `counts` held at once, as
// gradient buckets are), from the schedule of a placeholder input: nothing allocated or compiled.
// Throws ShapeError for a count too large.
MemoryNeed estimate_need(const ExperimentConfig& cfg, const std::vector<int64_t>& counts);

// Throws ResourceError (exit 2) when need does not fit in memory_available(), with the numbers:
// "count N x 4 devices float32 needs about X GiB (device buffers A GiB, host input and check B GiB), Y GiB
// available (MemAvailable)". Does nothing when nothing can be read.
void check_fits(const ExperimentConfig& cfg, const std::vector<int64_t>& counts);
// The same for a need estimated before (estimate_need plans the schedule: a sweep plans each count once).
void check_fits(const ExperimentConfig& cfg, const std::vector<int64_t>& counts, const MemoryNeed& need);

}  // namespace ringrt
