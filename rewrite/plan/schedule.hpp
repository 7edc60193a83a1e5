// The scheduler: from a lowered per-device graph to ordered work items (reference: tinygrad
// engine/schedule.py; docs/architecture.md "Planning"). Planning only; executing is separate.
//
// Kernel boundaries are the realized values: inputs (BUFFER), CONTIGUOUS, the value of a STORE or
// ASSIGN, a copy's source that is not a plain range of a realized buffer, and the roots. A kernel
// fuses the elementwise math and at most one reduction between boundaries and writes one output per
// device; a kernel on a device tuple is one item, launched on every device with _device_num bound.
// A COPY is an item of its own; one stored into a scratch buffer writes straight into it. So is a
// COLLECTIVE (a fused collective, rewrite/collective.hpp): one item on its device tuple, launched once
// per device, reading every device's block of its source; one stored into a buffer (an allreduce in
// place) writes straight into it. An item that
// would write nothing (0 elements) is never scheduled: its readers wait for what it would have waited for.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "rewrite/uop.hpp"

namespace ringrt {

struct ScheduleItem {
  enum class Kind { kernel, copy, collective };
  Kind kind;
  UOp ast;                   // kernel: the value computed (leaves are realized values); copy: the COPY;
                             // collective: the COLLECTIVE
  UOp target;                // what it writes: a BUFFER, an MSELECT of one, or the realized node itself
  DeviceSpec device;         // where it runs; a tuple kernel launches once per device
  std::vector<size_t> deps;  // indices of the items it waits for: those that wrote the bytes it reads
                             // (the block of a buffer, through AFTER chains: not every earlier store
                             // into the buffer) and the last earlier writer of the block it writes
  std::vector<UOp> reads;    // kernel: the realized values its ast reads (its leaves), in a fixed order;
                             // copy: the one realized value whose contiguous range it reads;
                             // collective: its source (every device's block)
  bool store = false;        // a STORE's item: target is its destination, which may be a SHRINK of a
                             // contiguous range of a buffer (rewrite/plan/memory_plan.hpp write_site)
};

struct ItemPlan {
  std::vector<ScheduleItem> items;  // in a valid order: every item after its dependencies
  size_t kernels() const;
  size_t copies() const;
  size_t collectives() const;  // fused collective items: one launch per device each
  // One line per item; an item marked in `skipped` (a run's binding skips it) says so.
  std::string to_string(const std::vector<char>& skipped = {}) const;
};

// Plans the work that realizes roots (per-device nodes from lower_multi). Deterministic: the order
// follows the graph's structural topological order.
ItemPlan plan_schedule(const std::vector<UOp>& roots);

}  // namespace ringrt
