#include "rewrite/plan/schedule.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/errors.hpp"
#include "rewrite/collective.hpp"
#include "rewrite/node_map.hpp"
#include "rewrite/plan/memory_plan.hpp"

namespace ringrt {
namespace {

// A copy can read x straight from memory when x is a contiguous range of a realized value
// (rewrite/plan/memory_plan.hpp). Returns that realized value, or nothing.
std::optional<UOp> range_source(const UOp& x, const NodeSet& realized) {
  std::optional<MemoryRange> range = contiguous_range(x, [&](const UOp& u) { return realized.count(u.node()) > 0; });
  if (!range) return std::nullopt;
  return range->base;
}

// Whether computing an assignment's value straight into its destination could read an element after
// the kernel wrote it: the value reads the destination's buffer other than at the same index (through
// a movement op or a reduction, or through another view of the buffer). Values read through realized
// nodes were computed by earlier items and are safe.
bool in_place_hazard(const UOp& assign, const NodeSet& realized) {
  const UOp& dest = assign.src(0);
  UOp buffer = dest;
  while (buffer.op() != Ops::BUFFER && !buffer.src().empty()) buffer = buffer.src(0);
  std::vector<std::pair<UOp, bool>> stack{{assign.src(1), true}};  // (node, index preserved so far)
  std::set<std::pair<const detail::Node*, bool>> seen;
  while (!stack.empty()) {
    auto [u, same_index] = stack.back();
    stack.pop_back();
    if (!seen.insert({u.node(), same_index}).second) continue;
    if (u == dest) {
      if (!same_index) return true;
      continue;
    }
    if (u == buffer) return true;
    if (realized.count(u.node()) && u.op() != Ops::BUFFER) continue;
    bool keeps = same_index && !group::movement().contains(u.op()) && u.op() != Ops::REDUCE_AXIS;
    for (const UOp& s : u.src()) stack.push_back({s, keeps});
  }
  return false;
}

// Whether an assignment's value already is its destination's memory (through reshapes and AFTER): an
// allreduce in place whose allgather stored the result into the destination, or x assigned to itself.
bool assigned_in_place(const UOp& assign) {
  WriteSite to = write_site(assign.src(0)), from = write_site(assign.src(1));
  return to.base && to.base == from.base && to.block == from.block && to.whole() && from.whole();
}

class Planner {
 public:
  explicit Planner(const std::vector<UOp>& roots)
      : order_(roots.at(0).graph().toposort(roots)), realized_(order_.size()), producer_(order_.size()) {
    for (const UOp& r : roots) roots_.insert(r.node());
  }

  ItemPlan run() {
    choose_boundaries();
    for (const UOp& u : order_) emit(u);
    return std::move(plan_);
  }

 private:
  void realize(const UOp& u) {
    if (!exists_without_item(u) && u.op() != Ops::STORE && u.op() != Ops::SINK && u.op() != Ops::DEVICE)
      realized_.insert(u.node());
  }

  // Decide which values are written to memory.
  void choose_boundaries() {
    NodeMap<char> has_reduce(order_.size());
    for (const UOp& u : order_) {
      if (exists_without_item(u)) realized_.insert(u.node());
      switch (u.op()) {
        case Ops::CONTIGUOUS:
        case Ops::COPY:
        case Ops::ASSIGN:
        case Ops::COLLECTIVE:
          realized_.insert(u.node());
          break;
        default:
          break;
      }
      if (roots_.count(u.node())) realize(u);
      if (u.op() == Ops::ASSIGN && !assigned_in_place(u) && in_place_hazard(u, realized_))
        realize(u.src(1));  // compute aside, then copy
      if (u.op() == Ops::COPY && !range_source(u.src(0), realized_)) realize(u.src(0));
      if (u.op() == Ops::COLLECTIVE && !range_source(u.src(0), realized_)) realize(u.src(0));
      if (u.op() == Ops::MSELECT && !realized_.count(u.src(0).node())) realize(u.src(0));
      if (u.op() == Ops::MSTACK)
        for (const UOp& s : u.src())
          if (!realized_.count(s.node())) realize(s);
      // at most one reduction per kernel: a reduction over another one realizes the inner value
      bool inner = false;
      for (const UOp& s : u.src()) inner = inner || (!realized_.count(s.node()) && has_reduce[s.node()]);
      if (u.op() == Ops::REDUCE_AXIS && inner) realize(u.src(0));
      bool mine = u.op() == Ops::REDUCE_AXIS;
      for (const UOp& s : u.src()) mine = mine || (!realized_.count(s.node()) && has_reduce[s.node()]);
      has_reduce[u.node()] = mine;
    }
  }

  // Items whose output the value ast reads; its realized leaves go to `reads`.
  std::vector<size_t> producers_of(const UOp& ast, std::vector<UOp>* reads = nullptr) {
    std::vector<size_t> deps;  // sorted and deduplicated at the end (a std::set cost a node per entry)
    std::vector<UOp> stack{ast};
    NodeSet seen;
    while (!stack.empty()) {
      UOp u = stack.back();
      stack.pop_back();
      if (!seen.insert(u.node())) continue;
      if (u != ast && realized_.count(u.node())) {
        if (reads) reads->push_back(u);
        writers_of(u, deps);
        continue;
      }
      for (const UOp& s : u.src()) stack.push_back(s);
    }
    sort_unique(deps);
    return deps;
  }

  static void sort_unique(std::vector<size_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }

  // Adds an item and returns what a reader of its output waits for: the item, or, for an item that
  // writes nothing (0 elements), the items it would have waited for (it is never scheduled).
  std::vector<size_t> add(ScheduleItem::Kind kind, const UOp& ast, const UOp& target, const DeviceSpec& device,
                          std::vector<size_t> deps, std::vector<UOp> reads = {}) {
    if (prod(kind == ScheduleItem::Kind::copy ? ast.shape() : target.shape()) == 0) return deps;
    WriteSite site = write_site(target, storing_);
    after_writers(site, deps);
    plan_.items.push_back({kind, ast, target, device, std::move(deps), std::move(reads), storing_});
    sites_.push_back(site);
    return {plan_.items.size() - 1};
  }

  // WAW: an item waits for the last earlier items writing bytes it writes (the same block of the same
  // memory, an overlapping range of it), so that the last writer of a block is the one every later reader
  // waits for (writers_of stops there). Writers of disjoint ranges of one block (the chunks an allgather
  // stores into the result) do not wait for each other.
  void after_writers(const WriteSite& site, std::vector<size_t>& deps) {
    if (!site.base) return;
    std::unordered_map<int64_t, std::vector<Written>>& last = last_writer_[site.base];
    size_t before = deps.size();
    auto visit = [&](int64_t block, std::vector<Written>& writers) {
      for (const Written& w : writers)
        if (w.site.overlaps(site)) deps.push_back(w.item);
      if (site.block < 0 || block == site.block)  // the ones this write hides from later readers
        std::erase_if(writers, [&](const Written& w) { return site.covers(w.site); });
    };
    if (site.block < 0) {
      for (auto& [block, writers] : last) visit(block, writers);
    } else {  // its own block's writers and those of every block (a lookup each, not a scan of all)
      for (int64_t b : {site.block, int64_t{-1}})
        if (auto it = last.find(b); it != last.end()) visit(b, it->second);
    }
    last[site.block].push_back({site, plan_.items.size()});
    if (deps.size() == before) return;
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  }

  // RAW: appends to deps the items a reader of the realized value r waits for: r's producer, or, for an
  // alias (AFTER, MSELECT, MSTACK), the items that wrote the bytes r names. Along an AFTER chain a
  // STORE counts when its item's write site overlaps r's (same memory, same block or a whole one); one
  // writing all of r's block ends the walk down the chain (earlier writers of that block come before
  // it: after_writers), one writing a range of it does not. Sources of an AFTER other than its first
  // that are no STORE with an item of their own (an ordering edge, a skipped empty store's
  // pass-through) count whole.
  void writers_of(const UOp& r, std::vector<size_t>& deps) {
    if (!exists_without_item(r) || r.op() == Ops::BUFFER) {
      if (const auto* p = producer_.find(r.node())) append(deps, *p);
      return;
    }
    WriteSite read = write_site(r);
    std::vector<std::pair<UOp, bool>> stack{{r, true}};  // (node, filtered by read's site)
    std::set<std::pair<const detail::Node*, bool>> seen;
    while (!stack.empty()) {
      auto [u, filtered] = stack.back();
      stack.pop_back();
      if (!seen.insert({u.node(), filtered}).second) continue;
      if (!exists_without_item(u) || u.op() == Ops::BUFFER) {
        if (const auto* p = producer_.find(u.node())) append(deps, *p);
        continue;
      }
      bool covered = false;
      if (u.op() == Ops::AFTER)
        for (size_t i = 1; i < u.src().size(); ++i) {
          const UOp& s = u.src(i);
          const size_t* own = store_item_.find(s.node());
          if (!own) {
            stack.push_back({s, false});
            continue;
          }
          const WriteSite& w = sites_[*own];
          bool same = filtered && read.base && w.base == read.base;
          if (same && w.block >= 0 && read.block >= 0 && w.block != read.block) continue;  // other bytes
          deps.push_back(*own);
          covered = covered || (same && w.whole() && (w.block < 0 || w.block == read.block));
        }
      if (u.op() == Ops::MSTACK) {
        for (const UOp& s : u.src()) stack.push_back({s, false});
      } else if (!covered) {
        stack.push_back({u.src(0), filtered});
      }
    }
  }

  // A copy item: reads[0] is the realized value whose contiguous range the copy reads.
  std::vector<size_t> add_copy(const UOp& copy, const UOp& target) {
    std::optional<UOp> from = range_source(copy.src(0), realized_);
    if (!from) throw InternalError("copy source is not a range of a realized value: " + copy.src(0).to_string());
    if (!copy.device().single() || !copy.src(0).device().single())
      throw InternalError("copy item between device tuples: " + copy.to_string());
    return add(ScheduleItem::Kind::copy, copy, target, copy.device(), producers_of(copy), {*from});
  }

  // A fused collective item (rewrite/collective.hpp): reads[0] is the realized value whose blocks it reads.
  std::vector<size_t> add_collective(const UOp& collective, const UOp& target) {
    std::optional<UOp> from = range_source(collective.src(0), realized_);
    if (!from || prod(from->shape()) != prod(collective.src(0).shape()))
      throw InternalError("collective source is not a realized value: " + collective.src(0).to_string());
    return add(ScheduleItem::Kind::collective, collective, target, collective.device(), producers_of(collective),
               {*from});
  }

  // A kernel item computing ast into target.
  std::vector<size_t> add_kernel(const UOp& ast, const UOp& target, const DeviceSpec& device) {
    if (ast != target && realized_.count(ast.node())) {  // a kernel that copies a realized value
      std::vector<size_t> deps;
      writers_of(ast, deps);
      sort_unique(deps);
      return add(ScheduleItem::Kind::kernel, ast, target, device, std::move(deps), {ast});
    }
    std::vector<UOp> reads;
    std::vector<size_t> deps = producers_of(ast, &reads);
    return add(ScheduleItem::Kind::kernel, ast, target, device, std::move(deps), std::move(reads));
  }

  void emit(const UOp& u) {
    switch (u.op()) {
      case Ops::AFTER:
      case Ops::MSTACK:
      case Ops::MSELECT:               // aliases: their readers find the writers (writers_of)
        if (roots_.count(u.node())) {  // a result never shares memory with its inputs: copy it
          std::vector<size_t> deps;
          writers_of(u, deps);
          sort_unique(deps);
          producer_[u.node()] = add(ScheduleItem::Kind::kernel, u, u, u.device(), std::move(deps), {u});
        }
        return;
      case Ops::STORE: {
        const UOp &target = u.src(0), &value = u.src(1);
        size_t items = plan_.items.size();
        // a copy stored into a scratch buffer writes straight into it
        storing_ = true;
        producer_[u.node()] = value.op() == Ops::COPY         ? add_copy(value, target)
                              : value.op() == Ops::COLLECTIVE ? add_collective(value, target)
                                                              : add_kernel(value, target, target.device());
        storing_ = false;
        if (plan_.items.size() > items) store_item_[u.node()] = items;
        return;
      }
      default:
        break;
    }
    if (!realized_.count(u.node()) || u.op() == Ops::BUFFER) return;
    auto& mine = producer_[u.node()];
    if (u.op() == Ops::COPY) {
      if (used_only_by_stores(u)) return;
      append(mine, add_copy(u, u));
      return;
    }
    if (u.op() == Ops::COLLECTIVE) {
      if (used_only_by_stores(u)) return;
      append(mine, add_collective(u, u));
      return;
    }
    if (u.op() == Ops::ASSIGN) {   // the value, written into the destination's memory
      if (assigned_in_place(u)) {  // there already: its readers wait for what wrote it
        writers_of(u.src(1), mine);
        sort_unique(mine);
      } else {
        append(mine, add_kernel(u.src(1), u.src(0), u.device()));
      }
      return;
    }
    append(mine, add_kernel(u.op() == Ops::CONTIGUOUS ? u.src(0) : u, u, u.device()));
  }

  static void append(std::vector<size_t>& to, const std::vector<size_t>& more) {
    to.insert(to.end(), more.begin(), more.end());
  }

  // Whether every use of copy in the graph is as the value of a STORE (and there is one), and it is no
  // root. The uses are counted once for the whole graph (a scan per copy made planning quadratic).
  bool used_only_by_stores(const UOp& copy) {
    if (!uses_counted_) {
      for (const UOp& v : order_)
        for (size_t i = 0; i < v.src().size(); ++i) {
          Uses& use = uses_[v.src(i).node()];
          use.any = true;
          use.other = use.other || !(v.op() == Ops::STORE && i == 1);
        }
      uses_counted_ = true;
    }
    const Uses* use = uses_.find(copy.node());
    return use && use->any && !use->other && !roots_.count(copy.node());
  }

  struct Uses {
    bool any = false, other = false;  // used at all; used other than as a STORE's value
  };
  std::vector<UOp> order_;
  NodeSet roots_, realized_;
  // items computing a realized value that is no alias, or a STORE's item (or, for a STORE that wrote
  // nothing, what it would have waited for)
  NodeMap<std::vector<size_t>> producer_;
  NodeMap<size_t> store_item_;    // a STORE's own item
  std::vector<WriteSite> sites_;  // each item's write site
  struct Written {
    WriteSite site;
    size_t item;
  };
  // per base and block: the earlier writers no later writer has covered
  std::unordered_map<const detail::Node*, std::unordered_map<int64_t, std::vector<Written>>> last_writer_;
  ItemPlan plan_;
  NodeMap<Uses> uses_;
  bool uses_counted_ = false;
  bool storing_ = false;  // emitting a STORE's item (ScheduleItem::store)
};

}  // namespace

size_t ItemPlan::kernels() const {
  return static_cast<size_t>(std::count_if(items.begin(), items.end(),
                                           [](const ScheduleItem& i) { return i.kind == ScheduleItem::Kind::kernel; }));
}
size_t ItemPlan::copies() const {
  return static_cast<size_t>(std::count_if(items.begin(), items.end(),
                                           [](const ScheduleItem& i) { return i.kind == ScheduleItem::Kind::copy; }));
}
size_t ItemPlan::collectives() const { return items.size() - kernels() - copies(); }

std::string ItemPlan::to_string(const std::vector<char>& skipped) const {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& it = items[i];
    if (it.kind == ScheduleItem::Kind::copy) {
      out += fmt::format("{:3} COPY   {} -> {} {} B", i, it.ast.src(0).device().to_string(), it.device.to_string(),
                         prod(it.ast.shape()) * itemsize(it.ast.dtype()));
    } else if (it.kind == ScheduleItem::Kind::collective) {
      CollectiveArg a = collective_arg(it.ast);
      out += fmt::format("{:3} FUSED  {} {} {} {} {} {}", i, it.device.to_string(), fused_collective_name(a.collective),
                         fused_name(a.algorithm), op_name(a.op), dtype_name(it.ast.dtype()), shape_str(it.ast.shape()));
    } else {
      out += fmt::format("{:3} KERNEL {} {} {}", i, it.device.to_string(), dtype_name(it.ast.dtype()),
                         shape_str(it.ast.shape()));
    }
    if (!it.deps.empty()) out += fmt::format("  after {}", fmt::join(it.deps, ","));
    out += i < skipped.size() && skipped[i] ? "  (skipped: the result is the buffer it copies)\n" : "\n";
  }
  return out;
}

ItemPlan plan_schedule(const std::vector<UOp>& roots) { return Planner(roots).run(); }

}  // namespace ringrt
