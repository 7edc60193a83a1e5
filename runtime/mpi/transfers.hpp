// The transfers between ranks of runtime/mpi/mpi_cluster.cpp: one progress thread posts every send
// and receive once the events it waits for complete, tests them without blocking, and completes their
// events. Memory another thread may touch (the cpu backend's: Device::host_addressable) goes to MPI in
// place; device memory (GPUs: Debian's Open MPI has no ROCm or CUDA support) is staged through the
// device's persistent pinned buffers (Device::allocate_staging), chunk by chunk, two chunks in flight, so staging one
// chunk overlaps the transfer of the one before (reference: NCCL's proxy thread; Horovod's host-staged hierarchical
// allreduce).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/device/device.hpp"
#include "runtime/mpi/mpi.hpp"

namespace ringrt::mpi {

class Transfers {
 public:
  // comm: the point-to-point communicator (owned by the caller, outlives this); tag_ub: its largest tag.
  Transfers(MPI_Comm comm, int tag_ub);
  ~Transfers();  // stops the thread; transfers still pending fail with a DeviceError
  Transfers(const Transfers&) = delete;
  Transfers& operator=(const Transfers&) = delete;

  // As Cluster::send and Cluster::recv (runtime/device/cluster.hpp).
  Event send(Device& from, const void* src, size_t bytes, int peer, size_t item, std::vector<Event> after);
  Event recv(Device& to, void* dst, size_t bytes, int peer, size_t item, std::vector<Event> after);
  // Transfers posted and not completed (a clean MPI_Finalize needs none).
  size_t pending() const;

  struct Transfer;  // transfers.cpp

 private:
  Event start(std::shared_ptr<Transfer> t, std::vector<Event> after);
  void loop();
  bool advance(Transfer& t);  // true when it made progress; throws DeviceError

  MPI_Comm comm_;
  int tag_ub_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Transfer>> ready_;  // whose events completed: to post
  size_t pending_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ringrt::mpi
