#include "runtime/engine/executor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <unordered_map>

#include "codegen/item_kernel.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "core/params_internal.hpp"
#include "rewrite/collective.hpp"
#include "rewrite/plan/memory_plan.hpp"
#include "runtime/device/cluster.hpp"
#include "runtime/engine/binding.hpp"
#include "runtime/engine/run_memory.hpp"

namespace ringrt {

// ---------------------------------------------------------------------------------------------
// storage

namespace {
// ---------------------------------------------------------------------------------------------
// preparing kernels

// The rank that runs a device's work: its own for a RemoteDevice, else this one.
int rank_of(const Device& d) { return d.remote_rank() >= 0 ? d.remote_rank() : rank_info().rank; }

// A copy between ranks, as this rank sees it: ": a receive from rank 1 in multi-rank run 7", or "".
std::string cross_rank_part(const ScheduleItem& item, uint64_t run) {
  if (item.kind == ScheduleItem::Kind::collective) return run == 0 ? "" : mpi_collective_part(item, run);
  if (item.kind != ScheduleItem::Kind::copy || run == 0) return "";
  int src = rank_of(device(item.ast.src(0).device().name())), dst = rank_of(device(item.device.name()));
  int me = rank_info().rank;
  if (src == dst) return "";
  return src == me ? fmt::format(": a send to rank {} in multi-rank run {}", dst, run)
                   : fmt::format(": a receive from rank {} in multi-rank run {}", src, run);
}

// The ranks whose devices a plan uses (the same set on every rank: names are global).
std::set<int> ranks_of(const ItemPlan& plan) {
  std::set<int> ranks;
  for (const auto& item : plan.items) {
    for (const auto& name : names_of(item.device)) ranks.insert(rank_of(device(name)));
    if (item.kind == ScheduleItem::Kind::copy) ranks.insert(rank_of(device(item.ast.src(0).device().name())));
  }
  return ranks;
}

}  // namespace

std::string describe_item(const ScheduleItem& item, size_t i) {
  if (item.kind == ScheduleItem::Kind::collective) {
    CollectiveArg a = collective_arg(item.ast);
    return fmt::format("item {} ({} {} {} {} {})", i, fused_collective_name(a.collective), fused_name(a.algorithm),
                       op_name(a.op), dtype_name(item.ast.dtype()), shape_str(item.ast.shape()));
  }
  if (item.kind == ScheduleItem::Kind::copy)
    return fmt::format("item {} (copy {} -> {})", i, item.ast.src(0).device().to_string(), item.device.to_string());
  return fmt::format("item {} (kernel {} {})", i, dtype_name(item.ast.dtype()), shape_str(item.ast.shape()));
}

// set_watchdog_timeout: the tunable runtime.watchdog_s for the process (watchdog_timeout, core/params.hpp).
void set_watchdog_timeout(std::chrono::milliseconds timeout) {
  RuntimeParams r;
  r.watchdog_s = static_cast<double>(timeout.count()) / 1000;
  set_runtime_params(r, {"runtime.watchdog_s"});
}

void Program::prepare() {
  for (auto& item : plan_.items) {
    if (item.kind == ScheduleItem::Kind::copy) {
      kernels_.push_back(nullptr);
      continue;
    }
    if (item.kind == ScheduleItem::Kind::collective) {
      auto pk = std::make_shared<PreparedKernel>();
      pk->collective = prepare_collective(item);  // collective_run.cpp
      if (!pk->collective->kernels.empty()) pk->kernel = pk->collective->kernels.rbegin()->second;
      kernels_.push_back(pk);
      has_collective_ = true;
      if (!pk->collective->ranks.empty()) mpi_ranks_.push_back(pk->collective->ranks);  // MPI's (mpi)
      continue;
    }
    auto pk = std::make_shared<PreparedKernel>();
    ItemKernel lowered = lower_item(item);  // shared with Schedule::emit_sources
    pk->kernel = std::move(lowered.kernel);
    pk->input_reads = std::move(lowered.input_reads);
    for (const auto& sc : pk->kernel.scalars) scalar_count_ = std::max(scalar_count_, static_cast<size_t>(sc.slot) + 1);
    kernels_.push_back(pk);
  }
  Cluster* c = cluster();
  spans_ranks_ = c && ranks_of(plan_).size() > 1;
  if (!spans_ranks_) choose_peer_writes();
  asynchronous_ = !spans_ranks_ && !plan_.items.empty();
  for (const auto& item : plan_.items) {
    std::vector<std::string> names = names_of(item.device);
    if (item.kind == ScheduleItem::Kind::copy) names.push_back(item.ast.src(0).device().name());
    for (const auto& name : names) asynchronous_ = asynchronous_ && device(name).asynchronous();
  }
  // compile per device, every kernel of the program in one go (one with peer copies in both forms)
  std::unordered_map<Device*, std::vector<size_t>> wanted;
  for (size_t i = 0; i < plan_.items.size(); ++i)
    if (kernels_[i])
      for (const auto& name : names_of(plan_.items[i].device))
        if (Device& dev = device(name); dev.remote_rank() < 0) wanted[&dev].push_back(i);  // others compile theirs
  for (auto& [dev, all] : wanted) {
    std::vector<codegen::Kernel> ks;
    std::vector<size_t> items, peer;  // kernel items; items whose kernel has a peer form, in ks after the plain ones
    std::vector<std::pair<PreparedCollective*, CombineKey>> combines;  // collectives', after those
    for (size_t i : all)
      if (kernels_[i]->collective) {
        for (const auto& [key, k] : kernels_[i]->collective->kernels)
          combines.emplace_back(kernels_[i]->collective.get(), key);
      } else {
        items.push_back(i);
      }
    for (size_t i : items) ks.push_back(kernels_[i]->kernel);
    for (size_t i : items)
      if (!kernels_[i]->peer_copies.empty()) {
        peer.push_back(i);
        ks.push_back(
            codegen::with_peer_outputs(kernels_[i]->kernel, static_cast<int>(kernels_[i]->peer_copies.size())));
      }
    for (const auto& [c, len] : combines) ks.push_back(c->kernels.at(len));
    auto compiled = dev->compile_all(ks);
    for (size_t j = 0; j < items.size(); ++j) kernels_[items[j]]->compiled[dev] = compiled[j];
    for (size_t j = 0; j < peer.size(); ++j) kernels_[peer[j]]->peer_compiled = compiled[items.size() + j];
    for (size_t j = 0; j < combines.size(); ++j)
      combines[j].first->compiled[dev][combines[j].second] = compiled[items.size() + peer.size() + j];
  }
  // an SPMD job: the ranks compare this hash before each run (run()): the same items, the same kernels
  // (their code: the op included), the same chunks of transfers, or the sends and receives would not match
  if (spans_ranks_) {
    plan_hash_ = fnv1a(
        fmt::format("{}|runtime.mpi_chunk_bytes={}", plan_.to_string(), current_runtime_params().mpi_chunk_bytes));
    for (const auto& k : kernels_)
      if (k) plan_hash_ = fnv1a(k->kernel.code(), plan_hash_);
  }
}

// The memory plan's peer-write candidates (planned with what each lowered kernel reads) of each kernel
// item whose device may write the copies' destinations (Device::can_read_peer: peer access covers
// writes), both devices of this process.
void Program::choose_peer_writes() {
  memory_.plan_peer_writes(plan_, [this](size_t item, size_t read) {
    std::optional<std::pair<int64_t, int64_t>> out;  // the union over the kernel inputs that are this read
    const PreparedKernel& pk = *kernels_.at(item);
    for (size_t j = 0; j < pk.input_reads.size(); ++j) {
      if (pk.input_reads[j] != read) continue;
      auto b = pk.kernel.read_bounds(static_cast<int>(j));
      if (!b) continue;
      out = out ? std::pair{std::min(out->first, b->first), std::max(out->second, b->second)} : *b;
    }
    return out;
  });
  for (size_t k = 0; k < plan_.items.size(); ++k) {
    const std::vector<size_t>& copies = memory_.peer_writes(k);
    if (copies.empty()) continue;
    Device& from = device(plan_.items[k].device.name());
    if (from.remote_rank() >= 0) continue;
    for (size_t c : copies) {
      Device& to = device(plan_.items[c].device.name());
      if (to.remote_rank() < 0 && from.can_read_peer(to)) kernels_[k]->peer_copies.push_back(c);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// bind: the memory of one run

namespace {
std::atomic<size_t> g_bindings_built{0};
}  // namespace

size_t Program::bindings_built() { return g_bindings_built.load(); }

// The last binding plan when this run's facts are its own, else a new one (binding.hpp).
std::shared_ptr<const Program::BindingPlan> Program::binding(const std::vector<std::vector<Block>>& outs,
                                                             const StorageLookup& inputs, RunSlots& slots) const {
  std::shared_ptr<const BindingPlan> plan;
  {
    std::lock_guard<std::mutex> lock(bindings_->mu);
    plan = bindings_->plan;
  }
  if (!plan || !plan->matches(outs, inputs, slots)) {
    slots = RunSlots{};
    plan = BindingPlan::build(*this, outs, inputs, slots);
    std::lock_guard<std::mutex> lock(bindings_->mu);
    bindings_->plan = plan;
    ++g_bindings_built;
  }
  return plan;
}

std::unique_ptr<Program::RunMemory> Program::bind(const std::vector<std::vector<Block>>& outs,
                                                  const StorageLookup& inputs) const {
  RunSlots slots;
  std::shared_ptr<const BindingPlan> plan = binding(outs, inputs, slots);
  return std::make_unique<RunMemory>(std::move(plan), std::move(slots));
}

// submit: every item to its device's queue. Kernels that may start at once (every event they wait for done) are held
// back and launched together, as one group (Device::launch_group: the cpu backend runs small ones as one parallel
// loop), when an item that waits for one of them comes, or any item that queues work (so every device's queue keeps the
// items' order), or the end: an all2all's reduces, one item per device, then run as one.
constexpr int64_t kSettle = 256 << 10;  // across ranks: a kernel of at most this many bytes runs inline
Program::Events Program::submit(RunMemory& memory, const std::vector<Event>& fences) const {
  Events events(plan_.items.size());
  std::vector<size_t> held;
  std::vector<char> is_held(plan_.items.size(), 0);
  auto flush = [&] {
    if (held.size() == 1) {
      events[held[0]] = submit_kernel(held[0], memory, {});
    } else if (held.size() > 1) {
      std::vector<GroupLaunch> group;
      for (size_t i : held) add_launches(i, memory, group);
      std::vector<Event> done;
      if (!group.empty()) done = group[0].device->launch_group(std::move(group), {});
      auto next = done.begin();
      for (size_t i : held) {  // each item's launches, in order
        auto n = static_cast<std::ptrdiff_t>(memory.plan->launches[i].size());
        events[i].assign(next, next + n);
        next += n;
      }
    }
    for (size_t i : held) is_held[i] = 0;
    held.clear();
  };
  for (size_t i = 0; i < plan_.items.size(); ++i) {
    bool peer_writer = memory.peer_writer(i);
    if (!held.empty() && waits_for(i, peer_writer, is_held)) flush();
    std::vector<Event> after = wait_list(i, events, peer_writer);
    if (plan_.items[i].deps.empty())  // a first item: after the earlier work on the run's storages
      for (const Event& f : fences)
        if (!f.succeeded()) after.push_back(f);
    if (memory.elided(i)) {
      events[i] = std::move(after);
      continue;
    }
    ScheduleItem::Kind kind = plan_.items[i].kind;
    bool kernel = kind == ScheduleItem::Kind::kernel;
    if (spans_ranks_ && kernel && prod(plan_.items[i].ast.shape()) * itemsize(plan_.items[i].ast.dtype()) <= kSettle)
      settle_across_ranks(after, memory.deadline);  // then inline, here
    if (kernel && std::all_of(after.begin(), after.end(), [](const Event& e) { return e.done(); })) {
      held.push_back(i);
      is_held[i] = 1;
      continue;
    }
    flush();
    events[i] = kernel                                   ? submit_kernel(i, memory, after)
                : kind == ScheduleItem::Kind::collective ? submit_collective(i, *memory.plan, memory.slots, after)
                                                         : submit_copy(i, memory, after);
  }
  flush();
  return events;
}

// Whether item i waits for an item marked in `marked`: one of its deps, or (a kernel writing its peer
// copies) one of theirs; the items wait_list takes events from.
bool Program::waits_for(size_t i, bool peer_writer, const std::vector<char>& marked) const {
  for (size_t d : plan_.items[i].deps)
    if (marked[d]) return true;
  if (peer_writer)
    for (size_t c : kernels_[i]->peer_copies)
      for (size_t d : plan_.items[c].deps)
        if (d != i && marked[d]) return true;
  return false;
}

// The events item i waits for, each once, but those done without an error (waiting for them is
// nothing; work run inline on the launching thread leaves only such events, so most lists are empty):
// an elided copy passes on what it waited for, so without the dedup the lists of a chain of elided copies
// that depend on each other (a ring's allgather) grow exponentially. A kernel writing its peer copies
// (peer_writer) also waits for what those copies waited for, but itself (the memory plan put all of that
// before the kernel).
std::vector<Event> Program::wait_list(size_t i, const Events& events, bool peer_writer) const {
  std::vector<Event> after;  // a few events: a linear scan beats a hash set
  auto add = [&](size_t d) {
    for (const Event& e : events[d])
      if (!e.succeeded() &&
          std::none_of(after.begin(), after.end(), [&](const Event& a) { return a.identity() == e.identity(); }))
        after.push_back(e);
  };
  for (size_t d : plan_.items[i].deps) add(d);
  if (peer_writer)
    for (size_t c : kernels_[i]->peer_copies)
      for (size_t d : plan_.items[c].deps)
        if (d != i) add(d);
  return after;
}

std::vector<Event> Program::submit_copy(size_t i, RunMemory& memory, const std::vector<Event>& after) const {
  const BindingPlan::Copy& c = memory.plan->copies[i];
  if (c.bytes == 0) return after;  // nothing to copy, but what waits for it still waits for what it waited for
  // between ranks (an SPMD job): a send on the source's rank, a receive on the destination's, matched by
  // the item's index; between two other ranks, nothing here
  Device& to = *c.to;
  int src_rank = c.from->remote_rank(), dst_rank = to.remote_rank();
  if (src_rank >= 0 && dst_rank >= 0) return {};
  void* dst = memory.slots.real(c.dst);
  if (src_rank >= 0) return {cluster()->recv(to, dst, c.bytes, src_rank, i, after)};
  const void* src_ptr = memory.slots.real(c.src);
  if (dst_rank >= 0) return {cluster()->send(*c.from, src_ptr, c.bytes, dst_rank, i, after)};
  return {to.copy_from(*c.from, src_ptr, dst, c.bytes, after)};
}

void Program::add_launches(size_t i, RunMemory& memory, std::vector<GroupLaunch>& group) const {
  const std::vector<BindingPlan::Launch>& launches = memory.plan->launches[i];
  group.reserve(group.size() + launches.size());
  for (const BindingPlan::Launch& l : launches) {
    std::vector<void*> bufs;
    bufs.reserve(l.bufs.size());
    for (const SymPtr& p : l.bufs) bufs.push_back(memory.slots.real(p));
    group.push_back({l.device, l.kernel, std::move(bufs), l.dnum});
  }
}

std::vector<Event> Program::submit_kernel(size_t i, RunMemory& memory, const std::vector<Event>& after) const {
  std::vector<GroupLaunch> launches;
  add_launches(i, memory, launches);
  std::vector<Event> out;
  out.reserve(launches.size());
  for (GroupLaunch& l : launches) out.push_back(l.device->launch(*l.kernel, std::move(l.bufs), l.dnum, after));
  return out;
}

// ---------------------------------------------------------------------------------------------
// wait: the watchdog

std::vector<Event> Program::tails(const Events& events, const RunMemory& memory) const {
  std::vector<std::pair<const Device*, Event>> last;  // a few devices: a linear scan
  auto note = [&](const Device* d, const Event& e) {
    for (auto& [dev, ev] : last)
      if (dev == d) return void(ev = e);
    last.emplace_back(d, e);
  };
  for (size_t i = 0; i < plan_.items.size(); ++i) {
    if (memory.elided(i) || events[i].empty()) continue;
    if (plan_.items[i].kind == ScheduleItem::Kind::copy) {
      note(memory.plan->copies[i].to, events[i][0]);
      continue;
    }
    const auto& launches = memory.plan->launches[i];
    for (size_t j = 0; j < launches.size() && j < events[i].size(); ++j) note(launches[j].device, events[i][j]);
  }
  std::vector<Event> out;
  for (auto& [dev, ev] : last) out.push_back(ev);
  return out;
}

std::string Program::late_item(const Events& events, const BindingPlan& plan, uint64_t run,
                               std::chrono::milliseconds timeout) const {
  for (size_t i = 0; i < events.size(); ++i)
    for (size_t j = 0; j < events[i].size(); ++j) {
      if (events[i][j].done()) continue;
      const ScheduleItem& item = plan_.items[i];
      std::string where = item.device.to_string();
      if (item.device.tuple() && !plan.elided[i] && j < plan.launches[i].size()) {
        // a fused collective's launches wait for each other: every one not done, the late one among them
        std::vector<std::string> late{plan.launches[i][j].device->name()};
        for (size_t k = j + 1; item.kind == ScheduleItem::Kind::collective && k < events[i].size(); ++k)
          if (!events[i][k].done() && k < plan.launches[i].size()) late.push_back(plan.launches[i][k].device->name());
        where = fmt::format("{} of {}", fmt::join(late, ", "), where);
      }
      return fmt::format("{} on {}{} did not complete within {} ms", describe_item(item, i), where,
                         cross_rank_part(item, run), timeout.count());
    }
  return fmt::format("a run of {} items did not complete within {} ms", plan_.items.size(), timeout.count());
}

// The host waits once per device queue (its last event: the queues are in order), then sweeps the rest,
// done by then (polled, no wait), for their errors. Across ranks the waiting thread drives the transfers
// and a stop request ends the wait (runtime/device/cluster.hpp wait_across_ranks).
void Program::wait(const Events& events, RunMemory& memory, const ExecOptions& options) const {
  const auto deadline = memory.deadline;
  auto wait_one = [&](const Event& e) {
    if (e.succeeded()) return;  // most are done by now (inline work): no lock, no clock read
    bool done = false;
    try {
      done = e.wait_for(std::chrono::milliseconds(0));  // done (with its error) or not: no clock read
      if (!done && spans_ranks_) {
        done = wait_across_ranks(e, deadline);
      } else if (!done) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        done = e.wait_for(std::max(left, std::chrono::milliseconds(0)));
      }
    } catch (...) {  // the item's error, or a stop
      memory.release_when_done(events, options.outputs);
      throw;
    }
    if (!done) {
      memory.release_when_done(events, options.outputs);
      throw TimeoutError(late_item(events, *memory.plan, memory.run, options.timeout));
    }
  };
  bool all_done = true;  // the cpu backend's small work ran inline: nothing to wait for
  for (const auto& evs : events)
    for (const Event& e : evs) all_done = all_done && e.succeeded();
  if (!all_done) {
    for (const Event& e : tails(events, memory)) wait_one(e);
    for (const auto& evs : events)
      for (const Event& e : evs) wait_one(e);
  }
  memory.release();
}

std::vector<Event> pending_fences(const std::vector<std::shared_ptr<DeviceStorage>>& inputs,
                                  const std::vector<std::shared_ptr<DeviceStorage>>& outputs) {
  std::vector<Event> out;
  auto add = [&](const std::shared_ptr<DeviceStorage>& st) {
    std::shared_ptr<const PendingWork> p = st ? st->pending() : nullptr;
    if (!p) return;
    for (const Event& e : p->tails())
      if (!e.succeeded() &&
          std::none_of(out.begin(), out.end(), [&](const Event& o) { return o.identity() == e.identity(); }))
        out.push_back(e);
  };
  for (const auto& st : inputs) add(st);
  for (const auto& st : outputs) add(st);
  return out;
}

std::shared_ptr<const PendingWork> Program::run(const std::vector<std::vector<Block>>& outs,
                                                const StorageLookup& inputs, const ExecOptions& options) const {
  static std::atomic<uint64_t> multi_rank_runs{0};  // the same sequence on every rank (SPMD)
  if (options.scalars.size() < scalar_count_)
    throw InternalError(fmt::format("a run with {} of {} run-time scalars", options.scalars.size(), scalar_count_));
  uint64_t run = 0;
  if (spans_ranks_) {  // the ranks built the same program: agreed on its first run, once
    run = ++multi_rank_runs;
    if (!agreed_.load()) {
      std::string what =
          "the plan of run {} of a program across ranks (its items, kernels and runtime.mpi_chunk_bytes)";
      cluster()->agree(fmt::format(fmt::runtime(what), run), plan_hash_, options.timeout);
      cluster()->prepare_collectives(mpi_ranks_);  // every rank, the same lists: they agreed on the plan
      agreed_.store(true);
    }
  }
  bool traced = trace_timing();  // a Trace records: the backends stamp times; recorded once all is done
  bool asynchronous = asynchronous_ && !traced && options.owner && runtime_params().async;
  if (asynchronous && runtime_params().graphs)  // recorded once, launched with one call (graph_run.cpp)
    if (std::shared_ptr<const PendingWork> work = run_graph(outs, inputs, options)) return work;
  std::unique_ptr<RunMemory> memory = bind(outs, inputs);
  memory->run = run;
  memory->deadline = std::chrono::steady_clock::now() + options.timeout;
  memory->slots.scalars = options.scalars;
  Events events = submit(*memory, pending_fences(memory->slots.held, options.outputs));
  if (asynchronous) {
    // Asynchronous: the storages and the process's list hold the work in flight (pending.hpp).
    auto work = std::make_shared<PendingWork>(
        tails(events, *memory), "a run",
        [this, events, run, plan = memory->plan](std::chrono::milliseconds timeout) {
          return late_item(events, *plan, run, timeout);
        },
        options.owner);
    for (const auto& st : memory->slots.held) st->set_pending(work);
    for (const auto& st : options.outputs) st->set_pending(work);
    memory->release_when_done(*work);
    track_in_flight(work);
    return work;
  }
  wait(events, *memory, options);
  if (traced) record_trace(events, *memory);
  return nullptr;
}

}  // namespace ringrt
