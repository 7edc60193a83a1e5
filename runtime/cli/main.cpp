// The `ringrt` program (README.md "The main job"):
//   ringrt run CONFIG.yaml [--set key=value]... [--csv FILE] [--json FILE] [--junit FILE] [--trace FILE]
//   ringrt schedule CONFIG.yaml --count N [--json] [--dot FILE] [--emit-source DIR --target hip|nvidia|cpu]
//   ringrt config CONFIG.yaml [--set key=value]... [--dump]
//   ringrt tune [CONFIG.yaml] [--set key=value]... [--out FILE] [--collectives LIST] [--rounds N]
//   ringrt regress DIR [--set key=value]... [--baselines DIR] [--record] [--junit FILE] [--summary FILE]
// Exit status: 0 ok, 1 wrong results (regress: a regression), 2 bad input (command line, config, environment, shapes,
// devices), 3 an internal or toolchain failure (a bug: CompileError, TimeoutError, InternalError),
// 130/143 a run stopped by SIGINT/SIGTERM (128 + the signal; see install_stop_handlers).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <new>
#include <optional>
#include <system_error>
#include <thread>

#include "core/errors.hpp"
#include "core/files.hpp"
#include "core/interrupt.hpp"
#include "core/params_internal.hpp"
#include "rewrite/ops.hpp"
#include "rewrite/rules/wire.hpp"
#include "rewrite/tuning.hpp"
#include "runtime/api/trace.hpp"
#include "runtime/cli/config.hpp"
#include "runtime/cli/experiment.hpp"
#include "runtime/cli/junit.hpp"
#include "runtime/cli/outputs.hpp"
#include "runtime/cli/regress.hpp"
#include "runtime/cli/report.hpp"
#include "runtime/cli/tune.hpp"

namespace {

// status, unless what was printed to stdout could not all be written (a full disk, a closed pipe,
// /dev/full): then a message and exit status 2, as for any output file that cannot be written.
int with_stdout_checked(int status) {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return status;
  std::fprintf(stderr, "ringrt: cannot write the standard output: %s\n", std::strerror(errno));
  return status == 0 || status == 1 ? 2 : status;
}

using namespace ringrt;

// SIGINT/SIGTERM during `ringrt run`: the first one only records a stop request (async-signal-safe:
// core/interrupt.hpp), and the run stops at its next safe point: the experiment runner between two
// allreduces, a compile in progress by killing the compiler (its temporary folder is removed). The
// rows finished are printed and written (--csv, --json), and the exit status is 128 + the signal. A
// second signal ends the process at once, the default way, unless it repeats the first within a second:
// one sender delivering twice (coreutils `timeout` signals the command and then its process group).
extern "C" void on_stop_signal(int sig) {
  if (int first = interrupt_signal(); first != 0) {
    if (sig == first && interrupt_age_ms() < 1000) return;
    ::signal(sig, SIG_DFL);  // both async-signal-safe; delivered when this handler returns
    ::raise(sig);
    return;
  }
  request_interrupt(sig);
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

// True when mpirun started this process as one of several ranks (Open MPI's or MPICH's environment);
// MPI itself starts with the first device list (ringrt::rank_info).
bool in_spmd_job() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(var); v != nullptr && std::atoi(v) > 1) return true;
  return false;
}

// "ringrt: ", or under mpirun "ringrt: rank R: " (every rank's errors reach the same terminal).
std::string error_prefix() {
  if (!in_spmd_job()) return "ringrt: ";
  try {
    return "ringrt: rank " + std::to_string(rank_info().rank) + ": ";
  } catch (const std::exception&) {  // MPI failed to start: the launcher's rank variable names this rank
    for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
      if (const char* v = std::getenv(var)) return std::string("ringrt: rank ") + v + ": ";
    return "ringrt: ";
  }
}

// One error message on stderr, in one write (the ranks of a job share the terminal). Each of its lines as
// printable_name (core/files.hpp) writes it: a file name with an escape sequence or bytes that are not UTF-8
// is shown, not obeyed by the terminal.
void report(const std::string& message) {
  std::string line = error_prefix();
  std::string_view rest = message;
  do {
    size_t end = std::min(rest.find('\n'), rest.size());
    line += printable_name(rest.substr(0, end)) + "\n";
    rest.remove_prefix(std::min(end + 1, rest.size()));
  } while (!rest.empty());
  std::fwrite(line.data(), 1, line.size(), stderr);
}

// Loads the config and installs its runtime tunables (runtime.*) for this process, before anything runs.
// Under mpirun, ranks other than 0 then print nothing on stdout (rank 0 prints for the job).
// An empty config path: the built-in defaults (`ringrt tune` without a config).
ExperimentConfig load_and_install(const std::string& config, const std::vector<std::string>& sets) {
  ExperimentConfig cfg = config.empty() ? parse_config("", "(defaults)", sets) : load_config(config, sets);
  // allreduce.wire against the experiment's collective, dtype and op: refused here, before any header, as
  // the lowering would refuse it (rewrite/rules/wire.hpp wire_for; FSDP's allgathers take no wire)
  if (collective_reduces(cfg.collective)) wire_for(cfg.collective, cfg.dtype, ir_op(cfg.op), cfg.settings);
  set_runtime_params(cfg.runtime);
  if (in_spmd_job() && rank_info().rank != 0 && std::freopen("/dev/null", "w", stdout) == nullptr)
    throw IOError("cannot silence this rank's stdout");
  return cfg;
}

// Runs every writer, each whatever the others did, so that what can be written is; then rethrows the
// first failure (the later ones are printed to stderr).
void write_all(const std::vector<std::function<void()>>& writers) {
  std::exception_ptr first;
  for (const auto& w : writers) try {
      w();
    } catch (const UserError& e) {
      if (first) std::cerr << "ringrt: " << e.what() << "\n";
      if (!first) first = std::current_exception();
    }
  if (first) std::rethrow_exception(first);
}

// The folder for --emit-source, created (with its parents) and checked writable before planning:
// IOError with the system's reason.
void prepare_output_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IOError(dir + ": cannot create the folder: " + ec.message());
  if (!fs::is_directory(dir, ec)) throw IOError(dir + ": exists and is not a folder");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw IOError(dir + ": cannot write into the folder: " + std::strerror(errno));
}

// --trace FILE: a Chrome trace-event JSON of the last timed iteration of every row (sweeps) or of the
// last step (buckets): ExperimentObserver::last_iteration resumes a Trace (runtime/api/trace.hpp) for
// those realizes only, so the file stays small (and at most Trace::kDefaultMaxEvents events). The file
// is opened before the run; under mpirun with several ranks every rank writes its own, FILE.rank<R>.
class TraceOutput {
 public:
  explicit TraceOutput(const std::string& path) {
    if (path.empty()) return;
    const RankInfo& r = rank_info();
    file_.emplace(r.ranks > 1 ? fmt::format("{}.rank{}", path, r.rank) : path);
    trace_.emplace();
    trace_->pause();  // until the first last iteration
  }
  void observe(ExperimentObserver& observer) {
    if (trace_) observer.last_iteration = [this](bool begins) { begins ? trace_->resume() : trace_->pause(); };
  }
  void write() {
    if (!trace_) return;
    trace_->pause();
    file_->write(trace_->chrome_json());
    if (trace_->dropped() > 0)
      std::fprintf(stderr, "ringrt: --trace %s: %zu events past the cap of %zu were dropped\n", file_->path().c_str(),
                   trace_->dropped(), trace_->max_events());
  }

 private:
  std::optional<OutputFile> file_;
  std::optional<Trace> trace_;
};

// The files a run writes must differ from each other and from its config, checked before any is opened
// (none is created when they do not): --csv, --json, --junit, and --trace, which under mpirun is FILE.rank<R>
// for every rank R (rank 0 writes the CSV, JSON and JUnit, so one rank's trace must not land on them). Throws
// IOError.
void check_run_outputs(const std::string& config, const std::vector<std::pair<std::string, std::string>>& files,
                       const std::string& trace) {
  std::vector<std::pair<std::string, std::string>> outs = files;  // (option, path)
  int ranks = rank_info().ranks;
  for (int r = 0; r < ranks && !trace.empty(); ++r)
    outs.push_back({"--trace", ranks > 1 ? fmt::format("{}.rank{}", trace, r) : trace});
  check_distinct_outputs(outs, {{"the config file", config}});
}

// The output files of `ringrt run` besides --trace.
struct RunFiles {
  std::string csv, json, junit;
};

int run_command(const std::string& config, const std::vector<std::string>& sets, const RunFiles& files,
                const std::string& trace) {
  install_stop_handlers();
  ExperimentConfig cfg = load_and_install(config, sets);
  check_run_outputs(config, {{"--csv", files.csv}, {"--json", files.json}, {"--junit", files.junit}}, trace);
  std::optional<OutputFile> csv_file, json_file, junit_file;  // opened now: a bad path fails before the run
  bool writer = rank_info().rank == 0;                        // under mpirun, rank 0 writes for the job
  if (!files.csv.empty() && writer) csv_file.emplace(files.csv);
  if (!files.json.empty() && writer) json_file.emplace(files.json);
  if (!files.junit.empty() && writer) junit_file.emplace(files.junit);
  // --junit: a test case per row, each timed from the end of the row before (the run's start for the first)
  std::string started = junit_timestamp();
  auto last_row = std::chrono::steady_clock::now();
  std::vector<double> row_seconds;
  TraceOutput trace_out(trace);
  std::fputs(format_header(cfg).c_str(), stdout);
  if (!trace.empty())  // tracing records an event per item of the traced iterations: their times grow
    std::printf(
        "# --trace: the last timed iteration of each row is traced, and its time is in the table: times include "
        "the tracing (small sizes several times slower); time without --trace\n");
  std::fflush(stdout);
  ProgressBar bar;
  ExperimentObserver observer;
  observer.progress = [&](int64_t done, int64_t total) { bar.update(done, total); };
  trace_out.observe(observer);
  auto write_outputs = [&](const ExperimentResult& r) {
    write_all({[&] { csv_file ? write_csv(*csv_file, cfg, r) : void(); },
               [&] { json_file ? write_json(*json_file, cfg, r) : void(); },
               [&] { junit_file ? junit_file->write(junit_xml({run_suite(cfg, r, row_seconds, started)})) : void(); },
               [&] { trace_out.write(); }});
  };
  // The rows so far, in --csv/--json from the start (none) and each row before it is printed: a run
  // killed part way (a second signal, another rank's MPI_Abort, the OOM killer) leaves at least the rows
  // it printed, never the previous run's; one that fails part way writes them again below.
  ExperimentResult finished;
  auto write_finished = [&] {
    if (csv_file) csv_file->rewrite(csv_text(cfg, finished));
    if (json_file) json_file->rewrite(json_text(cfg, finished));
    if (junit_file) junit_file->rewrite(junit_xml({run_suite(cfg, finished, row_seconds, started)}));
  };
  write_finished();
  observer.row = [&](const ResultRow& row) {
    auto now = std::chrono::steady_clock::now();
    row_seconds.push_back(std::chrono::duration<double>(now - last_row).count());
    last_row = now;
    finished.rows.push_back(row);
    write_finished();
    bar.clear();
    std::fputs(format_row(row).c_str(), stdout);
    std::fflush(stdout);
  };
  observer.stop = [] { return interrupt_signal() != 0; };
  // --junit of a run that did not finish: an error case "(the run)" with why, so CI does not read it as a pass
  std::string experiment_name = std::filesystem::path(cfg.file).filename().string();
  auto suite_with_error = [&](const ExperimentResult& r, const std::string& why) {
    JunitSuite suite = run_suite(cfg, r, row_seconds, started);
    suite.cases.push_back(run_error_case(experiment_name, why));
    return suite;
  };
  ExperimentResult result;
  try {
    result = run_experiment(cfg, observer);
  } catch (...) {  // a timeout, a size refused, ...: keep what finished, then report the error as usual
    bar.clear();
    std::string why = "the run failed";
    try {
      throw;
    } catch (const Interrupted&) {
      why = stopped_text(interrupt_signal());
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
    }
    try {
      write_all({[&] { csv_file ? write_csv(*csv_file, cfg, finished) : void(); },
                 [&] { json_file ? write_json(*json_file, cfg, finished) : void(); },
                 [&] { junit_file ? junit_file->write(junit_xml({suite_with_error(finished, why)})) : void(); },
                 [&] { trace_out.write(); }});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ringrt: %s\n", e.what());
    }
    throw;
  }
  bar.clear();
  std::fputs(format_footer(result).c_str(), stdout);
  std::fflush(stdout);
  if (result.stopped && junit_file) {  // the others as usual; the JUnit marked stopped
    junit_file->rewrite(junit_xml({suite_with_error(result, stopped_text(interrupt_signal()))}));
    junit_file.reset();
  }
  write_outputs(result);
  if (result.stopped) {
    int sig = interrupt_signal();
    report(fmt::format("interrupted by {} after {} of {} rows", signal_name(sig), result.rows.size(), result.planned));
    return 128 + sig;
  }
  return result.wrong() > 0 ? 1 : 0;
}

int schedule_command(const std::string& config, const std::vector<std::string>& sets, int64_t count, bool as_json,
                     const std::string& dot, const std::string& emit_dir, const std::string& target) {
  ExperimentConfig cfg = load_and_install(config, sets);
  bool writer = rank_info().rank == 0;  // under mpirun, rank 0 writes the files for the job
  std::optional<OutputFile> dot_file;   // outputs checked before planning: a bad path fails at once
  if (!dot.empty() && writer) dot_file.emplace(dot);
  if (!emit_dir.empty() && writer) prepare_output_dir(emit_dir);
  ScopedSettings scope(cfg.settings);
  // planned from shapes alone: no memory for the input, nothing compiled or run
  if (int64_t planned = collective_count(cfg, count); planned != count) {
    std::fprintf(stderr,
                 "ringrt schedule: --count %lld planned as %lld (%s over %zu devices takes a multiple of them)\n",
                 static_cast<long long>(count), static_cast<long long>(planned),
                 std::string(collective_name(cfg.collective)).c_str(), cfg.devices.size());
    count = planned;
  }
  Tensor lazy = run_collective(cfg, collective_input_placeholder(cfg, count));
  Schedule schedule = lazy.schedule();
  int64_t ndev = static_cast<int64_t>(cfg.devices.size());
  std::string choice = choice_line(cfg);
  bool det = cfg.settings.deterministic;
  const std::string& wire = cfg.settings.wire;
  std::fputs((as_json ? schedule_json(schedule, ndev, count, cfg.dtype, choice, det, wire)
                      : schedule_text(schedule, ndev, count, cfg.dtype, cfg.collective, choice, det, wire))
                 .c_str(),
             stdout);
  std::fflush(stdout);
  write_all({[&] { dot_file ? write_schedule_dot(*dot_file, lazy, cfg.settings) : void(); },
             [&] {
               if (emit_dir.empty() || !writer) return;  // stderr: stdout stays the documented text or JSON
               std::vector<std::string> files = schedule.emit_sources(emit_dir, target);
               std::cerr << "ringrt: wrote " << files.size() << " " << target << " kernel source"
                         << (files.size() == 1 ? "" : "s") << " to " << emit_dir << "\n";
             }});
  return 0;
}

int config_command(const std::string& config, const std::vector<std::string>& sets, bool dump) {
  ExperimentConfig cfg = load_and_install(config, sets);
  if (dump)
    std::fputs(describe_config(cfg).c_str(), stdout);
  else
    std::printf("%s: ok (%zu %s devices)\n", config.c_str(), cfg.devices.size(), cfg.backend.c_str());
  return 0;
}

// `ringrt tune`: measures every algorithm (runtime/cli/tune.hpp), one line per point on stdout, then writes
// the tuning file (to a temporary name, renamed into place: a stopped tune leaves the old file whole).
int tune_command(const std::string& config, const std::vector<std::string>& sets, const std::string& out,
                 const std::vector<std::string>& collectives, int rounds) {
  install_stop_handlers();
  ExperimentConfig cfg = load_and_install(config, sets);
  TuneOptions options;
  options.collectives.clear();
  for (const std::string& c : collectives)  // each once, in the order given
    if (std::find(options.collectives.begin(), options.collectives.end(), c) == options.collectives.end())
      options.collectives.push_back(c);
  options.rounds = rounds;
  std::vector<TunePoint> points = tune_points(cfg, options);  // bad requests fail before anything is printed
  std::string path = tune_output(cfg, out);
  if (!config.empty() && same_file(path, config))
    throw IOError(fmt::format("{}: the tuning file would replace the config file", path));
  const RankInfo& me = rank_info();
  std::unique_ptr<TuningWriter> writer = tune_writer(path);  // under mpirun: null but on each host's first rank
  std::printf(
      "# ringrt tune %s: %s over %s%zu %s devices, %s%s, %zu point%s, %d round%s of %d + %d iterations per "
      "algorithm (after the first: as many as fill 20 ms)%s\n",
      config.empty() ? (sets.empty() ? "(built-in defaults)" : "(built-in defaults and --set)") : cfg.file.c_str(),
      fmt::format("{}", fmt::join(options.collectives, ", ")).c_str(),
      me.ranks > 1 ? fmt::format("the {} ranks' ", me.ranks).c_str() : "2..", cfg.devices.size(), cfg.backend.c_str(),
      std::string(dtype_name(cfg.dtype)).c_str(),
      (std::string(cfg.settings.wire == "native" ? "" : ", allreduce.wire " + cfg.settings.wire) +
       (cfg.settings.deterministic ? ", deterministic" : ""))
          .c_str(),
      points.size(), points.size() == 1 ? "" : "s", rounds, rounds == 1 ? "" : "s", cfg.warmup, cfg.iters,
      tune_timing_text(tune_timing(cfg)).c_str());
  std::printf("%s\n", tune_table_header().c_str());
  std::fflush(stdout);
  ProgressBar bar;
  options.progress = [&](int64_t done, int64_t total) { me.rank == 0 ? bar.update(done, total) : void(); };
  options.stop = [] { return interrupt_signal() != 0; };
  options.point = [&](const TunedChoice& c, Algorithm rule) {
    bar.clear();
    std::printf("%s\n", tune_table_line(c, rule).c_str());
    std::fflush(stdout);
  };
  TuningTable table;
  try {
    table = tune(cfg, options);
  } catch (const Interrupted&) {
    bar.clear();
    report(fmt::format("interrupted by {}; nothing written to {}", signal_name(interrupt_signal()), path));
    return 128 + interrupt_signal();
  }
  bar.clear();
  if (writer) writer->commit(table);
  std::printf(
      "# wrote %s: %zu choices%s; `ringrt run` and the C++ API follow it while allreduce.tuning names it "
      "(auto: the cache folder's) and allreduce.ring, all2all and ring_threshold are at their defaults\n",
      path.c_str(), table.choices.size(), me.ranks > 1 ? fmt::format(" across {} ranks", me.ranks).c_str() : "");
  return 0;
}

CLI::Validator positive_count() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.find_first_not_of("0123456789") != std::string::npos ||
            text.find_first_not_of('0') == std::string::npos)
          return "expected a count of elements >= 1, got " + quote_value(text);
        int64_t v = 0;  // CLI11 would clamp a count past int64 silently
        if (std::from_chars(text.data(), text.data() + text.size(), v).ec != std::errc() || v > kMaxElements)
          return "count " + quote_value(text) + " is out of range: at most " + std::to_string(kMaxElements) +
                 " elements (2^48, a tensor's most)";
        return "";
      },
      "N>=1");
}

void add_set_option(CLI::App* cmd, std::vector<std::string>& sets) {
  cmd->add_option("--set", sets, "override any YAML key: key=value (value in YAML syntax), repeatable")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("KEY=VALUE");
}

// Runs body and turns its exceptions into a message on stderr and the exit status (file comment).
int report_errors(const std::function<int()>& body) {
  try {
    return body();
  } catch (const Interrupted& e) {  // a stop request outside the sweep
    report(e.what());
    return 128 + interrupt_signal();
  } catch (const UserError& e) {  // ConfigError, ShapeError, DeviceError, IOError, ResourceError
    report(e.what());
  } catch (const std::bad_alloc&) {
    report("out of host memory: the sizes asked for do not fit in this machine's memory");
  } catch (const std::system_error& e) {  // a limit of the environment, not a bug: no thread, no memory
    int code = e.code().value();
    bool resource = e.code().category() == std::generic_category() || e.code().category() == std::system_category();
    if (!resource || (code != EAGAIN && code != ENOMEM && code != EMFILE && code != ENFILE)) {
      report(std::string("internal error: ") + e.what());
      return 3;
    }
    report(std::string("out of a system resource (") + e.what() + "): " +
           (code == EMFILE || code == ENFILE ? "too many open files (see ulimit -n)"
                                             : "could not start a thread or map memory (see ulimit -v, ulimit -u)"));
  } catch (const TimeoutError& e) {  // the watchdog: an item outlived runtime.watchdog_s
    report(std::string("timeout: ") + e.what());
    return 3;
  } catch (const CompileError& e) {
    report(std::string("kernel compile failed: ") + e.what());
    return 3;
  } catch (const std::exception& e) {
    report(std::string("internal error: ") + e.what());
    return 3;
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "ringrt: sharded tensors and their collectives (allreduce naive, ring, all2all, oneshot, twoshot, ring_fused, "
      "hierarchical; reduce_scatter, allgather, alltoall, broadcast, reduce) over devices"};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version", [] { return "ringrt " + ringrt_version(); }, "print ringrt's version and exit");
  std::string config, trace, dot, emit_dir, target;
  RunFiles run_files;
  const CLI::Validator non_empty(
      [](std::string& path) { return path.empty() ? std::string("an empty path") : std::string(); }, "PATH");
  std::vector<std::string> sets;
  int64_t count = 0;
  bool as_json = false, dump = false;

  CLI::App* run = app.add_subcommand("run", "run a YAML experiment and print an rccl-tests-style table");
  run->add_option("config", config, "YAML experiment file")->required();
  add_set_option(run, sets);
  run->add_option("--csv", run_files.csv, "also write the rows as CSV")->check(non_empty);
  run->add_option("--json", run_files.json, "also write the rows as JSON")->check(non_empty);
  run->add_option("--junit", run_files.junit, "also write JUnit XML: a test case per row, failed where #wrong > 0")
      ->check(non_empty);
  run->add_option("--trace", trace,
                  "write a Chrome trace-event JSON of the last timed iteration of each row (FILE.rank<R> per rank "
                  "under mpirun)")
      ->check(non_empty);

  CLI::App* sched = app.add_subcommand(
      "schedule", "print the schedule of one collective (experiment.collective) of one count without running it");
  sched->add_option("config", config, "YAML experiment file")->required();
  add_set_option(sched, sets);
  sched->add_option("--count", count, "elements per device")->required()->check(positive_count());
  sched->add_flag("--json", as_json, "print the documented JSON object");
  sched->add_option("--dot", dot, "write the lowered graph as Graphviz DOT")->check(non_empty);
  CLI::Option* emit = sched->add_option("--emit-source", emit_dir, "write the kernel sources to DIR")
                          ->type_name("DIR")
                          ->check(non_empty);
  sched->add_option("--target", target, "the kind of source to emit: hip (hipRTC), nvidia (NVRTC), cpu (g++)")
      ->check(CLI::IsMember({"hip", "nvidia", "cpu"}))
      ->needs(emit);
  emit->needs(sched->get_option("--target"));

  CLI::App* conf = app.add_subcommand("config", "validate a YAML experiment; --dump prints the effective settings");
  conf->add_option("config", config, "YAML experiment file")->required();
  add_set_option(conf, sets);
  conf->add_flag("--dump", dump, "print every effective setting (every tunable included) and where it was set");

  std::string out;
  std::vector<std::string> collectives = tunable_collectives();
  int rounds = 3;
  CLI::App* tune_cmd =
      app.add_subcommand("tune",
                         "measure every algorithm per collective, device count and size here; write the tuning file "
                         "the automatic choice follows");
  tune_cmd->add_option("config", config,
                       "YAML experiment file: devices, dtype, sizes, warmup, iters (default: built-in)");
  add_set_option(tune_cmd, sets);
  tune_cmd
      ->add_option("--out", out,
                   "the tuning file to write (default: allreduce.tuning's, auto: the cache folder's tuning.yaml)")
      ->check(non_empty);
  tune_cmd->add_option("--collectives", collectives, "the collectives to tune, comma-separated")
      ->delimiter(',')
      ->check(CLI::IsMember(tunable_collectives()));
  tune_cmd->add_option("--rounds", rounds, "rounds of every algorithm per point (the best counts)")
      ->check(CLI::Range(1, 100));

  RegressOptions regress_options;
  CLI::App* regress = app.add_subcommand(
      "regress",
      "run every YAML experiment of DIR and compare each row with its stored baseline: #wrong stays 0, "
      "busbw within a tolerance (regress.busbw_tolerance, else the baseline's, else 0.5)");
  regress
      ->add_option("dir", regress_options.dir,
                   "the folder of YAML experiments: the regular files DIR/*.yaml (not .yml, not subfolders, not links)")
      ->required()
      ->check(non_empty);
  add_set_option(regress, sets);
  regress->add_option("--baselines", regress_options.baselines, "the folder of baselines (default DIR/baselines)")
      ->check(non_empty);
  regress->add_flag("--record", regress_options.record, "write every experiment's baseline from this run");
  regress->add_option("--junit", regress_options.junit, "write JUnit XML: a suite per experiment, a case per row")
      ->check(non_empty);
  regress->add_option("--summary", regress_options.summary, "write a Markdown summary")->check(non_empty);
  regress->footer(
      "Exit status: 0 no regression (rows not comparable or without a baseline are reported, not failed), 1 a "
      "regression (a row's #wrong > 0, its busbw below the limit, or a baseline row missing), 2 bad input (folder, "
      "YAML, baseline, option, output file) or an experiment's user or device error, 3 an internal, compile or "
      "timeout error, 130/143 stopped by SIGINT/SIGTERM.");

  // CLI11 answers an unknown subcommand with "A subcommand is required": name it, and the ones there are
  if (argc > 1 && argv[1][0] != '-') {
    try {
      app.get_subcommand(argv[1]);
    } catch (const CLI::OptionNotFound&) {
      std::vector<std::string> names;
      for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
      std::string known = fmt::format("{}", fmt::join(names, ", "));
      if (size_t last = known.rfind(", "); last != std::string::npos) known.replace(last, 2, " or ");
      std::fprintf(stderr, "ringrt: unknown subcommand '%s': %s (--help says more)\n", argv[1], known.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  int status = report_errors([&] {
    if (run->parsed()) return with_stdout_checked(run_command(config, sets, run_files, trace));
    if (sched->parsed())
      return with_stdout_checked(schedule_command(config, sets, count, as_json, dot, emit_dir, target));
    if (tune_cmd->parsed()) return with_stdout_checked(tune_command(config, sets, out, collectives, rounds));
    if (regress->parsed()) {
      install_stop_handlers();
      regress_options.sets = sets;
      return with_stdout_checked(regress_command(regress_options));
    }
    return with_stdout_checked(config_command(config, sets, dump));
  });
  // Under mpirun, a rank that fails ends the job (MPI_Abort with its status): the others would wait for it.
  // First a grace second, so that the ranks failing the same way (a plan mismatch, a dead peer's
  // timeout: their watchdogs fire together) report too before Open MPI kills them. A stopped rank
  // (130/143) just exits: mpirun signals every rank, and a rank signalled alone that exits without
  // MPI_Finalize makes mpirun end the others.
  if (status >= 2 && status < 128 && in_spmd_job()) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    abort_ranks(status);
  }
  return status;
}
