// Devices: the small interface every backend implements, and the registry that resolves names
// ("CPU:3", "HIP:0"). Reference: ggml-backend-impl.h (registry -> device -> stream -> buffer),
// tinygrad device.py (Allocator, Compiled), celerity's backend ordering comments.
//
// Ordering model. Each device owns an in-order queue. `submit` enqueues work and returns an Event
// that completes when the work has run; work on one queue runs in submission order; work waits for
// the events it is given before it starts, so cross-device order is expressed with events. Host-side
// calls (allocate, free, copy_in, copy_out) are synchronous and thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel.hpp"
#include "core/params_internal.hpp"
#include "core/rank_info.hpp"
#include "rewrite/collective.hpp"
#include "runtime/device/memory.hpp"

namespace ringrt {

// Completion of submitted work. Cheap to copy; all copies share one state. Thread-safe.
class Event {
 public:
  // When the work ran, for a Trace (runtime/api/trace.hpp): steady_clock time points.
  struct Times {
    std::chrono::steady_clock::time_point start, end;
  };

  // A backend's handle on the device work behind an event (the hip backend: a hipEvent_t recorded
  // after the work, or the gate of host work in its queue), attached when the work is enqueued on the
  // device, so that a queue of the same backend can wait for it on the device instead of on the host,
  // and so that a waiter can poll the device itself instead of waiting for the backend to complete
  // the event. Backends downcast it to their type.
  struct Native {
    virtual ~Native() = default;
    // What the device reports of the work now: `complete` (ran without an error: done() and waits
    // may return before the backend completes the event), `pending`, `failed` (the event will
    // complete with an error: wait for it), or `unknown` (the device cannot say: wait for the event).
    // Quick and thread-safe; never blocks or throws. Default: unknown.
    enum class Poll { unknown, pending, complete, failed };
    virtual Poll poll() const noexcept { return Poll::unknown; }
    // When the work ran on the device, where the backend measures it itself (the hip backend's timing
    // events, while trace_timing() is on); nullopt otherwise or while it has not run.
    virtual std::optional<Times> times() const { return std::nullopt; }
  };

  Event();
  // Done: completed by the backend, or reported complete by the device (Native::poll). Never blocks.
  bool done() const;
  // Done without an error: waiting for it is nothing (a wait list may leave it out). Never blocks.
  bool succeeded() const;
  // Blocks until done or the timeout passes; false on timeout. Rethrows the work's exception. With a
  // native handle that can poll, spins on it briefly (50 us), then sleeps in growing slices (up to 1 ms)
  // between polls, woken early when the backend completes the event.
  bool wait_for(std::chrono::milliseconds timeout) const;
  void set_done(std::exception_ptr error = nullptr) const;  // for backends

  // For backends: attaches the handle (once, before set_done or never) and wakes wait_ready.
  void set_native(std::shared_ptr<const Native> native) const;
  // The attached handle; null for host work of the cpu backend, for work not enqueued yet, and for
  // the cpu backend.
  std::shared_ptr<const Native> native() const;
  // Blocks until the event is done or has a native handle, or the timeout passes; false on timeout.
  // Never throws (wait_for(0ms) afterwards rethrows the work's error).
  bool wait_ready(std::chrono::milliseconds timeout) const;
  // Runs fn once the event is done, error or not: on the thread that completes it, after every callback
  // registered before it, or at once on this thread when it is done and its callbacks have run. fn must
  // be quick and must not throw (it is called noexcept).
  // (Completion by the backend: a device that reported the work complete through Native::poll runs
  // fn only when the backend completes the event, soon after.)
  void on_done(std::function<void()> fn) const;
  // Equal for copies of one event (they share one state): for removing duplicates from wait lists.
  const void* identity() const { return s_.get(); }

  // Backends stamp the times, while trace_timing() is on, before set_done (cpu: around the work on
  // the thread that runs it; hip: see hip_device.hpp "Timing"; MPI transfers: from ready to done).
  void set_times(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point end) const;
  // The stamped times, else the native handle's (Native::times), else nullopt.
  std::optional<Times> times() const;

 private:
  struct State;
  std::shared_ptr<State> s_;
};

// A kernel compiled for one device kind; launched with one pointer per buffer (output first, then
// the kernel's inputs in Kernel::inputs order) and the device's _device_num.
class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  virtual const codegen::Kernel& kernel() const = 0;
};

class Device;

// A graph of device work recorded once and launched many times (a CUDA graph, a hipGraph: the launch
// costs one call, not one per piece of work): kernel launches and copies on devices of one backend, each
// after the nodes it depends on. Built by one thread, then instantiated; its nodes' pointers can be
// changed between launches (set_kernel, set_copy) without building it again. Launches run in order on
// the queue of the device that made it (Device::make_graph): a launch starts after the one before it
// completed, and after its `after` events. Not thread-safe: one caller at a time.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  // Adds `kernel` launched on `device` with these buffers (the output, the kernel's inputs, its peer
  // outputs) and _device_num, after the nodes `deps`; its node. nullopt when this graph cannot hold it
  // (another backend's device): the caller runs the work without a graph then. Throws DeviceError.
  virtual std::optional<size_t> add_kernel(Device& device, const CompiledKernel& kernel, const std::vector<void*>& bufs,
                                           int32_t dnum, const std::vector<size_t>& deps) = 0;
  // Adds a copy of `bytes` from src on `from` to dst on `to`, after `deps`; nullopt when the graph cannot
  // hold it (a copy staged through the host). Throws DeviceError.
  virtual std::optional<size_t> add_copy(Device& to, Device& from, const void* src, void* dst, size_t bytes,
                                         const std::vector<size_t>& deps) = 0;
  // After the last add: makes the graph launchable. Throws DeviceError.
  virtual void instantiate() = 0;
  // For later launches: kernel node `node`'s buffers, copy node `node`'s pointers. Throws DeviceError.
  virtual void set_kernel(size_t node, const std::vector<void*>& bufs) = 0;
  virtual void set_copy(size_t node, const void* src, void* dst) = 0;
  // Launches every node, after `after` (and after the previous launch); the Event completes when all
  // nodes have run. Throws DeviceError when the device is shut down or poisoned.
  virtual Event launch(const std::vector<Event>& after) = 0;
  virtual size_t nodes() const = 0;
};

// One launch of a group (Device::launch_group): `kernel` on `device` with these buffers and _device_num.
struct GroupLaunch {
  Device* device;
  const CompiledKernel* kernel;
  std::vector<void*> bufs;
  int32_t dnum;
};

// The cross-device barriers and flags of one fused collective item (rewrite/collective.hpp), shared by
// its launches on every device and kept across its calls: arrivals and signals count up and are never
// reset. Barrier k of a call whose first barrier is `base` is passed once n (base + k + 1) arrivals
// happened; a wait for k signals of device p in a call whose devices signalled signal_base times each
// before it, once p's flag reached signal_base + k. Thread-safe; runtime/device/collective.cpp.
class CollectiveBarrier {
 public:
  explicit CollectiveBarrier(int64_t ndev) : ndev_(ndev), flags_(static_cast<size_t>(ndev)) {}
  // Arrives at barrier `index` (base + k) and waits, spinning briefly, then sleeping, until every
  // device arrived. Throws TimeoutError naming `who` when that takes longer than `timeout` (the
  // barrier is broken then: every later wait on it throws DeviceError at once).
  void arrive_and_wait(uint64_t index, std::chrono::milliseconds timeout, const std::string& who);
  bool broken() const { return broken_.load(std::memory_order_acquire); }
  // A device's launch failed before its barriers: breaks the barrier and wakes every waiter.
  void abort();
  // A call that met at its `barriers` barriers without this counter (the cpu backend's phases on one
  // thread) counts as every device's arrival at each, so the next call's barriers find it in step.
  void pass(int64_t barriers, int64_t signals = 0);
  // Device d's flag counts one more signal (ring_fused's steps), waking its waiters.
  void signal(int64_t d);
  // Waits, spinning briefly, then sleeping, until device `peer`'s flag reached `target`. Throws
  // TimeoutError naming `who` after `timeout` (breaking the barrier), DeviceError once it is broken.
  void wait_signals(int64_t peer, uint64_t target, std::chrono::milliseconds timeout, const std::string& who);
  // The barrier's word in memory every device of a backend can reach (the hip backend: mapped pinned
  // memory its kernels count arrivals into), made by `make` on first use and kept with the barrier.
  void* device_word(const std::function<std::shared_ptr<void>()>& make);

 private:
  int64_t ndev_;
  std::atomic<uint64_t> arrived_{0};
  std::vector<std::atomic<uint64_t>> flags_;  // per device: its signals
  std::atomic<int> sleepers_{0};              // wait_signals' sleepers: a signal takes the lock only for them
  std::atomic<bool> broken_{false};
  std::mutex mu_;  // sleepers (cv_), word_
  std::condition_variable cv_;
  std::shared_ptr<void> word_;
};

// One device's launch of a fused collective (Device::launch_collective): the steps fused_steps gives
// it (rewrite/collective.hpp) over pointers to every device's output and input, in tuple order.
struct CollectiveLaunch {
  Device* device;
  int32_t rank;                                 // its index in the tuple
  std::vector<FusedStep> steps;                 // rewrite/collective.hpp
  std::vector<const CompiledKernel*> combines;  // per step: a combine step's kernel, else (an empty one) null. On
                                                // (out, in_0 .. in_{n-1}[, the n-1 other outputs]) (combine_buffers),
                                                // each at the step's first element, it folds the n inputs in tuple
                                                // order over end - begin elements
  std::vector<void*> outputs, inputs;           // every device's block, tuple order
  std::vector<void*> scratches;                 // every device's scratch block, tuple order, where the steps use one

  void* scratch() const { return scratches.empty() ? nullptr : scratches.at(static_cast<size_t>(rank)); }
};

// The buffers of launch l's combine step s (FusedStep::combine): its output (this device's at element
// s.begin - s.out_shift, or its scratch at s.begin), every device's input at s.begin, and with all_outputs
// the outputs of the devices after it in the tuple (wrapping) at s.begin; elements of `itemsize` bytes.
// A ring combine (s.ring()): its output, then device s.peer's input, scratch or output at s.begin, then
// this device's input at s.begin.
std::vector<void*> combine_buffers(const CollectiveLaunch& l, const FusedStep& s, size_t itemsize);

// A call of a fused collective: what every launch shares.
struct CollectiveCall {
  size_t itemsize = 0;                         // bytes per element
  std::shared_ptr<CollectiveBarrier> barrier;  // the item's
  uint64_t base = 0;                           // the index of this call's first barrier
  uint64_t signal_base = 0;                    // each device's signals in the item's earlier calls
  std::string name;                            // for errors: "item 3 (allreduce twoshot on (CPU:0, CPU:1))"
  DType dtype = DType::float32;                // of every input and output
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const std::string& name() const = 0;

  // Memory. allocate returns bytes of device memory, pre-faulted, from a per-device cache (a freed
  // block of the same size is reused). Throws DeviceError when memory runs out.
  virtual void* allocate(size_t bytes) = 0;
  virtual void free(void* ptr, size_t bytes) = 0;
  virtual void copy_in(void* dst, const void* host, size_t bytes) = 0;   // synchronous
  virtual void copy_out(void* host, const void* src, size_t bytes) = 0;  // synchronous
  // Queue a copy of `bytes` from host memory into dst, after `after`. The host bytes are read before it
  // returns (the caller may reuse them at once); the Event completes once they are in device memory.
  // Thread-safe (host writes to several devices run concurrently). Default: waits for `after` on the
  // host (rethrowing their errors; TimeoutError past runtime.watchdog_s), then copy_in; a done Event. The hip backend
  // stages the bytes through pinned buffers, chunk by chunk, so that its DMA of one chunk overlaps the copy of the
  // next.
  virtual Event copy_in_async(void* dst, const void* host, size_t bytes, std::vector<Event> after);
  // What allocate and free have handed out and cached (runtime/device/memory.hpp), a thread-safe snapshot.
  // Default: all zero, for a backend that does not count.
  virtual MemoryStats memory_stats() const { return {}; }
  virtual void reset_peak_memory() {}

  // Compiles (through the on-disk cache) a kernel for this device. Throws CompileError.
  virtual std::shared_ptr<CompiledKernel> compile(const codegen::Kernel& kernel) = 0;
  // Several kernels at once (one compiler run where the backend can), in the same order.
  virtual std::vector<std::shared_ptr<CompiledKernel>> compile_all(const std::vector<codegen::Kernel>& kernels) {
    std::vector<std::shared_ptr<CompiledKernel>> out;
    for (const auto& k : kernels) out.push_back(compile(k));
    return out;
  }

  // Queue work on this device, to start after `after` completes.
  // launch: the kernel over all its elements with _device_num = dnum.
  virtual Event launch(const CompiledKernel& k, std::vector<void*> bufs, int32_t dnum, std::vector<Event> after) = 0;
  // launch_group: launches on devices of this backend (this one among them) that do not depend on each
  // other (the executor holds back kernel items whose events are all done and launches them together),
  // each after `after`; their events, in order. By default each device's launch() in turn; the cpu
  // backend runs small ones that may all start at once as one parallel loop (one fork and join for the
  // group, not one per launch). Throws what launch() throws.
  virtual std::vector<Event> launch_group(std::vector<GroupLaunch> launches, const std::vector<Event>& after) {
    std::vector<Event> out;
    for (GroupLaunch& l : launches) out.push_back(l.device->launch(*l.kernel, std::move(l.bufs), l.dnum, after));
    return out;
  }
  // launch_collective: a fused collective, one launch per device of its tuple (this one among them),
  // each after `after`; their events, in order. Default: step by step from outside (runtime/device/
  // collective.cpp): each step a launch or copy_from on its device, a barrier the events of every
  // device's steps before it, so any backend runs it. The cpu backend runs each device's steps as one
  // task on that device's queue thread, the barriers on call.barrier (device threads meeting at atomic
  // counters). Throws what launch() and copy_from throw.
  virtual std::vector<Event> launch_collective(std::vector<CollectiveLaunch> launches, const CollectiveCall& call,
                                               const std::vector<Event>& after);
  // copy `bytes` from src on device `from` into dst on this device (peer access where possible).
  virtual Event copy_from(Device& from, const void* src, void* dst, size_t bytes, std::vector<Event> after) = 0;
  // Any host function, in queue order (tests; the watchdog test blocks a queue with one).
  virtual Event submit(std::function<void()> fn, std::vector<Event> after) = 0;
  // A new, empty graph of this backend's work, launched on this device's queue; null for a backend
  // without graphs (the cpu backend: the default).
  virtual std::unique_ptr<DeviceGraph> make_graph() { return nullptr; }
  // A marker in queue order, for timing (DeviceClock, runtime/api/tensor.hpp): its Event completes once
  // everything queued before it has run, and its times() end is when, on the device's own clock (the
  // hip backend: a timing event; differences of two markers of one device are the GPU's elapsed time).
  // Default: a host function that stamps the host's clock.
  virtual Event marker();
  // Waits until everything submitted so far has run.
  virtual void synchronize() = 0;
  // Waits at most `timeout` until everything submitted so far has run; false when some of it still
  // runs then. Never rethrows the work's errors. The registry drains every device at exit with it
  // (runtime/device/registry.cpp). Default: synchronize(), errors swallowed, for a backend that
  // cannot bound the wait.
  virtual bool drain(std::chrono::milliseconds timeout) {
    (void)timeout;
    try {
      synchronize();
    } catch (...) {  // an error of the work: it has stopped all the same
    }
    return true;
  }
  // True when kernels on this device may read and write `peer`'s memory in place (the executor then
  // reads a copy's source directly instead of copying it, runtime_params().peer_reads, and lets a kernel
  // write its result's copies into peers itself, runtime_params().peer_writes). Default: false.
  // cpu: every cpu device (one address space); hip: a HIP device on the same GPU or on one with peer access.
  virtual bool can_read_peer(const Device& peer) const {
    (void)peer;
    return false;
  }
  // True when work this device queues may still run after the calls that queued it returned and the
  // engine has nothing more to do than wait (the hip backend: GPU streams). The engine then returns from
  // a realize once its work is enqueued and waits only where the host needs the results
  // (runtime/engine/realize.cpp). Default: false (the cpu backend: a realize returns once its work ran).
  virtual bool asynchronous() const { return false; }
  // The rank whose process runs this device's work when that is another process of an SPMD job (a
  // RemoteDevice, runtime/device/remote.hpp); -1 for a device of this process.
  virtual int remote_rank() const { return -1; }
  // True when allocate's memory is host memory that another thread may read and write directly (the
  // cpu backend): MPI then sends from it and receives into it without staging. Default: false.
  virtual bool host_addressable() const { return false; }
  // Host memory that this device's transfers between ranks are staged through (copy_out into it, MPI
  // from it; MPI into it, copy_in from it): at least `bytes`, pinned where the backend can
  // (hipHostMalloc) and kept for reuse. Give it back with free_staging(ptr, bytes). Default: operator new.
  virtual void* allocate_staging(size_t bytes) { return ::operator new(bytes); }
  virtual void free_staging(void* ptr, size_t bytes) noexcept {
    (void)bytes;
    ::operator delete(ptr);
  }
};

// Whether backends stamp Event::times on the work they run: on while a Trace records
// (runtime/api/trace.hpp), else off, and then a backend pays one relaxed atomic load per piece of work.
bool trace_timing();
void set_trace_timing(bool on);  // for Trace

// The largest kernel output or copy, in bytes, that inline_small runs on the launching thread.
inline constexpr size_t kInlineBytes = size_t{1} << 20;
// ---- the registry: resolves device names; backends register with it (it includes none of them).

// A backend: the devices of one kind ("CPU", "HIP"), named "KIND:0" .. "KIND:count()-1".
struct Backend {
  std::string kind;
  std::function<int()> count;                              // how many devices exist now
  std::function<std::unique_ptr<Device>(int index)> make;  // device `index`, on first use
};
// Adds a backend (at start-up; tests add their own). Throws DeviceError for a kind registered
// already. The built-in backends (cpu; hip when built) are registered before the first lookup.
void register_backend(Backend backend);
// The device named `name` ("CPU:3", "HIP:0"), created on first use. Throws DeviceError naming it and
// the devices that exist.
Device& device(const std::string& name);
// The names of every device of `kind` that exists now ("CPU:0", ...); empty for an unknown kind.
std::vector<std::string> device_names(const std::string& kind);
// For work that outlives the call that submitted it (a run the watchdog gave up on): registers once more
// the exit handler that waits until every device's queue is empty, so that it runs before the
// destructor of every static constructed so far (see runtime/device/registry.cpp). Thread-safe.
void drain_devices_at_exit();
// This process's rank and host (runtime/device/remote.cpp; the public API declares it for users in
// runtime/api/devices.hpp, with the device lists, which are defined in runtime/device/registry.cpp).
const RankInfo& rank_info();

// The number of virtual cpu devices (default 4; raised on demand by cpu_devices(n); never lowered).
// Throws DeviceError for n < 1. Implemented by the cpu backend (runtime/cpu/).
void set_cpu_device_count(int n);

}  // namespace ringrt
