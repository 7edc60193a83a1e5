// The simulated GPU runtime (see sim_hip.hpp for what it simulates): GPUs, memory, streams as
// threads, events, kernels from sim_rtc.cpp's shared objects, graphs and stream memory operations.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/hip/sim/sim_internal.hpp"

namespace ringrt::sim::detail {

namespace {

// An environment variable as a whole number in [lo, hi]; `fallback` when unset, and when malformed or out
// of range with a warning on stderr naming it (a test switch: a typo must not pass unnoticed).
long env_number(const char* name, long fallback, long lo, long hi) {
  const char* v = std::getenv(name);
  if (!v) return fallback;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (!*v || *end || n < lo || n > hi) {
    std::fprintf(stderr, "ringrt: simulated GPU: %s='%s' is not a whole number in [%ld, %ld]; using %ld\n", name, v, lo,
                 hi, fallback);
    return fallback;
  }
  return n;
}

thread_local hipError_t t_last_error = hipSuccess;
thread_local int t_device = 0;

}  // namespace

Config::Config()
    : gpus(static_cast<int>(env_number("RINGRT_SIM_GPUS", 1, 0, 64))),
      gpu_bytes(static_cast<size_t>(env_number("RINGRT_SIM_GPU_MIB", 2048, 1, 1 << 20)) << 20),
      peer(env_number("RINGRT_SIM_PEER", 1, 0, 1) == 1),
      wait_value(env_number("RINGRT_SIM_WAIT_VALUE", 1, 0, 1) == 1) {}

const Config& config() {
  static const Config c;
  return c;
}

CounterCells& cells() {
  static auto* c = new CounterCells;  // never destroyed: stream threads may outlive static destructors
  return *c;
}

Runtime::Runtime() {
  for (int i = 0; i < config().gpus; ++i) gpus.push_back(std::make_unique<Gpu>());
}

Runtime& runtime() {
  static auto* r = new Runtime;  // never destroyed, as above
  return *r;
}

hipError_t fail(hipError_t rc) {
  if (rc != hipSuccess) t_last_error = rc;
  return rc;
}
hipError_t take_last_error() { return std::exchange(t_last_error, hipSuccess); }
int current_gpu() { return t_device; }
void set_current_gpu(int gpu) { t_device = gpu; }
bool valid_gpu(int d) { return d >= 0 && d < config().gpus; }
hipError_t no_gpu() { return fail(config().gpus == 0 ? hipErrorNoDevice : hipErrorInvalidDevice); }
bool faulted(int gpu) { return valid_gpu(gpu) && runtime().gpus[static_cast<size_t>(gpu)]->fault.load() != 0; }
hipError_t fault_of(int gpu) {
  return valid_gpu(gpu) ? static_cast<hipError_t>(runtime().gpus[static_cast<size_t>(gpu)]->fault.load()) : hipSuccess;
}
void set_fault(int gpu, hipError_t rc) {
  int none = 0;
  if (valid_gpu(gpu)) runtime().gpus[static_cast<size_t>(gpu)]->fault.compare_exchange_strong(none, rc);
}
void count_graph_launch() { ++cells().graph_launches; }

}  // namespace ringrt::sim::detail

ringrt::sim::Counters ringrt::sim::counters() {
  const detail::CounterCells& c = detail::cells();
  return {c.kernels.load(),     c.copies.load(),      c.graph_launches.load(), c.event_records.load(),
          c.event_waits.load(), c.value_waits.load(), c.synchronizes.load(),   c.queries.load()};
}

using namespace ringrt::sim;
using namespace ringrt::sim::detail;

// ---------------------------------------------------------------------------------------------
// streams: a thread each, running operations in order

namespace {

void stream_loop(ihipStream_t* s) {
  for (;;) {
    std::function<void()> op;
    {
      std::unique_lock<std::mutex> lock(s->mu);
      s->cv.wait(lock, [&] { return s->stopping || !s->ops.empty(); });
      if (s->ops.empty()) break;
      op = std::move(s->ops.front());
      s->ops.pop_front();
    }
    op();
    {
      std::lock_guard<std::mutex> lock(s->mu);
      ++s->finished;
    }
    s->cv.notify_all();
  }
  delete s;  // hipStreamDestroy handed it over
}

}  // namespace

void ringrt::sim::detail::enqueue(hipStream_t s, std::function<void()> op) {
  if (!s) {
    op();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->ops.push_back(std::move(op));
    ++s->enqueued;
  }
  s->cv.notify_all();
}

namespace {

// Waits, on a stream's thread, until `ready()`: spins briefly, then sleeps in growing steps (a wait
// for a host-written value or another stream's event).
template <class Ready>
void wait_until(Ready ready) {
  for (int i = 0; !ready(); ++i) {
    if (i < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(std::min(i - 63, 200)));
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// events

std::function<void()> ringrt::sim::detail::complete_record(hipEvent_t e, uint64_t gen) {
  return [e, gen] {
    std::lock_guard<std::mutex> lock(e->mu);
    if (gen > e->completed && !faulted(e->gpu)) {  // a faulted GPU completes nothing more
      e->completed = gen;
      e->at = std::chrono::steady_clock::now();
    }
    e->cv.notify_all();
  };
}
uint64_t ringrt::sim::detail::next_record(hipEvent_t e, int gpu) {
  std::lock_guard<std::mutex> lock(e->mu);
  e->gpu = gpu;
  return ++e->recorded;
}

hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned flags) {
  if (!event) return fail(hipErrorInvalidValue);
  *event = new ihipEvent_t;
  (*event)->flags = flags;
  return hipSuccess;
}

hipError_t hipEventDestroy(hipEvent_t event) {
  if (!event) return fail(hipErrorInvalidHandle);
  // A record still queued would complete a destroyed event: wait for it (HIP defers the release too).
  std::unique_lock<std::mutex> lock(event->mu);
  while (event->completed < event->recorded && !faulted(event->gpu))
    event->cv.wait_for(lock, std::chrono::milliseconds(1));
  lock.unlock();
  delete event;
  return hipSuccess;
}

hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
  if (!event) return fail(hipErrorInvalidHandle);
  int gpu = stream ? stream->gpu : current_gpu();
  uint64_t gen = next_record(event, gpu);
  ++cells().event_records;
  enqueue(stream, complete_record(event, gen));
  return hipSuccess;
}

hipError_t hipEventQuery(hipEvent_t event) {
  if (!event) return fail(hipErrorInvalidHandle);
  ++cells().queries;
  std::lock_guard<std::mutex> lock(event->mu);
  if (faulted(event->gpu) && event->completed < event->recorded) return fail(fault_of(event->gpu));
  return event->completed >= event->recorded ? hipSuccess : hipErrorNotReady;
}

hipError_t hipEventSynchronize(hipEvent_t event) {
  if (!event) return fail(hipErrorInvalidHandle);
  ++cells().synchronizes;
  std::unique_lock<std::mutex> lock(event->mu);
  // A faulted GPU never completes its records: the wait ends with the fault (polled: the fault is not
  // signalled through the event).
  for (;;) {
    if (faulted(event->gpu)) return fail(fault_of(event->gpu));  // sticky, as hipEventQuery
    if (event->completed >= event->recorded) return hipSuccess;
    event->cv.wait_for(lock, std::chrono::milliseconds(1));
  }
}

hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
  if (!ms || !start || !stop) return fail(hipErrorInvalidHandle);
  if ((start->flags | stop->flags) & hipEventDisableTiming) return fail(hipErrorInvalidHandle);
  std::scoped_lock lock(start->mu, stop->mu);
  if (start->completed < start->recorded || stop->completed < stop->recorded) return fail(hipErrorNotReady);
  if (start->recorded == 0 || stop->recorded == 0) return fail(hipErrorInvalidHandle);
  *ms = std::chrono::duration<float, std::milli>(stop->at - start->at).count();
  return hipSuccess;
}

hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned flags) {
  (void)flags;
  if (!stream) return fail(hipErrorInvalidValue);
  if (!valid_gpu(current_gpu())) return no_gpu();
  auto* s = new ihipStream_t;
  s->gpu = current_gpu();
  {
    std::lock_guard<std::mutex> lock(runtime().mu);
    runtime().streams.insert(s);
  }
  std::thread(stream_loop, s).detach();
  *stream = s;
  return hipSuccess;
}

hipError_t hipStreamDestroy(hipStream_t stream) {
  if (!stream) return fail(hipErrorInvalidHandle);
  {
    std::lock_guard<std::mutex> lock(runtime().mu);
    runtime().streams.erase(stream);
  }
  // The thread finishes what is queued, then frees the stream: notified under the lock, which the thread
  // needs before it may free it.
  std::lock_guard<std::mutex> lock(stream->mu);
  stream->stopping = true;
  stream->cv.notify_all();
  return hipSuccess;
}

hipError_t hipStreamSynchronize(hipStream_t stream) {
  ++cells().synchronizes;
  if (!stream) return hipSuccess;
  std::unique_lock<std::mutex> lock(stream->mu);
  stream->cv.wait(lock, [&] { return stream->finished >= stream->enqueued; });
  if (faulted(stream->gpu)) return fail(fault_of(stream->gpu));
  return hipSuccess;
}

hipError_t hipDeviceSynchronize() {
  std::vector<hipStream_t> mine;
  {
    std::lock_guard<std::mutex> lock(runtime().mu);
    for (hipStream_t s : runtime().streams)
      if (s->gpu == current_gpu()) mine.push_back(s);
  }
  for (hipStream_t s : mine) {  // (a stream destroyed meanwhile is not waited for)
    std::unique_lock<std::mutex> lock(s->mu);
    s->cv.wait(lock, [&] { return s->finished >= s->enqueued; });
  }
  ++cells().synchronizes;
  return faulted(current_gpu()) ? fail(hipErrorIllegalAddress) : hipSuccess;
}

hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned flags) {
  (void)flags;
  if (!event) return fail(hipErrorInvalidHandle);
  uint64_t gen = 0;
  {
    std::lock_guard<std::mutex> lock(event->mu);
    gen = event->recorded;  // the record most recent now
  }
  ++cells().event_waits;
  enqueue(stream, [event, gen] {
    std::unique_lock<std::mutex> lock(event->mu);
    while (event->completed < gen && !faulted(event->gpu)) event->cv.wait_for(lock, std::chrono::milliseconds(1));
  });
  return hipSuccess;
}

hipError_t hipStreamWaitValue32(hipStream_t stream, void* ptr, uint32_t value, unsigned flags, uint32_t mask) {
  if (!ptr || reinterpret_cast<uintptr_t>(ptr) % 4 != 0 || flags > hipStreamWaitValueNor)
    return fail(hipErrorInvalidValue);
  if (!config().wait_value) return fail(hipErrorNotSupported);
  ++cells().value_waits;
  enqueue(stream, [ptr, value, flags, mask] {
    std::atomic_ref<uint32_t> word(*static_cast<uint32_t*>(ptr));
    wait_until([&] {
      uint32_t v = word.load(std::memory_order_acquire) & mask;
      switch (flags) {
        case hipStreamWaitValueGte:
          return static_cast<int32_t>(v - value) >= 0;  // wrapping, as CUDA's GEQ
        case hipStreamWaitValueEq:
          return v == value;
        case hipStreamWaitValueAnd:
          return (v & value) != 0;
        default:
          return ~(v | (value & mask)) != 0;
      }
    });
  });
  return hipSuccess;
}

hipError_t hipStreamWriteValue32(hipStream_t stream, void* ptr, uint32_t value, unsigned flags) {
  (void)flags;
  if (!ptr || reinterpret_cast<uintptr_t>(ptr) % 4 != 0) return fail(hipErrorInvalidValue);
  enqueue(stream, [ptr, value] {
    std::atomic_ref<uint32_t>(*static_cast<uint32_t*>(ptr)).store(value, std::memory_order_release);
  });
  return hipSuccess;
}

hipError_t hipLaunchHostFunc(hipStream_t stream, hipHostFn_t fn, void* user_data) {
  if (!fn) return fail(hipErrorInvalidValue);
  enqueue(stream, [fn, user_data] { fn(user_data); });
  return hipSuccess;
}

// ---------------------------------------------------------------------------------------------
// memory

namespace {
hipError_t allocate(void** ptr, size_t bytes, int gpu) {
  if (!ptr) return fail(hipErrorInvalidValue);
  size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  if (gpu >= 0) {
    Gpu& g = *runtime().gpus[static_cast<size_t>(gpu)];
    std::lock_guard<std::mutex> lock(g.mu);
    if (rounded > config().gpu_bytes - g.used) return fail(hipErrorOutOfMemory);
    g.used += rounded;
  }
  void* p = std::aligned_alloc(256, rounded);
  if (!p) return fail(hipErrorOutOfMemory);
  std::lock_guard<std::mutex> lock(runtime().mu);
  runtime().allocations[p] = {gpu, rounded};
  *ptr = p;
  return hipSuccess;
}

hipError_t release(void* ptr, bool host) {
  if (!ptr) return hipSuccess;
  Allocation a{};
  {
    std::lock_guard<std::mutex> lock(runtime().mu);
    auto it = runtime().allocations.find(ptr);
    if (it == runtime().allocations.end() || (it->second.gpu < 0) != host) return fail(hipErrorInvalidValue);
    a = it->second;
    runtime().allocations.erase(it);
  }
  if (a.gpu >= 0) {
    Gpu& g = *runtime().gpus[static_cast<size_t>(a.gpu)];
    std::lock_guard<std::mutex> lock(g.mu);
    g.used -= a.bytes;
  }
  std::free(ptr);
  return hipSuccess;
}
}  // namespace

hipError_t hipMalloc(void** ptr, size_t bytes) {
  if (!valid_gpu(current_gpu())) return no_gpu();
  return allocate(ptr, bytes, current_gpu());
}
hipError_t hipFree(void* ptr) { return release(ptr, false); }
hipError_t hipHostMalloc(void** ptr, size_t bytes, unsigned flags) {
  (void)flags;
  return allocate(ptr, bytes, -1);
}
hipError_t hipHostFree(void* ptr) { return release(ptr, true); }

hipError_t hipHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned flags) {
  if (!device_ptr || !host_ptr || flags != 0) return fail(hipErrorInvalidValue);
  *device_ptr = host_ptr;  // one address space
  return hipSuccess;
}

hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind) {
  (void)kind;
  if (bytes && (!dst || !src)) return fail(hipErrorInvalidValue);
  if (bytes) std::memmove(dst, src, bytes);
  ++cells().copies;
  return hipSuccess;
}

hipError_t hipMemset(void* dst, int value, size_t bytes) {  // (not a copy: the counters do not count it)
  if (bytes && !dst) return fail(hipErrorInvalidValue);
  if (bytes) std::memset(dst, value, bytes);
  return hipSuccess;
}

std::function<void()> ringrt::sim::detail::copy_op(void* dst, const void* src, size_t bytes, int gpu) {
  return [dst, src, bytes, gpu] {
    if (faulted(gpu)) return;
    if (bytes) std::memmove(dst, src, bytes);
    ++cells().copies;
  };
}

hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind kind, hipStream_t stream) {
  (void)kind;
  if (bytes && (!dst || !src)) return fail(hipErrorInvalidValue);
  enqueue(stream, copy_op(dst, src, bytes, stream ? stream->gpu : current_gpu()));
  return hipSuccess;
}

hipError_t hipMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                              hipStream_t stream) {
  if (!valid_gpu(dst_device) || !valid_gpu(src_device)) return fail(hipErrorInvalidDevice);
  return hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, stream);
}
