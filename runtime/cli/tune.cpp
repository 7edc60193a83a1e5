#include "runtime/cli/tune.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <set>
#include <tuple>

#include "codegen/compile_cache.hpp"
#include "core/algorithm.hpp"
#include "core/errors.hpp"
#include "core/files.hpp"
#include "rewrite/ops.hpp"
#include "rewrite/rules/multi.hpp"
#include "rewrite/tuning.hpp"
#include "runtime/api/devices.hpp"
#include "runtime/cli/experiment.hpp"

namespace ringrt {
namespace {

// The algorithms a collective can be forced to under settings s, and the settings that force each: a form that
// runs as another under s (rewrite/rules/multi.hpp form_under_settings) is left out: timing one program twice
// would let noise choose a name that never runs.
// Across ranks (size: the point's devices spanning several): naive, ring and all2all, no fused form (one process's),
// and mpi where MPI's collective serves the point (rewrite/rules/multi.hpp mpi_serves).
std::vector<Algorithm> algorithms_of(Collective collective, const AllreduceSettings& s, const CollectiveSize& size,
                                     ReduceOp op) {
  std::vector<Algorithm> out;
  if (collective != Collective::allreduce)
    out.assign(kRingOrDirect.begin(), kRingOrDirect.end());  // ring or the direct form (naive is the direct form there)
  else
    for (Algorithm a : kAllreduceAlgorithms)
      if (form_under_settings(a, collective, s) == a && (size.ranks <= 1 || !is_fused(a))) out.push_back(a);
  if (size.ranks > 1 && mpi_serves(size, ir_op(op)) &&
      form_under_settings(Algorithm::mpi, collective, s) == Algorithm::mpi)
    out.push_back(Algorithm::mpi);
  return out;
}
AllreduceSettings forced(AllreduceSettings s, Algorithm algorithm) {
  s.ring = algorithm == Algorithm::ring ? 2 : 0;
  s.all2all = algorithm == Algorithm::all2all ? 2 : 0;
  // the fused forms (rewrite/collective.hpp) and MPI's own through allreduce.algorithm
  s.algorithm = is_fused(algorithm) || algorithm == Algorithm::mpi ? std::string(algorithm_name(algorithm)) : "auto";
  s.groups.clear();  // flat collectives: the tuned choice is the flat one's
  return s;
}

// The device counts measured for a config of n devices: 2..n, above 8 the powers of two and n.
std::vector<int64_t> device_counts(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t k = 2; k <= n; ++k)
    if (k <= 8 || (k & (k - 1)) == 0 || k == n) out.push_back(k);
  return out;
}

// A round after the first runs an algorithm at least this long (kBlockUs, microseconds): the mean of the
// config's few iterations of a collective of a few hundred microseconds was one interruption away from
// choosing the wrong algorithm (N = 2, 4 MiB: ring measured 329 us in the tune, 196 us beside it).
constexpr double kBlockUs = 20000;
int block_iters(int iters, double mean_us) {
  if (!(mean_us > 0)) return iters;
  // never fewer than the config's iterations (up to 1,000,000), at most 10,000 added by the block
  return std::max(iters, static_cast<int>(std::min(std::ceil(kBlockUs / mean_us), 10000.0)));
}

// One point: collective on the first k devices at count elements; every algorithm in kRounds rounds.
struct Point {
  const ExperimentConfig& cfg;
  const TuneOptions& options;
  int64_t& done;
  int64_t total;

  // The mean time of one run of algorithm (the config's warmup and iterations), its result checked.
  double run_once(ExperimentConfig point, Algorithm algorithm) {
    point.settings = forced(point.settings, algorithm);
    ExperimentObserver watch;
    watch.stop = options.stop;
    ExperimentResult r = run_experiment(point, watch);
    if (r.stopped || r.rows.empty()) throw Interrupted("ringrt tune: stopped");
    const ResultRow& row = r.rows.front();
    if (row.wrong != 0)
      throw InternalError(fmt::format("ringrt tune: {} {} on {} devices at {} elements gave {} wrong elements",
                                      algorithm_name(algorithm), collective_name(point.collective),
                                      point.devices.size(), row.count, row.wrong));
    if (options.progress) options.progress(++done, total);
    // across ranks the slowest rank's: every rank then runs as many iterations and chooses alike
    return rank_info().ranks > 1 ? max_over_ranks(row.time_us) : row.time_us;
  }

  TunedChoice measure(Collective collective, int64_t k, int64_t count) {
    ExperimentConfig point = cfg;
    point.collective = collective;
    point.devices.resize(static_cast<size_t>(k));
    point.groups.clear();
    point.form = SweepForm::counts;
    point.counts = {count};
    point.check = true;
    TuneTiming timing = tune_timing(cfg);
    point.timing = timing.timing;
    point.timed_blocks = timing.blocks;
    // measured under the run's wire and deterministic settings, which its forms depend on (rewrite/tuning.hpp)
    TunedChoice c{collective,
                  "",
                  k,
                  cfg.dtype,
                  count * itemsize(cfg.dtype),
                  0,
                  0,
                  Algorithm::naive,
                  {},
                  parse_wire_format(cfg.settings.wire),
                  cfg.settings.deterministic};
    CollectiveSize size = CollectiveSize::of(collective, point.devices, count, cfg.dtype);
    c.kind = size.kind;
    c.ranks = size.ranks > 1 ? size.ranks : 0;
    std::map<Algorithm, int> iters;                   // per algorithm: after its first round, enough to fill kBlockUs
    std::map<Algorithm, std::vector<double>> rounds;  // per algorithm: each round's time
    for (int round = 0; round < options.rounds; ++round)
      for (Algorithm algo : algorithms_of(collective, cfg.settings, size, cfg.op)) {
        ExperimentConfig run = point;
        if (auto it = iters.find(algo); it != iters.end()) run.iters = it->second;
        double mean = run_once(run, algo);
        if (round == 0) iters[algo] = block_iters(cfg.iters, mean);
        rounds[algo].push_back(mean);
      }
    // at the 0.1 us the file writes: the choice is the fastest of the times the file shows (ties: the
    // first algorithm by name), so a reader of the file can check it
    for (const auto& [algo, times] : rounds) c.us[algo] = std::round(tune_time(times, timing) * 10) / 10;
    c.algorithm = std::min_element(c.us.begin(), c.us.end(), [](const auto& a, const auto& b) {
                    return a.second < b.second;
                  })->first;
    return c;
  }
};

}  // namespace

TuneTiming tune_timing(const ExperimentConfig& cfg) {
  bool gpu =
      std::any_of(cfg.devices.begin(), cfg.devices.end(), [](const std::string& d) { return d.starts_with("HIP:"); });
  return gpu ? TuneTiming{"pipelined", kGpuBlocks, true} : TuneTiming{};
}

double tune_time(const std::vector<double>& rounds_us, const TuneTiming& timing) {
  if (rounds_us.empty()) return 0.0;
  return timing.median ? median_of(rounds_us) : *std::min_element(rounds_us.begin(), rounds_us.end());
}

std::string tune_timing_text(const TuneTiming& timing) {
  if (timing.timing == "latency" && timing.blocks == 1 && !timing.median) return "";
  return fmt::format(
      "; timed {} on the devices' clocks: a run the median of {} block{}, an algorithm the {} of its rounds",
      timing.timing, timing.blocks, timing.blocks == 1 ? "" : "s", timing.median ? "median" : "best");
}

const std::vector<std::string>& tunable_collectives() {
  static const std::vector<std::string> kAll = [] {
    std::vector<std::string> out;
    for (Collective c : kTunedCollectives) out.emplace_back(collective_name(c));
    return out;
  }();
  return kAll;
}

std::string tune_table_header() {
  return fmt::format("# {:>14} {:>7} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>15} {:>10} {:>10} {:>8}",
                     "collective", "devices", "bytes", "naive(us)", "ring(us)", "all2all(us)", "oneshot(us)",
                     "twoshot(us)", "ring_fused(us)", "mpi(us)", "choice", "rule");
}

std::string tune_table_line(const TunedChoice& c, Algorithm rule) {
  auto us = [&](Algorithm algo) {
    auto it = c.us.find(algo);
    return it == c.us.end() ? std::string("-") : fmt::format("{:.1f}", it->second);
  };
  // the other collectives' rule is ring or their direct form, all2all
  Algorithm shown = c.collective == Collective::allreduce || rule == Algorithm::ring ? rule : Algorithm::all2all;
  return fmt::format("  {:>14} {:>7} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>15} {:>10} {:>10} {:>8}",
                     collective_name(c.collective), c.devices, c.bytes, us(Algorithm::naive), us(Algorithm::ring),
                     us(Algorithm::all2all), us(Algorithm::oneshot), us(Algorithm::twoshot), us(Algorithm::ring_fused),
                     us(Algorithm::mpi), algorithm_name(c.algorithm), algorithm_name(shown));
}

std::vector<TunePoint> tune_points(const ExperimentConfig& cfg, const TuneOptions& options) {
  std::vector<Collective> collectives;
  for (const std::string& c : options.collectives) {
    std::optional<Collective> parsed = parse_collective(c);
    if (!parsed || std::find(kTunedCollectives.begin(), kTunedCollectives.end(), *parsed) == kTunedCollectives.end())
      throw ConfigError(fmt::format("ringrt tune: collective '{}' has no choice to tune (expected {})", c,
                                    fmt::join(tunable_collectives(), ", ")));
    collectives.push_back(*parsed);
  }
  if (cfg.devices.size() < 2)
    throw ConfigError(
        fmt::format("ringrt tune: {} device(s) in {}; a choice needs at least 2", cfg.devices.size(), cfg.file));
  if (options.rounds < 1) throw ConfigError("ringrt tune: at least one round");
  std::vector<TunePoint> out;
  std::set<std::tuple<Collective, int64_t, int64_t>> seen;  // a size given twice is measured once
  // across ranks the whole job's devices (a prefix would leave ranks out of the collective)
  std::vector<int64_t> counts = rank_info().ranks > 1 ? std::vector<int64_t>{static_cast<int64_t>(cfg.devices.size())}
                                                      : device_counts(static_cast<int64_t>(cfg.devices.size()));
  for (Collective collective : collectives)
    for (int64_t k : counts)
      for (int64_t count : cfg.sweep_counts()) {
        // a chunk per device
        bool chunked = collective == Collective::reduce_scatter || collective == Collective::allgather;
        int64_t n = chunked ? count / k * k : count;
        if ((chunked && n < k) || !seen.insert({collective, k, n}).second) continue;
        out.push_back({collective, k, n});
      }
  if (out.empty())
    throw ConfigError(
        fmt::format("ringrt tune: {} gives no point to measure (no size of at least one element per "
                    "device)",
                    cfg.file));
  return out;
}

TuningTable tune(const ExperimentConfig& cfg, const TuneOptions& options) {
  std::vector<TunePoint> points = tune_points(cfg, options);
  int64_t runs = 0, done = 0;
  for (const TunePoint& p : points) {
    std::vector<std::string> devs(cfg.devices.begin(), cfg.devices.begin() + p.devices);
    CollectiveSize size = CollectiveSize::of(p.collective, devs, p.count, cfg.dtype);
    runs += static_cast<int64_t>(algorithms_of(p.collective, cfg.settings, size, cfg.op).size()) * options.rounds;
  }
  Point point{cfg, options, done, runs};
  TuningTable table{ringrt_version(), machine_identity(), utc_now(), {}};
  for (const TunePoint& p : points) {
    TunedChoice c = point.measure(p.collective, p.devices, p.count);
    if (options.point) options.point(c, collective_algorithm(p.devices, p.count, cfg.settings));
    table.choices.push_back(std::move(c));
  }
  set_bands(table.choices);
  return table;
}

void keep_other_settings(TuningTable& table, const std::string& path) {
  std::error_code ec;  // the path itself, a link included (a loop or a dangling link is read below, and refused)
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return;
  // the cache folder's file is ringrt's own and is read as a run reads it (no link followed, a private folder);
  // a path the user named is read as named
  std::string named = path == tuning_path("auto") ? "auto" : path;
  std::shared_ptr<const TuningTable> old = tuning_for(named).table;  // null when it is ignored (warned)
  if (!old || old->version != table.version || old->machine != table.machine) return;
  auto setting = [](const TunedChoice& c) { return std::tuple(c.wire, c.deterministic, c.ranks); };
  std::set<std::tuple<WireFormat, bool, int64_t>> measured;
  for (const TunedChoice& c : table.choices) measured.insert(setting(c));
  for (const TunedChoice& c : old->choices)
    if (!measured.contains(setting(c))) table.choices.push_back(c);
  set_bands(table.choices);
}

std::string tune_output(const ExperimentConfig& cfg, const std::string& out) {
  if (!out.empty()) return out;
  std::string path = tuning_path(cfg.settings.tuning);
  if (path.empty())
    throw ConfigError(fmt::format("ringrt tune: nowhere to write: allreduce.tuning is {} and no --out was given",
                                  cfg.settings.tuning == "off" ? "off" : "auto without a cache folder"));
  if (cfg.settings.tuning != "auto") {  // a path a config file names is read, never written, without --out
    auto origin = cfg.origins.find("allreduce.tuning");
    std::string from = origin == cfg.origins.end() ? "" : origin->second;
    if (!from.starts_with("environment variable") && !from.starts_with("--set"))
      throw ConfigError(
          fmt::format("ringrt tune: {} names the tuning file {}; a file a config names is written "
                      "only with --out {}",
                      from, path, path));
    return path;
  }
  std::filesystem::path dir = user_cache_dir();
  if (codegen::trusted_cache_dir() != dir)  // made private (0700) when absent; refused when another's
    throw IOError(
        fmt::format("ringrt tune: the cache folder {} is refused (see the warning); give --out FILE", dir.string()));
  return path;
}

TuningWriter::TuningWriter(std::string path) : path_(std::move(path)) {
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
    throw IOError(
        fmt::format("{}: not a regular file (a folder, a FIFO or a device); the tuning file is not "
                    "written there",
                    path_));
  // the temporary file now, beside the target (an unpredictable name, O_EXCL): a folder that cannot be
  // written fails before minutes of measuring, not after
  std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  tmp_ = ((dir.empty() ? std::filesystem::path(".") : dir) / ".ringrt-tuning-XXXXXX").string();
  fd_ = ::mkstemp(tmp_.data());
  if (fd_ < 0) throw IOError(fmt::format("{}: cannot write the tuning file: {}", path_, std::strerror(errno)));
}

TuningWriter::~TuningWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

std::unique_ptr<TuningWriter> tune_writer(const std::string& path) {
  const RankInfo& me = rank_info();
  auto first_of_host = std::find(me.host_of_rank.begin(), me.host_of_rank.end(), me.host) - me.host_of_rank.begin();
  return me.ranks <= 1 || first_of_host == me.rank ? std::make_unique<TuningWriter>(path) : nullptr;
}

void TuningWriter::commit(TuningTable table) {
  keep_other_settings(table, path_);
  int err = write_bytes(fd_, tuning_yaml(table));
  if (err == 0 && ::fchmod(fd_, 0644) != 0) err = errno;  // mkstemp makes it 0600; others may read a tuning
  if (err == 0 && ::fsync(fd_) != 0) err = errno;
  if (::close(fd_) != 0 && err == 0) err = errno;
  fd_ = -1;
  if (err == 0 && std::rename(tmp_.c_str(), path_.c_str()) != 0) err = errno;  // a link at path_ is replaced
  if (err != 0) throw IOError(fmt::format("{}: cannot write the tuning file: {}", path_, std::strerror(err)));
  tmp_.clear();
}

}  // namespace ringrt
