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
#include <set>
#include <span>
#include <system_error>

#include "core/errors.hpp"
#include "core/files.hpp"
#include "core/interrupt.hpp"
#include "core/params_internal.hpp"
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

// DIR's experiments, DIR/*.yaml (regular files only; subfolders, even one named x.yaml, are skipped), in name
// order. Throws IOError for a folder that is not one or cannot be read and for an experiment that is a symbolic
// link or not a regular file (a link planted in DIR must not make regress read what it points at),
// ConfigError for none or too many.
std::vector<std::string> experiment_files(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw IOError(fmt::format("{}: not a folder (of YAML experiments)", dir));
  std::vector<std::string> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".yaml") continue;
    std::error_code kind_ec;
    fs::file_status st = it->symlink_status(kind_ec);
    if (fs::is_directory(st)) continue;
    if (fs::is_symlink(st))
      throw IOError(fmt::format("{}: is a symbolic link; regress reads only regular files in DIR",
                                printable_name(it->path().string())));
    if (!fs::is_regular_file(st))
      throw IOError(fmt::format("{}: is not a regular file; regress reads only regular files in DIR",
                                printable_name(it->path().string())));
    files.push_back(it->path().string());
  }
  if (ec) throw IOError(fmt::format("{}: cannot list the folder: {}", dir, ec.message()));
  if (files.empty()) throw ConfigError(fmt::format("{}: no YAML experiments (*.yaml) in the folder", dir));
  if (files.size() > kMaxExperiments)
    throw ConfigError(fmt::format("{}: {} experiments, more than {}", dir, files.size(), kMaxExperiments));
  std::sort(files.begin(), files.end());
  return files;
}

// Every experiment, its config and (comparing) its baseline, read before anything runs. A baseline that is a
// symbolic link is refused, as an experiment is.
std::vector<ExperimentVerdict> read_experiments(const RegressOptions& o, const std::string& baselines) {
  std::vector<ExperimentVerdict> out;
  for (const std::string& path : experiment_files(o.dir)) {
    ExperimentVerdict e;
    e.path = path;
    e.name = printable_name(fs::path(path).filename().string());
    e.cfg = load_config(path, o.sets);  // ConfigError: FILE:LINE:COL: key ...
    e.baseline_path = (fs::path(baselines) / fs::path(path).stem()).string() + ".json";
    std::error_code ec;
    fs::file_status st = fs::symlink_status(e.baseline_path, ec);
    if (!o.record && fs::is_symlink(st))
      throw IOError(fmt::format("{}: is a symbolic link; regress reads only regular files as baselines",
                                printable_name(e.baseline_path)));
    if (!o.record && fs::exists(st))
      e.baseline = parse_baseline(read_file(e.baseline_path, kMaxBaselineBytes), printable_name(e.baseline_path));
    out.push_back(std::move(e));
  }
  return out;
}

// The folder of baselines: one --baselines names must be a folder (comparing) or become one (recording); the
// default DIR/baselines may be missing when comparing (every experiment then has no baseline). A symbolic link
// is refused when recording: the baselines must not be written where a link points. Throws IOError.
void check_baselines_folder(const RegressOptions& o, const std::string& baselines, bool writer) {
  std::error_code ec;
  fs::file_status st = fs::symlink_status(baselines, ec);
  std::string shown = printable_name(baselines);
  if (o.record) {
    if (fs::is_symlink(st))
      throw IOError(
          fmt::format("{}: the baselines' folder is a symbolic link; --record writes only into a folder", shown));
    if (fs::exists(st) && !fs::is_directory(st))
      throw IOError(fmt::format("{}: the baselines' folder is not a folder", shown));
    if (writer && (fs::create_directories(baselines, ec), ec))
      throw IOError(fmt::format("{}: cannot create the baselines' folder: {}", shown, ec.message()));
  } else if (!o.baselines.empty() && !fs::is_directory(baselines, ec)) {
    throw IOError(fmt::format("--baselines {}: {}", shown,
                              fs::exists(st) ? "not a folder" : "no such folder (record one with --record)"));
  }
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
  std::string why = !e.baseline
                        ? fmt::format("no baseline ({}): record one with --record", printable_name(e.baseline_path))
                        : not_comparable(*e.baseline, ctx.host, ctx.machine, e.cfg.backend,
                                         static_cast<int64_t>(e.cfg.devices.size()), e.cfg.settings.wire,
                                         e.cfg.settings.deterministic);
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
// rows are regressions) or two rows share a name (the baseline could never be compared with: the experiment
// fails). A row is "recorded" only once its baseline is written; else it has no baseline, with the reason.
void record_rows(ExperimentVerdict& e, const RegressContext& ctx, bool writer) {
  bool wrong = std::any_of(e.rows.begin(), e.rows.end(), [](const RowVerdict& v) { return v.wrong > 0; });
  auto not_recorded = [&](const std::string& why) {
    for (RowVerdict& v : e.rows) {
      v.verdict = v.wrong > 0 ? Verdict::regression : Verdict::no_baseline;
      v.note = "not recorded: " + why;
    }
  };
  if (wrong) return not_recorded("the experiment has wrong results");
  if (e.stopped) return not_recorded("stopped by a signal");
  if (!e.error.empty()) return not_recorded("the experiment failed");
  std::set<std::string> seen;
  for (const RowVerdict& v : e.rows)
    if (!seen.insert(v.row).second) {
      e.error = fmt::format(
          "{}: two rows are named '{}' (sizes that round to the same text, or a size given twice); a baseline "
          "could not tell them apart, so none is recorded: give each size once",
          e.name, v.row);
      e.error_status = 2;
      return not_recorded("a row name is not unique");
    }
  Baseline b;
  b.experiment = e.name;
  b.ringrt = ctx.version;
  b.host = ctx.host;
  b.machine = ctx.machine;
  b.backend = e.cfg.backend;
  b.devices = static_cast<int64_t>(e.cfg.devices.size());
  b.wire = e.cfg.settings.wire;
  b.deterministic = e.cfg.settings.deterministic;
  b.made = utc_now();
  b.busbw_tolerance = e.tolerance;
  for (const RowVerdict& v : e.rows)
    b.rows.push_back({v.row, v.algo, v.busbw, v.wrong < 0 ? std::nullopt : std::optional(v.wrong)});
  try {
    if (writer) replace_file(e.baseline_path, baseline_json(b));
  } catch (const std::exception& ex) {  // IOError (a link planted there, ENOSPC): the experiment's error (exit 2)
    e.error = printable_name(ex.what());
    e.error_status = 2;
    return not_recorded("the baseline could not be written");
  }
  for (RowVerdict& v : e.rows) {
    v.verdict = Verdict::recorded;
    v.note = "recorded in " + printable_name(e.baseline_path);
  }
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
    fail(2, printable_name(ex.what()));
  } catch (const std::exception& ex) {  // a compile or timeout error, a bug
    fail(3, printable_name(ex.what()));
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
  RegressContext ctx{printable_name(o.dir), printable_name(baselines), host_name(),
                     machine_identity(),    ringrt_version(),          o.record};
  bool writer = rank_info().rank == 0;
  check_baselines_folder(o, baselines, false);
  std::vector<ExperimentVerdict> experiments = read_experiments(o, baselines);
  // Under mpirun every rank runs every experiment (run_experiment is collective) and rank 0 reports and writes
  // for the job; the job's status is rank 0's. The other ranks print nothing on stdout.
  if (!writer && std::freopen("/dev/null", "w", stdout) == nullptr) throw IOError("cannot silence this rank's stdout");
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const ExperimentVerdict& e : experiments) {
    inputs.push_back({"an experiment", e.path});
    inputs.push_back({"a baseline", e.baseline_path});
  }
  check_distinct_outputs({{"--junit", o.junit}, {"--summary", o.summary}}, inputs);
  std::string started = junit_timestamp();
  // the reports, each replaced whole (core/files.hpp replace_file) from the start (no experiment yet,
  // "running") and after each experiment: a bad path fails before anything runs, a job killed part way leaves
  // what finished, and a reader never sees a file cut short
  auto write_reports = [&](std::span<const ExperimentVerdict> finished, std::optional<int> status) {
    if (!writer) return;
    if (!o.junit.empty()) replace_file(o.junit, junit_xml(regress_suites(ctx, finished, started)));
    if (!o.summary.empty()) replace_file(o.summary, summary_markdown(ctx, finished, status));
  };
  write_reports({}, std::nullopt);
  check_baselines_folder(o, baselines, writer);
  std::printf("# ringrt regress %s: %zu experiments, baselines in %s%s\n# this run: ringrt %s on host '%s' (%s)\n",
              ctx.dir.c_str(), experiments.size(), ctx.baselines.c_str(), o.record ? " (recording)" : "",
              ctx.version.c_str(), ctx.host.c_str(), ctx.machine.c_str());
  std::fflush(stdout);
  int status = 0;
  size_t done = 0;
  for (ExperimentVerdict& e : experiments) {
    set_tolerance(e);
    run_one(e);
    try {
      o.record ? record_rows(e, ctx, writer) : compare_rows(e, ctx);
    } catch (const std::exception& ex) {  // a bug: this experiment fails, the others run
      e.error = printable_name(std::string("internal error: ") + ex.what()), e.error_status = 3;
    }
    ++done;
    std::fputs(experiment_text(e).c_str(), stdout);
    std::fflush(stdout);
    report_regressions(e, writer);
    bool regressed =
        std::any_of(e.rows.begin(), e.rows.end(), [](auto& v) { return v.verdict == Verdict::regression; });
    status = std::max({status, e.error_status, regressed ? 1 : 0});
    if (e.stopped) break;
    write_reports(std::span<const ExperimentVerdict>(experiments.data(), done), std::nullopt);
  }
  experiments.resize(done);
  bool stopped = !experiments.empty() && experiments.back().stopped;
  if (stopped) status = 128 + interrupt_signal();
  status = static_cast<int>(sum_over_ranks(writer ? status : 0));  // rank 0's, on every rank
  std::fputs(closing_text(experiments, status).c_str(), stdout);
  write_reports(experiments, status);
  if (stopped)
    std::fprintf(stderr, "ringrt: regress interrupted by signal %d after %zu experiments\n", interrupt_signal(), done);
  return status;
}

}  // namespace ringrt
