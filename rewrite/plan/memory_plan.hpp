// Performance helpers of the executor (internal): which copies of a plan may become peer reads.
// The switches themselves (PerfOptions) are declared in runtime/device/device.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "rewrite/plan/schedule.hpp"

namespace ringrt {

// Where an item writes: the node that owns the memory (a scratch BUFFER, a realized value) and the
// block of it (index into its per-device blocks; -1: every block).
struct WriteSite {
  const detail::Node* base = nullptr;
  int64_t block = -1;
};

// For each item of plan: true for a copy that may be elided into a peer read. Such a copy is the
// only item writing its destination block, that block belongs to a scratch buffer or an
// intermediate (not a root, not memory that outlives the run), and the program assigns nothing in
// place (so every source stays unchanged while the run reads it). Whether the devices allow the
// peer read, and whether the destination is an input after all, is decided per run. Planning only.
// `sites`: write_sites(plan).
std::vector<char> peer_read_candidates(const ItemPlan& plan, const std::vector<WriteSite>& sites,
                                       const std::vector<UOp>& roots);

// The blocks of `base` that some item writes, given every item's site (sorted; -1: all of them).
std::vector<int64_t> written_blocks(const std::vector<WriteSite>& sites, const detail::Node* base);

// The site an item's target writes (through RESHAPE, AFTER, ASSIGN and one MSELECT); base null when
// it cannot tell (an MSTACK).
WriteSite write_site(const UOp& target);
// write_site of every item of plan, in order.
std::vector<WriteSite> write_sites(const ItemPlan& plan);

}  // namespace ringrt
