// What `ringrt regress` found (runtime/cli/regress.hpp), and its three reports: the lines on stdout, the
// Markdown summary and the JUnit suites.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/cli/baseline.hpp"
#include "runtime/cli/config.hpp"
#include "runtime/cli/junit.hpp"

namespace ringrt {

enum class Verdict { ok, regression, not_comparable, no_baseline, recorded };

// One row of a run (or of a baseline, when the run did not give it) and how it compares.
struct RowVerdict {
  std::string row;                       // row_name
  std::string algo;                      // the run's; "" for a row missing from the run
  int64_t wrong = -1;                    // #wrong; -1 not checked or not run
  std::optional<double> busbw;           // GB/s; nullopt: not timed alone, or not run
  std::optional<double> baseline_busbw;  // the baseline row's
  std::optional<double> limit;           // the lowest busbw that passes: baseline_busbw * (1 - tolerance)
  double seconds = 0;                    // the row's time in the run
  std::string line;                      // the row's table line (format_row), "" when not run
  Verdict verdict = Verdict::ok;
  std::vector<std::string> failures;  // each figure that regressed: "#wrong 3 (must stay 0)", "busbw ..."
  std::string note;                   // why not comparable, no baseline, ...
};

// One experiment of the folder.
struct ExperimentVerdict {
  std::string path;  // DIR/x.yaml
  std::string name;  // x.yaml
  ExperimentConfig cfg;
  std::string baseline_path;         // BASELINES/x.json
  std::optional<Baseline> baseline;  // compare mode, where the file exists
  double tolerance = 0.5;
  std::string tolerance_from;  // "regress.busbw_tolerance", "the baseline's", "the default"
  std::vector<RowVerdict> rows;
  std::string error;  // the run failed: its message ("" when it did not)
  int error_status = 0;
  bool stopped = false;  // a stop request ended the run
  double seconds = 0;
};

// Where the regression ran, for the reports' headers.
struct RegressContext {
  std::string dir, baselines, host, machine, version;
  bool record = false;
};

// Counts of the rows by verdict, and the errors.
struct RegressCounts {
  int64_t rows = 0, ok = 0, regressions = 0, not_comparable = 0, no_baseline = 0, recorded = 0, errors = 0;
};
RegressCounts count_verdicts(std::span<const ExperimentVerdict> experiments);

const char* verdict_name(Verdict v);  // "ok", "REGRESSION", "not comparable", "no baseline", "recorded"

// The lines stdout shows for one experiment once it ran: a header line, then one per row.
std::string experiment_text(const ExperimentVerdict& e);
// The closing lines: the counts and the result.
std::string closing_text(std::span<const ExperimentVerdict> experiments, int status);
// The Markdown summary: a heading, the context, the result, and a table of every row. status: the exit status,
// nullopt while the run goes on (the result then reads "RUNNING").
std::string summary_markdown(const RegressContext& ctx, std::span<const ExperimentVerdict> experiments,
                             std::optional<int> status);
// A JUnit suite per experiment, a test case per row: failed for a regression (its figures in the message),
// skipped for not comparable and no baseline, an error case "(the run)" for an experiment that failed to run or
// was stopped by a signal (interrupt_signal()).
std::vector<JunitSuite> regress_suites(const RegressContext& ctx, std::span<const ExperimentVerdict> experiments,
                                       const std::string& timestamp);

}  // namespace ringrt
