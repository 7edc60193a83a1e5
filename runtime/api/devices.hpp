// The devices of the public API: which devices exist, the ranks of a job, and each device's memory. Device names are
// "KIND:index"; under mpirun, a device of the job is named by its rank too: "rank<R>/KIND:index" (README, "Many
// hosts").
#pragma once

#include <cstdint>
#include <ringrt/core/memory_stats.hpp>
#include <ringrt/core/rank_info.hpp>
#include <string>
#include <vector>

namespace ringrt {

// {"CPU:0", ..., "CPU:n-1"}: the cpu backend's virtual devices (CPU:0 .. CPU:n-1 exist from now on).
// Throws DeviceError for n < 1 or n > 1024.
std::vector<std::string> cpu_devices(int n);
// Every HIP GPU ("HIP:0", ...); empty when none is present or the HIP backend is not built. Throws
// DeviceError when the HIP runtime fails for another reason than having no GPU.
std::vector<std::string> hip_devices();

// This process's rank and host. Under mpirun (Open MPI's or MPICH's environment), the first call starts
// MPI (MPI_Init_thread) on every rank: call it, or any device list, in the same order on every rank.
// Throws DeviceError when MPI fails to start.
const RankInfo& rank_info();
// The devices of every rank: local names ("CPU:0", ...) of this rank, gathered from every rank in
// rank order as "rank<R>/CPU:0" ...; `local` itself without mpirun. Collective: every rank calls it.
// Throws TimeoutError when a rank does not arrive within the watchdog (runtime.watchdog_s).
std::vector<std::string> global_devices(const std::vector<std::string>& local);
// True when `name` is a device of this process (any name without mpirun).
bool is_local_device(const std::string& name);
// The sum of value over every rank (collective; TimeoutError as global_devices). value without mpirun.
int64_t sum_over_ranks(int64_t value);
// The largest of value over every rank, NaN when any rank's is NaN (collective; TimeoutError as
// global_devices). value without mpirun.
double max_over_ranks(double value);
// Ends every rank of the job with `status` (MPI_Abort), or this process (std::_Exit: no exit handlers)
// without mpirun or when MPI did not start.
[[noreturn]] void abort_ranks(int status);

// The statistics of device `device` ("CPU:0", "HIP:1"); creates the device like every other call.
// Throws DeviceError for an unknown device. Thread-safe; a snapshot (other threads may allocate).
MemoryStats memory_stats(const std::string& device);
// Sets device's peak to its current in_use (to measure the peak of one step). Throws DeviceError.
void reset_peak_memory(const std::string& device);

}  // namespace ringrt
