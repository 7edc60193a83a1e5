#include "runtime/cpu/cpu_device.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <boost/container/small_vector.hpp>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "codegen/compiler.hpp"
#include "codegen/render.hpp"
#include "core/errors.hpp"
#include "core/params_internal.hpp"
#include "rewrite/collective.hpp"
#include "runtime/cpu/cpu_kernel.hpp"

namespace ringrt {
using namespace cpu_detail;
namespace {

constexpr size_t kHugePage = size_t{2} << 20;  // x86-64's transparent huge page

// One compiler and one table of loaded kernels for every cpu device: they share the host. The kernels
// a program needs that no earlier program (of any process: the kernel index, HostCompiler::load_kernels)
// compiled are compiled together, in one compiler run, into one shared object. The table holds kernels
// weakly: a kernel (and its shared object, once none of its kernels is left) is unloaded when no cached
// program holds it, so a process that compiles new kernels forever (a constant that changes every
// step) keeps those of the programs cached (runtime.program_cache) only. Work already queued holds its
// library.
std::vector<std::shared_ptr<CompiledKernel>> compile_for_host(const std::vector<codegen::Kernel>& ks) {
  static std::mutex mu;
  // by name + IR: kernels of equal code() but other sizes share a name and a function, not the entry,
  // which holds the numel a launch covers
  static std::unordered_map<std::string, std::weak_ptr<CpuKernel>> loaded;
  static size_t prune_at = 256;
  static const codegen::HostCompiler compiler;
  auto key = [](const codegen::Kernel& k) { return k.name + "\n" + k.dump(); };
  std::vector<std::shared_ptr<CpuKernel>> found(ks.size());
  std::vector<codegen::Kernel> missing;
  {
    std::lock_guard<std::mutex> lock(mu);
    std::set<std::string> keys;
    for (size_t i = 0; i < ks.size(); ++i) {
      if (auto it = loaded.find(key(ks[i])); it != loaded.end()) found[i] = it->second.lock();
      if (!found[i] && keys.insert(key(ks[i])).second) missing.push_back(ks[i]);
    }
  }
  std::unordered_map<std::string, std::shared_ptr<CpuKernel>> made;
  if (!missing.empty()) {
    std::vector<codegen::HostKernel> host = compiler.load_kernels(missing);
    for (size_t i = 0; i < missing.size(); ++i) {
      auto ck = std::make_shared<CpuKernel>();
      ck->k = missing[i];
      ck->host = std::move(host[i]);
      made.emplace(key(missing[i]), ck);
    }
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [k, ck] : made) loaded[k] = ck;
    if (loaded.size() > prune_at) {
      std::erase_if(loaded, [](const auto& e) { return e.second.expired(); });
      prune_at = 2 * loaded.size() + 256;
    }
  }
  std::vector<std::shared_ptr<CompiledKernel>> out;
  for (size_t i = 0; i < ks.size(); ++i) out.push_back(found[i] ? found[i] : made.at(key(ks[i])));
  return out;
}

// A copy that runs inline (run_inline): with runtime_params().kernel_split, a copy of two pieces or more
// is cut into pieces of at most kCopyPiece bytes that TBB workers copy, as a kernel's range is split.
// Inline items run one after another on the calling thread, so an unsplit copy there is one core's work
// however many cores there are (N=4, 4 MiB: 0.7x the allreduce's time split); a queued copy is not
// split, the queue threads of the devices already copy at once (at 64 MiB splitting them was slower).
constexpr size_t kCopyPiece = size_t{32} << 10;
void copy_split(void* dst, const void* src, size_t bytes) {
  if (bytes < 2 * kCopyPiece || !runtime_params().kernel_split) return copy_bytes(dst, src, bytes);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, bytes, kCopyPiece), [&](const tbb::blocked_range<size_t>& r) {
    std::memcpy(static_cast<char*>(dst) + r.begin(), static_cast<const char*>(src) + r.begin(), r.size());
  });
}

class CpuDevice : public Device {
 public:
  // The queue thread starts with the first queued task (enqueue): planning on placeholders (ringrt
  // schedule over 1024 devices) makes devices but starts no threads.
  explicit CpuDevice(std::string name) : name_(std::move(name)) {}
  ~CpuDevice() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
    for (auto& [bytes, blocks] : free_)
      for (void* p : blocks) std::free(p);
  }

  const std::string& name() const override { return name_; }

  void* allocate(size_t bytes) override {
    size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    {
      std::lock_guard<std::mutex> lock(alloc_mu_);
      auto& blocks = free_[rounded];
      if (!blocks.empty()) {
        void* p = blocks.back();
        blocks.pop_back();
        cached_ -= rounded;
        memory_.allocated(bytes, rounded);
        return p;
      }
    }
    // From 2 MiB, transparent huge pages where the kernel allows them on request (THP "madvise", the
    // default; runtime.huge_pages): 512 times fewer page faults, and first touching 64 MiB took 0.18 s
    // on 4 KiB pages on a VM of CI's kind against 0.004 s. The advice is only that: refused, the pages
    // stay 4 KiB. Only the whole huge pages are advised: the tail stays 4 KiB pages, so the memory
    // used is the bytes asked (rounded to 64), as counted, not up to 2 MiB more per buffer.
    bool huge = rounded >= kHugePage && current_runtime_params().huge_pages;
    size_t reserved = huge ? (rounded + kHugePage - 1) / kHugePage * kHugePage : rounded;
    void* p = std::aligned_alloc(huge ? kHugePage : 64, reserved);
    if (!p) throw DeviceError(fmt::format("{}: out of memory allocating {} bytes", name_, bytes));
    if (huge) ::madvise(p, rounded / kHugePage * kHugePage, MADV_HUGEPAGE);
    std::memset(p, 0, rounded);  // pre-fault: first touch of fresh pages is slow, pay it once here
    memory_.allocated(bytes, 0);
    return p;
  }

  void free(void* ptr, size_t bytes) override {
    if (!ptr) return;
    size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    std::lock_guard<std::mutex> lock(alloc_mu_);
    free_[rounded].push_back(ptr);
    cached_ += rounded;
    memory_.freed(bytes, rounded);
    trim(rounded);
  }

  MemoryStats memory_stats() const override { return memory_.stats(); }
  void reset_peak_memory() override { memory_.reset_peak(); }

  void copy_in(void* dst, const void* host, size_t bytes) override { copy_bytes(dst, host, bytes); }
  void copy_out(void* host, const void* src, size_t bytes) override { copy_bytes(host, src, bytes); }

  std::shared_ptr<CompiledKernel> compile(const codegen::Kernel& kernel) override {
    return compile_for_host({kernel}).at(0);
  }
  std::vector<std::shared_ptr<CompiledKernel>> compile_all(const std::vector<codegen::Kernel>& ks) override {
    return compile_for_host(ks);
  }

  Event launch(const CompiledKernel& k, std::vector<void*> bufs, int32_t dnum, std::vector<Event> after) override {
    const auto& ck = static_cast<const CpuKernel&>(k);
    size_t out_bytes = output_bytes(ck);
    bool stream = streams(ck, bufs, out_bytes);
    auto work = [fn = stream ? ck.host.stream : ck.host.fn, lib = ck.host.library, bufs = std::move(bufs), dnum,
                 n = ck.k.numel]() mutable {
      // split the element range across TBB workers (runtime_params().kernel_split); small kernels
      // run inline
      int64_t grain = split_grain(n);
      if (!runtime_params().kernel_split || n <= grain) {
        fn(bufs.data(), dnum, 0, n);
        return;
      }
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, grain),
                        [&](const tbb::blocked_range<int64_t>& r) { fn(bufs.data(), dnum, r.begin(), r.end()); });
    };
    if (std::optional<Event> now = run_inline(work, after, out_bytes <= kInlineBytes)) return *now;
    return enqueue(std::move(work), std::move(after));
  }

  // Small launches that may all start now (run_inline's conditions, on every device of the group) run
  // together on the calling thread and the TBB workers: one parallel loop over every launch's pieces,
  // where launch() one at a time forks and joins once per device (N = 4, 256 KiB: four kernels of
  // 64 KiB, each a few microseconds of work). Otherwise each device's launch() in turn.
  std::vector<Event> launch_group(std::vector<GroupLaunch> launches, const std::vector<Event>& after) override {
    if (std::optional<std::vector<Event>> done = run_group_inline(launches, after)) return *done;
    return Device::launch_group(std::move(launches), after);
  }

  // A fused collective (rewrite/collective.hpp) on cpu devices. When every device is idle and `after`
  // is done, on the calling thread and the TBB workers, phase by phase: each phase one parallel loop over
  // every device's steps up to its next barrier, the barrier the loop's end (no hand-off to n threads:
  // at 1 KiB on 4 devices a hand-off and wake-up of each queue thread cost 10 times the work). Else each
  // device's steps as one task on its own queue thread, the barriers on call.barrier's atomic counter
  // (all n tasks then run at once, on n threads). Launches on other backends: Device::launch_collective.
  std::vector<Event> launch_collective(std::vector<CollectiveLaunch> launches, const CollectiveCall& call,
                                       const std::vector<Event>& after) override {
    for (const CollectiveLaunch& l : launches)
      if (!dynamic_cast<CpuDevice*>(l.device)) return Device::launch_collective(std::move(launches), call, after);
    if (std::optional<std::vector<Event>> done = run_collective_inline(launches, call, after)) return *done;
    std::chrono::milliseconds timeout = watchdog_timeout();
    std::vector<Event> out;
    for (CollectiveLaunch& l : launches) {  // each waits for `after` itself: a failed one breaks the barrier
      auto* dev = static_cast<CpuDevice*>(l.device);
      out.push_back(dev->enqueue(
          [l = std::move(l), call, timeout, after] {
            try {
              for (const Event& e : after)
                while (!e.wait_for(std::chrono::milliseconds(100))) {
                }
            } catch (...) {  // its error: no device of this call may wait for this one
              call.barrier->abort();
              throw;
            }
            run_collective(l, call, timeout);
          },
          {}));
    }
    return out;
  }

  // From a cpu device a memcpy; from another backend (a GPU) that device's synchronous copy_out, on
  // this queue after `after`: src is that device's memory, which a memcpy must not read.
  Event copy_from(Device& from, const void* src, void* dst, size_t bytes, std::vector<Event> after) override {
    if (!dynamic_cast<CpuDevice*>(&from))
      return submit([&from, src, dst, bytes] { from.copy_out(dst, src, bytes); }, std::move(after));
    auto split = [src, dst, bytes] { copy_split(dst, src, bytes); };
    if (std::optional<Event> now = run_inline(split, after, bytes <= kInlineBytes)) return *now;
    return enqueue([src, dst, bytes] { copy_bytes(dst, src, bytes); }, std::move(after));
  }

  Event submit(std::function<void()> fn, std::vector<Event> after) override {
    return enqueue(std::move(fn), std::move(after));
  }

  // On an idle device (nothing queued or running) a marker is now: stamped on the calling thread, with no
  // hand-off to the queue thread (DeviceClock around work that ran inline); else Device::marker's queued
  // host function.
  Event marker() override {
    bool idle = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      idle = queue_.empty() && !busy_;
    }
    if (!idle) return Device::marker();
    Event mark;
    auto now = std::chrono::steady_clock::now();
    mark.set_times(now, now);
    mark.set_done();
    return mark;
  }

  // one address space: a kernel reads any cpu device's memory in place
  bool can_read_peer(const Device& peer) const override { return dynamic_cast<const CpuDevice*>(&peer) != nullptr; }
  bool host_addressable() const override { return true; }

  void synchronize() override { (void)drain(std::chrono::hours(24 * 365)); }
  // An empty task runs after everything queued before it (the queue is in order); it never fails. A
  // device that never queued anything has nothing to drain (and starts no thread for it).
  bool drain(std::chrono::milliseconds timeout) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!worker_.joinable() && !busy_) return true;
    }
    return submit([] {}, {}).wait_for(timeout);
  }

 private:
  struct Task {
    std::function<void()> fn;
    std::vector<Event> after;
    Event done;
  };

  // With `small`, runs fn at once on the calling thread when it may start now (runtime_params().inline_small):
  // nothing is queued or running on this device and every event it waits for is done; returns its
  // event (done), or nothing when it must be queued. For work this small the hand-off to the queue
  // thread and the wake-up of the waiter cost more than the work (N=2, 256 KiB: most of the time went
  // to wake-ups). No task, function object or event is made for it: a run without an error returns
  // the one shared done event (a Trace, which stamps each event's times, queues instead).
  template <class F>
  std::optional<Event> run_inline(F& fn, const std::vector<Event>& after, bool small) {
    if (!small || !may_run_inline(after) || !take()) return std::nullopt;
    std::exception_ptr error;
    try {
      fn();
    } catch (...) {
      error = std::current_exception();
    }
    release();
    return finished(error);
  }

  // Whether work that waits for `after` may run on the calling thread now, as far as the switches and
  // the events go (the device must still be taken).
  static bool may_run_inline(const std::vector<Event>& after) {
    return runtime_params().inline_small && !trace_timing() &&
           std::all_of(after.begin(), after.end(), [](const Event& a) { return a.done(); });
  }

  // Takes the device for work on the calling thread when nothing is queued or running on it: later
  // tasks queue behind that work, so the device stays in order. release() hands it back.
  bool take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!queue_.empty() || busy_) return false;
    busy_ = true;
    return true;
  }
  // Takes every device of `devices` (take), or none: a device that cannot be taken (or one listed twice)
  // gives back those taken before it.
  template <class Devices>
  static bool take_all(const Devices& devices) {
    size_t taken = 0;
    while (taken < devices.size() && devices[taken]->take()) ++taken;
    if (taken == devices.size()) return true;
    for (size_t i = 0; i < taken; ++i) devices[i]->release();
    return false;
  }
  void release() {
    bool more = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
      more = !queue_.empty();
    }
    if (more) cv_.notify_one();
  }

  // The event of work that ran on the calling thread: the shared done one, or one holding its error.
  static Event finished(const std::exception_ptr& error) {
    if (!error) return done_event();
    Event failed;
    failed.set_done(error);
    return failed;
  }

  // The least a group moves (bytes read and written) for launch_group's one parallel loop: below, one
  // fork and join costs more than it saves over the launches one at a time (N = 4, 64 KiB: a ring's
  // step of four kernels, 192 KiB, took 1.24x the time as one loop; an all2all's reduces, 2 MiB at
  // 256 KiB, 0.87x).
  static constexpr size_t kGroupBytes = size_t{1} << 20;

  // launch_group's inline path: nothing, and nothing run, unless every launch is a small cpu kernel on
  // a device of its own that may start now, every device could be taken and the group moves at least
  // kGroupBytes.
  static std::optional<std::vector<Event>> run_group_inline(const std::vector<GroupLaunch>& launches,
                                                            const std::vector<Event>& after) {
    if (!runtime_params().kernel_split || !may_run_inline(after)) return std::nullopt;
    size_t moved = 0;  // bytes read and written by the whole group; nothing allocated before the checks
    for (const GroupLaunch& l : launches) {
      const auto& ck = static_cast<const CpuKernel&>(*l.kernel);
      size_t out_bytes = output_bytes(ck);
      if (!dynamic_cast<CpuDevice*>(l.device) || out_bytes > kInlineBytes) return std::nullopt;
      moved += out_bytes * (1 + static_cast<size_t>(ck.k.peer_outputs));
      for (const codegen::KernelInput& in : ck.k.inputs)
        moved += static_cast<size_t>(ck.k.numel) * static_cast<size_t>(itemsize(in.dtype));
    }
    if (moved < kGroupBytes) return std::nullopt;
    struct Work {
      codegen::CpuKernelFn fn;
      const GroupLaunch* launch;
      int64_t numel, grain;
    };
    boost::container::small_vector<Work, 8> work;
    boost::container::small_vector<CpuDevice*, 8> devices;
    for (const GroupLaunch& l : launches) {
      const auto& ck = static_cast<const CpuKernel&>(*l.kernel);
      // only a group that runs as one loop pays for streams()' overlap checks
      work.push_back({streams(ck, l.bufs, output_bytes(ck)) ? ck.host.stream : ck.host.fn, &l, ck.k.numel,
                      split_grain(ck.k.numel)});
      devices.push_back(static_cast<CpuDevice*>(l.device));
    }
    if (!take_all(devices)) return std::nullopt;
    struct Piece {
      const Work* work;
      int64_t begin, end;
    };
    boost::container::small_vector<Piece, 64> pieces;
    for (const Work& w : work)
      for (int64_t b = 0; b < w.numel; b += w.grain) pieces.push_back({&w, b, std::min(w.numel, b + w.grain)});
    auto run = [](const Piece& p) {
      p.work->fn(const_cast<void**>(p.work->launch->bufs.data()), p.work->launch->dnum, p.begin, p.end);
    };
    std::exception_ptr error;
    try {
      if (pieces.size() == 1) {
        run(pieces[0]);
      } else {
        tbb::parallel_for(tbb::blocked_range<size_t>(0, pieces.size(), 1), [&](const tbb::blocked_range<size_t>& r) {
          for (size_t i = r.begin(); i < r.end(); ++i) run(pieces[i]);
        });
      }
    } catch (...) {
      error = std::current_exception();
    }
    for (CpuDevice* d : devices) d->release();
    return std::vector<Event>(launches.size(), finished(error));
  }

  // launch_collective's inline path: nothing, and nothing run, unless every device may be taken now
  // (run_inline's conditions, at any size: the phases' loops use every core) and each device once.
  static std::optional<std::vector<Event>> run_collective_inline(const std::vector<CollectiveLaunch>& launches,
                                                                 const CollectiveCall& call,
                                                                 const std::vector<Event>& after) {
    if (!may_run_inline(after)) return std::nullopt;
    std::vector<CpuDevice*> devices;
    for (const CollectiveLaunch& l : launches) devices.push_back(static_cast<CpuDevice*>(l.device));
    if (!take_all(devices)) return std::nullopt;
    struct Piece {
      const CollectiveLaunch* launch;
      size_t step;
      int64_t begin, end;
    };
    std::vector<size_t> at(launches.size(), 0);  // per device: its next step
    std::vector<Piece> pieces;
    std::exception_ptr error;
    try {
      for (bool more = true; more;) {  // a phase: every device's steps up to its next barrier or wait
        pieces.clear();
        more = false;
        for (size_t d = 0; d < launches.size(); ++d) {
          const CollectiveLaunch& l = launches[d];
          for (size_t from = at[d]; !fused_phase_end(l.steps, from, at[d]); ++at[d]) {
            int64_t n = l.steps[at[d]].end - l.steps[at[d]].begin, grain = split_grain(n);
            for (int64_t b = 0; b < n; b += grain) pieces.push_back({&l, at[d], b, std::min(n, b + grain)});
          }
          if (at[d] < l.steps.size()) more = true;
          if (more && l.steps[at[d]].kind == FusedStep::Kind::barrier) ++at[d];  // past its barrier
        }
        auto run = [&](const Piece& p) { run_collective_step(*p.launch, p.step, call.itemsize, p.begin, p.end); };
        if (pieces.size() == 1 || !runtime_params().kernel_split) {
          for (const Piece& p : pieces) run(p);
        } else if (!pieces.empty()) {
          tbb::parallel_for(tbb::blocked_range<size_t>(0, pieces.size(), 1), [&](const tbb::blocked_range<size_t>& r) {
            for (size_t i = r.begin(); i < r.end(); ++i) run(pieces[i]);
          });
        }
      }
    } catch (...) {
      error = std::current_exception();
    }
    // its barriers and signals were the phases' ends: counted as passed (every device's queue was idle, so
    // the counters stood at this call's start)
    call.barrier->pass(fused_barriers(launches[0].steps), fused_signals(launches[0].steps));
    for (CpuDevice* d : devices) d->release();
    return std::vector<Event>(launches.size(), finished(error));
  }

  // One event, done without an error, for every inline item of every cpu device.
  static const Event& done_event() {
    static const Event done = [] {
      Event e;
      e.set_done(nullptr);
      return e;
    }();
    return done;
  }

  // Queues a task: it runs on the queue thread after the tasks queued before it and the events it waits for.
  Event enqueue(std::function<void()> fn, std::vector<Event> after) {
    Task t{std::move(fn), std::move(after), Event()};
    Event e = t.done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!worker_.joinable()) worker_ = std::thread([this] { run(); });  // throws before anything is queued
      queue_.push_back(std::move(t));
    }
    cv_.notify_one();
    return e;
  }

  // Waits for the task's events and runs it; returns its error, if any. The caller completes t.done
  // after marking the device idle, so whoever a task's event wakes finds the device free (a small item
  // it launches next runs inline, and "the event is done" means "the device is done with it").
  static std::exception_ptr execute(Task& t) {
    try {
      for (const Event& e : t.after)
        while (!e.wait_for(std::chrono::milliseconds(100))) {
        }
      if (!trace_timing()) {
        t.fn();
      } else {  // a Trace records: the work's own time, after its waits, on the thread that runs it
        auto start = std::chrono::steady_clock::now();
        t.fn();
        t.done.set_times(start, std::chrono::steady_clock::now());
      }
    } catch (...) {
      return std::current_exception();
    }
    return nullptr;
  }

  // The in-order queue: one task at a time, each after the events it waits for.
  void run() {
    for (;;) {
      Task t;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return (stop_ && queue_.empty()) || (!queue_.empty() && !busy_); });
        if (queue_.empty()) return;
        t = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
      }
      std::exception_ptr error = execute(t);
      {
        std::lock_guard<std::mutex> lock(mu_);
        busy_ = false;
      }
      t.done.set_done(error);
    }
  }

  std::string name_;
  std::mutex mu_, alloc_mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool busy_ = false;  // a task runs (on the queue thread or inline); guarded by mu_
  bool stop_ = false;
  std::map<size_t, std::vector<void*>> free_;  // freed blocks by size (alloc_mu_), cached_ bytes in all

  // The freed blocks kept for reuse are at most the device's peak use (its working set: a step's buffers come
  // back whole every step) or kMinCache, whichever is more: a run of ever new sizes (a sweep, shapes that change)
  // would otherwise keep every size's blocks forever. Beyond, blocks of the largest sizes other than `keep`'s
  // go back to the system first. Under alloc_mu_.
  static constexpr size_t kMinCache = size_t{64} << 20;
  size_t cached_ = 0;
  void trim(size_t keep) {
    if (cached_ <= kMinCache) return;  // the common case: no statistics read on every free
    size_t cap = std::max(static_cast<size_t>(std::max<int64_t>(memory_.stats().peak, 0)), kMinCache);
    while (cached_ > cap) {
      auto victim = free_.end();
      for (auto it = free_.rbegin(); it != free_.rend(); ++it)
        if (!it->second.empty() && (it->first != keep || victim == free_.end())) {
          victim = std::prev(it.base());
          if (it->first != keep) break;
        }
      if (victim == free_.end()) return;
      std::free(victim->second.back());
      victim->second.pop_back();
      cached_ -= victim->first;
      memory_.released(victim->first);
      if (victim->second.empty()) free_.erase(victim);
    }
  }
  MemoryCounter memory_;  // in use, peak and cached bytes (memory_stats)
  std::thread worker_;    // the queue thread, started by the first queued task; guarded by mu_
};

}  // namespace

std::unique_ptr<Device> make_cpu_device(const std::string& name) { return std::make_unique<CpuDevice>(name); }

namespace {
std::atomic<int> g_cpu_count{4};  // CPU:0 .. CPU:g_cpu_count-1 exist
}  // namespace

void set_cpu_device_count(int n) {
  if (n < 1) throw DeviceError(fmt::format("the cpu backend needs at least one device, got {}", n));
  int now = g_cpu_count.load();
  while (n > now && !g_cpu_count.compare_exchange_weak(now, n)) {
  }
}

void register_cpu_backend() {
  register_backend({"CPU", [] { return g_cpu_count.load(); },
                    [](int index) { return make_cpu_device(fmt::format("CPU:{}", index)); }});
}

}  // namespace ringrt
