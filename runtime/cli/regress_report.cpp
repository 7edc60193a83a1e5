#include "runtime/cli/regress_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>

#include "core/files.hpp"
#include "core/interrupt.hpp"

namespace ringrt {
namespace {

std::string gbs(const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : std::string("-"); }
std::string wrong_text(int64_t w) { return w < 0 ? std::string("-") : std::to_string(w); }

// Where a row's verdict comes from, one line: its failures, then its note.
std::string why(const RowVerdict& v) {
  std::string out = fmt::format("{}", fmt::join(v.failures, "; "));
  return v.note.empty() ? out : out.empty() ? v.note : out + "; " + v.note;
}

// A Markdown table cell: no '|' breaks the row, no newline the table.
std::string cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string result_text(const RegressCounts& c, int status) {
  if (status >= 128) return fmt::format("STOPPED by a signal (exit {})", status);
  if (status >= 2) return fmt::format("ERROR: {} experiment(s) failed to run (exit {})", c.errors, status);
  if (status == 1) return fmt::format("REGRESSION: {} row(s) (exit 1)", c.regressions);
  return "OK (exit 0)";
}

std::string counts_text(const RegressCounts& c) {
  return fmt::format(
      "{} rows: {} ok, {} regression(s), {} not comparable, {} without a baseline, {} recorded; {} "
      "experiment(s) failed to run",
      c.rows, c.ok, c.regressions, c.not_comparable, c.no_baseline, c.recorded, c.errors);
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::ok:
      return "ok";
    case Verdict::regression:
      return "REGRESSION";
    case Verdict::not_comparable:
      return "not comparable";
    case Verdict::no_baseline:
      return "no baseline";
    case Verdict::recorded:
      return "recorded";
  }
  return "?";
}

RegressCounts count_verdicts(std::span<const ExperimentVerdict> experiments) {
  RegressCounts c;
  for (const ExperimentVerdict& e : experiments) {
    c.errors += e.error.empty() ? 0 : 1;
    for (const RowVerdict& v : e.rows) {
      ++c.rows;
      c.ok += v.verdict == Verdict::ok;
      c.regressions += v.verdict == Verdict::regression;
      c.not_comparable += v.verdict == Verdict::not_comparable;
      c.no_baseline += v.verdict == Verdict::no_baseline;
      c.recorded += v.verdict == Verdict::recorded;
    }
  }
  return c;
}

std::string experiment_text(const ExperimentVerdict& e) {
  std::string base = e.baseline ? fmt::format("baseline of ringrt {}, {}", e.baseline->ringrt, e.baseline->made)
                                : printable_name(e.baseline_path);
  std::string out = fmt::format("## {}: {} {} devices, {} row{} in {:.1f} s; {}; busbw tolerance {} ({})\n", e.name,
                                e.cfg.devices.size(), e.cfg.backend, e.rows.size(), e.rows.size() == 1 ? "" : "s",
                                e.seconds, base, e.tolerance, e.tolerance_from);
  for (const RowVerdict& v : e.rows) {
    out += fmt::format("  {:<15} {}: #wrong {}, busbw {} GB/s", verdict_name(v.verdict), v.row, wrong_text(v.wrong),
                       gbs(v.busbw));
    if (v.baseline_busbw) out += fmt::format(" (baseline {}, limit {})", gbs(v.baseline_busbw), gbs(v.limit));
    if (std::string w = why(v); !w.empty()) out += ": " + w;
    out += "\n";
  }
  if (!e.error.empty()) out += fmt::format("  ERROR           the experiment failed: {}\n", e.error);
  if (e.stopped) out += "  STOPPED         by a signal: the rows above are those that finished\n";
  return out;
}

std::string closing_text(std::span<const ExperimentVerdict> experiments, int status) {
  RegressCounts c = count_verdicts(experiments);
  return fmt::format("# {}\n# result: {}\n", counts_text(c), result_text(c, status));
}

std::string summary_markdown(const RegressContext& ctx, std::span<const ExperimentVerdict> experiments,
                             std::optional<int> status) {
  RegressCounts c = count_verdicts(experiments);
  std::string result =
      status ? result_text(c, *status) : fmt::format("RUNNING: {} experiment(s) finished so far", experiments.size());
  std::string out = fmt::format(
      "# ringrt regress\n\nExperiments `{}`, baselines `{}`{}; ringrt {} on host `{}` ({}).\n\n**Result: {}**: {}.\n\n",
      ctx.dir, ctx.baselines, ctx.record ? " (recording)" : "", ctx.version, ctx.host, ctx.machine, result,
      counts_text(c));
  out += "| experiment | row | verdict | #wrong | busbw (GB/s) | baseline busbw | limit | algo | why |\n";
  out += "|---|---|---|---:|---:|---:|---:|---|---|\n";
  for (const ExperimentVerdict& e : experiments) {
    for (const RowVerdict& v : e.rows)
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(e.name), cell(v.row),
                         verdict_name(v.verdict), wrong_text(v.wrong), gbs(v.busbw), gbs(v.baseline_busbw),
                         gbs(v.limit), cell(v.algo), cell(why(v)));
    if (!e.error.empty())
      out += fmt::format("| {} | (the run) | ERROR | - | - | - | - | | {} |\n", cell(e.name), cell(e.error));
  }
  return out;
}

std::vector<JunitSuite> regress_suites(const RegressContext& ctx, std::span<const ExperimentVerdict> experiments,
                                       const std::string& timestamp) {
  std::vector<JunitSuite> out;
  for (const ExperimentVerdict& e : experiments) {
    JunitSuite s;
    s.name = e.name;
    s.timestamp = timestamp;
    s.seconds = e.seconds;
    s.properties = {{"backend", e.cfg.backend},
                    {"devices", std::to_string(e.cfg.devices.size())},
                    {"host", ctx.host},
                    {"machine", ctx.machine},
                    {"ringrt", ctx.version},
                    {"baseline", printable_name(e.baseline_path)},
                    {"baseline_ringrt", e.baseline ? e.baseline->ringrt : ""},
                    {"busbw_tolerance", fmt::format("{} ({})", e.tolerance, e.tolerance_from)}};
    for (const RowVerdict& v : e.rows) {
      JunitCase c;
      c.name = v.row;
      c.classname = e.name;
      c.seconds = v.seconds;
      c.output = v.line;
      c.properties = {{"verdict", verdict_name(v.verdict)},
                      {"wrong", wrong_text(v.wrong)},
                      {"busbw_gbs", gbs(v.busbw)},
                      {"baseline_busbw_gbs", gbs(v.baseline_busbw)},
                      {"limit_gbs", gbs(v.limit)}};
      if (v.verdict == Verdict::regression) {
        c.outcome = JunitCase::Outcome::failed;
        c.message = fmt::format("{}: {}", v.row, fmt::join(v.failures, "; "));
        c.details = v.line.empty() ? why(v) : v.line;
      } else if (v.verdict == Verdict::not_comparable || v.verdict == Verdict::no_baseline) {
        c.outcome = JunitCase::Outcome::skipped;
        c.message = fmt::format("{}: {}", verdict_name(v.verdict), v.note);
      }
      s.cases.push_back(std::move(c));
    }
    if (!e.error.empty()) s.cases.push_back(run_error_case(e.name, e.error));
    if (e.stopped) s.cases.push_back(run_error_case(e.name, stopped_text(interrupt_signal())));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ringrt
