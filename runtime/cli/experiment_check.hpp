// The experiment runner's shared parts (runtime/cli, not installed): the input data, the host
// references that check results, and the rows of the table. experiment.cpp runs sweeps and DDP's
// gradient buckets with them, experiment_fsdp.cpp FSDP's sharded steps.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/api/reference.hpp"  // Reference, StoredValue, reference_of: the rules #wrong counts by
#include "runtime/cli/experiment.hpp"

namespace ringrt {

using Clock = std::chrono::steady_clock;
double micros(Clock::duration d);  // d in microseconds

// Device d's input element i for dtype and op: small integers for integer and 16-bit float types (every
// partial result exact), fractions in [-3.3, 3.3] otherwise; products bounded (factors 1, -1, 2 or in
// [0.75, 1.25]). Deterministic: a hash of (d, i).
double input_value(DType dt, ReduceOp op, int64_t d, int64_t i);
// Device d's input data: a (1, count) row of input_value, rounded or wrapped into cfg.dtype.
HostBuffer input_row(const ExperimentConfig& cfg, int64_t count, int64_t d);

// The expected result of a collective on each device, made a range at a time so that the host never
// holds a whole one (a 64 MiB float32 result's reference is 320 MiB): range(device, first, count) is
// elements [first, first + count) of the result on the device of that index in cfg.devices. The last
// range made is kept, and handed out again when the same range is asked for on a device whose result
// is the same (allreduce, reduce, allgather, broadcast), so a check that reads every device's range
// before the next (Tensor::read_local_shards) makes each range once.
struct ReferenceFor {
  int64_t numel = 0;  // elements of the result on each device
  std::function<const Reference&(size_t device, int64_t first, int64_t count)> range;
};
// The expected result of `collective` on count elements per device (rccl-tests' count: see
// collective_count) whose inputs are value(d, i) (device d's local element i). c = count / ndev:
// reduce_scatter's chunk, allgather's shard, alltoall's slot.
ReferenceFor collective_reference(const ExperimentConfig& cfg, Collective collective, int64_t count, StoredValue value);
// The same over make_collective_input's data (cfg.collective, input_value).
ReferenceFor collective_reference(const ExperimentConfig& cfg, int64_t count);

// Elements a result is read and checked in at a time (check_result): the host holds one range of the
// result per device and its reference, about 20 bytes an element for float32.
constexpr int64_t kCheckChunk = int64_t{1} << 20;

// #wrong of one realized result over every device's local value, each against ref of its index in
// cfg.devices, read and compared `chunk` elements at a time (Tensor::read_local_shards), polling for a
// stop as it goes (Interrupted); a device whose result has another number of elements than ref.numel, or
// none, counts ref.numel. Under mpirun each rank checks its own devices and the counts are summed over
// the ranks (collective: every rank calls it for every row).
// errors (when given): the largest absolute and relative error of a finite element against the reference's
// value (exact, in double), relative where that is not 0; this process's devices only.
struct ErrorStats {
  double max_abs = 0, max_rel = 0;
};
int64_t check_result(const ExperimentConfig& cfg, const Tensor& result, const ReferenceFor& ref,
                     int64_t chunk = kCheckChunk, ErrorStats* errors = nullptr);

// row.wrong = check_result(cfg, result, ref), and with a wire (wire_applies) row's max abs/rel errors.
void check_row(const ExperimentConfig& cfg, ResultRow& row, const Tensor& result, const ReferenceFor& ref);

// allreduce.wire (docs/compressed-wire.md) applies to the collective: a wire other than native on an
// allreduce, reduce_scatter or reduce (the run refuses the dtypes and ops it cannot apply to).
bool wire_applies(const ExperimentConfig& cfg, Collective collective);
// The bytes of count elements per device that cross (wire bytes on a wire), times the collective's busbw factor.
double bus_bytes(const ExperimentConfig& cfg, Collective collective, int64_t count);

// rccl-tests' busbw / algbw (nccl-tests doc/PERFORMANCE.md): allreduce 2(n-1)/n; reduce_scatter,
// allgather, alltoall (n-1)/n; broadcast and reduce 1.
double busbw_factor(Collective collective, size_t ndev);

// The measured times of a row or a step, each the mean of one call (one step) in microseconds, per
// timing mode (experiment.timing); nullopt: not measured.
struct RowTimes {
  std::optional<double> latency_us, pipelined_us;
};

// The row of `collective` on count elements per device with its times (time_us the latency when
// measured, else the pipelined time; neither: not timed); its algo from lazy (Tensor::algorithms, no
// planning). wrong stays -1 (not checked).
ResultRow make_row(const ExperimentConfig& cfg, Collective collective, int64_t count, const Tensor& lazy,
                   const RowTimes& times);
// The summary of a step: the rows' bytes, the step's times, busbw from each row's collective.
StepSummary step_summary(const ExperimentConfig& cfg, const std::vector<ResultRow>& rows, int64_t buckets,
                         const RowTimes& step);

// The host data of one persistent bucket: ndev + 1 rows of input_row(cfg, count, r) (r == ndev: a device
// that is not there). Step s gives device d row row_of(d, s, ndev + 1) = (d + s) % (ndev + 1): each
// device's data changes every step, and so does the set of rows reduced (one is left out), so a step
// whose writes did not land gives a different result.
std::vector<HostBuffer> bucket_rows(const ExperimentConfig& cfg, int64_t count);
size_t row_of(size_t d, int step, size_t nrows);
// Element i of a host buffer as double (exact for integers).
double stored_at(const HostBuffer& b, int64_t i);
// The values step `step` wrote from persistent rows (bucket_rows): device d's element i is element i of
// rows[row_of(d, step, rows.size())]. rows must outlive the result.
StoredValue stored_rows(const std::vector<HostBuffer>& rows, int step);

// The loops' callbacks into run_experiment: tick() after every realize() (progress, and the stop check);
// last(true) just before the realizes of the last timed iteration of a count (sweeps) or of the last step
// (buckets, FSDP), last(false) right after them (ExperimentObserver::last_iteration).
struct Tick {
  std::function<void()> after_realize;
  std::function<void(bool)> last_iteration;  // may be empty
  std::function<void()> stop_point;          // may be empty: ends the run if a stop was asked for
  void operator()() const { after_realize(); }
  // Between the steps of a long set-up or check (a bucket's host rows, its reference): a stop request
  // ends the run there, not after the whole set-up (the GPT-2 buckets' rows take seconds and GBs).
  void poll() const {
    if (stop_point) stop_point();
  }
  void last(bool begins) const {
    if (last_iteration) last_iteration(begins);
  }
};
using FinishRow = std::function<void(ResultRow)>;  // a row is done: shown and kept

// The timing modes of cfg (experiment.timing): latency (latency or both), pipelined (pipelined or both).
bool times_latency(const ExperimentConfig& cfg);
bool times_pipelined(const ExperimentConfig& cfg);
// The realizes of one row of a sweep (warmup, then iters per mode, pipelined's timed_blocks times) or of
// one collective of a bucket run (warmup + iters steps per mode): run_experiment's progress.
int64_t realizes_per_row(const ExperimentConfig& cfg);
// This process's devices of the run (under mpirun the other ranks' are not), for DeviceClock.
std::vector<std::string> clock_devices(const ExperimentConfig& cfg);

// The calls of one sweep row in cfg's timing modes (experiment.hpp, run_experiment): `warmup` untimed,
// waited for, then `iters` per mode, latency's first; pipelined: cfg.timed_blocks blocks, each its own
// DeviceClock, the median of their means. A call is make() (not timed) and realize(); y ends as the last
// call's result (the one checked). tick() after every realize, tick.last around the last call's.
RowTimes time_calls(const ExperimentConfig& cfg, const std::function<Tensor()>& make, Tensor& y, const Tick& tick);

// The steps of a bucket run (DDP's buckets, FSDP's units) in cfg's timing modes: `warmup` untimed steps,
// then `iters` timed steps per mode, latency's first. A latency step realizes each collective and waits
// for it (Tensor::synchronize), timed on the host; the step's time is the sum of its collectives'. A
// pipelined step first waits for everything before it (ringrt::synchronize: the host writes, the steps
// before), then realizes its collectives back to back, and one DeviceClock times the whole step: its
// collectives have no time of their own. The caller does the host writes of a step before begin().
class StepTimer {
 public:
  StepTimer(const ExperimentConfig& cfg, size_t collectives, const Tick& tick);
  int steps() const;                  // warmup + iters per mode
  bool timed(int step) const;         // past the warm-up
  bool pipelined(int step) const;     // a timed step of the pipelined mode
  void begin(int step);               // before the step's first collective
  void realize(size_t i, Tensor& y);  // collective i of the step: realized (latency: waited for, timed), tick()
  // The step's collectives, ys[i] collective i: a pipelined step realizes them together (one program: on
  // GPUs one graph launch for every bucket, DDP's step as one), otherwise realize(i, ys[i]) in turn.
  void realize_all(std::vector<Tensor>& ys);
  void end();                           // after the step's last collective: a pipelined step's clock stops (waits)
  RowTimes collective(size_t i) const;  // collective i's mean time per step (latency only)
  RowTimes step() const;                // the mean time of a step per mode

 private:
  const ExperimentConfig& cfg_;
  const Tick& tick_;
  std::vector<double> latency_us_;  // per collective: the sum over the latency steps
  double pipelined_us_ = 0;         // the pipelined steps' device time, summed
  int step_ = 0;
  std::optional<DeviceClock> clock_;  // while a pipelined step runs
};

// FSDP's sharded steps (experiment.sharding shard_grad_op or full_shard; experiment_fsdp.cpp): the
// collectives of one step, and the run.
size_t fsdp_collectives_per_step(const ExperimentConfig& cfg);
void run_fsdp_steps(const ExperimentConfig& cfg, const Tick& tick, const FinishRow& finish_row,
                    ExperimentResult& result);

}  // namespace ringrt
