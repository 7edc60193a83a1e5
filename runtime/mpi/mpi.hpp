// A thin RAII layer over Open MPI's C API (MPI 3.1): every call checked, communicators freed, requests
// tested without blocking. Boost.MPI 1.74 lacks the non-blocking collectives and MPI_Comm_split_type
// that runtime/mpi/mpi_cluster.cpp uses. Reference: the MPI 3.1 standard, chapters 3 (point to
// point), 5.12 (non-blocking collectives) and 6.4.2 (MPI_Comm_split_type).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace ringrt::mpi {

// Throws DeviceError "MPI: <call> failed at file:line: <MPI's error string>" when rc is not MPI_SUCCESS.
void check(int rc, const char* call, const char* file, int line);
#define RINGRT_MPI(call) ::ringrt::mpi::check((call), #call, __FILE__, __LINE__)

// True when this process was started by mpirun/mpiexec (Open MPI's, MPICH's or a PMIx launcher's
// environment); MPI is then started, otherwise ringrt stays one process.
bool launched_by_mpirun();

// A communicator this object owns (MPI_Comm_free at destruction); errors are returned, not fatal.
class Comm {
 public:
  Comm() = default;
  explicit Comm(MPI_Comm c);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  Comm(Comm&& o) noexcept : c_(o.c_) { o.c_ = MPI_COMM_NULL; }
  Comm& operator=(Comm&& o) noexcept;
  MPI_Comm get() const { return c_; }
  int rank() const;
  int size() const;
  Comm dup() const;  // MPI_Comm_dup: a separate matching space

 private:
  MPI_Comm c_ = MPI_COMM_NULL;
};

// How a wait ended.
enum class Waited { done, timed_out, stopped };
// Waits for request by polling MPI_Test until deadline or a stop request (SIGINT/SIGTERM:
// core/interrupt.hpp), checked every poll: spinning for the first polls, then sleeping 100 us between
// them, so a stop ends the wait within a millisecond. On timed_out or stopped the request is left
// pending: its buffers must outlive it (a receive or a collective may still write them; MPI cannot
// cancel a collective), so callers keep them with the request (MpiCluster parks both). Throws
// DeviceError for an MPI error.
Waited wait_until(MPI_Request& request, std::chrono::steady_clock::time_point deadline);

}  // namespace ringrt::mpi
