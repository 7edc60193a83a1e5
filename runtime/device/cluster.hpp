// The transport between the processes (ranks) of one SPMD job: the interface the executor and the
// device lists use, implemented over MPI in runtime/mpi/ (docs/architecture.md "Ranks"). Without
// mpirun, or in a build without MPI, there is no cluster (cluster() is null) and ringrt is one process.
//
// A device of another rank is named "rank<R>/<KIND>:<i>" (rank1/CPU:0); the registry resolves such a
// name to this process's device when R is this rank, else to a RemoteDevice (runtime/device/remote.hpp):
// memory that is never touched here and work that rank R runs. Every rank plans the same schedule
// and runs the items of its own devices; a copy between ranks is a send on the source's rank and a
// receive on the destination's, matched by the item's index (the MPI tag).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/algorithm.hpp"
#include "core/dtype.hpp"
#include "core/rank_info.hpp"
#include "core/reduce_op.hpp"
#include "runtime/device/device.hpp"

namespace ringrt {

class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual const RankInfo& info() const = 0;

  // bytes from src on `from` (a device of this rank) to rank `peer`, once `after` completes; `item`
  // (the schedule item's index) matches it with the receive (the MPI tag: item modulo MPI's largest
  // tag + 1; messages of one tag between two ranks arrive in order). The event completes when src may
  // be reused; it fails with the error of an `after` event or of MPI.
  virtual Event send(Device& from, const void* src, size_t bytes, int peer, size_t item, std::vector<Event> after) = 0;
  // bytes from rank `peer` into dst on `to` (a device of this rank), once `after` completes.
  virtual Event recv(Device& to, void* dst, size_t bytes, int peer, size_t item, std::vector<Event> after) = 0;

  // MPI's own non-blocking collective (Algorithm::mpi) on this rank's device `on` (host memory), once `after`
  // completes: every rank of call.ranks passes the same call (the rules made one item of it; the executor
  // calls this in item order, and each communicator's collectives are posted to MPI in that order whatever
  // order their data becomes ready in). The event completes when output holds this rank's result; it fails
  // with a DeviceError of MPI, or with the error of an `after` event (the collective is still posted, with
  // whatever the input holds, so that the other ranks' calls still match). DeviceError for a rank list
  // prepare_collectives did not see.
  struct CollectiveCall {
    Collective collective = Collective::allreduce;  // allreduce, reduce_scatter, allgather or broadcast
    ReduceOp op = ReduceOp::sum;
    DType dtype = DType::float32;
    std::vector<int> ranks;  // the tuple's ranks, in tuple order: the communicator's order
    const void* input = nullptr;
    void* output = nullptr;
    size_t count = 0;  // elements of each rank's input (a reduce_scatter's output: count / ranks)
    int root = 0;      // a broadcast's: the index in ranks whose value every rank takes
  };
  virtual Event collective(Device& on, const CollectiveCall& call, std::vector<Event> after);
  // Makes the communicators of these rank lists (each a list of distinct ranks in tuple order), once each: a
  // collective over all ranks (MPI_Comm_split), so every rank calls it with the same lists in the same order
  // (the executor does, after the ranks agreed on a program's plan). ResourceError beyond 64 lists.
  virtual void prepare_collectives(const std::vector<std::vector<int>>& rank_lists) { (void)rank_lists; }

  // Collectives: every rank calls them in the same order, naming the call (`what`: "run 7 of a program
  // across ranks"). A rank at another call is a ConfigError on every rank naming the call; a rank
  // that does not arrive within timeout (dead, stopped, elsewhere) a TimeoutError.
  // agree: returns when every rank passed the same value (a plan's hash); else ConfigError naming the
  // ranks that differ.
  virtual void agree(const std::string& what, uint64_t value, std::chrono::milliseconds timeout) = 0;
  // allgather: every rank's value, in rank order.
  virtual std::vector<std::string> allgather(const std::string& what, const std::string& value,
                                             std::chrono::milliseconds timeout) = 0;
  // Makes progress on this rank's transfers from the calling thread (tests those posted, completes
  // their events); whether any moved. Non-blocking. The thread that waits for a run calls it
  // (wait_across_ranks), so a message that arrives is seen at once, not at a progress thread's next poll.
  virtual bool progress() { return false; }
  // A thread that drove this rank's transfers (a run's wait) gave up before they completed (a timeout, a stop,
  // an item's error): the transport's own thread tests them from now on, every millisecond, until none is left.
  // (While a run is waited for, its waiting thread alone tests them: no other thread takes a core from it.)
  virtual void unattended() {}
  // A call of agree or allgather that ends early (a timeout; a stop request, core/interrupt.hpp, which
  // ends the wait within a millisecond with Interrupted) leaves its requests pending: they are parked
  // with their buffers, which a late rank's message may still fill, until they complete. How many
  // calls are parked now (those completed are dropped); the job's end skips MPI_Finalize while any is.
  virtual size_t parked() { return 0; }
  // Ends every rank of the job with `status` (MPI_Abort).
  [[noreturn]] virtual void abort(int status) = 0;
};

// The cluster of this process, started at the first call (MPI_Init under mpirun); null when ringrt
// runs as one process. Throws, at this call and every later one, what starting it threw: DeviceError
// (MPI failed), ConfigError (the ranks differ in runtime.ranks_per_host), TimeoutError (a rank never
// started within the watchdog).
Cluster* cluster();

// Waits until e (work of a run across ranks) completes or `deadline` passes; whether it completed (its
// error rethrown, as Event::wait_for does). The waiting thread drives the transfers (Cluster::progress):
// it spins (yielding) testing them while they move and for 2 ms after (an MPI collective moves
// nothing visible until it completes, and sleeping between tests stalls its rounds: 4 MiB over 2 ranks took 1.6x
// longer with 200 us), then tests every 50 us, so an oversubscribed host is not busy-polled for long. A stop request
// (core/interrupt.hpp) ends the wait with Interrupted (the run's memory stays with its items until they end).
bool wait_across_ranks(const Event& e, std::chrono::steady_clock::time_point deadline);

// Drives this rank's transfers from the calling thread until every event of `after` completed or
// `deadline` passed: the executor calls it before submitting a small kernel that waits for transfers, so
// that the kernel runs inline on the submitting thread as soon as its data arrives, not on its device's
// queue thread after a wake-up. Errors, a timeout and a stop only end it early: the run's wait reports them.
void settle_across_ranks(const std::vector<Event>& after, std::chrono::steady_clock::time_point deadline) noexcept;

// For runtime/mpi/: the factory cluster() calls once (it returns null when not under mpirun).
void register_cluster_factory(std::unique_ptr<Cluster> (*factory)());

}  // namespace ringrt
