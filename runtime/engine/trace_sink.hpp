// The executor's side of a Trace (runtime/api/trace.hpp): what one finished run hands over.
#pragma once

#include <optional>
#include <vector>

#include "core/trace_event.hpp"
#include "runtime/device/device.hpp"

namespace ringrt {

// One piece of a run's work: its event (times unset) and the times its backend stamped, if any.
struct TracedWork {
  TraceEvent event;
  std::optional<Event::Times> times;
};

// Hands a finished run's work to the recording Trace, as one run; nothing when none records (then
// trace_timing() was off, and the executor calls this only when it was on as the run started).
// Thread-safe.
void record_trace_run(std::vector<TracedWork> work);

}  // namespace ringrt
