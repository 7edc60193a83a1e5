// The hip backend (see hip_device.hpp for the design: streams, helper threads, memory, peer copies,
// logical devices). Memory and peer access are in hip_memory.cpp.
#include "runtime/hip/hip_device.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>

#include "codegen/compiler.hpp"
#include "codegen/render.hpp"
#include "rewrite/errors.hpp"
#include "runtime/hip/hip_check.hpp"
#include "runtime/hip/hip_memory.hpp"
#include "runtime/hip/hip_support.hpp"

namespace ringrt {

namespace {

using namespace std::chrono_literals;
using namespace hip_detail;

// How long shutdown waits for the work a device has issued (its issuer thread's current task, then its
// GPU work) before it abandons it and leaks the device instead (hip_device.hpp "Teardown"). Every
// kernel and copy of ringrt takes well under a second, and the registry has drained the queues at exit
// already (runtime/device/registry.cpp kExitDrain), so past this something is stuck (a hung kernel, a
// host function that never returns).
constexpr auto kShutdownWait = 3s;

class HipDevice final : public Device {
 public:
  // The logical device HIP:index on GPU `gpu` (hip_physical_gpu).
  HipDevice(int index, int gpu)
      : index_(index),
        gpu_(gpu),
        name_(fmt::format("HIP:{}", index)),
        pinned_(name_),
        blocks_(gpu, name_, pinned_),
        pool_(std::make_shared<EventPool>(name_)) {
    gpu_user_added(gpu_);  // release() says it is gone
    try {
      DeviceGuard guard(gpu_, name_);
      hipDeviceProp_t props{};
      RINGRT_HIP_CHECK(name_, hipGetDeviceProperties(&props, gpu_));
      arch_ = gpu_arch_name(props);
      const HipTopology& t = hip_topology();  // the logical devices on this GPU share its cache cap
      int on_gpu = (static_cast<int>(t.names.size()) - gpu_ + t.gpus - 1) / std::max(t.gpus, 1);
      blocks_.set_cap(hip_launch::device_cache_cap(props.totalGlobalMem, on_gpu));
      for (hipStream_t* s : {&compute_, &copy_, &host_})
        RINGRT_HIP_CHECK(name_, hipStreamCreateWithFlags(s, hipStreamNonBlocking));
    } catch (...) {
      release();
      throw;
    }
    issuer_ = std::thread([this] { issue_loop(); });
    completer_ = std::thread([this] { complete_loop(); });
    // After HIP is initialized: see register_live. Keyed by the Device, as DeviceOwner unregisters it.
    register_live(static_cast<const Device*>(this), [this] { shutdown(); });
  }

  ~HipDevice() override { shutdown(); }  // (DeviceOwner leaks a device whose shutdown abandoned work)

  // Stops the device, bounded by kShutdownWait: work queued but not issued yet fails at once (its
  // Event completes with a DeviceError saying the device was shut down), the issuer finishes the task
  // it is on (a wait for `after` events gives up), then the GPU work issued so far is waited for by
  // polling its last event (hipEventQuery); then the threads are joined and everything freed. Past
  // the deadline it logs that work was abandoned, detaches the threads still busy and frees nothing.
  // Later work is refused with a DeviceError. True when it stopped cleanly; false when it abandoned
  // work: the object is then still used by its threads and must never be destroyed. Idempotent (later
  // calls return the first one's result); never throws. Called by DeviceOwner's destructor and by
  // the exit handler (register_live). Must not be called from work submitted to this device.
  bool shutdown() noexcept {
    std::call_once(shutdown_once_, [this] { clean_ = stop(); });
    return clean_;
  }

  HipDevice(const HipDevice&) = delete;
  HipDevice& operator=(const HipDevice&) = delete;

  const std::string& name() const override { return name_; }

  // A HipDevice on the same GPU (one address space), or on a GPU this one has peer access to (enabled
  // here on first use and cached, hip_memory.hpp peer_access: a GPU that cannot gets false).
  bool can_read_peer(const Device& peer) const override {
    const auto* p = dynamic_cast<const HipDevice*>(&peer);
    return p && peer_access(gpu_, p->gpu_, name_);
  }

  // ---- memory: synchronous, thread-safe

  void* allocate(size_t bytes) override { return blocks_.allocate(bytes); }
  void free(void* ptr, size_t bytes) override { blocks_.free(ptr, bytes); }
  MemoryStats memory_stats() const override { return blocks_.stats(); }
  void reset_peak_memory() override { blocks_.reset_peak(); }

  // Returns once the bytes are in device memory. Not a plain hipMemcpy: from pageable memory it returns
  // once the bytes are staged, before the DMA lands them (the CUDA runtime documents this), and on the
  // legacy stream, which this device's non-blocking streams do not wait for, so a kernel queued next
  // could read the old bytes. Waiting for a copy on a stream of its own (host_) covers both.
  void copy_in(void* dst, const void* host, size_t bytes) override {
    if (bytes == 0) return;
    DeviceGuard guard(gpu_, name_);
    RINGRT_HIP_CHECK(name_, hipMemcpyAsync(dst, host, bytes, hipMemcpyHostToDevice, host_));
    RINGRT_HIP_CHECK(name_, hipStreamSynchronize(host_));
  }

  // A device-to-host hipMemcpy returns once the bytes are in host memory; the caller has waited for
  // the work that wrote src.
  void* allocate_staging(size_t bytes) override { return pinned_.take(bytes); }
  void free_staging(void* ptr, size_t bytes) noexcept override { pinned_.give(bytes, ptr); }

  void copy_out(void* host, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    DeviceGuard guard(gpu_, name_);
    RINGRT_HIP_CHECK(name_, hipMemcpy(host, src, bytes, hipMemcpyDeviceToHost));
  }

  // ---- kernels: thread-safe; two threads compiling the same kernel both compile, one result is kept

  std::shared_ptr<CompiledKernel> compile(const codegen::Kernel& k) override {
    std::string key = k.name + "\n" + k.dump();
    {
      std::lock_guard<std::mutex> lock(kernels_mu_);
      if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
    }
    std::string code;
    try {
      code = compiler().compile(codegen::render_hip(k), k.name);
    } catch (const CompileError& e) {
      throw CompileError(fmt::format("{}: {}", name_, e.what()));
    }
    std::string label = fmt::format("{} (kernel {})", name_, k.name);
    auto hk = std::make_shared<HipKernel>();
    hk->k = k;
    hk->index = index_;
    hk->module = std::make_shared<Module>(gpu_, name_);
    {
      DeviceGuard guard(gpu_, name_);
      RINGRT_HIP_CHECK_AS(CompileError, label, hipModuleLoadData(&hk->module->handle, code.data()));
      RINGRT_HIP_CHECK_AS(CompileError, label, hipModuleGetFunction(&hk->fn, hk->module->handle, k.name.c_str()));
    }
    std::lock_guard<std::mutex> lock(kernels_mu_);
    return kernels_.emplace(key, std::move(hk)).first->second;
  }

  // ---- queued work: thread-safe, never blocks the caller

  Event launch(const CompiledKernel& ck, std::vector<void*> bufs, int32_t dnum, std::vector<Event> after) override {
    const auto* hk = dynamic_cast<const HipKernel*>(&ck);
    if (!hk || hk->index != index_)
      throw InternalError(
          fmt::format("{}: launch of kernel {} that was not compiled for this device", name_, ck.kernel().name));
    const codegen::Kernel& k = hk->k;
    size_t want = k.inputs.size() + 1 + static_cast<size_t>(k.peer_outputs);
    if (bufs.size() != want)
      throw InternalError(fmt::format("{}: kernel {} takes {} buffers (the output, {} inputs, {} peer outputs), got {}",
                                      name_, k.name, want, k.inputs.size(), k.peer_outputs, bufs.size()));
    if (k.numel > hip_launch::kMaxElements)
      throw DeviceError(
          fmt::format("{}: kernel {} covers {} elements; one launch covers at most {} (one thread per "
                      "element, HIP's grid size is 32-bit)",
                      name_, k.name, k.numel, hip_launch::kMaxElements));
    auto blocks = static_cast<unsigned>(hip_launch::launch_blocks(k.numel));
    Task t;
    t.what = fmt::format("launch of {} ({} elements, dnum {})", k.name, k.numel, dnum);
    t.after = std::move(after);
    t.enqueue = [this, fn = hk->fn, module = hk->module, blocks,
                 args = hip_launch::pack_kernel_args(bufs, dnum, k.numel)](hipStream_t stream) mutable {
      if (blocks == 0) return Resources{};
      size_t size = args.size();
      void* config[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, args.data(), HIP_LAUNCH_PARAM_BUFFER_SIZE, &size,
                        HIP_LAUNCH_PARAM_END};
      RINGRT_HIP_CHECK(
          name_, hipModuleLaunchKernel(fn, blocks, 1, 1, hip_launch::kBlockSize, 1, 1, 0, stream, nullptr, config));
      return Resources{std::move(module), {}};
    };
    return push(std::move(t));
  }

  // A copy of 0 bytes enqueues nothing but still records its event after `after` (issue_loop): its
  // Event completes after them and carries their order to whatever waits for it.
  Event copy_from(Device& from, const void* src, void* dst, size_t bytes, std::vector<Event> after) override {
    Task t;
    t.what = fmt::format("copy of {} bytes from {}", bytes, from.name());
    t.after = std::move(after);
    t.on_copy_stream = true;
    auto* peer = dynamic_cast<HipDevice*>(&from);
    if (!peer) {  // another backend: its copy_out into pinned memory, once `after` is done on the host
      t.host_wait = true;
      t.enqueue = [this, &from, src, dst, bytes](hipStream_t stream) {
        return Resources{nullptr, enqueue_copy_via_host(pinned_, name_, from, src, dst, bytes, stream)};
      };
    } else if (peer->gpu_ == gpu_) {  // this device, or another logical device on the same GPU
      t.enqueue = [this, src, dst, bytes](hipStream_t stream) {
        if (bytes) RINGRT_HIP_CHECK(name_, hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, stream));
        return Resources{};
      };
    } else {
      t.peer = peer->gpu_;  // staged through the host without peer access: `after` waits there
      t.enqueue = [this, peer, src, dst, bytes](hipStream_t stream) {
        return Resources{nullptr,
                         enqueue_peer_copy(pinned_, {gpu_, name_}, {peer->gpu_, peer->name_}, src, dst, bytes, stream)};
      };
    }
    return push(std::move(t));
  }

  // Runs fn on this device's issuer thread, after `after` and after all earlier work on this device has
  // completed; later work starts after fn returns. fn may call HIP (it is not a stream callback) and
  // may block, which blocks this device's queue. Its exception completes the Event with that error.
  Event submit(std::function<void()> fn, std::vector<Event> after) override {
    Task t;
    t.what = "host function";
    t.after = std::move(after);
    t.host = std::move(fn);
    return push(std::move(t));
  }

  // Waits for everything submitted so far (a marker through the queue), then for this device's streams
  // (not hipDeviceSynchronize: other logical devices on the GPU need not be waited for); at most
  // runtime.watchdog_s (rewrite/params.hpp) for the marker: past that a kernel or host function hangs,
  // and it throws TimeoutError instead of waiting forever. Throws DeviceError when the device is shut
  // down or poisoned. Must not be called from a function submitted to this device (it would wait for
  // itself).
  void synchronize() override {
    double limit_s = current_runtime_params().watchdog_s;
    if (!submit([] {}, {}).wait_for(std::chrono::milliseconds(std::llround(limit_s * 1000))))
      throw TimeoutError(
          fmt::format("{}: synchronize: the work submitted before it has not completed after {} s "
                      "(runtime.watchdog_s); a kernel or host function may hang",
                      name_, limit_s));
    DeviceGuard guard(gpu_, name_);
    RINGRT_HIP_CHECK(name_, hipStreamSynchronize(compute_));
    RINGRT_HIP_CHECK(name_, hipStreamSynchronize(copy_));
  }

  // At most `timeout` for a marker through the queue (see synchronize). Work refused or failed counts
  // as drained: nothing of it runs any more.
  bool drain(std::chrono::milliseconds timeout) override {
    try {
      return submit([] {}, {}).wait_for(timeout);
    } catch (...) {
      return true;
    }
  }

 private:
  // What a piece of GPU work keeps alive until it completes.
  struct Resources {
    std::shared_ptr<Module> module;  // a launch's module
    Staged pinned;                   // a staged copy's pinned buffer
  };
  struct Task {
    std::string what;  // for error messages
    std::vector<Event> after;
    std::function<Resources(hipStream_t)> enqueue;  // GPU work: enqueues on the given stream
    std::function<void()> host;                     // or host work, run on the issuer
    bool on_copy_stream = false;
    bool host_wait = false;  // wait for `after` on the host (enqueue reads the source on the host)
    int peer = -1;           // a copy from a device on GPU `peer`: host_wait unless this GPU has peer access
    Event done;
  };
  struct Pending {                            // GPU work enqueued, for the completer
    std::shared_ptr<const HipNative> native;  // the event recorded after it
    Event done;
    std::string what;
    Resources keep;
    std::optional<std::chrono::steady_clock::time_point> issued;  // when enqueued, while trace_timing()
  };

  Event push(Task t) {
    Event e = t.done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_issue_) throw DeviceError(hip_launch::shut_down_message(name_, t.what));
      if (auto error = pool_->poison_error()) throw DeviceError(hip_launch::poisoned_message(name_, t.what, *error));
      queue_.push_back(std::move(t));
    }
    cv_.notify_all();
    return e;
  }

  const codegen::HiprtcCompiler& compiler() {
    std::lock_guard<std::mutex> lock(kernels_mu_);
    if (!compiler_) compiler_.emplace(arch_);  // throws CompileError for a target hipRTC does not know
    return *compiler_;
  }

  // Waits (issuer thread) until e is done; `rethrow`: rethrows e's error. Throws a DeviceError (the
  // task, `what`, was not run) when the device is shut down first.
  void wait_issuer(const Event& e, const std::string& what, bool rethrow) {
    for (;;) {
      try {
        if (e.wait_for(100ms)) return;
      } catch (...) {
        if (rethrow) throw;
        return;
      }
      if (stopping_) throw DeviceError(hip_launch::shut_down_message(name_, what));
    }
  }

  // Orders the task being issued (`what`) after `e` (issuer thread): not at all when e is earlier GPU
  // work of this device (the queue is in order); on the GPU, hipStreamWaitEvent on `stream`, when e is
  // GPU work of another HIP device that is enqueued already and not poisoned (a poisoned device's
  // events may never complete: the task fails instead); on the host otherwise, and always when
  // `stream` is null. Throws e's error when e completed with one (a GPU-side failure of work waited
  // for on the GPU surfaces in that work's own Event instead).
  void wait_after(const Event& e, const std::string& what, hipStream_t stream) {
    if (stream) {
      while (!e.wait_ready(100ms))
        if (stopping_) throw DeviceError(hip_launch::shut_down_message(name_, what));
      if (!e.done()) {
        if (auto hn = std::dynamic_pointer_cast<const HipNative>(e.native())) {
          if (hn->pool == pool_) return;
          if (auto error = hn->pool->poison_error())
            throw DeviceError(
                hip_launch::poisoned_message(name_, what, fmt::format("{} ({})", hn->pool->device, *error)));
          RINGRT_HIP_CHECK(name_, hipStreamWaitEvent(stream, hn->event, 0));
          return;
        }
      }
    }
    wait_issuer(e, what, true);
  }

  // The issuer: takes tasks in order, orders them after their `after` (wait_after), enqueues GPU work
  // (chained across the two streams) or runs host work once everything before it has completed. A task
  // taken once the device is poisoned fails at once.
  void issue_loop() {
    hipStream_t last_stream = nullptr;
    std::shared_ptr<const HipNative> last;  // the GPU work issued last (null after host work)
    Event last_done;
    last_done.set_done();
    for (;;) {
      Task t;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_issue_ || !queue_.empty(); });
        if (queue_.empty()) {
          issuer_exited_ = true;
          cv_.notify_all();
          return;
        }
        t = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        if (auto error = pool_->poison_error()) throw DeviceError(hip_launch::poisoned_message(name_, t.what, *error));
        // Per task: host work may change this thread's current device.
        RINGRT_HIP_CHECK(name_, hipSetDevice(gpu_));
        hipStream_t stream = t.on_copy_stream ? copy_ : compute_;
        bool on_host = t.host || t.host_wait || (t.peer >= 0 && !peer_access(gpu_, t.peer, name_));
        for (const Event& e : t.after) wait_after(e, t.what, on_host ? nullptr : stream);  // an error fails it
        if (t.host) {
          wait_issuer(last_done, t.what, false);  // in order: after everything before it, whatever its outcome
          auto host_start = trace_now();
          t.host();
          if (host_start) t.done.set_times(*host_start, std::chrono::steady_clock::now());
          t.done.set_done();
          last_done = t.done;
          last.reset();  // nothing on the GPU is pending any more
          continue;
        }
        if (last && last_stream != stream) RINGRT_HIP_CHECK(name_, hipStreamWaitEvent(stream, last->event, 0));
        // The event returns to the pool only when every holder of `native` (this task's Event, a
        // queue about to wait on it) has let go, so it is never re-recorded under a waiter.
        auto native = std::make_shared<const HipNative>(index_, take_event(), pool_);
        Resources keep = t.enqueue(stream);  // on failure `keep` (a pinned buffer) is dropped, not reused
        RINGRT_HIP_CHECK(name_, hipEventRecord(native->event, stream));
        t.done.set_native(native);
        last_stream = stream;
        last = native;
        last_done = t.done;
        {
          std::lock_guard<std::mutex> lock(mu_);
          last_issued_ = native;
          pending_.push_back(Pending{std::move(native), t.done, std::move(t.what), std::move(keep), trace_now()});
        }
        cv_.notify_all();
      } catch (...) {
        t.done.set_done(std::current_exception());
      }
    }
  }

  // The completer: waits for each enqueued piece of GPU work in order and completes its Event. The
  // first GPU error poisons the device (EventPool::poison): the Events of work pending then fail at
  // once with it instead of waiting for a GPU whose errors are sticky (its events may never complete).
  void complete_loop() {
    (void)hipSetDevice(gpu_);                          // only for tidiness: hipEventSynchronize does not need it
    std::chrono::steady_clock::time_point last_end{};  // when the completer saw the work before complete
    for (;;) {
      Pending p;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_complete_ || !pending_.empty(); });
        if (pending_.empty()) {
          completer_exited_ = true;
          cv_.notify_all();
          return;
        }
        p = std::move(pending_.front());
        pending_.pop_front();
      }
      std::optional<std::string> poisoned = pool_->poison_error();
      hipError_t rc = poisoned ? hipSuccess : hipEventSynchronize(p.native->event);
      p.native.reset();
      if (p.issued && !poisoned && rc == hipSuccess) {  // a Trace records (hip_device.hpp "Timing")
        auto end = std::chrono::steady_clock::now();
        p.done.set_times(std::max(*p.issued, std::exchange(last_end, end)), end);
      }
      // A faulted GPU may still touch the staging buffer: it leaks rather than being reused.
      if (p.keep.pinned && !poisoned && rc == hipSuccess) pinned_.give(p.keep.pinned->first, p.keep.pinned->second);
      p.keep.module.reset();
      if (poisoned) {
        p.done.set_done(std::make_exception_ptr(DeviceError(hip_launch::poisoned_message(name_, p.what, *poisoned))));
      } else if (rc == hipSuccess) {
        p.done.set_done();
      } else {
        std::string msg = hip_error_message(name_, "hipEventSynchronize(event)", rc, __FILE__, __LINE__);
        msg = fmt::format("{} (after the {})", msg, p.what);
        pool_->poison(msg);
        p.done.set_done(std::make_exception_ptr(DeviceError(msg)));
      }
    }
  }

  // shutdown's work (see there); true when it stopped cleanly.
  bool stop() noexcept {
    auto deadline = std::chrono::steady_clock::now() + kShutdownWait;
    std::deque<Task> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_issue_ = true;
      stopping_ = true;
      dropped.swap(queue_);
    }
    cv_.notify_all();
    for (Task& t : dropped)
      t.done.set_done(std::make_exception_ptr(DeviceError(hip_launch::shut_down_message(name_, t.what))));
    bool issued = wait_flag(issuer_exited_, deadline);
    bool completed = issued && wait_gpu(deadline);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_complete_ = true;
      last_issued_.reset();
    }
    cv_.notify_all();
    completed = completed && wait_flag(completer_exited_, deadline);
    issued ? issuer_.join() : issuer_.detach();
    completed ? completer_.join() : completer_.detach();
    if (issued && completed) {
      release();
      return true;
    }
    std::fprintf(stderr,
                 "ringrt: %s: shutdown abandoned work still running after %lld s (%s); the device's memory, "
                 "streams and threads are leaked\n",
                 name_.c_str(), static_cast<long long>(kShutdownWait.count()),
                 issued ? "GPU work that does not complete" : "a task of its queue that does not return");
    return false;
  }

  // Waits until `flag` (issuer_exited_, completer_exited_) is set or the deadline passes.
  bool wait_flag(const bool& flag, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_until(lock, deadline, [&] { return flag; });
  }

  // Polls the event of the GPU work issued last (hipEventQuery) until it is no longer pending (done,
  // or failed: a faulted GPU runs nothing more) or the deadline passes; false then. The queue's GPU
  // work is chained across its streams, so that event comes after all of it.
  bool wait_gpu(std::chrono::steady_clock::time_point deadline) {
    std::shared_ptr<const HipNative> last;
    {
      std::lock_guard<std::mutex> lock(mu_);
      last = last_issued_;
    }
    if (!last) return true;
    for (;;) {
      hipError_t rc = hipEventQuery(last->event);
      if (rc != hipErrorNotReady) return true;
      (void)hipGetLastError();
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(1ms);
    }
  }

  hipEvent_t take_event() {
    {
      std::lock_guard<std::mutex> lock(pool_->mu);
      if (!pool_->free.empty()) {
        hipEvent_t e = pool_->free.back();
        pool_->free.pop_back();
        return e;
      }
    }
    hipEvent_t e = nullptr;
    // Blocking sync: the completer's hipEventSynchronize sleeps until the GPU signals the event
    // instead of spinning a core per device for as long as the work runs (the default); the wake-up
    // costs some microseconds per piece of work, which the completer only adds to Event completion.
    RINGRT_HIP_CHECK(name_, hipEventCreateWithFlags(&e, hipEventDisableTiming | hipEventBlockingSync));
    return e;
  }

  // Frees everything this device holds; logs errors and never throws (destructor, failed constructor).
  // Synchronizes this device's streams only: other logical devices on the GPU keep running.
  void release() noexcept {
    if (g_hip_gone) return;  // after the exit handler: the HIP runtime may be gone, leak instead
    try {
      DeviceGuard guard(gpu_, name_);
      for (hipStream_t s : {compute_, copy_, host_})
        if (s) RINGRT_HIP_LOG(name_, hipStreamSynchronize(s));
      {
        std::lock_guard<std::mutex> lock(kernels_mu_);
        kernels_.clear();  // modules unload with their last kernel
      }
      blocks_.release();
      {
        std::lock_guard<std::mutex> lock(pool_->mu);  // events still held by Events: ~EventPool
        for (hipEvent_t e : pool_->free) RINGRT_HIP_LOG(name_, hipEventDestroy(e));
        pool_->free.clear();
      }
      pinned_.release();
      for (hipStream_t* s : {&compute_, &copy_, &host_}) {
        if (*s) RINGRT_HIP_LOG(name_, hipStreamDestroy(*s));
        *s = nullptr;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ringrt: %s: teardown stopped early: %s\n", name_.c_str(), e.what());
    } catch (...) {
      std::fprintf(stderr, "ringrt: %s: teardown stopped early\n", name_.c_str());
    }
    gpu_user_gone(gpu_, name_);  // the GPU's last device: disables the peer access it enabled
  }

  const int index_;  // the logical device: its name, messages
  const int gpu_;    // the GPU ordinal: every hipSetDevice, peer-access key and module load
  const std::string name_;
  std::string arch_;  // the compile target (gpu_arch_name), e.g. "gfx90a:sramecc+:xnack-" or "sm_90"
  hipStream_t compute_ = nullptr, copy_ = nullptr;  // the queue's streams (kernels; copy_from)
  hipStream_t host_ = nullptr;                      // copy_in's copies

  PinnedPool pinned_;                // staging buffers of staged copies
  BlockCache blocks_;                // device memory (releases pinned_ too when memory runs out)
  std::shared_ptr<EventPool> pool_;  // hipEvents, shared with the handles of this device's Events

  std::mutex kernels_mu_;  // kernels_, compiler_
  std::unordered_map<std::string, std::shared_ptr<HipKernel>> kernels_;
  std::optional<codegen::HiprtcCompiler> compiler_;

  std::mutex mu_;  // queue_, pending_, last_issued_, stop and exit flags
  std::condition_variable cv_;
  std::deque<Task> queue_;
  std::deque<Pending> pending_;
  std::shared_ptr<const HipNative> last_issued_;  // the GPU work issued last (shutdown polls it)
  bool stop_issue_ = false, stop_complete_ = false;
  bool issuer_exited_ = false, completer_exited_ = false;  // set by the threads as they return
  std::atomic<bool> stopping_{false};                      // shutdown began: the issuer's waits give up
  std::once_flag shutdown_once_;
  bool clean_ = true;               // shutdown's result
  std::thread issuer_, completer_;  // started last, in the constructor body
};

}  // namespace

std::unique_ptr<Device> make_hip_device(int index) {
  const HipTopology& t = hip_topology();
  if (index < 0 || index >= static_cast<int>(t.names.size())) {
    std::string logical = static_cast<int>(t.names.size()) == t.gpus
                              ? ""
                              : fmt::format(" (runtime.hip_logical_devices: {} devices)", t.names.size());
    throw DeviceError(fmt::format("HIP:{} does not exist: the HIP runtime reports {} GPU(s){}{}{}", index, t.gpus,
                                  logical, t.names.empty() ? "" : ": ", fmt::join(t.names, ", ")));
  }
  auto* d = new HipDevice(index, hip_physical_gpu(index, t.gpus));
  return std::make_unique<DeviceOwner>(d, [d] { return d->shutdown(); });
}

void register_hip_backend() {
  register_backend({"HIP", [] { return static_cast<int>(hip_device_names().size()); }, make_hip_device});
}

}  // namespace ringrt
