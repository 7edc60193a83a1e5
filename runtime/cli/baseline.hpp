// A regression baseline: what one experiment gave on one machine, written by `ringrt regress --record` and
// compared with by `ringrt regress` (runtime/cli/regress.hpp). One JSON file per experiment (at most
// kMaxBaselineBytes), BASELINES/<experiment file name without .yaml>.json:
//   {"format": "ringrt-baseline-1",
//    "experiment": "allreduce.yaml",
//    "ringrt": "0.1.0+7e70b69c1a2b",                       ringrt_version() of the build that recorded it
//    "machine": {"host": "node7", "cpu": "AMD EPYC 7B13 | 2 cpus | 23 GiB"},   host_name(), machine_identity()
//    "backend": "cpu", "devices": 4,
//    "made": "2026-12-05 10:00 UTC",
//    "busbw_tolerance": 0.5,                                the tolerance in force when recorded
//    "rows": [{"row": "allreduce sum float32 1 KiB", "algo": "naive", "busbw": 0.61, "wrong": 0}, ...]}
// busbw is in GB/s, null for a row without a time of its own (a pipelined step's collective); wrong is null for
// a row not checked. A baseline is comparable only with a run on the same host and CPU (machine), backend and
// device count; its ringrt version is information (a regression test compares versions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringrt {

inline constexpr std::string_view kBaselineFormat = "ringrt-baseline-1";
// The longest "experiment": a file name (at most 255 bytes) as printable_name (core/files.hpp) writes it,
// each byte at most 4 characters ("\xFF").
inline constexpr size_t kMaxExperimentName = 1024;
inline constexpr size_t kMaxBaselineBytes = size_t{4} << 20;  // 4 MiB: tens of thousands of rows

struct BaselineRow {
  std::string row;               // row_name (runtime/cli/report.hpp): how a run's row finds it
  std::string algo;              // the algorithm the row ran with
  std::optional<double> busbw;   // GB/s; nullopt: not timed alone
  std::optional<int64_t> wrong;  // nullopt: not checked
};

struct Baseline {
  std::string experiment;       // the experiment's file name
  std::string ringrt;           // ringrt_version() of the build that recorded it
  std::string host;             // host_name()
  std::string machine;          // machine_identity() (rewrite/tuning.hpp): CPU model, logical CPUs, memory
  std::string backend;          // cpu | hip
  int64_t devices = 0;          // the run's device count
  std::string wire = "native";  // allreduce.wire of the run (absent in older files: native)
  bool deterministic = false;   // allreduce.deterministic of the run (absent: false)
  std::string made;             // when, UTC
  std::optional<double> busbw_tolerance;
  std::vector<BaselineRow> rows;
};

// This host's name (gethostname), "unknown host" when there is none.
std::string host_name();

// Parses a baseline file's text; `name` stands for the file in messages. Throws ConfigError
// "NAME:LINE:COL: JSON syntax error: ..." for a file that is not JSON, and "NAME: key 'rows[2].busbw': expected
// ..., got ..." for a missing or unknown key, a value of the wrong type or out of range (busbw >= 0, wrong >= 0,
// devices >= 1, busbw_tolerance in [0, 1)), another format, a text with control characters or over 200
// characters (kMaxExperimentName for "experiment", the file name as printable_name writes it), or a row named
// twice.
Baseline parse_baseline(std::string_view json, const std::string& name);
// The file's text, indented, with a final newline: parse_baseline(baseline_json(b)) == b.
std::string baseline_json(const Baseline& b);

// "" when a run on this host and machine, backend, device count, wire and deterministic setting may be compared
// with b; else why not: "recorded on host 'a' (CPU ...), this is host 'b' (CPU ...)", "recorded on the hip backend,
// this run is cpu", "recorded with 4 devices, this run has 2", "recorded with allreduce.wire native, this run's is
// fp8_e4m3" (another wire or deterministic mode moves other bytes through other forms).
std::string not_comparable(const Baseline& b, const std::string& host, const std::string& machine,
                           const std::string& backend, int64_t devices, const std::string& wire = "native",
                           bool deterministic = false);

}  // namespace ringrt
