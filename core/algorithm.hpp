// Collective algorithms and collectives as types: one enum each, with their names, parsing and printing
// in this one place (core/algorithm.cpp). The rules (rewrite/rules), the cost model, the tuning file, the
// engine and the CLI pass these; a name is text only at the edges: the settings' allreduce.algorithm,
// YAML keys, the tuning file, the command line, messages, and the public API's Schedule::algorithms.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringrt {

struct AllreduceSettings;

// How a collective moves and reduces its data (docs/fused-collectives.md for the fused forms).
enum class Algorithm : uint8_t {
  // every device reads every device's buffer and folds it itself. Reference: tinygrad schedule/multi.py
  // handle_allreduce with neither use_ring nor use_all2all. For the other collectives: the direct form.
  naive,
  // reduce-scatter, then allgather, each chunk passed round the ring of devices, 2 (n-1) steps
  // (handle_allreduce's use_ring; rewrite/rules/allreduce.cpp reduce_scatter_ring).
  ring,
  // the direct reduce-scatter (device d folds chunk d from every device), then the direct allgather
  // (handle_allreduce's use_all2all). The other collectives' direct form.
  all2all,
  // fused, one launch per device: each device folds the whole buffer from every device's input (NCCL's
  // one-shot all-reduce, vLLM's custom allreduce; rewrite/collective.hpp).
  oneshot,
  // fused: device d folds chunk d from every input and stores it into every output (NCCL's RSxLD_AGxST,
  // vLLM's two-shot custom allreduce).
  twoshot,
  // fused: tinygrad's ring in one launch per device, its chunks cut into slices (NCCL's chunk-pipelined ring).
  ring_fused,
  // over device groups, the leader form: reduce onto each group's leader, allreduce across the leaders,
  // broadcast back (tinygrad's handle_allreduce_multirank; allreduce.hierarchical leader).
  hierarchical,
  // over device groups of one size, the reduce_scatter form: reduce-scatter in each group, allreduce of each
  // share across groups, allgather (Horovod's hierarchical allreduce; allreduce.hierarchical reduce_scatter).
  hierarchical_rs,
  // across ranks, one device of the tuple on each: MPI's own non-blocking collective (MPI_Iallreduce,
  // MPI_Ireduce_scatter_block, MPI_Iallgather, MPI_Ibcast) on each rank's buffer, one item (Horovod's
  // MPI allreduce; runtime/mpi/transfers.hpp). Where it cannot serve (one process, several devices of a
  // rank, GPU memory, a 16-bit float or FP8 reduction, a wire, deterministic), ring.
  mpi,
};

// What a collective computes, as rccl-tests and NCCL name them (runtime/api/tensor.hpp).
enum class Collective : uint8_t { allreduce, reduce_scatter, allgather, alltoall, broadcast, reduce };

// Whether a collective combines values by a reduce op (allreduce, reduce_scatter, reduce): the ones
// allreduce.deterministic and allreduce.wire change and MPI must have a type to reduce for; the others move values.
constexpr bool combines(Collective c) {
  return c == Collective::allreduce || c == Collective::reduce_scatter || c == Collective::reduce;
}

// Every algorithm and every collective, in enumerator order.
inline constexpr std::array<Algorithm, 9> kAlgorithms{
    Algorithm::naive,      Algorithm::ring,         Algorithm::all2all,         Algorithm::oneshot, Algorithm::twoshot,
    Algorithm::ring_fused, Algorithm::hierarchical, Algorithm::hierarchical_rs, Algorithm::mpi};
inline constexpr std::array<Collective, 6> kCollectives{Collective::allreduce, Collective::reduce_scatter,
                                                        Collective::allgather, Collective::alltoall,
                                                        Collective::broadcast, Collective::reduce};
// The allreduce's algorithms one can force (allreduce.algorithm), tune (ringrt tune) and model
// (rewrite/cost_model.hpp): the flat ones, the fused last.
inline constexpr std::array<Algorithm, 6> kAllreduceAlgorithms{Algorithm::naive,   Algorithm::ring,
                                                               Algorithm::all2all, Algorithm::oneshot,
                                                               Algorithm::twoshot, Algorithm::ring_fused};
// What allreduce.algorithm may force: kAllreduceAlgorithms, then mpi (across ranks only: neither tuned nor
// modelled in one process).
inline constexpr std::array<Algorithm, 7> kForcedAlgorithms{
    Algorithm::naive,   Algorithm::ring,       Algorithm::all2all, Algorithm::oneshot,
    Algorithm::twoshot, Algorithm::ring_fused, Algorithm::mpi};
// The fused algorithms (rewrite/collective.hpp FusedAlgorithm): one launch per device.
inline constexpr std::array<Algorithm, 3> kFusedAlgorithms{Algorithm::oneshot, Algorithm::twoshot,
                                                           Algorithm::ring_fused};
// The algorithms of the collectives other than allreduce that tune measures: ring, or their direct form.
inline constexpr std::array<Algorithm, 2> kRingOrDirect{Algorithm::ring, Algorithm::all2all};
// The collectives a tuning file holds choices for: those with more than one algorithm (alltoall is
// direct always; reduce follows allreduce's choice).
inline constexpr std::array<Collective, 4> kTunedCollectives{Collective::allreduce, Collective::reduce_scatter,
                                                             Collective::allgather, Collective::broadcast};
// The collectives a fused COLLECTIVE node computes (rewrite/collective.hpp FusedCollective).
inline constexpr std::array<Collective, 4> kFusedCollectives{Collective::allreduce, Collective::reduce_scatter,
                                                             Collective::allgather, Collective::broadcast};

// "naive", "ring", "all2all", "oneshot", "twoshot", "ring_fused", "hierarchical", "hierarchical_rs", "mpi": the
// enumerator's own name, as settings, the tuning file, Schedule::algorithms and the report spell it.
std::string_view algorithm_name(Algorithm a);
// The algorithm named `name` (exactly one of algorithm_name's words); nothing for any other text.
std::optional<Algorithm> parse_algorithm(std::string_view name);
// "allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce"; and back.
std::string_view collective_name(Collective c);
std::optional<Collective> parse_collective(std::string_view name);
// Each algorithm's name, in order (the public API's Schedule::algorithms).
std::vector<std::string> algorithm_names(const std::vector<Algorithm>& algorithms);
// Writes the name (Boost.Test's data cases print their samples so).
std::ostream& operator<<(std::ostream& os, Algorithm a);
std::ostream& operator<<(std::ostream& os, Collective c);

// Whether a is one of kFusedAlgorithms.
bool is_fused(Algorithm a);
// Whether a is a hierarchical form (hierarchical or hierarchical_rs).
bool is_hierarchical(Algorithm a);
// The algorithm that settings.algorithm (allreduce.algorithm) forces, or nothing for "auto".
std::optional<Algorithm> forced_algorithm(const AllreduceSettings& settings);

// Orders algorithms by name: the order of the tuning file's `us` map (rewrite/tuning.hpp), whose ties go to
// the first by name.
struct AlgorithmNameLess {
  bool operator()(Algorithm a, Algorithm b) const { return algorithm_name(a) < algorithm_name(b); }
};

}  // namespace ringrt
