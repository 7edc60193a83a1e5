// Output of the `ringrt` program: the rccl-tests-style table and its header, the CSV and JSON files
// of `ringrt run`, and the JSON/DOT forms of `ringrt schedule`. Reference: README.md "The main
// job"; the table's columns and its "#" header follow rccl-tests.
// nlohmann_json and the graph writer stay inside report.cpp.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/files.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/cli/config.hpp"
#include "runtime/cli/experiment.hpp"

namespace ringrt {

// "key = value  <- ORIGIN" lines for every effective setting (backend, devices, experiment.*), with
// every tunable as dump_params() prints it; ORIGIN is where it was set (ExperimentConfig::origins)
// or "default". What `ringrt config --dump` prints.
std::string describe_config(const ExperimentConfig& cfg);

// "# "-prefixed lines naming the command, backend, devices, groups, the run's shape, its timing and every
// tunable with its origin (dump_params) and devices.groups, ending with the table's two column-title lines
// (three with timing both: the time groups' titles first).
std::string format_header(const ExperimentConfig& cfg);
// One table line: size (B), count, type, redop, algo, time (us), algbw (GB/s), busbw (GB/s) (N/A when not
// timed: a collective of pipelined steps), with timing both the pipelined time, algbw and busbw, then
// #wrong ("N/A" when not checked), FSDP's collective, phase and bucket, and the timing (latency |
// pipelined | both).
std::string format_row(const ResultRow& row);
// A row's name, the same in every run of its experiment: "allreduce sum float32 1 KiB" (the collective, the op
// where it reduces, the dtype, the bytes per device: format_bytes), then " bucket 3" for a bucket step's row and
// " fwd" / " bwd" for FSDP's. `ringrt run --junit` names a test case so; `ringrt regress` matches a row with its
// baseline's by it.
std::string row_name(const ResultRow& row);
// The closing "# " lines: the step summary (with buckets; timing both: a second line for the pipelined
// steps), #wrong in all ("0 OK", "N FAILED", "not checked"; a stopped run: "0 stopped after N of M
// rows", never OK), the mean busbw of the timed rows (timing both: and of their pipelined busbw).
std::string format_footer(const ExperimentResult& result);

// One CSV line per row, with a header line; columns size_bytes, count, type, redop, algo, time_us,
// algbw_gbs, busbw_gbs (empty when not timed), wrong (empty when not checked), ndev, backend, collective,
// phase, bucket, timing, pipelined_time_us, pipelined_algbw_gbs, pipelined_busbw_gbs (empty when not
// measured: timing latency, bucket steps' collectives).
std::string csv_text(const ExperimentConfig& cfg, const ExperimentResult& result);
// {"backend", "devices", "groups", "collective", "op", "dtype", "settings": [header's setting lines],
//  "rows": [{"size", "count", "type", "redop", "algo", "time_us", "algbw", "busbw", "wrong", "collective",
//  "phase", "bucket", "timing", "pipelined_time_us", "pipelined_algbw", "pipelined_busbw"}...], "step":
//  {..., "timing", "pipelined_time_us", "pipelined_algbw", "pipelined_busbw"} or null, "sharding",
//  "timing"}, indented, with a final newline; a time not measured is null.
std::string json_text(const ExperimentConfig& cfg, const ExperimentResult& result);
// csv_text / json_text as the file's last text, into a file opened before the run (OutputFile::write).
// Throws IOError (path and reason) when the file cannot be written.
void write_csv(OutputFile& file, const ExperimentConfig& cfg, const ExperimentResult& result);
void write_json(OutputFile& file, const ExperimentConfig& cfg, const ExperimentResult& result);

// Where the automatic algorithm choice of cfg comes from, one line: "algorithm choice: /path/tuning.yaml
// (ringrt tune, <when>, N choices)" or "algorithm choice: tinygrad's rule (why)" (rewrite/tuning.hpp).
// Warns once on stderr when a tuning file has no choice for cfg's collective, devices and dtype.
std::string choice_line(const ExperimentConfig& cfg);

// The contract of `ringrt schedule --json` (README.md): {"algorithms": [...], "ndev": n, "count": N,
// "dtype": "...", "copies": [{"src": "CPU:0", "dst": "CPU:1", "bytes": B}, ...], "kernels": K,
// "choice": "...", "fused": [...], "deterministic": true|false, "wire": "native|..."}, keys in this order,
// indented by 2; "choice" (choice_line's text after "algorithm choice: ") only when given; "deterministic" and
// "wire" the settings allreduce.deterministic and allreduce.wire the plan was lowered with.
std::string schedule_json(const Schedule& schedule, int64_t ndev, int64_t count, DType dtype,
                          const std::string& choice = "", bool deterministic = false,
                          const std::string& wire = "native");
// The human form: "COLLECTIVE of N x COUNT DTYPE: algorithms [...], C copies, K kernels", then
// Schedule::to_string(), then `choice` (choice_line) as the last line when given. deterministic: the first
// line ends ", deterministic" (allreduce.deterministic); a wire other than native adds ", wire W" (allreduce.wire).
std::string schedule_text(const Schedule& schedule, int64_t ndev, int64_t count, DType dtype,
                          Collective collective = Collective::allreduce, const std::string& choice = "",
                          bool deterministic = false, const std::string& wire = "native");
// Graphviz DOT of `lazy`'s graph after the multi-device lowering (lower_multi with `settings`), as
// UOpGraph::write_dot writes it. Throws IOError (path and reason) when the file cannot be written.
void write_schedule_dot(OutputFile& file, const Tensor& lazy, const AllreduceSettings& settings);

// A one-line progress bar on stderr, drawn only when stderr is a terminal (nothing when piped).
class ProgressBar {
 public:
  ProgressBar() : on_(isatty(STDERR_FILENO) != 0) {}
  void update(int64_t done, int64_t total) {
    if (!on_ || total <= 0) return;
    auto now = std::chrono::steady_clock::now();
    if (done < total && shown_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    constexpr int kWidth = 40;
    int filled = static_cast<int>(kWidth * done / total);
    std::fprintf(stderr, "\r[%s%s] %3d%% (%lld/%lld)", std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(kWidth - filled), ' ').c_str(), static_cast<int>(100 * done / total),
                 static_cast<long long>(done), static_cast<long long>(total));
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (!shown_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  bool on_, shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace ringrt
