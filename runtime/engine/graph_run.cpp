// A program's run as a device graph (executor.hpp Program::run_graph; DeviceGraph in
// runtime/device/device.hpp): the launch path of asynchronous runs on GPUs (runtime.graphs).
//
// Recording. On the first run of a binding plan (binding.hpp) the items become graph nodes in item order:
// a kernel item a kernel node per launch, a copy item a copy node (none for a copy of 0 bytes or one
// elided into a peer read or write); a node depends on the nodes of the items it waits for (an item
// without nodes passes on its own dependencies, as its wait list does in submit()). The graph gets
// scratch memory of its own (the plan's temps), allocated once: its launches run one after another on
// one queue, so they can share it, and a run allocates nothing and patches nothing for it.
//
// Replay. A run computes each node's argument words from its slots (its inputs' and outputs' blocks, the
// graph's scratch, its run-time scalars' values) and changes only the nodes whose words differ from the
// last launch's (a result in a new buffer: its writers' nodes; a new learning rate: its readers'); the launch waits for
// the pending work of the run's storages (fences) and completes with one event, the run's only tail. Its memory: the
// input storages stay held until it completes; the scratch goes with the graph (a new binding plan, or the program),
// once its last launch completed.
//
// Bounds. A program keeps one graph. Scratch over kMaxGraphScratch (large messages, whose launch cost is
// nothing next to their transfer), more than kMaxGraphs graphs alive in the process, a copy the graph
// cannot hold (staged through the host) or a device of another backend: the run goes item by item
// (submit) instead, for good for that program but the first two.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <set>

#include "core/errors.hpp"
#include "runtime/engine/binding.hpp"
#include "runtime/engine/executor.hpp"

namespace ringrt {

namespace {
constexpr size_t kMaxGraphScratch = size_t{256} << 20;  // bytes of scratch one graph may own
constexpr size_t kMaxGraphs = 64;                       // graphs alive in the process
std::atomic<size_t> g_graphs{0};
}  // namespace

struct Program::GraphRun {
  std::shared_ptr<const BindingPlan> plan;  // the binding it was recorded for
  std::shared_ptr<DeviceGraph> graph;       // (shared: its last launch may outlive this, see the destructor)
  std::vector<Block> temps;                 // the graph's own scratch (the plan's temps, tag order)
  std::vector<std::vector<size_t>> nodes;   // per item: its kernel nodes (one per launch) or copy node
  std::vector<std::vector<void*>> bound;    // per node: its pointers at the last launch (a copy: src, dst)
  std::optional<Event> last;                // the last launch
  std::vector<std::string> devices;         // for the late message

  GraphRun() { ++g_graphs; }
  // The graph (its kernels' modules) and its scratch go once its last launch completed.
  ~GraphRun() {
    auto free = [temps = std::move(temps), graph = std::move(graph)]() mutable {
      for (const Block& b : temps) b.device->free(b.ptr, b.bytes);
      graph.reset();
    };
    if (!last || last->done()) {
      free();
    } else {
      drain_devices_at_exit();
      last->on_done(free);
    }
    --g_graphs;
  }
};

// Here, where GraphRun is complete: the constructor destroys graph_ when prepare() throws (in executor.cpp
// it compiled only while a unity batch put this file after it).
Program::Program(ItemPlan plan, std::vector<UOp> roots)
    : plan_(std::move(plan)), roots_(std::move(roots)), memory_(plan_, roots_) {
  prepare();
}

Program::~Program() = default;

namespace {

// Logs once per process that graphs could not be recorded, and why.
void log_no_graph(const std::string& why) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::fprintf(stderr, "ringrt: a run could not be recorded as a graph (%s); such runs go item by item\n",
                 why.c_str());
}

}  // namespace

std::shared_ptr<const PendingWork> Program::run_graph(const std::vector<std::vector<Block>>& outs,
                                                      const StorageLookup& inputs, const ExecOptions& options) const {
  std::lock_guard<std::mutex> lock(graph_mu_);
  if (no_graph_ || has_collective_) return nullptr;  // a fused collective's barriers are its own launches'
  RunSlots slots;
  std::shared_ptr<const BindingPlan> plan = binding(outs, inputs, slots);
  slots.scalars = options.scalars;  // a kernel node's words: a new value is set like a new pointer
  auto is_copy = [&](size_t i) { return plan_.items[i].kind == ScheduleItem::Kind::copy; };

  if (!graph_ || graph_->plan != plan) {  // record the graph of this binding plan
    size_t scratch = 0;
    for (const auto& t : plan->temps) scratch += t.bytes * t.devices.size();
    graph_.reset();
    if (scratch > kMaxGraphScratch || g_graphs.load() >= kMaxGraphs) return nullptr;  // (this run only)
    Device* first = nullptr;  // the graph launches on the first item's device's queue
    for (size_t i = 0; i < plan_.items.size() && !first; ++i)
      first = is_copy(i) ? (plan->elided[i] ? nullptr : plan->copies[i].to)
                         : (plan->launches[i].empty() ? nullptr : plan->launches[i][0].device);
    std::unique_ptr<DeviceGraph> graph = first ? first->make_graph() : nullptr;
    if (!graph) {
      no_graph_ = true;
      return nullptr;
    }
    try {
      graph_ = record(std::move(graph), plan, slots);
    } catch (const DeviceError& e) {  // the platform refused the graph (an API it lacks): item by item
      log_no_graph(e.what());
      no_graph_ = true;
      return nullptr;
    }
    if (!graph_) {  // another backend's device, or a staged copy: never a graph for this program
      no_graph_ = true;
      return nullptr;
    }
  } else {  // replay: this run's pointers where they differ from the last launch's
    slots.temps = graph_->temps;
    for (size_t i = 0; i < plan_.items.size(); ++i)
      for (size_t j = 0; j < graph_->nodes[i].size(); ++j) {
        size_t node = graph_->nodes[i][j];
        std::vector<void*> now;
        if (is_copy(i)) {
          const BindingPlan::Copy& c = plan->copies[i];
          now = {slots.real(c.src), slots.real(c.dst)};
          if (now != graph_->bound[node]) graph_->graph->set_copy(node, now[0], now[1]);
        } else {
          for (const SymPtr& p : plan->launches[i][j].bufs) now.push_back(slots.real(p));
          if (now != graph_->bound[node]) graph_->graph->set_kernel(node, now);
        }
        graph_->bound[node] = std::move(now);
      }
  }
  Event launched = graph_->graph->launch(pending_fences(slots.held, options.outputs));
  graph_->last = launched;
  std::string late = fmt::format(
      "a graph of {} kernels and copies on {} (runtime.graphs; 0 runs them one by one, "
      "and a timeout then names the late item)",
      graph_->graph->nodes(), fmt::join(graph_->devices, ", "));
  auto work = std::make_shared<PendingWork>(std::vector<Event>{launched}, late, PendingWork::Late{}, options.owner);
  for (const auto& st : slots.held) st->set_pending(work);
  for (const auto& st : options.outputs) st->set_pending(work);
  drain_devices_at_exit();
  work->when_done([held = std::move(slots.held)]() mutable { held.clear(); });  // inputs live until it ran
  track_in_flight(work);
  return work;
}

std::unique_ptr<Program::GraphRun> Program::record(std::unique_ptr<DeviceGraph> graph,
                                                   std::shared_ptr<const BindingPlan> plan, RunSlots& slots) const {
  auto is_copy = [&](size_t i) { return plan_.items[i].kind == ScheduleItem::Kind::copy; };
  auto has_nodes = [&](size_t i) {
    return !plan->elided[i] && (is_copy(i) ? plan->copies[i].bytes > 0 : !plan->launches[i].empty());
  };
  auto run = std::make_unique<GraphRun>();
  run->graph = std::move(graph);
  run->plan = plan;
  for (const auto& t : plan->temps)
    for (Device* dev : t.devices) {
      run->temps.push_back({dev, allocate_after_in_flight(*dev, t.bytes), t.bytes});
      slots.temps.push_back(run->temps.back());
    }
  std::vector<std::vector<size_t>> done(plan_.items.size());  // the nodes an item's waiters wait for
  std::set<std::string> devices;
  run->nodes.resize(plan_.items.size());
  for (size_t i = 0; i < plan_.items.size(); ++i) {
    std::vector<size_t> deps;
    auto add = [&](size_t d) {
      for (size_t n : done[d])
        if (std::find(deps.begin(), deps.end(), n) == deps.end()) deps.push_back(n);
    };
    for (size_t d : plan_.items[i].deps) add(d);
    bool peer_writer = !is_copy(i) && !plan->launches[i].empty() && plan->launches[i][0].peer;
    if (peer_writer)
      for (size_t c : kernels_[i]->peer_copies)
        for (size_t d : plan_.items[c].deps)
          if (d != i) add(d);
    if (!has_nodes(i)) {
      done[i] = std::move(deps);
      continue;
    }
    std::optional<size_t> node;
    if (is_copy(i)) {
      const BindingPlan::Copy& c = plan->copies[i];
      node = run->graph->add_copy(*c.to, *c.from, slots.real(c.src), slots.real(c.dst), c.bytes, deps);
      if (node) run->bound.push_back({slots.real(c.src), slots.real(c.dst)});
      devices.insert(c.to->name());
      if (node) run->nodes[i].push_back(*node);
    } else {
      for (size_t j = 0; j < plan->launches[i].size() && (j == 0 || node); ++j) {
        const BindingPlan::Launch& l = plan->launches[i][j];
        std::vector<void*> bufs;
        for (const SymPtr& p : l.bufs) bufs.push_back(slots.real(p));
        node = run->graph->add_kernel(*l.device, *l.kernel, bufs, l.dnum, deps);
        if (node) run->nodes[i].push_back(*node), run->bound.push_back(std::move(bufs));
        devices.insert(l.device->name());
      }
    }
    if (!node) return nullptr;  // (run's destructor frees the scratch)
    done[i] = run->nodes[i];
  }
  run->graph->instantiate();
  run->devices.assign(devices.begin(), devices.end());
  return run;
}

}  // namespace ringrt
