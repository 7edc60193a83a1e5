// A process's place in an SPMD job (public value type): runtime/api/devices.hpp rank_info() returns it.
#pragma once

#include <string>
#include <vector>

namespace ringrt {

// This process's place in an SPMD job started by mpirun (one rank, one host without it).
struct RankInfo {
  int rank = 0;                         // this process
  int ranks = 1;                        // processes in the job
  int host = 0;                         // this rank's host, 0 .. hosts-1 (numbered by their first rank)
  int hosts = 1;                        // hosts: MPI's shared-memory nodes, or runtime.ranks_per_host ranks each
  std::vector<int> host_of_rank;        // host of every rank
  std::string host_name;                // this host's name (MPI_Get_processor_name); "" without mpirun
  std::vector<std::string> host_names;  // every host\'s name, by host number; {""} without mpirun
};

}  // namespace ringrt
