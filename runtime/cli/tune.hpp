// `ringrt tune`: measures every algorithm of each collective on this machine and writes the tuning file
// (rewrite/tuning.hpp) that the automatic choice then follows, in `ringrt run` and in the C++ API.
// Reference: NCCL's tuner plugins (a table of measured choices per collective, size and rank count),
// OSU/nccl-tests' methodology for the timings.
//
// The measured points: each collective of TuneOptions::collectives (allreduce: naive, ring, all2all;
// reduce_scatter, allgather, broadcast: ring and the direct all2all form; alltoall and reduce have no
// choice of their own: alltoall is direct always, reduce follows allreduce) on the first k devices of
// the config for every k from 2 to its device count (above 8: the powers of two and the count), in the
// config's dtype, at each size of its sweep (experiment.sizes or experiment.counts). Each point runs
// every algorithm forced (allreduce.ring/all2all at 2, or both 0 for naive) through run_experiment with
// the config's warmup and iterations, in kRounds rounds that take the algorithms in turn (so a drift of
// the machine's speed falls on all of them); after its first round an algorithm runs as many iterations
// as fill 20 ms (at least the config's), so a fast point's mean is not a handful of runs. How a run is
// timed and what an algorithm's time is depend on the devices (tune_timing; experiment.timing is not
// read): on the cpu backend latency, the best round's mean; on GPUs pipelined, the median of blocks and
// of rounds. The fastest algorithm is the choice. Every result is checked against the host reference: a wrong one
// fails the tune. The ring and all2all lowerings have no chunking or pipelining parameter of their own
// on one process (runtime.mpi_chunk_bytes applies only to GPU memory across ranks), so the algorithm
// is the whole choice.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rewrite/tuning.hpp"
#include "runtime/cli/config.hpp"

namespace ringrt {

// How a tune times each run of an algorithm, and what the algorithm's time at a point is.
//   cpu devices: latency (each call waited for, host clock), one block; the best (smallest) of the rounds'
//     means, as before pipelining existed: realize() runs the work before it returns there, so the
//     pipelined mode would time the same calls, and a shared machine's noise is one-sided (an
//     interruption only slows a round), which the best round leaves out.
//   GPUs (a device of the run named HIP:*): pipelined (the calls enqueued back to back, timed on the
//     devices' clocks, as nccl-tests), so the host's launch and scheduling noise stays out of the time;
//     each run's time is the median of kGpuBlocks blocks (each as many calls as fill 20 ms after the first
//     round, its own DeviceClock), and an algorithm's time the median of its rounds'. Robust: what is left
//     is noise of either sign on a block (a boost clock or power state changing, another process's
//     kernels, a cold cache after the other algorithms ran), and a median moves with none of a minority
//     of such blocks or rounds, where the mean shifts by each outlier's excess and the best picks the
//     single most extreme block, the one least likely to recur in the next tune: two tunes then differ
//     only where two algorithms are closer than the typical block's spread.
struct TuneTiming {
  std::string timing = "latency";  // experiment.timing of every run
  int blocks = 1;                  // ExperimentConfig::timed_blocks of every run
  bool median = false;             // an algorithm's time: the median of its rounds' times, else the best
};
inline constexpr int kGpuBlocks = 5;
TuneTiming tune_timing(const ExperimentConfig& cfg);
// An algorithm's time at a point from its rounds' times (microseconds), as `timing` says.
double tune_time(const std::vector<double>& rounds_us, const TuneTiming& timing);
// How the tune times, for its header: "" for the cpu backend's way (the header says it already), else
// "; timed pipelined on the devices' clocks: a run the median of 5 blocks, an algorithm the median of its
// rounds".
std::string tune_timing_text(const TuneTiming& timing);

// The table `ringrt tune` prints: its column header, and the line of a measured point whose rule (tinygrad's)
// chose `rule`: the microseconds of each algorithm ("-" where not measured), the choice and the rule.
std::string tune_table_header();
std::string tune_table_line(const TunedChoice& c, Algorithm rule);

// The names of the collectives tune can choose for: kTunedCollectives (core/algorithm.hpp).
const std::vector<std::string>& tunable_collectives();

struct TuneOptions {
  std::vector<std::string> collectives = tunable_collectives();  // names, as --collectives gives them
  int rounds = 3;
  std::function<void(const TunedChoice&, Algorithm rule)> point;  // after each point: its choice
  std::function<void(int64_t done, int64_t total)> progress;      // after each run of one algorithm
  std::function<bool()> stop;  // polled between runs: true ends the tune with Interrupted
};

// One point to measure: a collective on the first `devices` devices at `count` elements per device.
struct TunePoint {
  Collective collective = Collective::allreduce;
  int64_t devices = 0, count = 0;
};
// The points of a tune (file comment), each once. Throws ConfigError for a collective that cannot be
// tuned, fewer than two devices, a run across MPI ranks, rounds < 1, or no point at all.
std::vector<TunePoint> tune_points(const ExperimentConfig& cfg, const TuneOptions& options);

// Measures the points (file comment) and returns the table, bands set (set_bands), stamped with this
// build's version, this machine and the time. Throws ConfigError for a collective that cannot be tuned,
// a config with fewer than two devices or running across MPI ranks (the tune measures one process), or a
// sweep of no sizes; InternalError when a forced algorithm's result is wrong (a bug); Interrupted when
// options.stop asks; and what run_experiment throws.
TuningTable tune(const ExperimentConfig& cfg, const TuneOptions& options);

// The choices of the file at `path` (when it is readable and was made by this build on this machine)
// measured under other allreduce.wire / allreduce.deterministic settings than table's, added to table (bands
// set again): tuning one setting keeps the others'. A file that is absent or ignored adds nothing.
void keep_other_settings(TuningTable& table, const std::string& path);

// The file `ringrt tune` writes: `out` when given, else the file of cfg's allreduce.tuning (auto: the
// cache folder's tuning.yaml, that folder made private; a path only when the environment or --set gave
// it). Throws ConfigError when there is none (allreduce.tuning off and no --out) or the config file
// names the path (a config someone else wrote must not choose a file to overwrite), IOError when the
// cache folder is refused (not this user's own).
std::string tune_output(const ExperimentConfig& cfg, const std::string& out);

// The tuning file being written: opened before the measuring (a temporary file of an unpredictable name
// beside path, created exclusively), committed after (written, fsync'ed, renamed over path: a reader
// sees the old file or the new one, whole; a link at path is replaced, never followed). Destroyed
// without commit (a stop, an error), it removes the temporary file and leaves path as it was.
class TuningWriter;
// The writer of the tuning file at path on this rank: in one process, always; under mpirun (the choices across
// the job's ranks) on the first rank of each host, null on the others (every rank measured the same slowest-rank
// times, so every host's file is the same).
std::unique_ptr<TuningWriter> tune_writer(const std::string& path);
class TuningWriter {
 public:
  // Throws IOError naming path when it exists as anything but a regular file or a link (a folder, a
  // FIFO, a device), or its folder cannot be written.
  explicit TuningWriter(std::string path);
  ~TuningWriter();
  TuningWriter(const TuningWriter&) = delete;
  TuningWriter& operator=(const TuningWriter&) = delete;
  // Writes table with the file's choices for other settings kept (keep_other_settings). Throws IOError naming the
  // path and the system's reason.
  void commit(TuningTable table);
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
};

}  // namespace ringrt
