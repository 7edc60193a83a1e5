// Tuned algorithm choice: the tuning file `ringrt tune` writes (runtime/cli/tune.cpp) after measuring
// every algorithm of each collective on this machine, and the lookup the lowering rules make in it
// (collective_algorithm in rewrite/rules/multi.hpp). Without a choice for the point, an allreduce takes
// the cost model of its devices' kind (rewrite/cost_model.hpp) and the rest tinygrad's rule (ring above
// RING_ALLREDUCE_THRESHOLD elements on more than two devices), a crossover measured on GPUs elsewhere;
// `off` gives tinygrad's rule to every collective, the allreduce included.
//
// The file (YAML, at most kMaxTuningBytes), one choice per measured point:
//   format: ringrt-tuning-1
//   ringrt: 0.1.0+7e70b69c1a2b            ringrt_version() of the build that measured
//   machine: "<cpu model> | 2 cpus | 24 GiB"   machine_identity() of the machine it ran on
//   made: 2026-12-02 13:40 UTC
//   choices:
//     - {collective: allreduce, kind: CPU, devices: 4, dtype: float32, bytes: 262144,
//        min_bytes: 131072, max_bytes: 2097152, algorithm: all2all, us: {naive: 120.5, ring: 140.2, all2all: 80.1}}
//     - {collective: allreduce, kind: CPU, devices: 4, dtype: float32, wire: fp8_e4m3, deterministic: true, ...}
//     - {collective: allreduce, kind: CPU, devices: 4, dtype: float32, ranks: 4, ..., algorithm: mpi, ...}
// A choice applies to its collective, device kind, device count, dtype, allreduce.wire and
// allreduce.deterministic (the optional keys wire, default native, and deterministic, default false: the
// forms measured differ with them) for bytes per device (as rccl-tests counts them) in [min_bytes,
// max_bytes), in one process or (the optional key ranks, measured by `ringrt tune` under mpirun) across that many
// MPI ranks, where the choice may be mpi: the band around its measured size, cut at the geometric middle between
// neighbouring measured sizes, the first band open below and the last above. `ringrt tune` under a wire or
// deterministic mode writes that setting's choices and keeps the file's choices for the others.
//
// Which file: the allreduce setting `allreduce.tuning` (RINGRT_TUNING): auto (tuning.yaml in
// user_cache_dir(), used when present), off, or a path. A file is read once per process per setting,
// capped; from the cache folder only when the folder and the file are this user's own (private_dir_problem,
// FileTrust::own). One made by another ringrt build or on another machine is ignored with one warning,
// and so is a file that cannot be read or parsed (its name, line and key). The choice applies only while
// ring, all2all and the threshold are at their defaults (automatic_levels): a level or threshold the user
// set asks for tinygrad's rule, so a forced algorithm stays forced.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/algorithm.hpp"
#include "core/dtype.hpp"
#include "core/params_internal.hpp"
#include "core/wire_format.hpp"

namespace ringrt {

inline constexpr size_t kMaxTuningBytes = size_t{1} << 20;
// The collectives a tuning file holds choices for: core/algorithm.hpp's kTunedCollectives.
inline constexpr std::string_view kTuningFormat = "ringrt-tuning-1";

// One measured point and the band of sizes it decides.
struct TunedChoice {
  Collective collective = Collective::allreduce;  // one of kTunedCollectives
  std::string kind;                               // the devices' kind: CPU | HIP (upper-case letters; tests use NULL)
  int64_t devices = 0;                            // the device count
  DType dtype = DType::float32;
  int64_t bytes = 0;                       // the measured size, bytes per device
  int64_t min_bytes = 0, max_bytes = 0;    // the band it decides: [min_bytes, max_bytes)
  Algorithm algorithm = Algorithm::naive;  // the fastest: one of kAllreduceAlgorithms (the others: ring | all2all)
  // each algorithm's time measured, microseconds, in the order of their names (as the file lists them)
  std::map<Algorithm, double, AlgorithmNameLess> us;
  WireFormat wire = WireFormat::native;  // allreduce.wire it was measured under
  bool deterministic = false;            // allreduce.deterministic it was measured under
  // 0: the devices of one process; R >= 2: across R MPI ranks (`ringrt tune` under mpirun), where the choices
  // are naive, ring, all2all and mpi (MPI's own collective), and every rank's time is the slowest rank's
  int64_t ranks = 0;
  bool operator==(const TunedChoice&) const = default;
};

struct TuningTable {
  std::string version;  // ringrt_version() of the build that measured
  std::string machine;  // machine_identity() of the machine
  std::string made;     // when, UTC
  std::vector<TunedChoice> choices;
  // The choice for a collective of `bytes` per device on `devices` devices of `kind` under the wire and
  // deterministic settings, or null.
  // ranks: 0 in one process, else the ranks the devices span.
  const TunedChoice* find(Collective collective, std::string_view kind, int64_t devices, DType dtype, int64_t bytes,
                          WireFormat wire = WireFormat::native, bool deterministic = false, int64_t ranks = 0) const;
};

// "0.1.0+<commit>[-dirty.<hash>]": the project's version, the commit and any uncommitted change of the
// build (cmake/RingrtVersion.cmake, stamped at every build).
std::string ringrt_version();
// This machine as the tuning file records it: "<CPU model> | <n> cpus | <m> GiB" (/proc/cpuinfo,
// the logical CPUs, the physical memory rounded to GiB).
std::string machine_identity();

// Parses a tuning file's text; `name` stands for the file in messages. Throws ConfigError
// "NAME:LINE:COL: key 'choices[2].bytes': expected ..., got ..." for a YAML error, a missing or unknown
// key, a key given twice, a wrong format, a value of the wrong type or out of range, a band that is
// empty, leaves out its own size or overlaps another's, naive for a collective other than allreduce, a
// text with control characters, or no choices. A hand-edited `algorithm` wins over the times listed.
TuningTable parse_tuning(std::string_view yaml, const std::string& name);
// The file's text: parse_tuning(tuning_yaml(t)) == t (times to 0.1 us).
std::string tuning_yaml(const TuningTable& table);
// Sets each choice's band: sorted by measured size within its (collective, kind, devices, dtype), the
// edges at the geometric middles between neighbours, the first from 0, the last to INT64_MAX.
void set_bands(std::vector<TunedChoice>& choices);

// The file the setting names: auto -> user_cache_dir()/tuning.yaml (empty when there is no cache
// folder), off -> empty, else the setting itself.
std::string tuning_path(const std::string& setting);

// The tuning a setting gives this process: the table (null when none applies) and one line on where
// the choice comes from, for the run header and `config --dump`: "/path/tuning.yaml (ringrt tune, <when>,
// 36 choices)", "none: tinygrad's rule (no file /path)", "ignored: tinygrad's rule (/path: made on another
// machine ...)". Each file is read once per process (a run keeps one choice throughout; a file tuned
// again applies to the next process), with one warning on stderr when it is ignored. Thread-safe; never
// throws for a bad file.
struct Tuning {
  std::shared_ptr<const TuningTable> table;
  std::string origin;
};
Tuning tuning_for(const std::string& setting);

// Whether the tuned choice applies: allreduce.ring, allreduce.all2all and allreduce.ring_threshold at
// their defaults. A level or a threshold the user set asks for tinygrad's rule with it.
bool automatic_levels(const AllreduceSettings& settings);

// Now, UTC, in strftime's `format`: by default as the tuning and cost files record it, "2026-12-02 13:09 UTC".
std::string utc_now(const char* format = "%Y-%m-%d %H:%M UTC");
// s as a YAML double-quoted scalar ("a \"b\""), for the files' text.
std::string yaml_quoted(const std::string& s);

}  // namespace ringrt
