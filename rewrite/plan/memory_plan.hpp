// The memory plan (internal): the one definition of memory aliasing, used by the scheduler
// (rewrite/plan/schedule.cpp), the executor (runtime/engine/executor.cpp) and peer-read planning.
//
// Aliases. A node either computes a value of its own into fresh memory, or its memory is another
// node's: RESHAPE, AFTER and ASSIGN are their first source's memory (an assignment's value lives in
// its destination), MSELECT i is block i of its source's per-device blocks, MSTACK is block 0 of
// each of its sources in order. BUFFER is memory itself (a tensor's storage, or a scratch slot that
// a run allocates). A copy reads a contiguous range: reshapes and 1-D constant shrinks over a realized
// value. Write sites: the (node, block) an item's target writes. Peer reads: copies a run may elide
// into a read of the source in place. Peer writes: copies of a kernel's result that the kernel may
// write itself. The switches are the tunables
// runtime.peer_reads and runtime.peer_writes (core/params.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "rewrite/plan/schedule.hpp"

namespace ringrt {

// How a node's memory relates to its sources' (see the file comment).
enum class Alias {
  none,   // memory of its own (BUFFER included: it is the memory)
  whole,  // RESHAPE, AFTER, ASSIGN: src(0)'s memory
  block,  // MSELECT i: block i of src(0)'s per-device blocks
  stack,  // MSTACK: block 0 of each source, in order
};
Alias alias_of(const UOp& u);

// Whether u's memory exists once its sources' does, with no item computing it: a BUFFER and the
// aliases AFTER, MSELECT, MSTACK. (RESHAPE is an alias too, but kernels index through it unless it is
// realized; ASSIGN is an alias whose value an item writes.)
bool exists_without_item(const UOp& u);

// The contiguous range of a realized value that x reads: the value and the element offset.
struct MemoryRange {
  UOp base;
  int64_t offset = 0;  // in elements
};
// x as a range: reshapes and shrinks with device-independent bounds that keep a contiguous range of
// their source (any 1-D shrink; a cut along one axis with every later axis whole and every earlier one
// cut to one element) over a node for which is_realized holds. Nothing when x is not such a range.
std::optional<MemoryRange> contiguous_range(const UOp& x, const std::function<bool(const UOp&)>& is_realized);
// The range copy item `copy` (a COPY, see ScheduleItem) reads: reads[0] is its realized source.
// Throws InternalError when the plan's read is not under the copy's source.
MemoryRange copy_source(const UOp& copy, const std::vector<UOp>& reads);

// Where an item writes: the node that owns the memory (a scratch BUFFER, a realized value), the block
// of it (index into its per-device blocks; -1: every block) and the elements of the block: all of them,
// or the range [begin, end) of a store into a SHRINK (an allgather writing chunks into the result).
struct WriteSite {
  const detail::Node* base = nullptr;
  int64_t block = -1;
  int64_t begin = 0, end = -1;  // elements of the block; end -1: to its end (the whole block)

  bool whole() const { return end < 0; }
  // Whether this site and o may write or read a common byte (same base, blocks, ranges).
  bool overlaps(const WriteSite& o) const {
    if (base != o.base || (block >= 0 && o.block >= 0 && block != o.block)) return false;
    return (whole() || o.begin < end) && (o.whole() || begin < o.end);
  }
  // Whether every byte o names is one this site names.
  bool covers(const WriteSite& o) const {
    return base == o.base && (block < 0 || block == o.block) && begin <= o.begin &&
           (whole() || (!o.whole() && o.end <= end));
  }
};
// The elements copy item `copy` reads, as a site: its source range's base and block, [offset, offset +
// the copy's element count). Base null when it cannot tell (an MSTACK).
WriteSite read_site(const ScheduleItem& copy);
// The site target writes (through whole aliases and one MSELECT; for a STORE's destination, `store`,
// also through a SHRINK on top that keeps a contiguous range); base null when it cannot tell (an
// MSTACK). Any other SHRINK is a value with memory of its own.
WriteSite write_site(const UOp& target, bool store = false);

// The memory plan of one ItemPlan: every item's write site, the copies that may become peer reads,
// and the blocks written of each base such a copy writes. Planning only: whether the devices allow
// a peer read, and whether the destination is an input after all, is decided per run.
class MemoryPlan {
 public:
  // plan realizes roots (per-device nodes, as Program takes them).
  MemoryPlan(const ItemPlan& plan, const std::vector<UOp>& roots);

  const WriteSite& site(size_t item) const { return sites_.at(item); }
  // True for a copy that may be elided into a peer read: it is the only item writing its destination
  // block, that block belongs to a scratch buffer or an intermediate (not a root, not memory that
  // outlives the run), and, when the program assigns in place, every item writing the memory the
  // copy reads runs before the copy (so that source stays unchanged while the run reads it: an
  // in-place allreduce's copies of intermediates and scratch may be elided, its copies of the
  // destination may not).
  bool peer_read(size_t item) const { return peer_reads_.at(item) != 0; }
  // The blocks of base that some item writes (sorted; -1: all of them), for a base a peer-read
  // candidate writes. Throws std::out_of_range for another base.
  const std::vector<int64_t>& written(const detail::Node* base) const { return written_.at(base); }
  // For a kernel item that copies a value into a root (the realized result of AFTER stores into a
  // scratch buffer, e.g. an allgather into the result), that buffer, when the root's memory may be the
  // buffer's instead: same devices and size, every item writing the buffer runs before this one, and
  // no other root takes it. A run whose lookup finds no storage for the buffer (a scratch buffer) binds
  // it to the root's blocks and skips the item. Null otherwise.
  const detail::Node* forwarded(size_t item) const {
    auto it = forwarded_.find(item);
    return it == forwarded_.end() ? nullptr : it->second;
  }
  // The elements of kernel item `item`'s read `read` (item.reads[read]) that it reads, [first, last],
  // or nothing for all of them.
  using KernelReads = std::function<std::optional<std::pair<int64_t, int64_t>>(size_t item, size_t read)>;
  // Works out peer_writes (below); until then there are none. kernel_reads narrows what each kernel
  // reads (the executor's lowered kernels know), so a kernel reading another chunk of the same block
  // is no reader of a copy's destination.
  void plan_peer_writes(const ItemPlan& plan, const KernelReads& kernel_reads);
  // For a kernel item, the copy items that may become its peer outputs (runtime.peer_writes): each
  // copies, whole, the range this kernel alone writes (its only writer but items that wait for the
  // copy), after the kernel, with every other item the copy waits for ordered before the kernel (so the
  // kernel may wait for them instead) and every other reader of the copy's destination ordered before
  // the kernel or after the copy; not a peer-read candidate; same dtype. Ascending; empty for most.
  // Planning only: whether the kernel's device may write the destination's device, and whether the
  // destination overlaps what the kernel reads, is decided by the executor.
  const std::vector<size_t>& peer_writes(size_t item) const {
    static const std::vector<size_t> kNone;
    auto it = peer_writes_.find(item);
    return it == peer_writes_.end() ? kNone : it->second;
  }

 private:
  std::vector<WriteSite> sites_;
  std::vector<char> peer_reads_;
  std::unordered_map<const detail::Node*, std::vector<int64_t>> written_;
  std::unordered_map<size_t, const detail::Node*> forwarded_;
  std::unordered_map<size_t, std::vector<size_t>> peer_writes_;
};

}  // namespace ringrt
