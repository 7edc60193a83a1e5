// A timeline of what the devices ran (public): while a Trace records, every kernel launch and copy
// that a realize() runs is kept with its item index, device queue, bytes and the times it ran; the
// Trace writes them as Chrome trace-event JSON (chrome://tracing, Perfetto; scripts/trace_plot.py draws
// a PNG). Reference: the Trace Event Format (docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4wIgRxOQEHzfGOSk),
// "X" (complete) events and "M" (thread_name) metadata; nccl-tests' and PyTorch's profilers' timelines.
//
//   ringrt::Trace trace;               // records from now on (one Trace at a time)
//   y.realize();
//   trace.stop();                      // or pause() / resume() around what is of interest
//   trace.write_chrome_json("y.json");
//
// Times. The backends stamp each piece of work (runtime/device/device.hpp Event::times): cpu, around
// the work on the thread that runs it, after its waits; hip, host times (the start is the later of when
// it was enqueued and when the work before it on its queue ended, the end when its completion was seen:
// runtime/hip/hip_device.hpp "Timing"); a transfer between ranks (MPI), from when it could start to
// when it was done. What a run records is handed over when the run has finished: a run that fails or
// times out records nothing. A copy the executor turned into a peer read (runtime.peer_reads) or a
// peer write (runtime.peer_writes: the kernel that wrote it is named <kernel>_p<peers>) runs no work
// and is not recorded, nor is a copy of 0 bytes.
// Cost. Without a recording Trace, one relaxed atomic load per run and per piece of device work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ringrt/core/trace_event.hpp>
#include <string>
#include <vector>

namespace ringrt {

class Trace {
 public:
  // About 20 MB of events and 25 MB of JSON at 32 devices (each event holds its dependencies: more devices, more).
  static constexpr size_t kDefaultMaxEvents = 100000;

  // Starts recording; at most max_events are kept, later ones only counted (dropped()). Throws
  // ConfigError when another Trace exists (one at a time per process) or max_events is 0.
  explicit Trace(size_t max_events = kDefaultMaxEvents);
  ~Trace();  // stops recording
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  // Recording stops (pause, stop) and starts again (resume); events kept stay. Runs under way when
  // it stops are not recorded. Thread-safe.
  void pause();
  void resume();
  void stop() { pause(); }
  bool recording() const;

  std::vector<TraceEvent> events() const;  // in the order they were recorded (run by run)
  size_t dropped() const;                  // events not kept: the cap was reached
  size_t untimed() const;                  // pieces of work whose backend stamped no times (not kept)
  size_t max_events() const;

  // The Chrome trace-event JSON object: "traceEvents" (one "X" event per TraceEvent: ts and dur in
  // microseconds, pid = the rank (0 without mpirun), tid = one per queue, named by a "thread_name"
  // metadata event; args: item, kind, bytes, run, deps, and src/dst for copies, kernel for kernels),
  // "displayTimeUnit": "ns", and "metadata": {"ringrt_trace": 1, rank, host (MPI's processor name; ""
  // without mpirun), origin_ns (the trace's start on std::chrono::steady_clock, CLOCK_MONOTONIC on
  // Linux: comparable between the processes of one host, so the ranks' files can be aligned), events,
  // dropped, untimed, max_events}.
  std::string chrome_json() const;
  // Writes chrome_json() to path (a link there is refused, not followed). Throws IOError.
  void write_chrome_json(const std::string& path) const;

 private:
  struct State;                // the recording (runtime/api/trace.cpp)
  friend class TraceRecorder;  // the process's recording Trace, which the executor hands its runs
  std::shared_ptr<State> s_;
};

}  // namespace ringrt
