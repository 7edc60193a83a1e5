// One piece of work a Trace recorded (public; runtime/api/trace.hpp records them): a kernel or a copy of one
// run, its queue, bytes and times. A value type, below the engine that fills it and the API that hands it out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringrt {

// One piece of device work: one item of a run on one device queue.
struct TraceEvent {
  enum class Kind { kernel, copy };
  Kind kind = Kind::kernel;
  uint64_t run = 0;          // the Trace's count of runs (Program runs: a realize() may make several), from 1
  size_t item = 0;           // its index among the run's schedule items (Schedule::to_string, KernelItem::item)
  std::vector<size_t> deps;  // the items it waited for
  std::string queue;         // the device queue it ran on: "CPU:1"; a copy: the destination's; MPI: "<dev> mpi"
  std::string name;          // a kernel's name (KernelItem::name); "copy" for a copy
  std::string src, dst;      // a copy's devices; empty for a kernel
  int64_t bytes = 0;         // a kernel: its output here, x (1 + peers) with peer writes; a copy: bytes copied
  int64_t start_ns = 0;      // since the Trace started (std::chrono::steady_clock)
  int64_t end_ns = 0;        // >= start_ns
};

}  // namespace ringrt
