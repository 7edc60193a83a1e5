// The simulated GPU runtime's own state, shared by its files (sim_runtime.cpp: devices, memory,
// streams, events, kernels; sim_graph.cpp: graphs). Internal to runtime/hip/sim/.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "codegen/compiler.hpp"
#include "codegen/sim_rtc.hpp"
#include "runtime/hip/sim/sim_hip.hpp"

// A stream: a thread (sim_runtime.cpp stream_loop) runs `ops` in order; `finished` counts up to
// `enqueued` as they complete.
struct ihipStream_t {
  int gpu = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> ops;
  uint64_t enqueued = 0, finished = 0;
  bool stopping = false;  // hipStreamDestroy: the thread drains `ops`, then frees the stream
};

// An event: each record takes the next generation (`recorded`); the stream that reaches it completes
// that generation (`completed`, never lowered).
struct ihipEvent_t {
  unsigned flags = 0;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0, completed = 0;
  int gpu = -1;                              // the GPU of the stream of the last record
  std::chrono::steady_clock::time_point at;  // when the last record completed
};

// A kernel of a loaded code object; lives as long as the process (its library with it).
struct ihipModuleSymbol_t {
  std::string name;
  std::shared_ptr<ringrt::codegen::HostLibrary> library;
  ringrt::sim::LaunchFn launch = nullptr;
  ringrt::sim::PackFn pack = nullptr;
};

namespace ringrt::sim::detail {

// The simulated machine, from the environment (sim_hip.hpp), read once.
struct Config {
  Config();
  int gpus;
  size_t gpu_bytes;
  bool peer, wait_value;
};
const Config& config();

struct CounterCells {
  std::atomic<uint64_t> kernels{0}, copies{0}, graph_launches{0}, event_records{0}, event_waits{0}, value_waits{0};
  std::atomic<uint64_t> synchronizes{0}, queries{0};
};
CounterCells& cells();

// One GPU: its memory in use, its peer access, and its sticky fault (0 while healthy).
struct Gpu {
  std::atomic<int> fault{0};
  std::mutex mu;  // used, peers_enabled
  size_t used = 0;
  std::set<int> peers_enabled;
};
struct Allocation {
  int gpu;  // -1: host memory (hipHostMalloc)
  size_t bytes;
};
// The process's simulated GPUs, allocations and live streams (never destroyed: stream threads may
// outlive static destructors).
struct Runtime {
  Runtime();
  std::vector<std::unique_ptr<Gpu>> gpus;
  std::mutex mu;  // allocations, streams
  std::map<const void*, Allocation> allocations;
  std::set<ihipStream_t*> streams;
};
Runtime& runtime();

// Sets the calling thread's last error (hipGetLastError) unless rc is hipSuccess; returns rc.
hipError_t fail(hipError_t rc);
hipError_t take_last_error();  // hipGetLastError
// The calling thread's current GPU (hipSetDevice).
int current_gpu();
void set_current_gpu(int gpu);
bool valid_gpu(int gpu);
hipError_t no_gpu();  // fail(): hipErrorNoDevice without GPUs, else hipErrorInvalidDevice
// GPU `gpu`'s sticky fault: whether it has one, which (hipSuccess when none), set it once.
bool faulted(int gpu);
hipError_t fault_of(int gpu);
void set_fault(int gpu, hipError_t rc);
// Runs `op` in order on `s`; the NULL stream runs it at once, in the caller.
void enqueue(hipStream_t s, std::function<void()> op);
// The next record of `e`, made on a stream of `gpu`: its generation, for complete_record.
uint64_t next_record(hipEvent_t e, int gpu);
// The operation that completes record `gen` of `e`.
std::function<void()> complete_record(hipEvent_t e, uint64_t gen);
// The arguments of a launch, packed at their natural alignment: from `extra` (a packed buffer with
// HIP_LAUNCH_PARAM_*) or from `params` (a pointer to each argument). Empty for a malformed `extra`.
std::vector<char> launch_args(hipFunction_t f, void** params, void** extra);
// The operation that runs `f` over blocks x threads with `args` on a stream of `gpu` (the fault of
// RINGRT_SIM_FAULT_KERNEL instead; nothing on a faulted GPU).
std::function<void()> kernel_op(hipFunction_t f, unsigned blocks, unsigned threads, std::vector<char> args, int gpu);
// The operation of a copy on a stream of `gpu` (nothing on a faulted GPU).
std::function<void()> copy_op(void* dst, const void* src, size_t bytes, int gpu);
// Counts a graph launch (Counters::graph_launches).
void count_graph_launch();

}  // namespace ringrt::sim::detail
