// A program's fused collective items (rewrite/collective.hpp; docs/fused-collectives.md): their combine
// kernels and barrier, prepared once, and each call's launches, one per device (Device::launch_collective).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "codegen/item_kernel.hpp"
#include "core/errors.hpp"
#include "core/params_internal.hpp"
#include "rewrite/collective.hpp"
#include "rewrite/ops.hpp"
#include "runtime/device/cluster.hpp"
#include "runtime/engine/binding.hpp"

namespace ringrt {

CombineKey combine_key(const FusedStep& s) { return {s.end - s.begin, s.all_outputs, s.ring()}; }

std::shared_ptr<PreparedCollective> prepare_collective(const ScheduleItem& item) {
  auto c = std::make_shared<PreparedCollective>();
  c->arg = collective_arg(item.ast);
  c->ndev = static_cast<int64_t>(item.device.count());
  c->numel = prod(item.ast.src(0).shape());  // every device's input (a reduce_scatter writes a chunk of it)
  c->dtype = item.ast.dtype();
  c->barrier = std::make_shared<CollectiveBarrier>(c->ndev);
  if (c->arg.algorithm == FusedAlgorithm::mpi) {  // MPI's collective: no steps, no kernels; its ranks
    for (const std::string& d : item.device.names())
      if (std::optional<RankedDeviceName> r = split_rank(d)) c->ranks.push_back(r->rank);
    if (c->ranks.size() != static_cast<size_t>(c->ndev))
      throw InternalError(fmt::format("MPI's collective on {}: not one device on each rank", item.device.to_string()));
    return c;
  }
  // ring_fused's slices: its chunks are about numel / n elements (an allgather's: every device's numel)
  int64_t chunk = c->arg.collective == FusedCollective::allgather ? c->numel : c->numel / std::max<int64_t>(1, c->ndev);
  int64_t slices = ring_slices(c->ndev, chunk * itemsize(c->dtype));
  for (bool in_place : {false, true})
    for (int64_t d = 0; d < c->ndev; ++d) {
      c->steps[in_place].push_back(fused_steps(c->arg.algorithm, c->ndev, c->numel, d, in_place, /*push=*/true,
                                               c->arg.collective, slices, c->arg.root));
      for (const FusedStep& s : c->steps[in_place].back()) {
        CombineKey key = combine_key(s);
        if (s.kind != FusedStep::Kind::combine || s.begin == s.end || c->kernels.count(key)) continue;
        codegen::Kernel k = collective_combine_kernel(item, std::get<0>(key), std::get<2>(key) ? 2 : c->ndev);
        c->kernels.emplace(key, std::get<1>(key) ? codegen::with_peer_outputs(k, static_cast<int>(c->ndev - 1)) : k);
      }
    }
  return c;
}

std::string mpi_collective_part(const ScheduleItem& item, uint64_t run) {
  std::set<int> ranks;
  for (const std::string& d : item.device.tuple() ? item.device.names() : DeviceTuple{item.device.name()})
    if (std::optional<RankedDeviceName> r = split_rank(d)) ranks.insert(r->rank);
  if (ranks.size() < 2) return "";
  return fmt::format(": MPI's collective across ranks {} in multi-rank run {}", fmt::join(ranks, ", "), run);
}

std::mutex& collective_submit_mutex() {
  static std::mutex mu;
  return mu;
}

// A fused collective item: each device's steps (rewrite/collective.hpp) with its combine kernels, queued
// under collective_submit_mutex with the index of this call's first barrier.
std::vector<Event> Program::submit_collective(size_t i, const BindingPlan& plan, const RunSlots& slots,
                                              const std::vector<Event>& after) const {
  PreparedCollective& c = *kernels_[i]->collective;
  const std::vector<BindingPlan::Launch>& planned = plan.launches[i];
  if (c.arg.algorithm == FusedAlgorithm::mpi) {  // this rank's device: MPI's collective, by the cluster
    std::vector<Event> out;
    for (const BindingPlan::Launch& l : planned) {
      Cluster::CollectiveCall call;
      call.collective = collective_of(c.arg.collective);
      call.op = reduce_op_of(c.arg.op);
      call.dtype = c.dtype;
      call.ranks = c.ranks;
      call.output = slots.real(l.bufs[0]);
      call.input = slots.real(l.bufs[1]);
      call.count = static_cast<size_t>(c.numel);
      call.root = static_cast<int>(c.arg.root);
      out.push_back(cluster()->collective(*l.device, call, after));
    }
    return out;
  }
  auto n = static_cast<size_t>(c.ndev);
  std::vector<CollectiveLaunch> launches;
  for (const BindingPlan::Launch& l : planned) {
    CollectiveLaunch cl{l.device, l.dnum, c.steps[l.in_place].at(static_cast<size_t>(l.dnum)), {}, {}, {}, {}};
    for (const FusedStep& s : cl.steps)  // (an allgather has no combine step, and no kernel; an empty one none)
      cl.combines.push_back(s.kind == FusedStep::Kind::combine && s.begin < s.end
                                ? c.compiled.at(l.device).at(combine_key(s)).get()
                                : nullptr);
    for (size_t j = 0; j < n; ++j) cl.outputs.push_back(slots.real(l.bufs[j]));
    for (size_t j = 0; j < n; ++j) cl.inputs.push_back(slots.real(l.bufs[n + j]));
    for (size_t j = 2 * n; j < l.bufs.size(); ++j) cl.scratches.push_back(slots.real(l.bufs[j]));
    launches.push_back(std::move(cl));
  }
  if (launches.empty()) return {};
  CollectiveCall call;
  call.itemsize = static_cast<size_t>(itemsize(c.dtype));
  call.name = describe_item(plan_.items[i], i);
  call.dtype = c.dtype;
  Device& first = *launches[0].device;
  std::lock_guard<std::mutex> lock(collective_submit_mutex());
  if (c.barrier->broken()) {  // an earlier call failed: its launches keep the old barrier
    c.barrier = std::make_shared<CollectiveBarrier>(c.ndev);
    c.next_barrier = 0;
    c.next_signal = 0;
  }
  call.barrier = c.barrier;
  call.base = c.next_barrier;
  call.signal_base = c.next_signal;
  const std::vector<FusedStep>& steps = launches[0].steps;  // every device has as many barriers and signals
  c.next_barrier += static_cast<uint64_t>(fused_barriers(steps));
  c.next_signal += static_cast<uint64_t>(fused_signals(steps));
  return first.launch_collective(std::move(launches), call, after);
}

}  // namespace ringrt
