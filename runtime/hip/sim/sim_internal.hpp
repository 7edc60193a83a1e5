// The simulated GPU runtime's own state, shared by its files (sim_runtime.cpp: devices, memory,
// streams, events, kernels; sim_graph.cpp: graphs). Internal to runtime/hip/sim/.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/compiler.hpp"
#include "runtime/hip/sim/sim_hip.hpp"
#include "runtime/hip/sim/sim_rtc.hpp"

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

// Sets the calling thread's last error (hipGetLastError) unless rc is hipSuccess; returns rc.
hipError_t fail(hipError_t rc);
// The calling thread's current GPU (hipSetDevice).
int current_gpu();
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
