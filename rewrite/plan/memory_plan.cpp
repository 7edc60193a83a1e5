#include "rewrite/plan/memory_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_set>

#include "core/errors.hpp"
#include "core/params_internal.hpp"

namespace ringrt {

Alias alias_of(const UOp& u) {
  switch (u.op()) {
    case Ops::RESHAPE:
    case Ops::AFTER:
    case Ops::ASSIGN:
      return Alias::whole;
    case Ops::MSELECT:
      return Alias::block;
    case Ops::MSTACK:
      return Alias::stack;
    default:
      return Alias::none;
  }
}

bool exists_without_item(const UOp& u) {
  return u.op() == Ops::BUFFER || (alias_of(u) != Alias::none && u.op() != Ops::RESHAPE && u.op() != Ops::ASSIGN);
}

namespace {

// The element offset of a SHRINK's first element in its row-major source when the elements it keeps
// are one contiguous range there: bounds independent of the device, every axis after the first one
// it cuts kept whole, every axis before it cut to one element (a chunk of a (1, n, m) shard along n,
// a row of a matrix). Nothing otherwise.
std::optional<int64_t> contiguous_shrink_offset(const UOp& shrink) {
  const Spans& s = shrink.arg_spans();
  const Shape &in = shrink.src(0).shape(), &out = shrink.shape();
  for (const auto& span : s)
    if (span.first.k != 0) return std::nullopt;
  size_t p = s.size();  // axes p.. are kept whole; p - 1 is the axis cut (none when p is 0)
  while (p > 0 && s[p - 1].first.c == 0 && out[p - 1] == in[p - 1]) --p;
  int64_t offset = 0, stride = 1;
  for (size_t k = s.size(); k-- > 0;) {
    if (k + 1 < p && out[k] != 1) return std::nullopt;  // an axis before the cut one keeps several elements
    offset += s[k].first.c * stride;
    stride *= in[k];
  }
  return offset;
}

}  // namespace

std::optional<MemoryRange> contiguous_range(const UOp& x, const std::function<bool(const UOp&)>& is_realized) {
  UOp u = x;
  int64_t offset = 0;
  while (!is_realized(u)) {
    std::optional<int64_t> at;
    if (u.op() == Ops::RESHAPE) {
      u = u.src(0);
    } else if (u.op() == Ops::SHRINK && (at = contiguous_shrink_offset(u))) {
      offset += *at;
      u = u.src(0);
    } else {
      return std::nullopt;
    }
  }
  return MemoryRange{u, offset};
}

MemoryRange copy_source(const UOp& copy, const std::vector<UOp>& reads) {
  auto in_reads = [&](const UOp& u) { return std::find(reads.begin(), reads.end(), u) != reads.end(); };
  std::optional<MemoryRange> range = contiguous_range(copy.src(0), in_reads);
  if (!range) throw InternalError("copy reads no range of its planned source: " + copy.to_string());
  return *range;
}

WriteSite write_site(const UOp& target, bool store) {
  UOp u = target;
  int64_t block = -1, begin = 0, end = -1;
  if (std::optional<int64_t> at; store && u.op() == Ops::SHRINK && (at = contiguous_shrink_offset(u))) {
    begin = *at;
    end = begin + prod(u.shape());
    u = u.src(0);
  }
  for (;;) {
    Alias a = alias_of(u);
    if (a == Alias::none) break;
    if (a == Alias::stack) return {};
    if (a == Alias::block) {
      if (block >= 0) return {};
      block = u.arg_int();
    }
    u = u.src(0);
  }
  if (block < 0 && u.device().single()) block = 0;
  if (end >= 0 && begin == 0 && end == prod(u.shape())) end = -1;  // a range that is the whole block
  return {u.node(), block, begin, end};
}

WriteSite read_site(const ScheduleItem& copy) {
  MemoryRange range = copy_source(copy.ast, copy.reads);
  WriteSite src = write_site(range.base);
  src.begin = range.offset;
  src.end = range.offset + prod(copy.ast.shape());
  return src;
}

namespace {

// Whether the memory a copy reads (its source range's base) keeps its bytes for as long as a peer read
// in place of the copy would read it: every other item writing that memory either runs before the copy
// (the copy waits for it, directly or not) or after every item that reads the copy's destination (a
// write-after-read order the plan already has: it waits for all of them). Without in-place writes the
// only writer of a source is its producer. With them, an ASSIGN writing a buffer the copy reads (an
// allreduce_in_place's destination) comes after the copy: the copy may become a peer read only when
// that ASSIGN waits for the copy's readers (all2all: each device's reduce reads its chunk of every
// peer's buffer in place, and the allgather that overwrites the buffers waits for every reduce), and
// never when the destination is memory a root hands out (read after the run). Readers count per base,
// not per block (a run points a buffer's unwritten blocks at a peer-read source too), and through
// copies of the destination (an elided copy's readers read its source). Indexed once per plan: items
// by the bases they read and write, the writers' predecessors kept, so a plan of n devices' 2n(n-1)
// copies is not n^4 work.
class SettledSources {
 public:
  SettledSources(const ItemPlan& plan, const std::vector<WriteSite>& sites, const std::vector<UOp>& roots)
      : plan_(plan), sites_(sites), mark_(plan.items.size(), 0), seen_(plan.items.size(), 0) {
    for (const UOp& r : roots) root_sites_.push_back(write_site(r));
    for (size_t i = 0; i < plan.items.size(); ++i) {
      writers_[sites[i].base].push_back(i);
      for (const UOp& u : plan.items[i].reads) {
        const detail::Node* base = write_site(u).base;  // null: an MSTACK, may read anything
        std::vector<size_t>& list = readers_[base];
        if (list.empty() || list.back() != i) list.push_back(i);
      }
    }
  }

  bool settled(size_t i) {
    const ScheduleItem& item = plan_.items[i];
    WriteSite src = read_site(item);  // the elements the copy reads: writers of others do not count
    if (!src.base) return false;
    auto writers = writers_.find(src.base);
    if (writers == writers_.end()) return true;
    mark_predecessors(i, mark_);
    const uint32_t before = stamp_;              // mark_[w] == before: the copy waits for w
    std::optional<std::vector<size_t>> readers;  // found at the first later writer
    for (size_t w : writers->second) {
      if (w == i || mark_[w] == before || !sites_[w].overlaps(src)) continue;
      if (!readers) {
        if (std::any_of(root_sites_.begin(), root_sites_.end(),
                        [&](const WriteSite& r) { return !r.base || r.base == sites_[i].base; }))
          return false;
        readers = readers_of(i);
      }
      const std::vector<char>& after = predecessors(w);
      if (std::any_of(readers->begin(), readers->end(), [&](size_t r) { return !after[r]; })) return false;
    }
    return true;
  }

 private:
  // Marks the items item i waits for, directly or not, with a fresh stamp (mark[d] == stamp_).
  void mark_predecessors(size_t i, std::vector<uint32_t>& mark) {
    ++stamp_;
    std::vector<size_t> stack(plan_.items[i].deps.begin(), plan_.items[i].deps.end());
    while (!stack.empty()) {
      size_t d = stack.back();
      stack.pop_back();
      if (mark[d] == stamp_) continue;
      mark[d] = stamp_;
      stack.insert(stack.end(), plan_.items[d].deps.begin(), plan_.items[d].deps.end());
    }
  }

  // The items writer w waits for, directly or not (1 at their index), kept per writer.
  const std::vector<char>& predecessors(size_t w) {
    auto [it, fresh] = after_.try_emplace(w);
    if (!fresh) return it->second;
    std::vector<uint32_t> mark(plan_.items.size(), 0);
    mark_predecessors(w, mark);
    it->second.resize(plan_.items.size());
    for (size_t d = 0; d < mark.size(); ++d) it->second[d] = mark[d] == stamp_;
    return it->second;
  }

  // The items that read any block of what copy item i writes, and the readers of every copy among
  // them, transitively; items reading through an MSTACK count everywhere.
  std::vector<size_t> readers_of(size_t i) {
    std::vector<size_t> out;
    const uint32_t visit_stamp = ++seen_stamp_;
    std::vector<size_t> copies{i};
    auto visit = [&](const std::vector<size_t>& items, size_t c) {
      for (size_t r : items) {
        if (r == c || seen_[r] == visit_stamp) continue;
        seen_[r] = visit_stamp;
        out.push_back(r);
        if (plan_.items[r].kind == ScheduleItem::Kind::copy) copies.push_back(r);
      }
    };
    while (!copies.empty()) {
      size_t c = copies.back();
      copies.pop_back();
      if (auto it = readers_.find(sites_[c].base); it != readers_.end()) visit(it->second, c);
      if (auto it = readers_.find(nullptr); it != readers_.end()) visit(it->second, c);
    }
    return out;
  }

  const ItemPlan& plan_;
  const std::vector<WriteSite>& sites_;
  std::vector<WriteSite> root_sites_;
  std::unordered_map<const detail::Node*, std::vector<size_t>> writers_, readers_;  // by base
  std::unordered_map<size_t, std::vector<char>> after_;                             // writer -> predecessors
  std::vector<uint32_t> mark_;  // the copy's predecessors (mark_predecessors)
  uint32_t stamp_ = 0;
  std::vector<uint32_t> seen_;  // readers_of's visited items (seen_[r] == seen_stamp_)
  uint32_t seen_stamp_ = 0;
};

std::vector<char> peer_read_candidates(const ItemPlan& plan, const std::vector<WriteSite>& sites,
                                       const std::vector<UOp>& roots) {
  std::vector<char> out(plan.items.size(), 0);
  std::unordered_set<const detail::Node*> root_nodes;
  bool assigns = false;  // in-place writes: a source could change under a reader (SettledSources)
  for (const UOp& r : roots) {
    assigns = assigns || r.op() == Ops::ASSIGN;
    root_nodes.insert(r.node());
  }
  std::optional<SettledSources> sources;
  if (assigns) sources.emplace(plan, sites, roots);
  std::map<std::pair<const detail::Node*, int64_t>, int> writers;
  for (const WriteSite& w : sites) ++writers[{w.base, w.block}];
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const ScheduleItem& item = plan.items[i];
    const WriteSite& w = sites[i];
    if (item.kind != ScheduleItem::Kind::copy || !w.base || w.block < 0 || !w.whole()) continue;
    if (root_nodes.count(w.base) || root_nodes.count(item.target.node())) continue;
    auto count = [&](int64_t b) {
      auto it = writers.find({w.base, b});
      return it == writers.end() ? 0 : it->second;
    };
    if (count(w.block) + (w.block != -1 ? count(-1) : 0) != 1) continue;
    if (sources && !sources->settled(i)) continue;
    out[i] = 1;
  }
  return out;
}

std::vector<int64_t> written_blocks(const std::vector<WriteSite>& sites, const detail::Node* base) {
  std::vector<int64_t> out;
  for (const WriteSite& w : sites)
    if (w.base == base && std::find(out.begin(), out.end(), w.block) == out.end()) out.push_back(w.block);
  std::sort(out.begin(), out.end());
  return out;
}

// The items item i waits for, directly or not (1 at their index).
std::vector<char> predecessors_of(const ItemPlan& plan, size_t i) {
  std::vector<char> before(plan.items.size(), 0);
  std::vector<size_t> stack(plan.items[i].deps.begin(), plan.items[i].deps.end());
  while (!stack.empty()) {
    size_t d = stack.back();
    stack.pop_back();
    if (before[d]) continue;
    before[d] = 1;
    stack.insert(stack.end(), plan.items[d].deps.begin(), plan.items[d].deps.end());
  }
  return before;
}

// The scratch buffer whose stores a kernel item copies into a root, when the root may be that buffer's
// memory (MemoryPlan::forwarded): the item copies the AFTER over the buffer (through reshapes) into the
// root, same devices, dtype and size, and every other writer of the buffer is one the item waits for
// (write_site counts the item too: a RESHAPE root is a whole alias of what it reshapes).
std::unordered_map<size_t, const detail::Node*> forwarded_roots(const ItemPlan& plan,
                                                                const std::vector<WriteSite>& sites,
                                                                const std::vector<UOp>& roots) {
  std::unordered_map<size_t, const detail::Node*> out;
  std::unordered_set<const detail::Node*> root_nodes, taken;
  for (const UOp& r : roots) root_nodes.insert(r.node());
  std::unordered_map<const detail::Node*, std::vector<size_t>> writers;
  for (size_t i = 0; i < sites.size(); ++i) writers[sites[i].base].push_back(i);
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const ScheduleItem& item = plan.items[i];
    if (item.kind != ScheduleItem::Kind::kernel || item.reads.size() != 1 || item.reads[0].op() != Ops::AFTER ||
        !root_nodes.count(item.target.node()))
      continue;
    UOp value = item.ast;
    while (value != item.reads[0] && value.op() == Ops::RESHAPE) value = value.src(0);
    UOp buffer = item.reads[0];
    while (alias_of(buffer) == Alias::whole) buffer = buffer.src(0);
    const UOp& root = item.target;
    if (value != item.reads[0] || buffer.op() != Ops::BUFFER || root_nodes.count(buffer.node()) ||
        taken.count(buffer.node()) || !(buffer.device() == root.device()) || buffer.dtype() != root.dtype() ||
        prod(buffer.shape()) != prod(root.shape()))
      continue;
    auto w = writers.find(buffer.node());
    if (w == writers.end()) continue;  // nothing writes it
    std::vector<char> before = predecessors_of(plan, i);
    if (std::all_of(w->second.begin(), w->second.end(), [&](size_t x) { return x == i || before[x] != 0; })) {
      taken.insert(buffer.node());
      out[i] = buffer.node();
    }
  }
  return out;
}

// The items that read each base, with the elements they read (a copy: its range; a kernel: the
// blocks of each value it reads); base null: an MSTACK read, which may read anything.
std::unordered_map<const detail::Node*, std::vector<std::pair<size_t, WriteSite>>> readers_by_base(
    const ItemPlan& plan, const MemoryPlan::KernelReads& kernel_reads) {
  std::unordered_map<const detail::Node*, std::vector<std::pair<size_t, WriteSite>>> out;
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const ScheduleItem& item = plan.items[i];
    if (item.kind == ScheduleItem::Kind::copy) {
      WriteSite r = read_site(item);
      out[r.base].emplace_back(i, r);
      continue;
    }
    for (size_t k = 0; k < item.reads.size(); ++k) {
      WriteSite r = write_site(item.reads[k]);
      if (auto bounds = kernel_reads(i, k); bounds && r.base) {
        r.end = r.begin + bounds->second + 1;
        r.begin += bounds->first;
      }
      out[r.base].emplace_back(i, r);
    }
  }
  return out;
}

}  // namespace

void MemoryPlan::plan_peer_writes(const ItemPlan& plan, const KernelReads& kernel_reads) {
  const std::vector<WriteSite>& sites = sites_;
  std::unordered_map<size_t, std::vector<size_t>>& out = peer_writes_;
  out.clear();
  std::unordered_map<const detail::Node*, std::vector<size_t>> writers;  // by base
  for (size_t i = 0; i < sites.size(); ++i) writers[sites[i].base].push_back(i);
  std::optional<std::unordered_map<const detail::Node*, std::vector<std::pair<size_t, WriteSite>>>> readers;
  std::unordered_map<size_t, std::vector<char>> before;  // predecessors_of, per item asked
  auto waits_for = [&](size_t item, size_t d, bool directly) {
    const std::vector<size_t>& deps = plan.items[item].deps;
    if (directly) return std::find(deps.begin(), deps.end(), d) != deps.end();
    auto it = before.find(item);
    if (it == before.end()) it = before.emplace(item, predecessors_of(plan, item)).first;
    return it->second[d] != 0;
  };
  for (size_t c = 0; c < plan.items.size(); ++c) {
    const ScheduleItem& copy = plan.items[c];
    if (copy.kind != ScheduleItem::Kind::copy || peer_reads_[c]) continue;
    WriteSite src = read_site(copy);
    if (!src.base) continue;
    // the kernel: the one item writing any of the copied elements but those that wait for the copy
    // (an allgather's result forwarded from the buffer it writes counts as writing that buffer again)
    std::vector<size_t> writing;
    for (size_t w : writers[src.base])
      if (sites[w].overlaps(src) && !(w > c && waits_for(w, c, true))) writing.push_back(w);
    if (writing.size() != 1) continue;
    size_t k = writing[0];
    const ScheduleItem& kernel = plan.items[k];
    if (kernel.kind != ScheduleItem::Kind::kernel || !kernel.device.single() || sites[k].block < 0 ||
        !sites[k].covers(src) || prod(kernel.ast.shape()) != prod(copy.ast.shape()) ||
        kernel.ast.dtype() != copy.ast.dtype() || !sites[c].base || sites[c].overlaps(sites[k]) ||
        !waits_for(c, k, true))
      continue;
    // the kernel may wait for what the copy waits for: those items come before it
    if (std::any_of(copy.deps.begin(), copy.deps.end(), [&](size_t d) { return d > k; })) continue;
    // Written at the kernel's time, not the copy's: every other reader of the destination's elements
    // runs before the kernel or after the copy by the plan's order, never by a queue's alone.
    if (!readers) readers = readers_by_base(plan, kernel_reads);  // once, and only for a plan with candidates
    bool ordered = true;
    for (const detail::Node* base : {sites[c].base, static_cast<const detail::Node*>(nullptr)})
      for (const auto& [r, read] : (*readers)[base])
        if (r != k && r != c && (!read.base || read.overlaps(sites[c])) && !waits_for(k, r, false) &&
            !waits_for(r, c, false))
          ordered = false;
    if (ordered) out[k].push_back(c);
  }
}

MemoryPlan::MemoryPlan(const ItemPlan& plan, const std::vector<UOp>& roots) {
  for (const ScheduleItem& item : plan.items) sites_.push_back(write_site(item.target, item.store));
  peer_reads_ = peer_read_candidates(plan, sites_, roots);
  forwarded_ = forwarded_roots(plan, sites_, roots);
  for (size_t i = 0; i < plan.items.size(); ++i)
    if (peer_reads_[i] && !written_.count(sites_[i].base))
      written_[sites_[i].base] = written_blocks(sites_, sites_[i].base);
}

}  // namespace ringrt
