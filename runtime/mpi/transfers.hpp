// The transfers between ranks of runtime/mpi/mpi_cluster.cpp. A transfer of memory another thread may
// touch (the cpu backend's: Device::host_addressable) is posted to MPI in place (MPI_Isend/MPI_Irecv into
// the program's own buffers, no staging) by the thread that makes its data ready: the submitting thread
// when its events have completed already, else the thread that completes the last of them (a device
// queue's). Posted transfers are tested (MPI_Test) by whichever thread calls progress(): the thread
// that waits for the run (Program::wait spins on it, then backs off); the progress thread tests them only
// once that thread gave up (unattended: a timeout, a stop), every kBackstop, so that on an oversubscribed
// host (ranks x threads > cores) it never takes a core from the threads that move the data, nor wakes up
// once per run (a wake-up cost 2x1 ranks 4x their time at 1 KiB).
// Device memory (GPUs: Debian's Open MPI has no ROCm or CUDA support) is staged through the device's
// persistent pinned buffers (Device::allocate_staging) by the progress thread alone, chunk by chunk, two
// chunks in flight, so staging one chunk overlaps the transfer of the one before (reference: NCCL's proxy
// thread; Horovod's host-staged hierarchical allreduce).
// MPI's own collectives (Cluster::collective, Algorithm::mpi) are transfers of one request each: posted in
// place by the thread that readies their data as the transfers are, but in the order they were called on
// their communicator (MPI matches collectives by their order on it), and tested with them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/device/cluster.hpp"
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
  // As Cluster::collective, on comm (call.ranks' communicator, whose rank i is call.ranks[i]; owned by the
  // caller, outlives this): numbered in the order of these calls on comm, posted in that order. Throws
  // DeviceError for a count MPI cannot take (over INT_MAX elements, or bytes for the collectives that move
  // bytes) or a device whose memory MPI cannot read.
  Event collective(Device& on, MPI_Comm comm, const Cluster::CollectiveCall& call, std::vector<Event> after);
  // Transfers posted and not completed (a clean MPI_Finalize needs none).
  size_t pending() const;
  // Tests the transfers posted in place and completes those done (their events, outside any lock); whether
  // any moved. Thread-safe and non-blocking: returns at once while another thread is testing them.
  bool progress();
  // As Cluster::unattended: the thread tests the transfers posted in place every kBackstop until none is left.
  void unattended();

  struct Transfer;  // transfers.cpp

 private:
  Event start(std::shared_ptr<Transfer> t, std::vector<Event> after);
  void post(std::shared_ptr<Transfer> t);  // its data is ready: posted in place, or handed to the thread
  // A collective whose data is ready: posted with every later one of its communicator that is ready too,
  // once those before it were; under direct_mu_. Those posted go to direct_, those completed to done.
  void post_in_order(std::shared_ptr<Transfer> t, std::vector<std::shared_ptr<Transfer>>& done);
  void loop();
  static constexpr std::chrono::milliseconds kBackstop{1};  // the progress thread's test of in-place transfers
  bool advance(Transfer& t);                                // true when it made progress; throws DeviceError
  // Advances each of `list` and moves those finished (or failed) to `done`; whether any moved.
  bool advance_all(std::vector<std::shared_ptr<Transfer>>& list, std::vector<std::shared_ptr<Transfer>>& done);
  void complete(std::vector<std::shared_ptr<Transfer>>& done);  // their events, with no lock held

  MPI_Comm comm_;
  int tag_ub_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Transfer>> ready_;  // staged, whose events completed: for the thread to post
  size_t pending_ = 0;
  bool stop_ = false;
  bool unattended_ = false;  // the thread tests the transfers posted in place (until none is left)
  std::mutex direct_mu_;     // direct_ and the MPI state of its transfers
  std::vector<std::shared_ptr<Transfer>> direct_;  // posted in place: any thread tests them
  struct Order {  // a communicator's collectives: numbered when called, posted in that order
    uint64_t called = 0, posted = 0;
    std::map<uint64_t, std::shared_ptr<Transfer>> ready;  // ready, waiting for an earlier one
  };
  std::map<MPI_Comm, Order> orders_;  // under direct_mu_
  std::thread thread_;
};

}  // namespace ringrt::mpi
