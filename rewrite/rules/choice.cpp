// The algorithm of a collective (rewrite/rules/multi.hpp collective_algorithm, allreduce_algorithm): forced,
// tuned (rewrite/tuning.hpp), modelled (rewrite/cost_model.hpp), MPI's own across ranks or tinygrad's rule, and the
// forms a setting turns it into (deterministic mode, a wire, a destination a fused kernel cannot serve). The lowering
// that runs the choice: allreduce.cpp.
#include <limits>
#include <optional>
#include <set>

#include "core/params_internal.hpp"
#include "rewrite/collective.hpp"
#include "rewrite/cost_model.hpp"
#include "rewrite/rules/allreduce_blocks.hpp"
#include "rewrite/rules/multi.hpp"
#include "rewrite/tuning.hpp"

namespace ringrt {

namespace {
// A fused form's unfused counterpart: oneshot reads every input (naive), twoshot reduce-scatters and allgathers
// directly (all2all), ring_fused is the ring; and where MPI's collective cannot serve, mpi is the ring.
Algorithm unfused(FusedAlgorithm f) {
  return f == FusedAlgorithm::oneshot   ? Algorithm::naive
         : f == FusedAlgorithm::twoshot ? Algorithm::all2all
                                        : Algorithm::ring;
}
}  // namespace

bool mpi_serves(const CollectiveSize& c, Ops op) {
  bool reduces = combines(c.collective);
  // MPI has no 16-bit float or FP8 type to reduce (Open MPI 4.1); it moves any bytes. Its MPI_MAX and MPI_MIN
  // compare with < and >, so a NaN is dropped where the interpreter's max keeps it: floats reduce by max and
  // min elsewhere
  bool reducible = c.dtype != DType::float16 && c.dtype != DType::bfloat16 && c.dtype != DType::fp8e4m3 &&
                   c.dtype != DType::fp8e5m2 && !(is_float(c.dtype) && (op == Ops::MAX || op == Ops::MIN));
  // MPI counts in int: a buffer of up to INT_MAX bytes (the collectives that move bytes count bytes)
  bool counted = c.numel * itemsize(c.dtype) <= std::numeric_limits<int>::max();
  return c.ranks > 1 && c.ranks == c.ndev && c.kind == "CPU" && fused_collective(c.collective) && counted &&
         (reducible || !reduces);
}

bool mpi_by_default(const CollectiveSize& c, const AllreduceSettings& s) {
  bool reduces = combines(c.collective);
  // deterministic and a wire give a reducing collective other forms (form_under_settings: mpi runs as the ring)
  bool reformed = reduces && (s.deterministic || s.wire != "native");
  return s.tuning != "off" && s.mpi_bytes > 0 && mpi_serves(c) && !reformed;
}

Algorithm form_under_settings(Algorithm algo, Collective collective, const AllreduceSettings& s) {
  bool reduces = combines(collective);
  bool det = s.deterministic && reduces, wired = s.wire != "native" && reduces;
  // deterministic: ring_fused folds as twoshot does
  if (det && algo == Algorithm::ring_fused) algo = Algorithm::twoshot;
  // deterministic over a wire: naive (and oneshot, naive on a wire) sends a device's own buffer across the wire
  // too, so its bits would differ from the direct forms'; it runs as all2all, whose fold they all share
  if (det && wired && (algo == Algorithm::naive || algo == Algorithm::oneshot)) algo = Algorithm::all2all;
  // deterministic: MPI's collective folds in its own order (recursive doubling, rings: not tuple order)
  if (det && algo == Algorithm::mpi) algo = Algorithm::ring;
  // on a wire a fused kernel reads its peers' memory, with no copy to encode: its unfused counterpart
  if (std::optional<FusedAlgorithm> fused = fused_algorithm(algo); fused && wired) return unfused(*fused);
  return algo;
}

Algorithm allreduce_algorithm(const UOp& red, const AllreduceSettings& s, Collective collective) {
  const UOp& buf = red.src(0);
  // deterministic (allreduce.deterministic): a reducing collective is flat over the whole tuple, whose order
  // (rank-major across ranks) is the fold's; the allgather keeps its forms
  bool det = s.deterministic && combines(collective);
  if (buf.device().tuple() && !det)
    if (auto form = hierarchical_form(buf.device().names(), s)) return *form;
  CollectiveSize c = CollectiveSize::of(collective, buf.device().names(), prod(buf.shape()), buf.dtype());
  Algorithm algo = form_under_settings(collective_algorithm(c, s), collective, s);
  // a fused form reduces onto the source's own devices (rewrite/collective.hpp): an allreduce, a
  // reduce_scatter or an allgather; the fused kernels in one process, mpi across ranks where MPI's
  // collective serves (mpi_serves); onto one root, or another collective, its unfused counterpart
  if (std::optional<FusedAlgorithm> fused = fused_algorithm(algo))
    if ((collective != Collective::allreduce && collective != Collective::reduce_scatter &&
         collective != Collective::allgather) ||
        red.src(1).device() != buf.device() ||
        (*fused == FusedAlgorithm::mpi ? !mpi_serves(c, static_cast<Ops>(red.arg_int())) : c.ranks > 1))
      // mpi forced runs as the ring; chosen (allreduce.mpi_bytes, a tuned choice) for what it cannot serve, as
      // tinygrad's rule says (a reduce onto one root: naive on two devices)
      return *fused == FusedAlgorithm::mpi && !forced_algorithm(s) ? collective_algorithm(c.ndev, c.numel, s)
                                                                   : unfused(*fused);
  return algo;
}

CollectiveSize CollectiveSize::of(Collective collective, const DeviceTuple& devices, int64_t numel, DType dtype) {
  CollectiveSize out{collective, "", static_cast<int64_t>(devices.size()), numel, dtype, 0};
  std::set<int> ranks;
  for (const std::string& d : devices)
    if (std::optional<RankedDeviceName> r = split_rank(d)) {
      if (r->rank >= 0) ranks.insert(r->rank);  // a name without a rank (-1): one process
      out.kind = std::string(r->local.substr(0, r->local.find(':')));
    }
  out.ranks = static_cast<int64_t>(ranks.size());
  return out;
}

Algorithm collective_algorithm(const CollectiveSize& c, const AllreduceSettings& s) {
  int64_t bytes = c.numel * itemsize(c.dtype);
  if (!automatic_levels(s)) return collective_algorithm(c.ndev, c.numel, s);
  // the choice measured under this wire and deterministic setting (their forms differ: rewrite/tuning.hpp), in one
  // process or across as many ranks (`ringrt tune` under mpirun)
  int64_t ranks = c.ranks > 1 ? c.ranks : 0;
  if (std::shared_ptr<const TuningTable> t = tuning_for(s.tuning).table)
    if (const TunedChoice* tuned =
            t->find(c.collective, c.kind, c.ndev, c.dtype, bytes, parse_wire_format(s.wire), s.deterministic, ranks))
      return tuned->algorithm;
  // across ranks, untuned: MPI's own collective up to allreduce.mpi_bytes where it serves, else the rule (the cost
  // model's figures are of one process's transfers, not MPI's); allreduce.tuning off: the rule
  if (ranks > 0)
    return bytes <= s.mpi_bytes && mpi_by_default(c, s) ? Algorithm::mpi : collective_algorithm(c.ndev, c.numel, s);
  // no tuned choice: the cost model of the devices' kind (rewrite/cost_model.hpp) for an allreduce, unless
  // allreduce.tuning is off (tinygrad's rule, as before the model)
  // in one process only (names without a rank): under mpirun every rank measures figures of its own, and the
  // ranks must plan alike (an allreduce inside one rank of a job is tinygrad's rule)
  if (c.collective == Collective::allreduce && s.tuning != "off" && c.ndev > 1 && c.ranks == 0)
    // the figures' peer access is the hardware's: the runtime.peer_* switches are not read (off, the
    // model would send the cpu to the fused forms, which read peers' memory whatever the switches say)
    if (std::optional<CostFigures> f = cost_model_for(c.kind).figures)
      return modelled_choice(*f, c.ndev, bytes, s.deterministic);
  return collective_algorithm(c.ndev, c.numel, s);
}

Algorithm collective_algorithm(int64_t ndev, int64_t numel, const AllreduceSettings& s) {
  if (std::optional<Algorithm> forced = forced_algorithm(s)) return *forced;  // allreduce.algorithm
  bool big = ndev > 2 && numel > s.ring_threshold;
  if (s.all2all >= 2 || (big && s.all2all >= 1)) return Algorithm::all2all;
  if (s.ring >= 2 || (big && s.ring >= 1)) return Algorithm::ring;
  return Algorithm::naive;
}

}  // namespace ringrt
