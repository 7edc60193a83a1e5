// Experiment configuration: the YAML file of `ringrt run`, validated into an ExperimentConfig.
// Reference: README.md "YAML reference"; the tunables are the ones declared in
// core/params_internal.hpp (tunables(), set_param()), never repeated here.
//
// Keys (every other key is an error):
//   backend: auto | cpu | hip
//   devices.count: N, or a list of device names ([CPU:0, CPU:1] / [HIP:0, ...])
//   devices.groups: [g0, g1, ...]            one group id per device (hierarchical allreduce)
//   allreduce.*, debug and runtime.*         see tunables(); runtime.cxx and runtime.cache_dir come from
//                                            the environment or --set only, never from a file
//   experiment.collective: allreduce | reduce_scatter | allgather | broadcast | reduce | alltoall
//   experiment.root: I                       broadcast and reduce: the root's index in devices (default 0)
//   experiment.op: sum | max | min | prod
//   experiment.dtype: float32 | float16 | bfloat16 | float64 | int32 | int64 | int16 | int8 | uint32 | uint8
//   experiment.sizes: {min, max, factor}     bytes per device: 4096, 512B, 1KiB, 64MiB, 1GiB (as rccl-tests:
//                                            the buffer of each device, the gathered one for allgather, the
//                                            one before the scatter for reduce_scatter; rounded down to a
//                                            multiple of the device count for those and alltoall)
//   experiment.counts: [N, ...]              elements per device (instead of sizes), as sizes
//   experiment.buckets: [N, ...]             elements of each gradient bucket; one step allreduces
//                                            every bucket once (instead of sizes/counts; allreduce
//                                            only), or with experiment.sharding the FSDP units
//   experiment.warmup, experiment.iters      untimed and timed iterations (steps with buckets)
//   experiment.check: true | false           compare every result with a host reference
//   experiment.timing: latency | pipelined | both
//                                            how the timed iterations are timed (experiment.hpp): each
//                                            call waited for and timed on the host (latency, the
//                                            default), or enqueued back to back with one wait at the
//                                            end and timed on the devices' clocks (pipelined, as
//                                            nccl-tests), or both, side by side in one row
//   experiment.in_place: true | false        with buckets: persistent buckets written from the host
//                                            and allreduced in place each step (default), or the
//                                            out-of-place reduce of fixed inputs (false)
//   experiment.sharding: no_shard | shard_grad_op | full_shard
//                                            with buckets, PyTorch FSDP's ShardingStrategy: no_shard is
//                                            DDP (one allreduce per gradient bucket, the default); the
//                                            other two make the buckets FSDP units (flat parameters, in
//                                            backward order, the last the root) whose parameters stay
//                                            sharded: each step allgathers them before use and
//                                            reduce-scatters the gradients (experiment_fsdp.cpp); here
//                                            experiment.collective (reduce_scatter | allgather) only names
//                                            the one `ringrt schedule` plans
//   regress.busbw_tolerance: T               `ringrt regress` only (runtime/cli/regress.hpp): a row's busbw may
//                                            fall to (1 - T) of its baseline's, 0 <= T < 1; unset: the
//                                            baseline's tolerance, else 0.5
//
// Precedence: --set > environment (the tunables' variables) > YAML > default. The ringrt program
// installs `runtime` for the process (set_runtime_params) before it runs anything; parsing itself
// installs runtime.hip_logical_devices when the config, the environment or --set gives it, since
// resolving the devices enumerates the HIP devices, which fixes their names for the process. Only this header's
// users see ExperimentConfig; yaml-cpp stays inside config.cpp (and core/yaml_document.hpp, the loader it shares
// with the tuning file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/algorithm.hpp"
#include "core/dtype.hpp"
#include "core/reduce_op.hpp"
#include "core/settings.hpp"

namespace ringrt {

// How the element counts of a run are given.
enum class SweepForm { sizes, counts, buckets };

struct ExperimentConfig {
  std::string file;                  // the YAML file it came from ("" for text)
  std::string backend = "cpu";       // resolved: "cpu" or "hip" ("auto" picks hip when a GPU is present)
  std::vector<std::string> devices;  // resolved device names, in ring order
  std::vector<int> groups;           // group id per device; empty: no groups
  AllreduceSettings settings;        // the allreduce tunables, with settings.groups filled from `groups`
  RuntimeParams runtime;             // the process-wide tunables (runtime.*)
  Collective collective =
      Collective::allreduce;    // allreduce | reduce_scatter | allgather | broadcast | reduce | alltoall
  int root = 0;                 // broadcast and reduce: index into devices
  std::string op_name = "sum";  // sum | max | min | prod
  ReduceOp op = ReduceOp::sum;  // sum | max | min | prod
  DType dtype = DType::float32;
  SweepForm form = SweepForm::sizes;
  int64_t size_min = 1024, size_max = int64_t{64} << 20, size_factor = 4;  // bytes per device
  std::vector<int64_t> counts;  // SweepForm::counts or ::buckets: elements per device
  int warmup = 2, iters = 10;   // with buckets: steps
  bool check = true;
  std::string timing = "latency";  // latency | pipelined | both (experiment.timing)
  // Not a YAML key (`ringrt tune` on GPUs sets it): a pipelined sweep row times this many blocks of
  // `iters` calls, each block its own device clock, and its pipelined time is the median of the
  // blocks' means. Bucket steps ignore it.
  int timed_blocks = 1;
  bool in_place = true;  // SweepForm::buckets: write_shards + allreduce_in_place per bucket and step
  // SweepForm::buckets: no_shard (DDP: allreduce per bucket) | shard_grad_op | full_shard (FSDP units)
  std::string sharding = "no_shard";
  // regress.busbw_tolerance, in [0, 1); nullopt when not set (`ringrt regress` then takes the baseline's, else 0.5)
  std::optional<double> busbw_tolerance;
  // Where each key that was set got its value: "FILE:LINE:COL", "environment variable RING" or
  // "--set k=v". Keys left at their default are absent (dumps print "default").
  std::map<std::string, std::string> origins;

  // The element counts to run, in order: min, min*factor, ... <= max (bytes / itemsize) for sizes;
  // the list itself for counts and buckets.
  std::vector<int64_t> sweep_counts() const;
};

// Loads and validates a YAML experiment file, then applies the environment and the overrides
// ("key=value", value in YAML syntax: `allreduce.ring=2`, `experiment.counts=[64,256]`).
// Throws ConfigError "FILE:LINE:COL: key 'a.b': expected ..., got ..." (1-based line and column) for
// a missing file, a YAML syntax error, an unknown or duplicate key, a wrong type or a value out of
// range, groups of the wrong length, a reduce leader that is not a device, runtime.cxx or
// runtime.cache_dir in a file; "environment variable X: ..." for a bad environment value; "--set k=v: ..." for a bad
// override. A device that does not exist on the backend (cpu: CPU:i with i < the number of devices; hip: HIP:i with i <
// the GPUs present) is a ConfigError at the key that names it.
// The file is read only if it is a regular file of at most kMaxConfigBytes (a FIFO, a device, a
// folder or a longer file is a ConfigError naming it), so a config never blocks or exhausts memory.
inline constexpr size_t kMaxConfigBytes = size_t{1} << 20;
// experiment.counts and experiment.buckets hold at most kMaxElements (2^48) elements each, a tensor's most.
// Lists are bounded too (a ConfigError naming the file, line, column and key beyond): devices.count and
// devices.groups at most kMaxDevices entries (the most devices a run has), experiment.counts and
// experiment.buckets at most kMaxListEntries (a sweep of 4096 counts already takes hours; DDP's GPT-2
// small has 13 buckets). YAML nested deeper than yaml-cpp's limit is a ConfigError saying so.
inline constexpr size_t kMaxDevices = 1024;
inline constexpr size_t kMaxListEntries = 4096;
ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// The same from YAML text; `name` stands for the file name in messages.
ExperimentConfig parse_config(std::string_view yaml, const std::string& name,
                              const std::vector<std::string>& overrides = {});

// "1 KiB", "64 MiB", "512 B": bytes in the largest binary unit that divides them.
std::string format_bytes(int64_t bytes);

}  // namespace ringrt
