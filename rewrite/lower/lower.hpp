// Lowering: from a logical multi-device graph to per-device graphs (the first stage after the Tensor
// front end; planning, rewrite/plan/, comes next). Runs the sharding rules, chooses each allreduce's
// algorithm once, then lowers the allreduces. Reference: tinygrad schedule/multi.py (multi_pm, then
// replace_allreduce) as run by tinygrad's get_kernelize_map.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/settings.hpp"
#include "rewrite/rewrite.hpp"
#include "rewrite/rules/multi.hpp"

namespace ringrt {

struct Lowered {
  std::vector<UOp> roots;                // per logical root: the per-device node (a MULTI's shards)
  std::vector<std::optional<int>> axes;  // per root: the shard axis when the root was a sharded MULTI
  // per ALLREDUCE node, in topological order (collective_of's for a reduce_scatter, allgather or
  // alltoall), and per broadcast from one device of a tuple (a COPY with a source index: not a one-device
  // value placed on a tuple)
  std::vector<Algorithm> algorithms;
};

// Lowers logical roots to per-device graphs: multi_pm, then collectives_pm (the reduce-scatters,
// allgathers, alltoalls and ring broadcasts collective_of finds), then replace_allreduce. With
// settings.debug >= 2 prints one line per allreduce to stderr: "RING ALLREDUCE 4x400 | float32" (the
// algorithm of allreduce_algorithm, upper case; a hierarchical allreduce that asked for the
// reduce_scatter form but has groups of unequal size ends "| leader form: groups of unequal size"; a
// reduce-scatter or allgather lowered as the hierarchical allreduce ends with hierarchical_fallback's
// reason, "| reduce_scatter as the hierarchical allreduce: groups of unequal size"), and one per other
// collective: "RING REDUCE_SCATTER 4x400 | float32", "ALL2ALL BROADCAST 4x400 | int32", "HIERARCHICAL
// ALLGATHER 4x400 | int32" (elements per device). Throws ShapeError for impossible sharding.
Lowered lower_multi(const std::vector<UOp>& roots, const AllreduceSettings& settings,
                    const RewriteOptions& options = {});

}  // namespace ringrt
