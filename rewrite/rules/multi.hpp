// The multi-device rules: the sharding rules (multi.cpp) and the allreduce lowering with its clean-up
// rules (allreduce.cpp); rewrite/lower/lower.hpp runs them as one pass. Reference: tinygrad schedule/multi.py multi_pm,
// replace_allreduce, handle_allreduce, handle_allreduce_multirank, with the allreduce-without-MSTACK change.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/algorithm.hpp"
#include "core/settings.hpp"
#include "rewrite/pattern.hpp"
#include "rewrite/rewrite.hpp"

namespace ringrt {

// Sharding rules: push MULTI up through every op so that each op runs on the per-device shards.
// A request no rule can serve throws ShapeError naming the op, the shapes and the axis.
PatternMatcher multi_pm();

// The lowering chosen for an ALLREDUCE node (lower_multi's choice): its algorithm, and whether its one
// reader assigns its result into its own source (Tensor::allreduce_in_place: ASSIGN(x, ALLREDUCE(x))),
// so that the allgather may store the result straight into the source's buffer.
struct AllreduceChoice {
  Algorithm algorithm = Algorithm::naive;
  bool into_source = false;
};
using AllreduceChoices = std::unordered_map<const detail::Node*, AllreduceChoice>;

// Allreduce lowering (naive | ring | all2all | hierarchical | hierarchical_rs) and the copy/MSELECT/MSTACK clean-up. An
// ALLREDUCE found in choices gets the lowering chosen there; any other chooses by allreduce_algorithm.
PatternMatcher replace_allreduce(const AllreduceSettings& settings, AllreduceChoices choices = {});

// Which lowering an ALLREDUCE of buf (on a device tuple) gets: naive, ring, all2all, a fused form,
// hierarchical (the leader form) or hierarchical_rs (the reduce_scatter form: allreduce.hierarchical
// is reduce_scatter and the device groups have one size) (reference: handle_allreduce's
// use_ring/use_all2all, handle_allreduce_multirank).
// collective: the collective the ALLREDUCE implements (collective_of's kind), whose tuned choice applies.
// The form `algo` runs as under the settings alone, for `collective` (rewrite/rules/choice.cpp): deterministic mode
// runs ring_fused as twoshot and, over a wire, naive and oneshot as all2all; a wire runs the fused forms unfused.
// Shared by the lowering (allreduce_algorithm) and `ringrt tune`, which times only forms that run as themselves.
Algorithm form_under_settings(Algorithm algo, Collective collective, const AllreduceSettings& settings);
Algorithm allreduce_algorithm(const UOp& allreduce, const AllreduceSettings& settings,
                              Collective collective = Collective::allreduce);

// The algorithm the settings give a collective of numel elements on each of ndev devices: the one
// allreduce.algorithm forces; else all2all when ALL2ALL >= 2, or ALL2ALL >= 1 with ndev > 2 and numel >
// ring_threshold; else ring likewise with RING; else naive (tinygrad's use_all2all / use_ring).
// allreduce_algorithm without device groups.
Algorithm collective_algorithm(int64_t ndev, int64_t numel, const AllreduceSettings& settings);

// A collective as its algorithm is chosen: which one (allreduce | reduce_scatter | allgather |
// broadcast), the devices' kind (CPU, HIP), how many devices and on how many ranks, the elements per
// device (rccl-tests' count: the buffer before a scatter, after a gather) and the dtype.
struct CollectiveSize {
  Collective collective = Collective::allreduce;
  std::string kind;
  int64_t ndev = 0, numel = 0;
  DType dtype = DType::float32;
  int64_t ranks = 0;  // the ranks the devices' names span (rank<R>/KIND:i): 0 in one process (no rank in the names)
  // From a device tuple's names ("CPU:0", "rank1/HIP:2").
  static CollectiveSize of(Collective collective, const DeviceTuple& devices, int64_t numel, DType dtype);
};
// The algorithm for c: with ring, all2all and the threshold at their defaults (automatic_levels), the
// tuning file of settings.tuning (rewrite/tuning.hpp) when it has a choice for c, measured on this
// machine, and c runs in one process; else, for an allreduce in one process with allreduce.tuning not
// off, the cost model's cheapest where the devices' kind has figures (rewrite/cost_model.hpp);
// across ranks, mpi up to allreduce.mpi_bytes per device where mpi_serves (automatic levels, auto algorithm);
// otherwise collective_algorithm(c.ndev, c.numel, settings), tinygrad's rule.
Algorithm collective_algorithm(const CollectiveSize& c, const AllreduceSettings& settings);
// Whether MPI's own collective (Algorithm::mpi) can serve c: across ranks with one device of the tuple on each
// (MPI reduces one buffer per rank), in host memory (cpu devices: Debian's Open MPI reads no GPU memory), an
// allreduce, reduce_scatter, allgather or broadcast of at most INT_MAX bytes per device, and for the reducing ones
// a dtype MPI reduces by op (not the 16-bit floats or FP8; no float max or min, whose NaNs MPI drops). Across
// ranks and automatic (allreduce.algorithm auto, the levels at their defaults), collective_algorithm takes it up
// to allreduce.mpi_bytes per device (op unknown there: allreduce_algorithm then checks it with its op).
bool mpi_serves(const CollectiveSize& c, Ops op = Ops::ADD);
// Whether the automatic choice across ranks, where no tuned choice applies, takes MPI's own collective for c up to
// allreduce.mpi_bytes: allreduce.tuning is not off, mpi_bytes is not 0, MPI serves c (mpi_serves), and neither
// allreduce.deterministic nor a wire gives a reducing collective other forms (mpi would run as the ring there, where
// tinygrad's rule takes naive on two devices). The run header states the same (runtime/cli/report.cpp).
bool mpi_by_default(const CollectiveSize& c, const AllreduceSettings& s);

// The collectives other than allreduce, as the lowered multi-device graph expresses them (collectives.cpp):
// - reduce_scatter: an ALLREDUCE onto its own tuple whose every reader takes its own device's chunk (a
//   SHRINK cutting one axis into n parts at _device_num, through RESHAPEs, every axis before it of length 1)
// - allgather: an ALLREDUCE(ADD) onto its own tuple of zero-padded shards (unshard_local: a PAD placing
//   each device's value at _device_num along one axis)
// - alltoall: such an allgather whose every reader takes its own device's chunk along another axis
// - broadcast: a COPY from one device (or one device of a tuple: COPY's source index) to a tuple, when
//   no reader takes its own device's chunk of it (that is a scatter, served by the copies alone)
// A collective that is none of these is lowered as an allreduce or by the copy rules. On a tuple with
// device groups (allreduce_algorithm names a hierarchical form) a reduce_scatter or an allgather over
// groups of one size covering the tuple takes the hierarchical form; an alltoall, or groups that do not
// fit, the hierarchical allreduce (hierarchical_fallback says why).
struct CollectiveUse {
  Collective kind = Collective::allreduce;  // reduce_scatter | allgather | alltoall | broadcast
  // ring | all2all, as collective_algorithm chooses, a fused form, or hierarchical (device groups; see
  // collectives.cpp)
  Algorithm algorithm = Algorithm::naive;
};
// The readers of every node reachable from root (a reader that reads a node twice is listed once).
using Readers = std::unordered_map<const detail::Node*, std::vector<UOp>>;
Readers readers_of(const UOp& root);
// What u (an ALLREDUCE or a COPY of the graph readers were taken from) is, or nothing.
std::optional<CollectiveUse> collective_of(const UOp& u, const Readers& readers, const AllreduceSettings& settings);
// For an ALLREDUCE u that is a reduce_scatter, allgather or alltoall but, over device groups, is lowered
// as the hierarchical allreduce: why ("reduce_scatter as the hierarchical allreduce: groups of unequal
// size"; also "groups do not cover the tuple", "alltoall ...: no hierarchical form"); nothing otherwise.
std::optional<std::string> hierarchical_fallback(const UOp& u, const Readers& readers,
                                                 const AllreduceSettings& settings);
// Rules lowering each collective collective_of recognizes (in a graph readers was taken from) into copies,
// reductions, MSELECT stores and MSTACKs that replace_allreduce then cleans up.
PatternMatcher collectives_pm(const AllreduceSettings& settings, std::shared_ptr<const Readers> readers);

// Chunk bounds of a flat buffer of numel elements cut into ndev pieces: multiples of the first of
// 32, 16, 8, 4, 2 dividing numel (else 1), the first `left` chunks one factor larger.
std::vector<std::pair<int64_t, int64_t>> allreduce_chunks(int64_t numel, int64_t ndev);
// numel cut into n pieces [i numel / n, (i + 1) numel / n): a reduce_scatter's chunks (collectives.cpp).
std::vector<std::pair<int64_t, int64_t>> equal_chunks(int64_t numel, int64_t n);

// Helpers shared by the rule files.
// The in-place input switch (environment RINGRT_ALLREDUCE_IN_PLACE, read once; default on, 0 turns it
// off): a reduction over the sharded axis whose local axes have size 1 skips the local reduction (the
// identity), and an allreduce of a value that already lives in a buffer reads that buffer instead of a
// contiguous copy of it. Throws ConfigError for a value other than 0 or 1.
bool allreduce_in_place();
UOp broadcast_to(const UOp& u, const Shape& shape);  // reshape to rank, then expand
// The movement op v rebuilt on src with _device_num fixed to dnum in its bounds.
UOp at_device(const UOp& v, const UOp& src, int64_t dnum);
// x rebuilt on device when x is computed from constants alone (CONSTs under movement ops with
// device-independent bounds, ALU, casts, reductions; no BUFFER, _device_num or multi-device op), with
// every CONST placed on device (one name or a tuple, where each device holds the same value); nothing
// otherwise. A copy of such a value moves no data: it is the value made on the destination.
// Reference: tinygrad folds COPY(CONST) into a CONST on the destination device.
std::optional<UOp> const_on_device(const UOp& x, const DeviceSpec& device);
// The parts laid side by side along axis (all other extents equal): each element selected from the
// part that holds it, so -0.0 and NaN payloads survive (a sum of zero-padded parts would not). Parts of
// length 0 along axis are skipped. ShapeError when nothing is left or the extents disagree.
// Reference: tinygrad Tensor.cat (pad each part into place), with a select instead of the sum.
UOp concat_select(const std::vector<UOp>& parts, int axis);

}  // namespace ringrt
