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
#include "core/errors.hpp"
#include "runtime/hip/hip_check.hpp"
#include "runtime/hip/hip_graph.hpp"
#include "runtime/hip/hip_memory.hpp"
#include "runtime/hip/hip_queue.hpp"
#include "runtime/hip/hip_support.hpp"

namespace ringrt {

namespace {

using namespace std::chrono_literals;
using namespace hip_detail;

// How long shutdown waits for the work queued on a device (the host work its completer runs, its GPU
// work) before it abandons it and leaks the device instead (hip_device.hpp "Teardown"). Every
// kernel and copy of ringrt takes well under a second, and the registry has drained the queues at exit
// already (runtime/device/registry.cpp kExitDrain), so past this something is stuck (a hung kernel, a
// host function that never returns).
constexpr auto kShutdownWait = 3s;

#if defined(RINGRT_GPU_SIM)
constexpr bool kSimulated = true;  // runtime/hip/sim: a kernel's blocks and threads run one after another
#else
constexpr bool kSimulated = false;
#endif

class HipDevice final : public Device {
 public:
  // The logical device HIP:index on GPU `gpu` (hip_physical_gpu).
  HipDevice(int index, int gpu)
      : index_(index), gpu_(gpu), name_(fmt::format("HIP:{}", index)), pinned_(name_), blocks_(gpu, name_, pinned_) {
    gpu_user_added(gpu_);  // release() says it is gone
    try {
      DeviceGuard guard(gpu_, name_);
      hipDeviceProp_t props{};
      RINGRT_HIP_CHECK(name_, hipGetDeviceProperties(&props, gpu_));
      arch_ = gpu_arch_name(props);
      multiprocessors_ = std::max(props.multiProcessorCount, 1);
      const HipTopology& t = hip_topology();  // the logical devices on this GPU share its cache cap
      int on_gpu = (static_cast<int>(t.names.size()) - gpu_ + t.gpus - 1) / std::max(t.gpus, 1);
      blocks_.set_cap(hip_launch::device_cache_cap(props.totalGlobalMem, on_gpu));
      RINGRT_HIP_CHECK(name_, hipStreamCreateWithFlags(&host_, hipStreamNonBlocking));
      queue_ = std::make_unique<HipQueue>(
          gpu_, name_, [this](hipStream_t stream, void* gate, uint32_t value) { spin_wait(stream, gate, value); });
    } catch (...) {
      release();
      throw;
    }
    // After HIP is initialized: see register_live. Keyed by the Device, as DeviceOwner unregisters it.
    register_live(static_cast<const Device*>(this), [this] { shutdown(); });
  }

  ~HipDevice() override { shutdown(); }  // (DeviceOwner leaks a device whose shutdown abandoned work)

  // Stops the device, bounded by kShutdownWait (HipQueue::stop): new work is refused with a DeviceError,
  // host work that has not started fails at once with a DeviceError saying the device was shut down
  // (and so does the GPU work queued after it), the rest completes. Past the deadline it logs that work
  // was abandoned and frees nothing. True when it stopped cleanly; false when it abandoned work: the
  // object is then still used by its completer and must never be destroyed. Idempotent (later calls
  // return the first one's result); never throws. Called by DeviceOwner's destructor and by the exit
  // handler (register_live). Must not be called from work submitted to this device.
  bool shutdown() noexcept {
    std::call_once(shutdown_once_, [this] {
      clean_ = !queue_ || queue_->stop(std::chrono::steady_clock::now() + kShutdownWait);
      if (clean_) {
        release();
        return;
      }
      std::fprintf(stderr,
                   "ringrt: %s: shutdown abandoned work still running after %lld s (GPU work that does not "
                   "complete, or host work that does not return); the device's memory, streams and threads are "
                   "leaked\n",
                   name_.c_str(), static_cast<long long>(kShutdownWait.count()));
    });
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

  // Chunks of kStagingChunk bytes, each copied into a pinned buffer on this thread and then by DMA on
  // the stream (the DMA of one overlaps the copy of the next), at most kStagingChunks in flight per call
  // (this thread waits for the oldest beyond): a bounded amount of pinned memory, reused through the
  // pool. The first chunk waits for `after` on the GPU. The Event is the last chunk's (the queue is in
  // order).
  Event copy_in_async(void* dst, const void* host, size_t bytes, std::vector<Event> after) override {
    constexpr size_t kStagingChunk = size_t{4} << 20, kStagingChunks = 16;
    std::deque<Event> chunks;
    for (size_t at = 0; at < bytes || (at == 0 && chunks.empty()); at += kStagingChunk) {
      size_t n = std::min(kStagingChunk, bytes - at);
      if (chunks.size() >= kStagingChunks) {
        if (!chunks.front().wait_for(watchdog_timeout()))
          throw TimeoutError(fmt::format("{}: a staged host write waited longer than runtime.watchdog_s", name_));
        chunks.pop_front();
      }
      std::shared_ptr<void> buffer = n ? pinned_.lease(n, queue_->poison_flag()) : nullptr;
      if (n) std::memcpy(buffer.get(), static_cast<const char*>(host) + at, n);
      chunks.push_back(queue_->enqueue(
          fmt::format("host write of {} bytes", n), at == 0 ? after : std::vector<Event>{}, [&](hipStream_t stream) {
            if (n)
              RINGRT_HIP_CHECK(
                  name_, hipMemcpyAsync(static_cast<char*>(dst) + at, buffer.get(), n, hipMemcpyHostToDevice, stream));
            return Resources{nullptr, buffer};
          }));
      if (n == 0) break;
    }
    return chunks.back();
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
    hk->blocks =
        static_cast<unsigned>(hip_launch::launch_blocks(k.numel, codegen::hip_vector_lanes(k), multiprocessors_));
    {
      DeviceGuard guard(gpu_, name_);
      RINGRT_HIP_CHECK_AS(CompileError, label, hipModuleLoadData(&hk->module->handle, code.data()));
      RINGRT_HIP_CHECK_AS(CompileError, label, hipModuleGetFunction(&hk->fn, hk->module->handle, k.name.c_str()));
    }
    std::lock_guard<std::mutex> lock(kernels_mu_);
    return kernels_.emplace(key, std::move(hk)).first->second;
  }

  // ---- queued work: enqueued by the calling thread, thread-safe (hip_device.hpp "Queue")

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
    unsigned blocks = hk->blocks;
    std::vector<std::byte> args = hip_launch::pack_kernel_args(bufs, dnum, k.numel);
    return queue_->enqueue(fmt::format("launch of {} ({} elements, dnum {})", k.name, k.numel, dnum), after,
                           [&](hipStream_t stream) {
                             if (blocks == 0) return Resources{};
                             size_t size = args.size();
                             void* config[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, args.data(),
                                               HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END};
                             RINGRT_HIP_CHECK(name_, hipModuleLaunchKernel(hk->fn, blocks, 1, 1, hip_launch::kBlockSize,
                                                                           1, 1, 0, stream, nullptr, config));
                             return Resources{hk->module, nullptr};
                           });
  }

  // A fused collective (rewrite/collective.hpp, docs/fused-collectives.md): one kernel per device
  // (codegen::render_hip_collective) running its step list, the barriers a word in mapped pinned memory
  // that every block of every device's launch counts into. The launches all have one grid, small enough
  // for the n of them to run at once on GPUs the devices may share (multiprocessors / n blocks each:
  // a barrier waits for blocks of every launch); the simulated GPU, which runs a kernel's blocks and
  // threads one after another, runs it as one thread per device. Devices of other backends, more than
  // kMaxFusedDevices or a step list longer than the kernel holds: Device::launch_collective, step by step.
  std::vector<Event> launch_collective(std::vector<CollectiveLaunch> launches, const CollectiveCall& call,
                                       const std::vector<Event>& after) override {
    constexpr size_t kMaxFusedDevices = 16;
    const size_t n = launches.size();
    std::vector<HipDevice*> devs;
    for (const CollectiveLaunch& l : launches)
      if (auto* h = dynamic_cast<HipDevice*>(l.device); h && static_cast<int64_t>(l.steps.size()) <= kFusedMaxSteps)
        devs.push_back(h);
    if (devs.size() != n || n > kMaxFusedDevices) return Device::launch_collective(std::move(launches), call, after);
    for (const Event& e : after)  // a failure known now fails the call before any device spins at a barrier
      if (e.done() && !e.succeeded()) e.wait_for(std::chrono::milliseconds(0));
    std::vector<codegen::Kernel> combines;  // every device's combine IRs (one device's may all be empty steps)
    for (const CollectiveLaunch& l : launches)
      for (const CompiledKernel* c : l.combines)
        if (c && std::none_of(combines.begin(), combines.end(),
                              [&](const codegen::Kernel& k) { return k.name == c->kernel().name; }))
          combines.push_back(c->kernel());
    std::sort(combines.begin(), combines.end(),
              [](const codegen::Kernel& a, const codegen::Kernel& b) { return a.name < b.name; });
    std::string key = fmt::format("{}|{}", n, dtype_name(call.dtype));
    // a combine's name is the hash of its code (equal names, equal kernels; lengths are arguments)
    for (const codegen::Kernel& k : combines) key += "|" + k.name;
    std::string name = "rt_collective_" + codegen::stable_hash_hex(key);
    void* words = call.barrier->device_word([&] { return devs[0]->collective_words(n); });
    // a wait's limit (runtime.watchdog_s) in ticks of the kernel's clock (render_hip_collective)
    const uint64_t timeout = static_cast<uint64_t>(current_runtime_params().watchdog_s * clock_hz());
    const bool sim = kSimulated;
    const unsigned blocks = sim ? 1 : static_cast<unsigned>(std::max(1, multiprocessors_ / static_cast<int>(n)));
    const unsigned threads = sim ? 1 : hip_launch::kBlockSize;
    std::vector<Event> out;
    for (size_t d = 0; d < n; ++d) {
      const CollectiveLaunch& l = launches[d];
      std::shared_ptr<HipKernel> k = devs[d]->compile_collective(name, static_cast<int>(n), call.dtype, combines);
      std::vector<uint64_t> args;  // NAME_args (codegen/render.hpp), every field 8 bytes
      for (void* p : l.outputs) args.push_back(reinterpret_cast<uint64_t>(p));
      for (void* p : l.inputs) args.push_back(reinterpret_cast<uint64_t>(p));
      for (size_t j = 0; j < n; ++j)
        args.push_back(reinterpret_cast<uint64_t>(l.scratches.empty() ? nullptr : l.scratches[j]));
      args.push_back(reinterpret_cast<uint64_t>(words));
      args.push_back(call.base);
      args.push_back(call.signal_base);
      args.push_back(static_cast<uint64_t>(l.rank));
      args.push_back(l.steps.size());
      args.push_back(timeout);
      auto wait = [](const FusedWait& w) {
        return w.device < 0 ? uint64_t{0}
                            : (static_cast<uint64_t>(w.device + 1) << 40) | static_cast<uint64_t>(w.count);
      };
      for (size_t i = 0; i < static_cast<size_t>(kFusedMaxSteps); ++i) {
        FusedStep s = i < l.steps.size() ? l.steps[i] : FusedStep{FusedStep::Kind::barrier};
        args.push_back(static_cast<uint64_t>(s.kind));
        args.push_back(static_cast<uint64_t>(s.begin));
        args.push_back(static_cast<uint64_t>(s.end));
        args.push_back(static_cast<uint64_t>(s.peer));
        args.push_back((s.to_scratch ? 1u : 0u) | (s.all_outputs ? 2u : 0u) | (s.from_input ? 4u : 0u) |
                       (s.from_scratch ? 8u : 0u) | (s.signal ? 16u : 0u) | (s.ring() ? 32u : 0u));
        args.push_back(static_cast<uint64_t>(s.out_shift));
        args.push_back(wait(s.waits[0]));
        args.push_back(wait(s.waits[1]));
      }
      HipDevice& dev = *devs[d];
      out.push_back(dev.queue_->enqueue(fmt::format("{} ({})", call.name, name), after, [&](hipStream_t stream) {
        size_t size = args.size() * sizeof(uint64_t);
        void* config[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, args.data(), HIP_LAUNCH_PARAM_BUFFER_SIZE, &size,
                          HIP_LAUNCH_PARAM_END};
        RINGRT_HIP_CHECK(dev.name_,
                         hipModuleLaunchKernel(k->fn, blocks, 1, 1, threads, 1, 1, 0, stream, nullptr, config));
        return Resources{k->module, nullptr};
      }));
    }
    return out;
  }

  // From this GPU (this device or another logical device on it): a device-to-device copy; from a GPU
  // this one has peer access to: a peer copy; both on the GPU, ordered after `after` there. Otherwise
  // staged through a pinned buffer: its host part (the source's copy_out, or a device-to-host copy from
  // the other GPU) runs in queue order once `after` is done, its GPU part copies the buffer in. A copy
  // of 0 bytes enqueues nothing but an event: its Event completes after `after` and carries their order.
  Event copy_from(Device& from, const void* src, void* dst, size_t bytes, std::vector<Event> after) override {
    std::string what = fmt::format("copy of {} bytes from {}", bytes, from.name());
    auto* peer = dynamic_cast<HipDevice*>(&from);
    if (peer && (peer->gpu_ == gpu_ || peer_access(gpu_, peer->gpu_, name_))) {
      return queue_->enqueue(std::move(what), after, [&](hipStream_t stream) {
        if (bytes == 0) return Resources{};
        if (peer->gpu_ == gpu_)
          RINGRT_HIP_CHECK(name_, hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, stream));
        else
          RINGRT_HIP_CHECK(name_, hipMemcpyPeerAsync(dst, gpu_, src, peer->gpu_, bytes, stream));
        return Resources{};
      });
    }
    std::shared_ptr<void> buffer = bytes ? pinned_.lease(bytes, queue_->poison_flag()) : nullptr;
    std::function<void()> host_part = [&from, peer, src, bytes, buffer] {
      if (bytes == 0) return;
      if (!peer) return from.copy_out(buffer.get(), src, bytes);  // another backend reads its own memory
      DeviceGuard guard(peer->gpu_, peer->name_);
      RINGRT_HIP_CHECK(peer->name_, hipMemcpy(buffer.get(), src, bytes, hipMemcpyDeviceToHost));
    };
    return queue_->enqueue_host(std::move(what), std::move(after), std::move(host_part), [&](hipStream_t stream) {
      if (bytes) RINGRT_HIP_CHECK(name_, hipMemcpyAsync(dst, buffer.get(), bytes, hipMemcpyHostToDevice, stream));
      return Resources{nullptr, buffer};
    });
  }

  // Runs fn on this device's completer thread, after `after` and after all earlier work on this device
  // has completed; later work starts after fn returns (the stream waits for its gate). fn may call HIP
  // and may block, which blocks this device's queue. Its exception completes the Event with that error.
  Event submit(std::function<void()> fn, std::vector<Event> after) override {
    return queue_->enqueue_host("host function", std::move(after), std::move(fn));
  }

  // Waits for everything submitted so far (a marker through the queue); at most runtime.watchdog_s
  // (core/params.hpp): past that a kernel or host function hangs, and it throws TimeoutError instead of
  // waiting forever. Throws DeviceError when the device is shut down or poisoned. Must not be called from
  // a function submitted to this device (it would wait for itself).
  void synchronize() override {
    double limit_s = current_runtime_params().watchdog_s;
    if (!queue_->wait_all(std::chrono::milliseconds(std::llround(limit_s * 1000))))
      throw TimeoutError(
          fmt::format("{}: synchronize: the work submitted before it has not completed after {} s "
                      "(runtime.watchdog_s); a kernel or host function may hang",
                      name_, limit_s));
    if (auto error = queue_->poisoned()) throw DeviceError(hip_launch::poisoned_message(name_, "synchronize", *error));
  }

  // At most `timeout` for a marker through the queue (see synchronize). Work refused or failed counts
  // as drained: nothing of it runs any more.
  bool drain(std::chrono::milliseconds timeout) override {
    try {
      return queue_->wait_all(timeout);
    } catch (...) {
      return true;
    }
  }

  bool asynchronous() const override { return true; }
  std::unique_ptr<DeviceGraph> make_graph() override { return std::make_unique<HipGraph>(*queue_, gpu_, name_); }
  int gpu() const { return gpu_; }
  Event marker() override { return queue_->marker(); }

 private:
  const codegen::HiprtcCompiler& compiler() {
    std::lock_guard<std::mutex> lock(kernels_mu_);
    if (!compiler_) compiler_.emplace(arch_);  // throws CompileError for a target hipRTC does not know
    return *compiler_;
  }

  // A fused collective's kernel for n devices around `combines` (render_hip_collective), compiled on
  // first use. Throws CompileError.
  std::shared_ptr<HipKernel> compile_collective(const std::string& name, int n, DType dtype,
                                                const std::vector<codegen::Kernel>& combines) {
    {
      std::lock_guard<std::mutex> lock(kernels_mu_);
      if (auto it = kernels_.find(name); it != kernels_.end()) return it->second;
    }
    std::string label = fmt::format("{} (kernel {})", name_, name);
    std::string code;
    try {
      code = compiler().compile(codegen::render_hip_collective(name, n, dtype, combines), name);
    } catch (const CompileError& e) {
      throw CompileError(fmt::format("{}: {}", label, e.what()));
    }
    auto hk = std::make_shared<HipKernel>();
    if (!combines.empty()) hk->k = combines[0];
    hk->k.name = name;
    hk->k.dtype = dtype;
    hk->index = index_;
    hk->module = std::make_shared<Module>(gpu_, name_);
    {
      DeviceGuard guard(gpu_, name_);
      RINGRT_HIP_CHECK_AS(CompileError, label, hipModuleLoadData(&hk->module->handle, code.data()));
      RINGRT_HIP_CHECK_AS(CompileError, label, hipModuleGetFunction(&hk->fn, hk->module->handle, name.c_str()));
    }
    std::lock_guard<std::mutex> lock(kernels_mu_);
    return kernels_.emplace(name, std::move(hk)).first->second;
  }

  // Ticks per second of the clock a fused collective's kernel reads (render_hip_collective rt_coll_clock):
  // nanoseconds on NVIDIA and the simulated GPU; on AMD the wall clock, 100 MHz on MI200 and MI300 (Debian's
  // HIP 5.2 has no hipDeviceAttributeWallClockRate to ask).
  static constexpr double clock_hz() {
#if defined(RINGRT_GPU_NVIDIA) || defined(RINGRT_GPU_SIM)
    return 1e9;
#else
    return 1e8;
#endif
  }

  // A fused collective's words for n devices (codegen/render.hpp render_hip_collective: the barrier's
  // arrivals, its give-up mark, a flag per device), zeroed, in this device's memory: every device of the
  // collective reaches it (the binding requires peer access between every pair), and its atomics stay
  // on the GPU where the devices share one. Freed with the collective's barrier.
  std::shared_ptr<void> collective_words(size_t n) {
    DeviceGuard guard(gpu_, name_);
    const size_t bytes = (2 + n) * sizeof(uint32_t);
    void* p = nullptr;
    RINGRT_HIP_CHECK(name_, hipMalloc(&p, bytes));
    std::shared_ptr<void> words(p, [name = name_](void* w) {
      if (!g_hip_gone) RINGRT_HIP_LOG(name, hipFree(w));
    });
    RINGRT_HIP_CHECK(name_, hipMemset(p, 0, bytes));
    // on the null stream, which the queues' non-blocking streams do not wait for: done before any launch
    RINGRT_HIP_CHECK(name_, hipStreamSynchronize(nullptr));
    return words;
  }

  // HipQueue's fallback for a gate without hipStreamWaitValue32: one thread of a kernel spins until the
  // gate word (host memory, mapped) reaches `value`. Compiled on first use.
  void spin_wait(hipStream_t stream, void* gate, uint32_t value) {
    std::shared_ptr<HipKernel> k;
    {
      std::lock_guard<std::mutex> lock(kernels_mu_);
      k = gate_kernel_;
    }
    if (!k) {
      std::string code = compiler().compile(hip_launch::gate_wait_source(), "rt_gate_wait");
      k = std::make_shared<HipKernel>();
      k->index = index_;
      k->module = std::make_shared<Module>(gpu_, name_);
      RINGRT_HIP_CHECK(name_, hipModuleLoadData(&k->module->handle, code.data()));
      RINGRT_HIP_CHECK(name_, hipModuleGetFunction(&k->fn, k->module->handle, "rt_gate_wait"));
      std::lock_guard<std::mutex> lock(kernels_mu_);
      gate_kernel_ = k;
    }
    struct Args {
      void* word;
      uint32_t value;
      uint32_t pad;
    } args{gate, value, 0};
    size_t size = sizeof(args);
    void* config[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, &args, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size,
                      HIP_LAUNCH_PARAM_END};
    RINGRT_HIP_CHECK(name_, hipModuleLaunchKernel(k->fn, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, config));
  }

  // Frees everything this device holds; logs errors and never throws (destructor, failed constructor).
  // The queue was stopped first (it freed its stream; other logical devices on the GPU keep running) and
  // stays, refusing work with a DeviceError: exit handlers may still drain the device.
  void release() noexcept {
    if (g_hip_gone) return;  // after the exit handler: the HIP runtime may be gone, leak instead
    if (queue_) queue_->stop(std::chrono::steady_clock::now());  // (stopped already, but after a failed constructor)
    try {
      DeviceGuard guard(gpu_, name_);
      if (host_) RINGRT_HIP_LOG(name_, hipStreamSynchronize(host_));
      {
        std::lock_guard<std::mutex> lock(kernels_mu_);
        kernels_.clear();  // modules unload with their last kernel
        gate_kernel_.reset();
      }
      blocks_.release();
      pinned_.release();
      if (host_) RINGRT_HIP_LOG(name_, hipStreamDestroy(host_));
      host_ = nullptr;
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
  std::string arch_;            // the compile target (gpu_arch_name), e.g. "gfx90a:sramecc+:xnack-" or "sm_90"
  int multiprocessors_ = 1;     // hipDeviceProp_t::multiProcessorCount: the grid of a full launch (launch_blocks)
  hipStream_t host_ = nullptr;  // copy_in's copies

  PinnedPool pinned_;                // staging buffers of staged copies
  BlockCache blocks_;                // device memory (releases pinned_ too when memory runs out)
  std::unique_ptr<HipQueue> queue_;  // the stream and everything queued on it

  std::mutex kernels_mu_;  // kernels_, compiler_
  std::unordered_map<std::string, std::shared_ptr<HipKernel>> kernels_;
  std::shared_ptr<HipKernel> gate_kernel_;  // spin_wait's
  std::optional<codegen::HiprtcCompiler> compiler_;

  std::once_flag shutdown_once_;
  bool clean_ = true;  // shutdown's result
};

}  // namespace

namespace hip_detail {
int hip_gpu_of(const Device& device) {
  const Device* d = &device;
  if (const auto* owner = dynamic_cast<const DeviceOwner*>(d)) d = &owner->owned();
  const auto* hip = dynamic_cast<const HipDevice*>(d);
  return hip ? hip->gpu() : -1;
}
}  // namespace hip_detail

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
