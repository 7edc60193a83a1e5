// runtime/mpi/mpi.hpp: the checked, owning layer over MPI's C API.
#include "runtime/mpi/mpi.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <thread>

#include "core/errors.hpp"
#include "core/interrupt.hpp"

namespace ringrt::mpi {

void check(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw DeviceError(fmt::format("MPI: {} failed at {}:{}: {}", call, file, line, std::string(text, len)));
}

bool launched_by_mpirun() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

Comm::Comm(MPI_Comm c) : c_(c) {
  if (c_ != MPI_COMM_NULL) RINGRT_MPI(MPI_Comm_set_errhandler(c_, MPI_ERRORS_RETURN));
}

Comm::~Comm() {
  if (c_ != MPI_COMM_NULL && c_ != MPI_COMM_WORLD) MPI_Comm_free(&c_);
}

Comm& Comm::operator=(Comm&& o) noexcept {
  if (this != &o) {
    if (c_ != MPI_COMM_NULL && c_ != MPI_COMM_WORLD) MPI_Comm_free(&c_);
    c_ = o.c_;
    o.c_ = MPI_COMM_NULL;
  }
  return *this;
}

int Comm::rank() const {
  int r = 0;
  RINGRT_MPI(MPI_Comm_rank(c_, &r));
  return r;
}

int Comm::size() const {
  int n = 0;
  RINGRT_MPI(MPI_Comm_size(c_, &n));
  return n;
}

Comm Comm::dup() const {
  MPI_Comm d = MPI_COMM_NULL;
  RINGRT_MPI(MPI_Comm_dup(c_, &d));
  return Comm(d);
}

Waited wait_until(MPI_Request& request, std::chrono::steady_clock::time_point deadline) {
  for (int spins = 0;; ++spins) {
    int done = 0;
    RINGRT_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return Waited::done;
    if (interrupt_signal() != 0) return Waited::stopped;
    if (std::chrono::steady_clock::now() >= deadline) return Waited::timed_out;
    if (spins < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));  // never busy-poll an oversubscribed host
  }
}

}  // namespace ringrt::mpi
