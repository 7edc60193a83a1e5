// The hierarchical reduce-scatter and allgather over device groups (collectives_hierarchical.cpp; the
// forms and their bytes are described at the top of collectives.cpp). Internal to rewrite/rules.
#pragma once

#include <optional>
#include <string>

#include "core/settings.hpp"
#include "rewrite/uop.hpp"

namespace ringrt {

// Why the hierarchical reduce-scatter and allgather cannot serve a collective over devs with these
// groups ("groups of unequal size", "groups do not cover the tuple": a device without a group id), or
// nothing when they can. Only asked when allreduce_algorithm names a hierarchical form.
std::optional<std::string> hierarchical_unfit(const DeviceTuple& devs, const AllreduceSettings& settings);

// The reduce-scatter of red (an ALLREDUCE onto its own tuple of n devices, numel a multiple of n) over
// G equal groups of m devices: the reduced flat chunk i (numel/n elements) on device i, stacked.
UOp hierarchical_reduce_scatter(const UOp& red, const AllreduceSettings& settings);

// The allgather of red (an ALLREDUCE(ADD) of shards zero-padded along axis, unshard_local) over G
// equal groups of m devices: every shard selected into place along axis on every device, stacked.
UOp hierarchical_allgather(const UOp& red, int axis, const AllreduceSettings& settings);

}  // namespace ringrt
