// The experiment runner of `ringrt run`: sweeps of one collective (experiment.collective; gradient-bucket
// steps: allreduce, or FSDP's allgathers and reduce-scatters with experiment.sharding) over the devices
// of an ExperimentConfig, timed and checked, built on the public Tensor API only.
// Reference: README.md "The main job"; the table follows rccl-tests
// (nccl-tests doc/PERFORMANCE.md: algbw = bytes / time, busbw = algbw * 2(n-1)/n for allreduce).
//
// One allreduce of count N: a (ndev, N) tensor sharded on axis 0 (one row per device, realized
// before timing), reduced over axis 0 with the op, the (N) result on every device. Input data is
// deterministic and differs per device: small integers for integer and 16-bit float types (so that
// sums are exact), fractions for float32/float64.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/api/tensor.hpp"
#include "runtime/cli/config.hpp"

namespace ringrt {

// One timing of a row or a step: the mean time of one call (one step) and the bandwidths it gives.
struct Timed {
  double time_us = 0;  // microseconds
  double algbw = 0;    // GB/s (1e9 bytes): bytes / time
  double busbw = 0;    // GB/s: algbw * the collective's factor (a step: each row's)
};

// One line of the table: one count (or one gradient bucket, or one collective of an FSDP step).
struct ResultRow {
  Collective collective = Collective::allreduce;
  std::string phase;    // FSDP steps (experiment.sharding): fwd | bwd; "" otherwise
  int64_t bucket = -1;  // steps: the bucket's (FSDP unit's) index in experiment.buckets; -1 in sweeps
  int64_t bytes = 0;    // per device: count * itemsize
  int64_t count = 0;    // elements per device
  std::string type;     // dtype name
  std::string redop;    // sum | max | min | prod; none for allgather, alltoall, broadcast
  std::string algo;     // Schedule::algorithms joined with '+': naive | ring | all2all | hierarchical | hierarchical_rs
  // The mean time of one call over the timed iterations: its latency (timing latency or both: each call
  // waited for, on the host's clock), else its pipelined time (timing pipelined); 0 when !timed.
  double time_us = 0;
  double algbw = 0;    // GB/s (1e9 bytes): bytes / time
  double busbw = 0;    // GB/s: algbw * the collective's factor (allreduce 2(n-1)/n, see run_experiment)
  int64_t wrong = -1;  // elements differing from the host reference over all devices; -1: not checked
  // With allreduce.wire other than native and check on: the largest |got - exact| and |got - exact| / |exact|
  // over the finite elements of this process's devices (docs/compressed-wire.md); NaN where the wire does not
  // apply to the row's collective or it was not measured (FSDP steps); nullopt without a wire or check.
  std::optional<double> max_abs_err, max_rel_err;
  std::string timing = "latency";  // experiment.timing: latency | pipelined | both
  // false: a collective of pipelined bucket steps (timing pipelined), which has no time of its own (one
  // device clock times the whole step: StepSummary); time_us, algbw and busbw are then 0.
  bool timed = true;
  // timing pipelined or both: the calls enqueued back to back, one wait at the end, the devices' time
  // over the iterations (DeviceClock) / iterations; nullopt otherwise and for a bucket step's collective.
  std::optional<Timed> pipelined;
};

// With experiment.buckets: one step allreduces every bucket once (sharded: gathers and reduce-scatters).
struct StepSummary {
  int64_t buckets = 0, bytes = 0;  // bytes: all rows (collectives) of a step, per device
  int64_t collectives = 0;         // the collectives of one step (the rows)
  // Mean time of one step's collectives: latency steps' (each collective waited for, host clock), else
  // (timing pipelined) pipelined steps' (the step's collectives enqueued back to back, device clock).
  double time_us = 0;
  double algbw = 0;  // GB/s over the whole step: bytes / time
  double busbw = 0;  // GB/s: every row's bytes times its collective's busbw factor, / time
  // In-place buckets (experiment.in_place): mean wall time per step of the host writes
  // (Tensor::write_shards of every bucket, waited for), timed apart from time_us; nullopt out of place.
  std::optional<double> write_us;
  std::string timing = "latency";  // experiment.timing
  std::optional<Timed> pipelined;  // timing pipelined or both: the pipelined steps' time
};

struct ExperimentResult {
  std::vector<ResultRow> rows;  // the rows finished, in order (all of them unless stopped)
  std::optional<StepSummary> step;
  bool stopped = false;   // ended early: observer.stop said so, or a compile was Interrupted
  size_t planned = 0;     // the rows the sweep asked for (cfg.sweep_counts().size())
  int64_t wrong() const;  // sum of the checked rows' #wrong
};

// Callbacks for the caller's display; both optional.
struct ExperimentObserver {
  std::function<void(int64_t done, int64_t total)> progress;  // after every realize()
  std::function<void(const ResultRow&)> row;                  // after each row is finished
  // Polled before each count and after every realize(): true ends the run there, with the rows
  // finished so far and ExperimentResult::stopped set (the `ringrt` program: a SIGINT or SIGTERM).
  std::function<bool()> stop;
  // true just before the realizes of the last timed iteration of each count (sweeps) or of the last
  // step (buckets, FSDP: only the collectives, not the host writes), false right after them (the
  // `ringrt` program records them with --trace).
  std::function<void(bool begins)> last_iteration;
};

// Runs the experiment: for each count (or bucket) realize the input, run `warmup` untimed and `iters`
// timed allreduces (with buckets: steps of every bucket; sharded: FSDP's steps, experiment_fsdp.cpp) per
// timing mode (experiment.timing; both: latency's first), and with cfg.check compare every device's
// result of the last iteration (Tensor::shards()) with the host reference: exact for integers, 16-bit
// floats (small integer data) and max/min; for float32/float64 sum within n * epsilon * sum|x_i| (prod:
// n * epsilon * |prod x_i|). The timing modes, as nccl-tests times (realize() returns once the work is
// enqueued on GPUs; the warm-up is waited for before anything is timed):
//   latency    each call is realize() + Tensor::synchronize(), timed with steady_clock on the host;
//   pipelined  the calls are realized back to back without waiting, and a DeviceClock over this
//              process's devices of the run times them on the devices, from before the first to after
//              the last (one wait), divided by iters. Bucket steps: each step's collectives enqueued
//              back to back, one clock per step (the host writes between steps are waited for).
// Under mpirun each rank times its own devices; rank 0's times are printed.
// The settings are installed with ScopedSettings for the whole run. A stop (observer.stop, or an
// Interrupted error from a compile) ends it early with the rows finished so far; with buckets, whose
// rows are made after the last step, that is none.
// Test-only: with the environment variable RINGRT_TEST_CORRUPT=1 one element of the last device's
// result is changed before the check, so that the exit status for wrong results can be tested.
// Throws ShapeError/DeviceError/ConfigError from the Tensor API.
ExperimentResult run_experiment(const ExperimentConfig& cfg, const ExperimentObserver& observer = {});

// The (ndev, count) input of one allreduce, sharded on axis 0 over cfg.devices and realized; row d
// is device d's data (see the header comment).
Tensor make_allreduce_input(const ExperimentConfig& cfg, int64_t count);

// The same layout for planning only (Tensor::placeholder): no memory, no data, nothing compiled; its
// schedule is the one make_allreduce_input's would give. Throws ShapeError for a count too large.
Tensor allreduce_input_placeholder(const ExperimentConfig& cfg, int64_t count);

// The allreduce of `input` over axis 0 with cfg.op, unrealized: a (count) tensor on every device.
Tensor allreduce_of(const ExperimentConfig& cfg, const Tensor& input);

// The median of values (the mean of the middle two for an even count); 0 for none. Robust: a minority
// of outliers on either side (a slow block interrupted, a fast one) does not move it.
double median_of(std::vector<double> values);

// Whether a collective reduces with experiment.op (allreduce, reduce_scatter, reduce); the others move
// data only (the table's redop "none", as rccl-tests prints it).
bool collective_reduces(Collective collective);

// cfg.collective (experiment.collective) on count elements per device, with count as rccl-tests means it:
// the buffer on each device (allreduce, broadcast, reduce; alltoall: n slots of count/n), the buffer
// before the scatter (reduce_scatter: each device gets count/n), the gathered buffer (allgather: each
// device gives count/n). collective_count rounds count down to a multiple of the n devices for
// reduce_scatter, allgather and alltoall (as rccl-tests does), at least n; other collectives keep it.
// With experiment.sharding (FSDP units) it rounds up instead, as FSDP pads its flat parameters: what a
// run of that unit moves (the config caps counts at kMaxElements, so this never overflows).
int64_t collective_count(const ExperimentConfig& cfg, int64_t count);
// The realized input of one collective of collective_count(cfg, count) == count elements, sharded on
// axis 0, device d's data input_value(d, i): (n, count) for allreduce, broadcast and reduce, (n*count)
// for reduce_scatter and alltoall, (count) for allgather.
Tensor make_collective_input(const ExperimentConfig& cfg, int64_t count);
// Its layout for planning only (Tensor::placeholder), as allreduce_input_placeholder.
Tensor collective_input_placeholder(const ExperimentConfig& cfg, int64_t count);
// cfg.collective of input, unrealized: allreduce_of, Tensor::reduce_scatter(cfg.op, 0), allgather(),
// alltoall(), broadcast(cfg.root, cfg.devices) or reduce_to(cfg.root, cfg.op).
Tensor run_collective(const ExperimentConfig& cfg, const Tensor& input);

}  // namespace ringrt
