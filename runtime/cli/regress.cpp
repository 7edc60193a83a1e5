// `ringrt regress` (runtime/cli/regress.hpp): list and read every experiment and baseline, run each experiment,
// compare its rows with the baseline's or record them, then report (runtime/cli/regress_report.cpp).
#include "runtime/cli/regress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <span>
#include <system_error>

#include "rewrite/errors.hpp"
#include "rewrite/files.hpp"
#include "rewrite/interrupt.hpp"
#include "rewrite/params.hpp"
#include "rewrite/tuning.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/cli/experiment.hpp"
#include "runtime/cli/outputs.hpp"
#include "runtime/cli/regress_report.hpp"
#include "runtime/cli/report.hpp"

namespace ringrt {
namespace {

namespace fs = std::filesystem;

constexpr double kDefaultTolerance = 0.5;
constexpr size_t kMaxExperiments = 1000;

// DIR's experiments, DIR/*.yaml (regular files and links to them), in name order. Throws IOError for a folder
// that is not one or cannot be read, ConfigError for none or too many.
std::vector<std::string> experiment_files(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw IOError(fmt::format("{}: not a folder (of YAML experiments)", dir));
  std::vector<std::string> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".yaml") files.push_back(it->path().string());
  if (ec) throw IOError(fmt::format("{}: cannot list the folder: {}", dir, ec.message()));
  if (files.empty()) throw ConfigError(fmt::format("{}: no YAML experiments (*.yaml) in the folder", dir));
  if (files.size() > kMaxExperiments)
    throw ConfigError(fmt::format("{}: {} experiments, more than {}", dir, files.size(), kMaxExperiments));
  std::sort(files.begin(), files.end());
  return files;
}

// Every experiment, its config and (comparing) its baseline, read before anything runs.
std::vector<ExperimentVerdict> read_experiments(const RegressOptions& o, const std::string& baselines) {
  std::vector<ExperimentVerdict> out;
  for (const std::string& path : experiment_files(o.dir)) {
    ExperimentVerdict e;
    e.path = path;
    e.name = fs::path(path).filename().string();
    e.cfg = load_config(path, o.sets);  // ConfigError: FILE:LINE:COL: key ...
    e.baseline_path = (fs::path(baselines) / fs::path(path).stem()).string() + ".json";
    std::error_code ec;
    if (!o.record && fs::exists(fs::symlink_status(e.baseline_path, ec)))
      e.baseline = parse_baseline(read_file(e.baseline_path, kMaxBaselineBytes), e.baseline_path);
    out.push_back(std::move(e));
  }
  return out;
}

// The tolerance of busbw for e: the experiment's key, else its baseline's, else the default.
void set_tolerance(ExperimentVerdict& e) {
  if (e.cfg.busbw_tolerance) {
    e.tolerance = *e.cfg.busbw_tolerance, e.tolerance_from = "regress.busbw_tolerance";
  } else if (e.baseline && e.baseline->busbw_tolerance) {
    e.tolerance = *e.baseline->busbw_tolerance, e.tolerance_from = "the baseline's";
  } else {
    e.tolerance = kDefaultTolerance, e.tolerance_from = "the default";
  }
}

RowVerdict row_verdict(const ResultRow& r, double seconds) {
  RowVerdict v;
  v.row = row_name(r);
  v.algo = r.algo;
  v.wrong = r.wrong;
  if (r.timed) v.busbw = r.busbw;
  v.seconds = seconds;
  v.line = format_row(r);
  if (r.wrong > 0) v.failures.push_back(fmt::format("#wrong {} (must stay 0)", r.wrong));
  return v;
}

// Each row of the run against the baseline's row of its name (regress.hpp).
void compare_rows(ExperimentVerdict& e, const RegressContext& ctx) {
  std::string why = !e.baseline ? fmt::format("no baseline ({}): record one with --record", e.baseline_path)
                                : not_comparable(*e.baseline, ctx.host, ctx.machine, e.cfg.backend,
                                                 static_cast<int64_t>(e.cfg.devices.size()));
  std::map<std::string, const BaselineRow*> base;
  if (e.baseline)
    for (const BaselineRow& b : e.baseline->rows) base[b.row] = &b;
  for (RowVerdict& v : e.rows) {
    auto it = base.find(v.row);
    const BaselineRow* b = it == base.end() ? nullptr : it->second;
    if (b) base.erase(it);
    if (!why.empty()) {
      v.verdict = e.baseline ? Verdict::not_comparable : Verdict::no_baseline;
      v.note = why;
    } else if (!b) {
      v.verdict = Verdict::no_baseline;
      v.note = "a row the baseline does not have: record again with --record";
    } else {
      v.baseline_busbw = b->busbw;
      if (v.busbw && b->busbw) {
        v.limit = *b->busbw * (1 - e.tolerance);
        if (*v.busbw < *v.limit)
          v.failures.push_back(fmt::format(
              "busbw {:.3f} GB/s is below {:.3f} GB/s, the baseline's {:.3f} GB/s less the tolerance {} ({})", *v.busbw,
              *v.limit, *b->busbw, e.tolerance, e.tolerance_from));
      }
      if (!b->algo.empty() && b->algo != v.algo) v.note = fmt::format("algo {}, the baseline's {}", v.algo, b->algo);
    }
    if (!v.failures.empty()) v.verdict = Verdict::regression;
  }
  if (!why.empty() || e.stopped || !e.error.empty()) return;
  for (const BaselineRow& b : e.baseline->rows)  // in the baseline's order
    if (base.count(b.row)) {
      RowVerdict v;
      v.row = b.row;
      v.baseline_busbw = b.busbw;
      v.verdict = Verdict::regression;
      v.failures.push_back("missing from the run (the baseline has it): record again after changing the experiment");
      e.rows.push_back(std::move(v));
    }
}

// --record: the baseline of e's rows, written (by the writer: rank 0 under mpirun) unless a row is wrong (then those
// rows are regressions).
void record_rows(ExperimentVerdict& e, const RegressContext& ctx, bool writer) {
  bool wrong = std::any_of(e.rows.begin(), e.rows.end(), [](const RowVerdict& v) { return v.wrong > 0; });
  for (RowVerdict& v : e.rows) {
    v.verdict = v.wrong > 0 ? Verdict::regression : Verdict::recorded;
    if (wrong) v.note = "not recorded: the experiment has wrong results";
  }
  if (wrong || e.stopped || !e.error.empty()) return;
  Baseline b;
  b.experiment = e.name;
  b.ringrt = ctx.version;
  b.host = ctx.host;
  b.machine = ctx.machine;
  b.backend = e.cfg.backend;
  b.devices = static_cast<int64_t>(e.cfg.devices.size());
  b.made = utc_now();
  b.busbw_tolerance = e.tolerance;
  for (const RowVerdict& v : e.rows)
    b.rows.push_back({v.row, v.algo, v.busbw, v.wrong < 0 ? std::nullopt : std::optional(v.wrong)});
  if (writer) write_file(e.baseline_path, baseline_json(b));  // IOError: the experiment's error (exit 2)
  for (RowVerdict& v : e.rows) v.note = "recorded in " + e.baseline_path;
}

// Runs e's experiment, keeping each row with its time; an error is kept as the experiment's (with the status
// it gives), a stop request marks it stopped.
void run_one(ExperimentVerdict& e) {
  set_runtime_params(e.cfg.runtime);
  auto start = std::chrono::steady_clock::now(), last = start;
  ExperimentObserver observer;
  observer.stop = [] { return interrupt_signal() != 0; };
  observer.row = [&](const ResultRow& r) {
    auto now = std::chrono::steady_clock::now();
    e.rows.push_back(row_verdict(r, std::chrono::duration<double>(now - last).count()));
    last = now;
  };
  auto fail = [&](int status, const std::string& message) {
    e.error = message;
    e.error_status = status;
  };
  try {
    e.stopped = run_experiment(e.cfg, observer).stopped;
  } catch (const Interrupted&) {
    e.stopped = true;
  } catch (const UserError& ex) {  // a device error, memory too small: this experiment fails, the others run
    fail(2, ex.what());
  } catch (const std::exception& ex) {  // a compile or timeout error, a bug
    fail(3, ex.what());
  }
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void report_regressions(const ExperimentVerdict& e, bool writer) {
  if (!writer) return;
  std::string out;
  for (const RowVerdict& v : e.rows)
    for (const std::string& f : v.failures) out += fmt::format("ringrt: regression: {}: {}: {}\n", e.name, v.row, f);
  if (!e.error.empty()) out += fmt::format("ringrt: {}: the experiment failed: {}\n", e.name, e.error);
  std::fputs(out.c_str(), stderr);
}

}  // namespace

int regress_command(const RegressOptions& o) {
  std::string baselines = o.baselines.empty() ? (fs::path(o.dir) / "baselines").string() : o.baselines;
  RegressContext ctx{o.dir, baselines, host_name(), machine_identity(), ringrt_version(), o.record};
  std::vector<ExperimentVerdict> experiments = read_experiments(o, baselines);
  // Under mpirun every rank runs every experiment (run_experiment is collective) and rank 0 reports and writes
  // for the job; the job's status is rank 0's. The other ranks print nothing on stdout.
  bool writer = rank_info().rank == 0;
  if (!writer && std::freopen("/dev/null", "w", stdout) == nullptr) throw IOError("cannot silence this rank's stdout");
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const ExperimentVerdict& e : experiments) {
    inputs.push_back({"an experiment", e.path});
    inputs.push_back({"a baseline", e.baseline_path});
  }
  check_distinct_outputs({{"--junit", o.junit}, {"--summary", o.summary}}, inputs);
  std::optional<OutputFile> junit, summary;  // opened now: a bad path fails before anything runs
  if (!o.junit.empty() && writer) junit.emplace(o.junit);
  if (!o.summary.empty() && writer) summary.emplace(o.summary);
  std::error_code ec;
  if (o.record && writer && (fs::create_directories(baselines, ec), ec))
    throw IOError(fmt::format("{}: cannot create the baselines' folder: {}", baselines, ec.message()));
  std::string started = junit_timestamp();
  std::printf("# ringrt regress %s: %zu experiments, baselines in %s%s\n# this run: ringrt %s on host '%s' (%s)\n",
              o.dir.c_str(), experiments.size(), baselines.c_str(), o.record ? " (recording)" : "", ctx.version.c_str(),
              ctx.host.c_str(), ctx.machine.c_str());
  std::fflush(stdout);
  int status = 0;
  size_t done = 0;
  for (ExperimentVerdict& e : experiments) {
    set_tolerance(e);
    run_one(e);
    try {
      o.record ? record_rows(e, ctx, writer) : compare_rows(e, ctx);
    } catch (const UserError& ex) {  // a baseline that cannot be written
      e.error = ex.what(), e.error_status = 2;
    }
    ++done;
    std::fputs(experiment_text(e).c_str(), stdout);
    std::fflush(stdout);
    report_regressions(e, writer);
    bool regressed =
        std::any_of(e.rows.begin(), e.rows.end(), [](auto& v) { return v.verdict == Verdict::regression; });
    status = std::max({status, e.error_status, regressed ? 1 : 0});
    // the reports so far, kept up to date as `ringrt run` keeps --csv: a job killed part way leaves what finished
    std::span<const ExperimentVerdict> finished(experiments.data(), done);
    if (junit) junit->rewrite(junit_xml(regress_suites(ctx, finished, started)));
    if (summary) summary->rewrite(summary_markdown(ctx, finished, status));
    if (e.stopped) break;
  }
  experiments.resize(done);
  bool stopped = !experiments.empty() && experiments.back().stopped;
  if (stopped) status = 128 + interrupt_signal();
  status = static_cast<int>(sum_over_ranks(writer ? status : 0));  // rank 0's, on every rank
  std::fputs(closing_text(experiments, status).c_str(), stdout);
  if (junit) junit->write(junit_xml(regress_suites(ctx, experiments, started)));
  if (summary) summary->write(summary_markdown(ctx, experiments, status));
  if (stopped)
    std::fprintf(stderr, "ringrt: regress interrupted by signal %d after %zu experiments\n", interrupt_signal(), done);
  return status;
}

}  // namespace ringrt
