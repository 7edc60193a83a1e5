// A thin RAII layer over Open MPI's C API (MPI 3.1): every call checked, communicators freed, requests
// tested without blocking. Boost.MPI 1.74 lacks the non-blocking collectives and MPI_Comm_split_type
// that runtime/mpi/mpi_cluster.cpp uses. Reference: the MPI 3.1 standard, chapters 3 (point to
// point), 5.12 (non-blocking collectives) and 6.4.2 (MPI_Comm_split_type).
#pragma once

#include <mpi.h>

#include <chrono>
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

// Waits for request by polling MPI_Test until deadline; false on timeout (the request is then left
// pending: the caller ends the job). Throws DeviceError for an MPI error.
bool wait_until(MPI_Request& request, std::chrono::steady_clock::time_point deadline);

}  // namespace ringrt::mpi
