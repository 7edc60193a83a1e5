// How a config names the devices of an mpirun job (README "Many hosts: MPI ranks"): a list of the job's
// devices ("rank1/CPU:0"), groups that default to hosts, and a config written for one process whose
// groups and reduce leaders apply inside every rank. Used by runtime/cli/config.cpp's loader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringrt {

// The ConfigError of a bad key: "<where>: key '<key>': expected <expected>, got <got>".
[[noreturn]] void config_fail(const std::string& where, const std::string& key, const std::string& expected,
                              const std::string& got);

// devices.count listing the job's devices, "rank<R>/<prefix>i" (prefix "CPU:" or "HIP:"): every entry
// names a rank of the job and a device of the backend (cpu: i below that rank's number of entries;
// hip: i below `available`), once. Returns this rank's entries as local names. ConfigError at where[i].
std::vector<std::string> job_devices(const std::vector<std::string>& list, const std::vector<std::string>& where,
                                     const std::string& prefix, bool cpu, int64_t available);
// The group of each device: its rank's host, when the job spans several hosts (MPI's shared-memory
// nodes, or runtime.ranks_per_host); empty otherwise.
std::vector<int> host_groups(const std::vector<std::string>& devices);
// Groups given with one id per device of a rank (a config written for one process) for a job of
// `ndevices`: repeated inside every rank, rank r's group g becoming r * (largest id + 1) + g. Any other
// list is returned as it is.
std::vector<int> groups_in_every_rank(const std::vector<int>& groups, size_t ndevices);
// Reduce leaders named as on one process ("CPU:1") lead on every rank (rank<R>/CPU:1 for every R);
// rank-qualified names stay. Unchanged without mpirun.
std::vector<std::string> leaders_on_every_rank(const std::vector<std::string>& leaders);

}  // namespace ringrt
