#include "rewrite/plan/memory_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_set>

#include "rewrite/errors.hpp"
#include "rewrite/params.hpp"
#include "runtime/device/device.hpp"

namespace ringrt {

namespace {
PerfOptions perf_options_of(const RuntimeParams& r) { return {r.peer_reads, r.kernel_split, r.inline_small}; }
}  // namespace

// Read at the first call and again only after the runtime tunables change (set_runtime_params,
// runtime_params_generation), so device threads pay one atomic load per call. The struct is
// written only when a value changes, so set_perf_options is for benchmarks and tests that call it
// before running anything.
const PerfOptions& perf_options() {
  static std::atomic<uint64_t> seen{UINT64_MAX};
  static std::mutex mutex;
  // never freed: device threads read it until the process ends
  static PerfOptions* options = [] {
    uint64_t generation = runtime_params_generation();  // before the read: a later change reads again
    auto* o = new PerfOptions(perf_options_of(current_runtime_params()));
    seen.store(generation, std::memory_order_release);
    return o;
  }();
  uint64_t generation = runtime_params_generation();
  if (seen.load(std::memory_order_acquire) != generation) {
    std::lock_guard lock(mutex);
    PerfOptions now = perf_options_of(current_runtime_params());
    if (!(now == *options)) *options = now;
    seen.store(generation, std::memory_order_release);
  }
  return *options;
}

void set_perf_options(const PerfOptions& options) {
  RuntimeParams r;
  r.peer_reads = options.peer_reads;
  r.kernel_split = options.kernel_split;
  r.inline_small = options.inline_small;
  set_runtime_params(r, {"runtime.peer_reads", "runtime.kernel_split", "runtime.inline_small"});
  (void)perf_options();
}

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

WriteSite write_site(const UOp& target) {
  UOp u = target;
  int64_t block = -1;
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
  return {u.node(), block};
}

namespace {

// Whether every item writing the memory that copy item i reads (its source range's base) is one the
// copy waits for, directly or not: then that memory keeps its bytes from the copy's start to the end of
// the run, and a reader may read it in place later. Without in-place writes the only writer of a
// source is its producer; an ASSIGN writing a buffer the copy reads (an allreduce_in_place's
// destination) comes after the copy, so that copy stays a copy.
bool source_settled(const ItemPlan& plan, const std::vector<WriteSite>& sites, size_t i) {
  const ScheduleItem& item = plan.items[i];
  WriteSite src = write_site(copy_source(item.ast, item.reads).base);
  if (!src.base) return false;
  std::vector<char> before(plan.items.size(), 0);
  std::vector<size_t> stack(item.deps.begin(), item.deps.end());
  while (!stack.empty()) {
    size_t d = stack.back();
    stack.pop_back();
    if (before[d]) continue;
    before[d] = 1;
    stack.insert(stack.end(), plan.items[d].deps.begin(), plan.items[d].deps.end());
  }
  for (size_t w = 0; w < sites.size(); ++w) {
    bool overlaps = sites[w].base == src.base && (sites[w].block < 0 || src.block < 0 || sites[w].block == src.block);
    if (w != i && overlaps && !before[w]) return false;
  }
  return true;
}

std::vector<char> peer_read_candidates(const ItemPlan& plan, const std::vector<WriteSite>& sites,
                                       const std::vector<UOp>& roots) {
  std::vector<char> out(plan.items.size(), 0);
  std::unordered_set<const detail::Node*> root_nodes;
  bool assigns = false;  // in-place writes: a source could change under a reader (source_settled)
  for (const UOp& r : roots) {
    assigns = assigns || r.op() == Ops::ASSIGN;
    root_nodes.insert(r.node());
  }
  std::map<std::pair<const detail::Node*, int64_t>, int> writers;
  for (const WriteSite& w : sites) ++writers[{w.base, w.block}];
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const ScheduleItem& item = plan.items[i];
    const WriteSite& w = sites[i];
    if (item.kind != ScheduleItem::Kind::copy || !w.base || w.block < 0) continue;
    if (root_nodes.count(w.base) || root_nodes.count(item.target.node())) continue;
    auto count = [&](int64_t b) {
      auto it = writers.find({w.base, b});
      return it == writers.end() ? 0 : it->second;
    };
    if (count(w.block) + (w.block != -1 ? count(-1) : 0) != 1) continue;
    if (assigns && !source_settled(plan, sites, i)) continue;
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

}  // namespace

MemoryPlan::MemoryPlan(const ItemPlan& plan, const std::vector<UOp>& roots) {
  for (const ScheduleItem& item : plan.items) sites_.push_back(write_site(item.target));
  peer_reads_ = peer_read_candidates(plan, sites_, roots);
  for (size_t i = 0; i < plan.items.size(); ++i)
    if (peer_reads_[i] && !written_.count(sites_[i].base))
      written_[sites_[i].base] = written_blocks(sites_, sites_[i].base);
}

}  // namespace ringrt
