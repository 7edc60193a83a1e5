#include "runtime/engine/binding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/errors.hpp"
#include "rewrite/plan/memory_plan.hpp"

namespace ringrt {

namespace {

constexpr int kOffsetBits = 40;  // a symbolic pointer: (tag + 1) << 40 | offset
constexpr uint64_t kOffsetMask = (uint64_t{1} << kOffsetBits) - 1;

void* encode(uint32_t tag) { return reinterpret_cast<void*>((uint64_t{tag} + 1) << kOffsetBits); }

SymPtr decode(const void* p) {
  auto v = reinterpret_cast<uint64_t>(p);
  return {static_cast<uint32_t>((v >> kOffsetBits) - 1), v & kOffsetMask};
}

std::vector<std::string> device_names(const DeviceSpec& d) {
  if (d.tuple()) return d.names();
  if (d.single()) return {d.name()};
  throw InternalError("memory for a value without a device");
}

}  // namespace

std::vector<uint32_t> same_address(const std::vector<void*>& fixed) {
  std::vector<uint32_t> out(fixed.size());
  if (fixed.size() <= 16) {  // the common case: a few blocks, no map
    for (size_t s = 0; s < fixed.size(); ++s)
      out[s] = static_cast<uint32_t>(
          std::find(fixed.begin(), fixed.begin() + static_cast<std::ptrdiff_t>(s) + 1, fixed[s]) - fixed.begin());
    return out;
  }
  std::unordered_map<void*, uint32_t> first;
  first.reserve(fixed.size());
  for (size_t s = 0; s < fixed.size(); ++s) out[s] = first.emplace(fixed[s], static_cast<uint32_t>(s)).first->second;
  return out;
}

// The binding worked out on symbolic pointers (binding.hpp), value by value as items ask for it
// (aliases resolved through rewrite/plan/memory_plan.hpp's alias_of): the looked-up storages for
// inputs, the caller's blocks for the roots, fresh slots for intermediates and scratch slots, and the
// copies patched into peer reads. One plan, one thread.
class Program::Binding {
 public:
  Binding(const Program& p, const std::vector<std::vector<Block>>& outs, const StorageLookup& inputs, BindingPlan& plan,
          RunSlots& slots)
      : p_(p), inputs_(inputs), plan_(plan), slots_(slots) {
    plan_.elided.assign(p.plan_.items.size(), 0);
    for (const auto& blocks : outs) {
      plan_.out_blocks.push_back(blocks.size());
      std::vector<Block> sym;
      for (const Block& b : blocks) sym.push_back({b.device, add_fixed(b), b.bytes});
      sym_outs_.push_back(std::move(sym));
    }
    bind_roots();
    for (size_t i = 0; i < p.plan_.items.size(); ++i)
      if (const detail::Node* buffer = p.memory_.forwarded(i))
        for (size_t r = 0; r < p.roots_.size(); ++r)
          if (p.roots_[r] == p.plan_.items[i].target) result_of_[buffer] = &sym_outs_.at(r);
  }

  // Peer reads: an elidable copy's destination block becomes an alias of its source range, so the
  // items reading it read the source in place; it waits for what the copy would have waited for.
  // Resolved values derived from a patched block are dropped after each patch and resolved again.
  void patch_peer_reads() {
    std::unordered_set<const detail::Node*> fixed;
    std::unordered_map<const detail::Node*, std::vector<void*>> patched;  // base -> its patched blocks' sources
    for (const auto& [node, blocks] : mem_) fixed.insert(node);
    derived_.clear();
    for (size_t i = 0; i < p_.plan_.items.size(); ++i)
      if (p_.memory_.peer_read(i)) patch_peer_read(i, fixed, patched);
    fill_unwritten_blocks(patched);
    drop_derived(fixed, nullptr);
  }

  // Item i's pointers: its launches (a kernel) or its copy. A kernel copying a scratch buffer into the
  // root whose memory that buffer took (MemoryPlan::forwarded) is skipped.
  void plan_item(size_t i) {
    const ScheduleItem& item = p_.plan_.items[i];
    if (!plan_.elided[i] && forwarded(i)) plan_.elided[i] = 1;
    if (plan_.elided[i]) return;
    std::vector<Block> target = target_of(i);
    if (item.kind == ScheduleItem::Kind::copy) {
      MemoryRange src = copy_source(item.ast, item.reads);
      const Block& from = resolve(src.base).at(0);
      BindingPlan::Copy& c = plan_.copies[i];
      c.bytes = static_cast<size_t>(prod(item.ast.shape()) * itemsize(item.ast.dtype()));
      c.from = from.device;
      c.to = target.at(0).device;
      c.src = sym(static_cast<const char*>(from.ptr) + src.offset * itemsize(item.ast.dtype()));
      c.dst = sym(target[0].ptr);
      return;
    }
    const PreparedKernel& pk = *p_.kernels_[i];
    if (item.kind == ScheduleItem::Kind::collective) return plan_collective(i, target);
    for (size_t d = 0; d < target.size(); ++d) {
      if (target[d].device->remote_rank() >= 0) continue;  // its rank launches it
      BindingPlan::Launch launch{target[d].device, static_cast<int32_t>(d), {sym(target[d].ptr)}};
      for (size_t r : pk.input_reads) {
        const std::vector<Block>& b = resolve(item.reads[r]);
        launch.bufs.push_back(sym(b.at(b.size() == 1 ? 0 : d).ptr));
      }
      if (plan_.peer_writes && !pk.peer_copies.empty()) add_peer_outputs(pk, launch);
      for (const codegen::KernelScalar& sc : pk.kernel.scalars)
        launch.bufs.push_back({SymPtr::kScalarTag + static_cast<uint32_t>(sc.slot), 0});
      launch.kernel = launch.peer ? pk.peer_compiled.get() : pk.compiled.at(launch.device).get();
      plan_.launches[i].push_back(std::move(launch));
    }
  }

 private:
  // A fixed slot for a real block: tagged by the first fixed slot of the same address (the plan's
  // same_as, recorded as the slots are added).
  void* add_fixed(const Block& b) {
    auto s = static_cast<uint32_t>(slots_.fixed.size());
    if (s >= SymPtr::kTempTag) throw InternalError("a program binds too many blocks");
    uint32_t first = first_slot_.emplace(b.ptr, s).first->second;
    slots_.fixed.push_back(b.ptr);
    slots_.devices.push_back(b.device);
    plan_.same_as.push_back(first);
    return encode(first);
  }

  SymPtr sym(const void* p) {
    SymPtr s = decode(p);
    if (s.offset >= kOffsetMask) throw InternalError("a block offset past 1 TiB");
    return s;
  }

  // The input storage of BUFFER id, as symbolic blocks (looked up once; null without one).
  const std::vector<Block>* input(int64_t id) {
    if (auto it = inputs_by_id_.find(id); it != inputs_by_id_.end()) return it->second.get();
    std::shared_ptr<DeviceStorage> st = inputs_ ? inputs_(id) : nullptr;
    plan_.input_ids.push_back(id);
    plan_.input_blocks.push_back(st ? static_cast<int64_t>(st->blocks().size()) : -1);
    std::unique_ptr<std::vector<Block>> blocks;
    if (st) {
      slots_.held.push_back(st);
      blocks = std::make_unique<std::vector<Block>>();
      for (const Block& b : st->blocks()) blocks->push_back({b.device, add_fixed(b), b.bytes});
    }
    return (inputs_by_id_[id] = std::move(blocks)).get();
  }

  // The memory of a realized value (recursing through alias chains).
  const std::vector<Block>& resolve(const UOp& u) {
    if (auto it = mem_.find(u.node()); it != mem_.end()) return it->second;
    std::vector<Block> blocks;
    if (u.op() == Ops::BUFFER) {
      const std::vector<Block>* in = input(std::get<BufferArg>(u.arg()).id);
      auto result = result_of_.find(u.node());
      if (in) {
        blocks = *in;
      } else if (result != result_of_.end()) {  // a scratch buffer that is a root's memory
        blocks = *result->second;
        forwarded_.insert(u.node());
      } else {
        blocks = allocate_temp(u);  // a scratch slot
      }
    } else {
      switch (alias_of(u)) {
        case Alias::whole:
          blocks = resolve(u.src(0));
          break;
        case Alias::block:
          blocks = {resolve(u.src(0)).at(static_cast<size_t>(u.arg_int()))};
          break;
        case Alias::stack:
          for (const UOp& s : u.src()) blocks.push_back(resolve(s).at(0));
          break;
        case Alias::none:
          blocks = allocate_temp(u);
      }
    }
    if (alias_of(u) != Alias::none) derived_.push_back(u.node());
    return mem_.emplace(u.node(), std::move(blocks)).first->second;
  }

  // Whether item i is a forwarded root's copy whose buffer the run found no storage for (a scratch
  // buffer, bound to the root's blocks: it holds the root's value when the item would run).
  bool forwarded(size_t i) {
    if (!p_.memory_.forwarded(i)) return false;
    UOp buffer = p_.plan_.items[i].reads.at(0);
    while (alias_of(buffer) == Alias::whole) buffer = buffer.src(0);
    resolve(buffer);
    return forwarded_.count(buffer.node()) > 0;
  }

  // The blocks item i writes: the caller's output blocks of an alias root it writes as a whole; a range
  // of its block for a store into a SHRINK (its write site's elements).
  std::vector<Block> target_of(size_t i) {
    const ScheduleItem& item = p_.plan_.items[i];
    if (auto it = alias_out_.find(item.target.node());
        it != alias_out_.end() && item.reads == std::vector<UOp>{item.target})
      return *it->second;
    const WriteSite& site = p_.memory_.site(i);
    if (item.target.op() != Ops::SHRINK || site.base == item.target.node()) return resolve(item.target);
    std::vector<Block> blocks = resolve(item.target.src(0));
    size_t item_bytes = itemsize(item.target.dtype());
    for (Block& b : blocks) {
      b.ptr = static_cast<char*>(b.ptr) + static_cast<size_t>(site.begin) * item_bytes;
      b.bytes = static_cast<size_t>(prod(item.target.shape())) * item_bytes;
    }
    return blocks;
  }

  // The caller's output blocks: a root's memory, or what an alias root (AFTER, MSELECT, MSTACK)
  // writes when its item writes the root itself; an ASSIGN root lives in its destination.
  void bind_roots() {
    for (size_t r = 0; r < p_.roots_.size(); ++r) {
      const UOp& root = p_.roots_[r];
      if (root.op() != Ops::BUFFER && exists_without_item(root)) {
        alias_out_[root.node()] = &sym_outs_.at(r);
      } else if (root.op() != Ops::ASSIGN) {
        mem_[root.node()] = sym_outs_.at(r);
      }
    }
  }

  // Fresh memory for u, one slot per device, allocated by each run.
  std::vector<Block> allocate_temp(const UOp& u) {
    return allocate_temp(u.device(), static_cast<size_t>(prod(u.shape()) * itemsize(u.dtype())));
  }
  std::vector<Block> allocate_temp(const DeviceSpec& devices, size_t bytes) {
    BindingPlan::Temp& temp = plan_.temps.emplace_back(BindingPlan::Temp{{}, bytes});
    std::vector<Block> out;
    for (const auto& name : device_names(devices)) {
      auto tag = SymPtr::kTempTag + static_cast<uint32_t>(temp_slots_++);
      if (tag >= 2 * SymPtr::kTempTag) throw InternalError("a program binds too many blocks");
      temp.devices.push_back(&device(name));
      out.push_back({temp.devices.back(), encode(tag), bytes});
    }
    return out;
  }

  // A fused collective item's launches, one per device (rewrite/collective.hpp): every device's output
  // and input, and scratch where the algorithm needs it (in place: an output that is its input).
  void plan_collective(size_t i, const std::vector<Block>& target) {
    const PreparedCollective& c = *p_.kernels_[i]->collective;
    const std::vector<Block>& source = resolve(p_.plan_.items[i].reads.at(0));
    if (source.size() != target.size() || target.size() != static_cast<size_t>(c.ndev))
      throw InternalError("a fused collective's source and result are on other devices");
    bool in_place = false;
    if (c.arg.algorithm == FusedAlgorithm::mpi) {  // MPI's: this rank's device alone, its output and input
      for (size_t d = 0; d < target.size(); ++d) {
        if (target[d].device->remote_rank() >= 0) continue;  // its rank posts its part
        BindingPlan::Launch launch{target[d].device, static_cast<int32_t>(d), {sym(target[d].ptr), sym(source[d].ptr)}};
        launch.in_place = launch.bufs[0].tag == launch.bufs[1].tag && launch.bufs[0].offset == launch.bufs[1].offset;
        plan_.launches[i].push_back(std::move(launch));
      }
      return;
    }
    std::vector<SymPtr> outs, ins;
    for (const Block& a : target)  // every combine step reads every device's input in place
      for (const Block& b : target)
        if (a.device != b.device && !a.device->can_read_peer(*b.device))
          throw DeviceError(
              fmt::format("allreduce {}: {} cannot read {}'s memory (no peer access); the fused forms "
                          "read every device's input in place: set allreduce.algorithm to auto, naive, "
                          "ring or all2all",
                          fused_name(c.arg.algorithm), a.device->name(), b.device->name()));
    for (size_t d = 0; d < target.size(); ++d) {
      if (target[d].device->remote_rank() >= 0) throw InternalError("a fused collective across ranks");
      outs.push_back(sym(target[d].ptr));
      ins.push_back(sym(source[d].ptr));
      in_place = in_place || (outs.back().tag == ins.back().tag && outs.back().offset == ins.back().offset);
    }
    std::vector<Block> scratch;
    if (fused_needs_scratch(c.arg.algorithm, in_place, c.arg.collective)) {
      DeviceTuple names;
      for (const Block& b : target) names.push_back(b.device->name());
      scratch = allocate_temp(DeviceSpec(names), static_cast<size_t>(c.numel) * itemsize(c.dtype));
    }
    for (size_t d = 0; d < target.size(); ++d) {
      BindingPlan::Launch launch{target[d].device, static_cast<int32_t>(d), outs};
      launch.bufs.insert(launch.bufs.end(), ins.begin(), ins.end());
      for (const Block& b : scratch) launch.bufs.push_back(sym(b.ptr));  // every device's (the ring reads peers')
      launch.in_place = in_place;
      plan_.launches[i].push_back(std::move(launch));
    }
  }

  // Peer writes: the launch of a single-device kernel gets its peer copies' destinations as peer
  // outputs and those copies are elided, unless an output (its own or a destination) overlaps memory
  // the kernel reads other than element for element (output element gid is the input element that
  // thread reads at gid: an in-place allreduce reading its chunk where it writes the sum): then it
  // runs as planned, copies and all. The cpu renderer vectorizes such a kernel on that promise.
  void add_peer_outputs(const PreparedKernel& pk, BindingPlan::Launch& launch) {
    const codegen::Kernel& k = pk.kernel;
    std::vector<SymPtr> outs{launch.bufs[0]};
    size_t bytes = static_cast<size_t>(k.numel) * itemsize(k.dtype);
    for (size_t c : pk.peer_copies) outs.push_back(sym(target_of(c).at(0).ptr));
    for (size_t j = 0; j + 1 < launch.bufs.size(); ++j) {
      const SymPtr& in = launch.bufs[j + 1];
      size_t in_item = itemsize(k.inputs[j].dtype), in_bytes = static_cast<size_t>(k.inputs[j].numel) * in_item;
      std::optional<int64_t> at = k.gid_offset(static_cast<int>(j));
      for (const SymPtr& o : outs) {
        if (o.tag != in.tag || o.offset >= in.offset + in_bytes || in.offset >= o.offset + bytes) continue;
        bool same_element =
            at && in_item == static_cast<size_t>(itemsize(k.dtype)) &&
            static_cast<int64_t>(in.offset) + *at * static_cast<int64_t>(in_item) == static_cast<int64_t>(o.offset);
        if (!same_element) return;
      }
    }
    launch.bufs.insert(launch.bufs.end(), outs.begin() + 1, outs.end());
    launch.peer = true;
    for (size_t c : pk.peer_copies) plan_.elided[c] = 1;
  }

  // Patches copy item i into a peer read when its destination is not an input and its device can
  // read the source's memory.
  void patch_peer_read(size_t i, const std::unordered_set<const detail::Node*>& fixed,
                       std::unordered_map<const detail::Node*, std::vector<void*>>& patched) {
    const ScheduleItem& item = p_.plan_.items[i];
    const WriteSite& site = p_.memory_.site(i);
    UOp base = item.target;
    while (base.node() != site.base) base = base.src(0);
    if (base.op() == Ops::BUFFER && input(std::get<BufferArg>(base.arg()).id)) return;
    MemoryRange src = copy_source(item.ast, item.reads);
    Block from = resolve(src.base).at(0);
    resolve(base);
    Block& to = mem_.at(site.base).at(static_cast<size_t>(site.block));
    if (!to.device->can_read_peer(*from.device)) return;
    to.ptr = static_cast<char*>(from.ptr) + src.offset * itemsize(item.ast.dtype());
    drop_derived(fixed, site.base);
    plan_.elided[i] = 1;
    patched[site.base].push_back(to.ptr);
  }

  // A block nothing writes holds garbage: when every written block of its buffer reads the same
  // source, point it there too (naive: a device's own slot), so a kernel reading it reads cached memory.
  void fill_unwritten_blocks(const std::unordered_map<const detail::Node*, std::vector<void*>>& patched) {
    for (const auto& [base, ptrs] : patched) {
      const std::vector<int64_t>& written = p_.memory_.written(base);
      std::vector<Block>& blocks = mem_.at(base);
      if (written.front() < 0 || written.size() != ptrs.size() ||
          std::any_of(ptrs.begin(), ptrs.end(), [first = ptrs[0]](void* p) { return p != first; }))
        continue;
      for (size_t b = 0; b < blocks.size(); ++b)
        if (!std::binary_search(written.begin(), written.end(), static_cast<int64_t>(b))) blocks[b].ptr = ptrs[0];
    }
  }

  // Drops the aliases resolved since the last drop (to be resolved again), but for the fixed ones and
  // keep: only those can derive from a block patched since (one patch costs its own resolutions, not
  // the whole map: a plan of n devices patches ~2n^2 copies).
  void drop_derived(const std::unordered_set<const detail::Node*>& fixed, const detail::Node* keep) {
    std::vector<const detail::Node*> kept;
    for (const detail::Node* n : derived_) {
      if (n == keep || fixed.count(n)) {
        kept.push_back(n);
      } else {
        mem_.erase(n);
      }
    }
    derived_ = std::move(kept);
  }

  const Program& p_;
  const StorageLookup& inputs_;
  BindingPlan& plan_;
  RunSlots& slots_;
  std::vector<std::vector<Block>> sym_outs_;  // the caller's output blocks, symbolic
  std::unordered_map<int64_t, std::unique_ptr<std::vector<Block>>> inputs_by_id_;
  std::unordered_map<const detail::Node*, std::vector<Block>> mem_;
  std::vector<const detail::Node*> derived_;  // aliases resolved into mem_ since the last drop_derived
  std::unordered_map<const detail::Node*, const std::vector<Block>*> alias_out_;  // alias roots' outputs
  std::unordered_map<const detail::Node*, const std::vector<Block>*> result_of_;  // forwarded buffers' roots
  std::unordered_set<const detail::Node*> forwarded_;  // those found to be scratch: bound to the root's blocks
  std::unordered_map<void*, uint32_t> first_slot_;     // address -> its first fixed slot
  size_t temp_slots_ = 0;
};

bool Program::BindingPlan::matches(const std::vector<std::vector<Block>>& outs, const StorageLookup& inputs,
                                   RunSlots& slots) const {
  if (peer_reads != runtime_params().peer_reads || peer_writes != runtime_params().peer_writes ||
      outs.size() != out_blocks.size())
    return false;
  slots.fixed.clear();
  slots.devices.clear();
  slots.held.clear();
  slots.fixed.reserve(devices.size());
  slots.devices.reserve(devices.size());
  for (size_t r = 0; r < outs.size(); ++r) {
    if (outs[r].size() != out_blocks[r]) return false;
    for (const Block& b : outs[r]) slots.fixed.push_back(b.ptr), slots.devices.push_back(b.device);
  }
  for (size_t k = 0; k < input_ids.size(); ++k) {
    std::shared_ptr<DeviceStorage> st = inputs ? inputs(input_ids[k]) : nullptr;
    if ((st ? static_cast<int64_t>(st->blocks().size()) : -1) != input_blocks[k]) return false;
    if (!st) continue;
    for (const Block& b : st->blocks()) slots.fixed.push_back(b.ptr), slots.devices.push_back(b.device);
    slots.held.push_back(std::move(st));
  }
  return slots.devices == devices && same_address(slots.fixed) == same_as;
}

std::shared_ptr<const Program::BindingPlan> Program::BindingPlan::build(const Program& p,
                                                                        const std::vector<std::vector<Block>>& outs,
                                                                        const StorageLookup& inputs, RunSlots& slots) {
  auto plan = std::make_shared<BindingPlan>();
  slots.fixed.clear();
  slots.devices.clear();
  slots.held.clear();
  plan->peer_reads = runtime_params().peer_reads;
  plan->peer_writes = runtime_params().peer_writes;
  plan->launches.resize(p.plan_.items.size());
  plan->copies.resize(p.plan_.items.size());
  Binding binding(p, outs, inputs, *plan, slots);
  if (plan->peer_reads) binding.patch_peer_reads();
  for (size_t i = 0; i < p.plan_.items.size(); ++i) binding.plan_item(i);
  plan->devices = slots.devices;
  plan->drop_unused_temps();
  return plan;
}

// A fresh block is planned when a value is first resolved; a peer read then points the copy's
// destination at its source, and a peer write or an elided item may leave a block nothing reads or
// writes (an all2all over n devices with peer reads: n(n-1) such blocks). A run allocates only the
// blocks its launches and copies use: the others are dropped and the used ones numbered again.
void Program::BindingPlan::drop_unused_temps() {
  size_t slots = 0;
  for (const Temp& t : temps) slots += t.devices.size();
  std::vector<char> used(slots, 0);
  auto mark = [&](const SymPtr& p) {
    if (p.temp()) used.at(p.tag - SymPtr::kTempTag) = 1;
  };
  for (const auto& item : launches)
    for (const Launch& l : item)
      for (const SymPtr& p : l.bufs) mark(p);
  for (size_t i = 0; i < copies.size(); ++i)
    if (!elided[i] && copies[i].from) mark(copies[i].src), mark(copies[i].dst);
  std::vector<uint32_t> renumbered(slots);
  std::vector<Temp> kept;
  size_t old_slot = 0, new_slot = 0;
  for (const Temp& t : temps) {
    Temp k{{}, t.bytes};
    for (Device* d : t.devices) {
      if (used[old_slot]) {
        k.devices.push_back(d);
        renumbered[old_slot] = static_cast<uint32_t>(new_slot++);
      }
      ++old_slot;
    }
    if (!k.devices.empty()) kept.push_back(std::move(k));
  }
  temps = std::move(kept);
  auto renumber = [&](SymPtr& p) {
    if (p.temp()) p.tag = SymPtr::kTempTag + renumbered[p.tag - SymPtr::kTempTag];
  };
  for (auto& item : launches)
    for (Launch& l : item)
      for (SymPtr& p : l.bufs) renumber(p);
  for (size_t i = 0; i < copies.size(); ++i)
    if (!elided[i] && copies[i].from) renumber(copies[i].src), renumber(copies[i].dst);
}

}  // namespace ringrt
