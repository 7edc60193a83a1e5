// Fused collectives: one launch per device per call (docs/fused-collectives.md).
//
// The lowered forms of allreduce.cpp (naive, ring, all2all) are many kernels and copies, ordered from
// outside. A fused form is one COLLECTIVE node instead: COLLECTIVE(buf, DEVICE) on buf's device tuple,
// arg {reduce op, algorithm}. Its value on every device is the left fold of the op over the devices'
// values in tuple order, (((x0 op x1) op x2) ...): the interpreter's ALLREDUCE, bit for bit, on every
// device. The scheduler makes it one item (ScheduleItem::Kind::collective) and the executor launches
// it once per device (Device::launch_collective), each launch running the steps fused_steps lists for
// its device: ranges combined from every device's input, copies from peers' outputs, and barriers
// across the devices, where a device waits until every device of the tuple has reached it.
// - oneshot: each device combines the whole buffer from every device's input, in tuple order, into its
//   own output, then waits at a barrier (after it no device reads another's input). Reads (n-1) S from
//   peers, writes S. In place (the output is the input) it combines into scratch, waits at the barrier,
//   then copies the scratch into its buffer. (NCCL's one-shot all-reduce, vLLM's custom allreduce.)
// - twoshot: device d combines chunk d (allreduce_chunks) from every device's input and stores it into
//   chunk d of every device's output (a reduce-scatter by loads, an allgather by stores), then waits at
//   a barrier (after it every chunk has reached every output). Where a device may not store into its
//   peers' memory (push false), it stores into its own output, waits, copies every other chunk e from
//   device e's output and waits again. Reads and writes 2 (n-1)/n S across devices. In place each
//   device reads and writes chunk d of every buffer only. (NCCL's RSxLD_AGxST: reduce-scatter with
//   loads, allgather with stores, in one kernel.)
// - ring_fused: tinygrad's ring (allreduce.cpp reduce_scatter_ring, allgather_chunk) in one launch per
//   device: 2 (n-1) steps, each a slice of a chunk received from the previous device in the tuple
//   (combined with this device's input on the way round, copied on the way back), ordered by flags
//   between neighbours instead of barriers across all. Each chunk is cut into slices, so that a device
//   works on slice j+1 while its successor takes slice j (NCCL's chunk-pipelined ring). Its value is
//   the lowered ring's, bit for bit: chunk c folded from device c round the ring (c+1 for a
//   reduce_scatter), not in tuple order. Reads and writes 2 (n-1)/n S across devices, all of it between
//   neighbours (the form for rings across physical GPUs).
// Every form ends with a barrier, so a device's launch completes only once every device is done with
// its memory. Barriers count up: barrier k of a call waits until n (base + k + 1) arrivals, base the
// barriers of the item's earlier calls, so nothing is ever reset between calls. So do the ring's flags:
// each device's counts the steps it signalled, and a wait for k signals of this call waits until the
// flag reaches signal_base + k, signal_base the signals of each device in the item's earlier calls.
// Scratch is never shared between calls or between devices' steps of one call: each chunk has its own
// place in it, and the final barrier orders one call's reads before the next call's writes.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "core/algorithm.hpp"
#include "core/host_buffer.hpp"
#include "rewrite/uop.hpp"

namespace ringrt {

// The IR's encoding of a fused collective's algorithm and collective (a COLLECTIVE node's arg holds them as
// integers); their names are core/algorithm.hpp's, through the conversions below.
// mpi: not a launch on the devices but MPI's own non-blocking collective on each rank's buffer, across
// ranks of one device each (Algorithm::mpi; the cluster runs it, runtime/device/cluster.hpp): no steps.
enum class FusedAlgorithm : uint8_t { oneshot, twoshot, ring, mpi };
// What a fused collective computes: the allreduce (every device the whole fold), the reduce_scatter
// (device d chunk d of it: numel / n elements, numel a multiple of n), the allgather (every device the
// n devices' values one after another: n numel elements), or the broadcast (every device the root's value).
enum class FusedCollective : uint8_t { allreduce, reduce_scatter, allgather, broadcast };

// Algorithm::oneshot, twoshot, ring_fused, mpi; and back (nothing for an algorithm that is not one item).
Algorithm algorithm_of(FusedAlgorithm a);
std::optional<FusedAlgorithm> fused_algorithm(Algorithm a);
// Collective::allreduce, reduce_scatter, allgather, broadcast; and back (nothing for another collective).
Collective collective_of(FusedCollective c);
std::optional<FusedCollective> fused_collective(Collective c);
// "allreduce", "reduce_scatter", ...: collective_name(collective_of(c)).
std::string_view fused_collective_name(FusedCollective c);
// "oneshot", "twoshot", "ring_fused", "mpi": algorithm_name(algorithm_of(a)).
std::string_view fused_name(FusedAlgorithm a);

// What a COLLECTIVE node does: reduce with op, by algorithm.
struct CollectiveArg {
  Ops op;
  FusedAlgorithm algorithm;
  FusedCollective collective = FusedCollective::allreduce;
  int64_t root = 0;  // a broadcast's: the device index in the tuple whose value every device takes
};
// The arg of a COLLECTIVE node; InternalError for another node or a malformed arg.
CollectiveArg collective_arg(const UOp& u);

// COLLECTIVE(buf, DEVICE(buf's tuple)), {op, algorithm}: buf (on a device tuple, contiguous) allreduced
// with op onto the same tuple. Throws ShapeError (rewrite/infer.cpp) when op is no reduce op or buf is
// not on a tuple.
UOp fused_allreduce(const UOp& buf, Ops op, FusedAlgorithm algorithm);
// COLLECTIVE(buf, DEVICE), {op, algorithm, reduce_scatter}: device d's value is chunk d, numel / n
// elements (shape {numel / n}), of the fold. Both algorithms reduce-scatter by loads: device d combines
// chunk d of every input into its output, then a barrier. Throws ShapeError when numel is no multiple of n.
UOp fused_reduce_scatter(const UOp& buf, Ops op, FusedAlgorithm algorithm);
// COLLECTIVE(buf, DEVICE), {ADD, algorithm, allgather}: every device's value is the devices' flat values
// in tuple order (shape {n numel}). Both algorithms gather: device d copies every device's input into its
// range of d's output, then a barrier.
UOp fused_allgather(const UOp& buf, FusedAlgorithm algorithm);
// COLLECTIVE(buf, DEVICE), {ADD, algorithm, broadcast, root}: every device's value is device root's (shape
// {numel}). oneshot and twoshot: every device copies the root's input; ring_fused: slices forwarded down the
// chain root, root+1, ... (NCCL's pipelined ring broadcast). Throws ShapeError when root is not in the tuple.
UOp fused_broadcast(const UOp& buf, int64_t root, FusedAlgorithm algorithm);

// Every device's value of an ALLREDUCE or COLLECTIVE node u (the interpreter's semantics,
// rewrite/interpreter.cpp) from every device's value of its source, `in` (one per device, in tuple
// order), `width` values (u's devices: one for an allreduce onto one device): the left fold of the reduce
// op over `in` in tuple order, by `combine` (elementwise, rounding as the dtype does); a reduce_scatter's
// device d takes chunk d of it; an allgather's every device the values one after another; a broadcast's every
// device the root's. InternalError
// for another node.
std::vector<HostBuffer> collective_values(
    const UOp& u, const std::vector<HostBuffer>& in, size_t width,
    const std::function<HostBuffer(Ops, const HostBuffer&, const HostBuffer&)>& combine);

// A wait before a ring_fused step: until device `device` (its index in the tuple) has signalled `count`
// times in this call. device -1: no wait.
struct FusedWait {
  int64_t device = -1;
  int64_t count = 0;
};

// One step of a device's launch of a fused collective. Ranges are elements of the flat buffer.
struct FusedStep {
  enum class Kind : uint8_t {
    combine,  // [begin, end) of every device's input, folded in tuple order, into the output (or the
              // scratch; or, with all_outputs, every device's output: this one's first, then the
              // devices after it in the tuple, wrapping). With peer >= 0 (ring_fused) two operands
              // instead: device peer's [begin, end) (its input with from_input, its scratch with
              // from_scratch, else its output), then this device's input there: peer's op own
    barrier,  // wait until every device of the tuple has reached this barrier
    gather,   // [begin, end) of device `peer`'s output (its input, from_input) into this device's output
              // at begin - out_shift
    publish,  // [begin, end) of the scratch into the output
  };
  Kind kind;
  int64_t begin = 0, end = 0;
  int64_t peer = -1;                 // gather, ring combine: the device index in the tuple
  bool to_scratch = false;           // combine: into the scratch at begin (oneshot in place, ring reduce_scatter)
  bool all_outputs = false;          // combine: into every device's output (twoshot with push)
  int64_t out_shift = 0;             // combine, gather: element i goes to output element i - out_shift
  bool from_input = false;           // gather, ring combine: from the peer's input (allgather; the ring's first step)
  bool from_scratch = false;         // ring combine: from the peer's scratch (the ring's reduce_scatter)
  std::array<FusedWait, 2> waits{};  // before the step (ring_fused)
  bool signal = false;               // after the step, this device signals once (ring_fused)

  bool ring() const { return kind == Kind::combine && peer >= 0; }
  bool waits_for_peers() const { return waits[0].device >= 0 || waits[1].device >= 0; }
};

// The most steps a device's launch of a fused collective has: its list fits in a GPU kernel's
// arguments (codegen/render_hip.cpp render_hip_collective). ring_fused cuts its chunks into fewer
// slices the more devices it has to stay within it.
inline constexpr int64_t kFusedMaxSteps = 48;
// How many slices ring_fused cuts each chunk into, for n devices and chunks of chunk_bytes: one per
// kRingSliceBytes (at least one), at most what keeps a device's steps within kFusedMaxSteps.
inline constexpr int64_t kRingSliceBytes = int64_t{1} << 19;
int64_t ring_slices(int64_t ndev, int64_t chunk_bytes);

// Device d's steps (d in [0, ndev)) for a buffer of numel elements per device; in_place: the output
// is the input; push: every device may store into every other's memory; slices: ring_fused's slices
// per chunk (ring_slices). Every device's list has the same number of barriers (fused_barriers) and of
// signals (fused_signals). Empty ranges are left out, but for the ring's steps, which signal.
std::vector<FusedStep> fused_steps(FusedAlgorithm a, int64_t ndev, int64_t numel, int64_t d, bool in_place, bool push,
                                   FusedCollective c = FusedCollective::allreduce, int64_t slices = 1,
                                   int64_t root = 0);
// Whether a phase of steps that began at `from` ends before steps[at]: at the end, at a barrier, or at a
// step after the first that waits for peers' signals. Where a launch's steps do not run concurrently on
// the devices (the cpu backend's inline phases, Device::launch_collective's default), every device runs
// one phase, then all meet: the ring's waits are then met by the order of the phases (each step's waits
// are for earlier steps of the same list, which has one wait-free step per slice first).
inline bool fused_phase_end(const std::vector<FusedStep>& steps, size_t from, size_t at) {
  return at >= steps.size() || steps[at].kind == FusedStep::Kind::barrier || (at > from && steps[at].waits_for_peers());
}
// How many of steps are barriers, and how many signal.
int64_t fused_barriers(const std::vector<FusedStep>& steps);
int64_t fused_signals(const std::vector<FusedStep>& steps);
// Whether the algorithm needs a scratch buffer of numel elements on each device.
bool fused_needs_scratch(FusedAlgorithm a, bool in_place, FusedCollective c = FusedCollective::allreduce);

}  // namespace ringrt
