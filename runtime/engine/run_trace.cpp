// The trace of a finished run (runtime/api/trace.hpp): each item's work with the times its backend stamped,
// handed to the trace sink (runtime/engine/trace_sink.hpp).
#include <fmt/format.h>

#include "codegen/item_kernel.hpp"
#include "rewrite/collective.hpp"
#include "runtime/engine/run_memory.hpp"
#include "runtime/engine/trace_sink.hpp"

namespace ringrt {

void Program::record_trace(const Events& events, const RunMemory& memory) const {
  std::vector<TracedWork> work;
  for (size_t i = 0; i < plan_.items.size(); ++i) {
    const ScheduleItem& item = plan_.items[i];
    if (memory.elided(i) || events[i].empty()) continue;  // a peer read or write, or nothing ran here
    TraceEvent base;
    base.item = i;
    base.deps = item.deps;
    if (item.kind == ScheduleItem::Kind::copy) {
      base.kind = TraceEvent::Kind::copy;
      base.name = "copy";
      base.src = item.ast.src(0).device().name();
      base.dst = item.device.name();
      base.bytes = prod(item.ast.shape()) * itemsize(item.ast.dtype());
      Device &from = device(base.src), &to = device(base.dst);
      if (base.bytes == 0) continue;                            // submit_copy passed its wait list on
      base.queue = from.remote_rank() >= 0 ? base.dst + " mpi"  // a receive from another rank
                   : to.remote_rank() >= 0 ? base.src + " mpi"  // a send
                                           : base.dst;
      work.push_back({std::move(base), events[i].at(0).times()});
      continue;
    }
    const codegen::Kernel& k = kernels_[i]->kernel;
    bool peer = memory.peer_writer(i);  // it wrote its peer copies too: their bytes count
    base.name = peer ? kernels_[i]->peer_compiled->kernel().name : k.name;
    base.bytes = k.numel * itemsize(k.dtype) * (peer ? 1 + static_cast<int64_t>(kernels_[i]->peer_copies.size()) : 1);
    if (const auto& c = kernels_[i]->collective) {  // a fused collective: its launch on each device
      base.name = fmt::format("{}_{}", fused_collective_name(c->arg.collective), fused_name(c->arg.algorithm));
      base.bytes = c->numel * itemsize(c->dtype);
    }
    std::vector<std::string> local;  // submit_kernel's launches, in order: this rank's devices
    for (const auto& name : names_of(item.device))
      if (device(name).remote_rank() < 0) local.push_back(name);
    bool mpi = kernels_[i]->collective && !kernels_[i]->collective->ranks.empty();  // MPI's: queued in MPI
    for (size_t d = 0; d < events[i].size() && d < local.size(); ++d) {
      work.push_back({base, events[i][d].times()});
      work.back().event.queue = mpi ? local[d] + " mpi" : local[d];
    }
  }
  record_trace_run(std::move(work));
}

}  // namespace ringrt
