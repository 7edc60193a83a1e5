// The executor: runs a planned schedule on the devices (docs/architecture.md "The engine"; on GPUs, docs/gpu-path.md).
//
// A Program is a schedule made ready to run: each kernel item lowered to the kernel IR and compiled
// for its devices, each copy item resolved to a byte range. Running it is three steps: bind (the
// run's memory: tensor storages for inputs, the caller's blocks for the result, cached device memory
// for intermediates and scratch slots, aliases resolved as rewrite/plan/memory_plan.hpp defines
// them, copies patched into peer reads, or into peer outputs of the kernel they copy), submit (every item to its
// device's in-order queue after the events of the items it waits for, so independent copies and kernels on different
// devices overlap) and wait (a watchdog).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "rewrite/interpreter.hpp"
#include "rewrite/plan/memory_plan.hpp"
#include "rewrite/plan/schedule.hpp"
#include "runtime/device/device.hpp"
#include "runtime/engine/pending.hpp"

namespace ringrt {

// One device's memory of a value.
struct Block {
  Device* device = nullptr;
  void* ptr = nullptr;
  size_t bytes = 0;
};

// The device memory of one BUFFER (id): a block per device of its device spec, numel elements each.
// Returned to the device's allocator cache when the last holder lets go, or, while work that uses it is
// in flight (pending()), once that work has completed (runtime/engine/pending.hpp).
class DeviceStorage {
 public:
  DeviceStorage(int64_t id, const DeviceSpec& devices, DType dtype, int64_t numel);  // throws DeviceError
  ~DeviceStorage();
  DeviceStorage(const DeviceStorage&) = delete;
  DeviceStorage& operator=(const DeviceStorage&) = delete;

  int64_t id() const { return id_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return numel_; }
  const std::vector<Block>& blocks() const { return blocks_; }
  // One flat HostBuffer per device. A block of another rank's device is a DeviceError, or zeros with
  // remote_as_zeros (for reading this rank's shards of a tensor that spans ranks).
  std::vector<HostBuffer> to_host(bool remote_as_zeros = false) const;
  // Elements [first, first + out.numel()) of block b (this process's device) into out, whose dtype is
  // this storage's. Throws InternalError for a range or dtype that does not fit, DeviceError for
  // another rank's block.
  void read(size_t b, int64_t first, HostBuffer& out) const;
  void from_host(const std::vector<HostBuffer>& data);  // one per device (or one for all): write()
  // data[i]'s bytes into block i (one buffer for every block when data has one element), each exactly
  // one block's size (InternalError otherwise), read before it returns. The copies wait, on the devices,
  // for the pending work (write after read), run at once on the devices (Device::copy_in_async, from
  // TBB's threads for 1 MiB and more), and become the pending work where they are still in flight (GPUs:
  // staged through pinned buffers). Another rank's blocks are skipped (that rank writes its own).
  void write(const std::vector<const HostBuffer*>& data);

  // The work in flight that last read or wrote this storage (an asynchronous run, a host write), or
  // null once none may be. Work that uses the storage after it waits for it (pending.hpp). Thread-safe.
  std::shared_ptr<const PendingWork> pending() const;
  void set_pending(std::shared_ptr<const PendingWork> work);
  // Waits on the host until the pending work has completed (at most runtime.watchdog_s: TimeoutError
  // naming the late item; rethrows the work's error). to_host, read and from_host call it first.
  void wait_pending() const;

 private:
  int64_t id_;
  DType dtype_;
  int64_t numel_;
  std::vector<Block> blocks_;
  mutable std::mutex mu_;                               // pending_
  mutable std::shared_ptr<const PendingWork> pending_;  // dropped by wait_pending once complete
  mutable std::atomic<bool> has_pending_{false};        // pending_ set: pending() takes no lock without it
};

// Sets the watchdog (runtime.watchdog_s; watchdog_timeout() in core/params.hpp reads it) for the process.
void set_watchdog_timeout(std::chrono::milliseconds timeout);

using StorageLookup = std::function<std::shared_ptr<DeviceStorage>(int64_t buffer_id)>;
struct RunSlots;  // a run's real memory (binding.hpp)

struct ExecOptions {
  std::chrono::milliseconds timeout = watchdog_timeout();  // an item not done by then is a TimeoutError
  // The storages of the caller's output blocks: they learn of a run still in flight (set_pending), and
  // when run() ends early (a timeout, an item's error) they are released only after every item of the
  // run has finished, so a late item never writes into memory handed out again.
  std::vector<std::shared_ptr<DeviceStorage>> outputs;
  // What keeps the program alive (its cache entry): a run may return before its work completes only
  // with one (the work in flight names its items from the program when it is late).
  std::shared_ptr<const void> owner;
  // The values of the program's run-time scalars (codegen::KernelScalar): parameter i's stored bytes,
  // zero-extended to a word; at least Program::scalar_count() of them. Kernels read them as
  // arguments, so a new value runs the same compiled code (a graph replays with its nodes' words set).
  std::vector<uint64_t> scalars;
};

class Program {
 public:
  // Lowers and compiles every kernel of plan, which realizes roots. Throws CompileError.
  Program(ItemPlan plan, std::vector<UOp> roots);
  ~Program();  // a graph's scratch memory goes back once its last launch completed
  // bind + submit + wait: runs the items; root i's value lands in outs[i] (a block per device of the root), or for an
  // ASSIGN root in its destination's storage (outs[i] unused). Blocks until done; throws TimeoutError
  // naming the first item that did not finish within options.timeout (the device queue it sits on
  // stays blocked until it finishes; everything else stays usable), or the error an item raised.
  // Asynchronous runs (every device of the program asynchronous, runtime.async on, no trace recording,
  // one rank, options.owner set): returns once every item is enqueued, with the work in flight, which
  // every input and output storage then holds as pending (pending.hpp); else returns null.
  // Either way the run's first items wait for the pending work of its storages (fences).
  std::shared_ptr<const PendingWork> run(const std::vector<std::vector<Block>>& outs, const StorageLookup& inputs,
                                         const ExecOptions& options = {}) const;
  const ItemPlan& plan() const { return plan_; }
  // How many run-time scalars its kernels read: ExecOptions::scalars needs this many values.
  size_t scalar_count() const { return scalar_count_; }
  // Whether every device of its items queues asynchronously (Device::asynchronous): a run may then stay
  // in flight, given an owner (ExecOptions::owner).
  bool asynchronous() const { return asynchronous_; }
  // How many binding plans (binding.hpp) the process's programs worked out: each program once, and again
  // whenever a run's inputs, outputs' devices or aliasing, runtime.peer_reads or runtime.peer_writes
  // differ from its last plan's. Thread-safe.
  static size_t bindings_built();

 private:
  // The constructor's work (executor.cpp): each item's kernel prepared and compiled per device.
  void prepare();
  struct PreparedKernel;
  struct BindingPlan;                              // the binding of a run's items, planned once (binding.hpp)
  class Binding;                                   // works a BindingPlan out (binding.cpp)
  class RunMemory;                                 // the memory of one run (run_memory.hpp)
  using Events = std::vector<std::vector<Event>>;  // per item, the events of its work on the devices
  struct GraphRun;                                 // the program's run recorded as a graph (graph_run.cpp)
  // The binding plan of a run's facts (the last one when they match), with the run's fixed slots.
  std::shared_ptr<const BindingPlan> binding(const std::vector<std::vector<Block>>& outs, const StorageLookup& inputs,
                                             RunSlots& slots) const;
  // run() in three steps. bind: the run's memory (inputs, outputs, intermediates, scratch slots) and
  // the binding plan it follows (peer reads patched in). Throws DeviceError when memory runs out.
  std::unique_ptr<RunMemory> bind(const std::vector<std::vector<Block>>& outs, const StorageLookup& inputs) const;
  // run() as a graph (runtime.graphs, graph_run.cpp): recorded on the first run of a binding plan, with
  // scratch memory of its own, then launched with one call, its nodes' pointers changed where this run's
  // inputs and outputs differ; null when the program's work cannot be one graph (another backend, a
  // copy staged through the host, too much scratch): the caller runs it item by item.
  std::shared_ptr<const PendingWork> run_graph(const std::vector<std::vector<Block>>& outs, const StorageLookup& inputs,
                                               const ExecOptions& options) const;
  // The graph of `plan`'s binding recorded into `graph`, with its own scratch (added to slots.temps);
  // null when a node cannot be added. Throws DeviceError from the platform.
  std::unique_ptr<GraphRun> record(std::unique_ptr<DeviceGraph> graph, std::shared_ptr<const BindingPlan> plan,
                                   RunSlots& slots) const;
  // submit: every item to its device's in-order queue after the events of the items it waits for
  // (an elided copy passes those on; an item that waits for none of the run's, for `fences`); returns at once.
  Events submit(RunMemory& memory, const std::vector<Event>& fences) const;
  // The last event of each device queue in a submitted run (the queues are in order: once these are
  // done, the run is).
  std::vector<Event> tails(const Events& events, const RunMemory& memory) const;
  // wait: every device queue's last event, then every event, by options.timeout (TimeoutError naming
  // the first item not done), then the run's memory is freed; on an error it is freed by the last item
  // to finish instead.
  void wait(const Events& events, RunMemory& memory, const ExecOptions& options) const;
  // The TimeoutError message of a run bound by `plan` whose events are `events` after `timeout`: the
  // first item not done, on the device of its launch that is not (and, across ranks, the transfer of
  // run `run`).
  std::string late_item(const Events& events, const BindingPlan& plan, uint64_t run,
                        std::chrono::milliseconds timeout) const;
  std::vector<Event> wait_list(size_t i, const Events& events, bool peer_writer) const;
  void choose_peer_writes();  // PreparedKernel::peer_copies of every kernel (the constructor)
  std::vector<Event> submit_copy(size_t i, RunMemory& memory, const std::vector<Event>& after) const;  // none if empty
  std::vector<Event> submit_kernel(size_t i, RunMemory& memory, const std::vector<Event>& after) const;  // per device
  // a fused collective item's launches, one per device (collective_run.cpp)
  std::vector<Event> submit_collective(size_t i, const BindingPlan& plan, const RunSlots& slots,
                                       const std::vector<Event>& after) const;
  void add_launches(size_t i, RunMemory& memory, std::vector<GroupLaunch>& group) const;  // kernel item i's, per device
  bool waits_for(size_t i, bool peer_writer, const std::vector<char>& marked) const;
  // A finished run's work for the recording Trace (runtime/api/trace.hpp): each kernel launch and copy
  // that ran here, with the times its backend stamped.
  void record_trace(const Events& events, const RunMemory& memory) const;

  ItemPlan plan_;
  std::vector<UOp> roots_;
  std::vector<std::shared_ptr<PreparedKernel>> kernels_;  // per item (null for copies)
  size_t scalar_count_ = 0;                               // 1 + the largest KernelScalar::slot of its kernels (0: none)
  bool spans_ranks_ = false;     // items on devices of several ranks of an SPMD job (runtime/device/cluster.hpp)
  bool asynchronous_ = false;    // every device of every item asynchronous (Device::asynchronous), this rank's
  bool has_collective_ = false;  // a fused collective item (rewrite/collective.hpp): never a graph
  std::vector<std::vector<int>> mpi_ranks_;  // its MPI collectives' rank lists (Cluster::prepare_collectives)
  uint64_t plan_hash_ = 0;                   // what the ranks compare before its first run (spans_ranks_ only)
  mutable std::atomic<bool> agreed_{false};  // the ranks agreed on plan_hash_ (its first run across ranks)
  MemoryPlan memory_;    // write sites and peer-read candidates (rewrite/plan/memory_plan.hpp), planned once
  struct BindingCache {  // the last binding plan (one: a run whose facts differ replaces it)
    std::mutex mu;
    std::shared_ptr<const BindingPlan> plan;
  };
  std::unique_ptr<BindingCache> bindings_ = std::make_unique<BindingCache>();
  mutable std::mutex graph_mu_;  // graph_, no_graph_
  mutable std::unique_ptr<GraphRun> graph_;
  mutable bool no_graph_ = false;  // this program's work cannot be one graph: never tried again
};

}  // namespace ringrt
