// The tunables of ringrt, in the style of NCCL's NCCL_PARAM (src/include/param.h): each is declared
// once, on one line of RINGRT_ALLREDUCE_PARAMS or RINGRT_RUNTIME_PARAMS below, with its type, field,
// YAML key, environment variable, default, parser and a one-line description. From that line come
// the field of AllreduceSettings or RuntimeParams (with its default), the row of tunables(), its
// YAML and `--set` key, its environment variable, and its line in `ringrt config --dump` and in the
// header of every run. A YAML key or environment variable declared twice fails the build
// (RINGRT_CHECK_PARAMS). Adding a tunable: one line here, plus the code that reads its field.
//
// Two stores. AllreduceSettings are per thread (ScopedSettings, current_settings() in
// settings.hpp): they choose how a graph is lowered. RuntimeParams are per process
// (current_runtime_params() below): the executor, the device backends and the compilers read them.
//
// Where a value comes from, highest first: code (set_runtime_params, ScopedSettings) or `--set`,
// then the environment variable, then the YAML file, then the default. Security: a tunable whose
// parser is kCommand or kFolder (the host compiler command, the kernel cache folder) is never read
// from a YAML file: a config someone else wrote could otherwise run a program of its choice (the
// compiler command is run by the shell) or plant shared objects that ringrt loads (a cache folder
// others can write). Those come from the environment, `--set` or code only.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringrt {

// How a tunable's text is read. The error of a bad value is a ConfigError
// "WHERE: key 'KEY': expected WHAT, got 'TEXT'" (WHERE: "FILE:LINE:COL", "environment variable X",
// "--set k=v").
enum class ParamKind {
  integer,   // decimal, in [lo, hi]
  boolean,   // true/false, yes/no, on/off, 1/0 (any case)
  switch01,  // from the environment exactly "1" or "0"; elsewhere as boolean
  seconds,   // decimal seconds (1.5, 60), in [min_s, max_s]
  devices,   // device names "KIND:i", comma-separated in text, a list in YAML
  command,   // a shell command (never from a YAML file); an empty environment value counts as unset
  folder,    // a folder (never from a YAML file); an empty environment value counts as unset
  file,      // a file to read, or a word standing for one (auto, off); an empty environment value counts as unset
  choice,    // exactly one of the words of `choices`
};
struct ParamParser {
  ParamKind kind;
  int64_t lo = 0, hi = 0;       // integer bounds
  double min_s = 0, max_s = 0;  // seconds bounds
  std::string_view choices{};   // choice: the accepted words, separated by '|'
};
constexpr ParamParser int_in(int64_t lo, int64_t hi) { return {ParamKind::integer, lo, hi}; }
constexpr ParamParser seconds_in(double lo, double hi) { return {ParamKind::seconds, 0, 0, lo, hi}; }
constexpr ParamParser one_of(std::string_view choices) { return {ParamKind::choice, 0, 0, 0, 0, choices}; }
inline constexpr ParamParser kBoolean{ParamKind::boolean}, kSwitch01{ParamKind::switch01},
    kDeviceList{ParamKind::devices}, kCommand{ParamKind::command}, kFolder{ParamKind::folder}, kFile{ParamKind::file};

// clang-format off
// X(type, field, YAML key, environment variable, default, parser, description). One line each.
#define RINGRT_ALLREDUCE_PARAMS(X) \
  X(int, ring, "allreduce.ring", "RING", 1, int_in(0, 2), "ring allreduce: 0 never, 1 when ndev > 2 and numel > ring_threshold, 2 always") \
  X(int, all2all, "allreduce.all2all", "ALL2ALL", 0, int_in(0, 2), "all2all allreduce, same levels as ring; wins over ring") \
  X(int64_t, ring_threshold, "allreduce.ring_threshold", "RING_ALLREDUCE_THRESHOLD", 256000, int_in(0, INT64_MAX), "elements above which ring/all2all level 1 applies (tinygrad's empirical crossover)") \
  X(std::vector<std::string>, reduce_leaders, "allreduce.reduce_leaders", "REDUCE_LEADERS", {}, kDeviceList, "devices that lead their group (comma list in env)") \
  X(std::string, hierarchical, "allreduce.hierarchical", "RINGRT_HIERARCHICAL", "leader", one_of("leader|reduce_scatter"), "form of the allreduce over device groups: leader (reduce onto each group's leader, allreduce across leaders, broadcast) or reduce_scatter (reduce-scatter in each group, allreduce of each share across groups, allgather)") \
  X(bool, cast, "allreduce.cast", "ALLREDUCE_CAST", true, kBoolean, "float16/bfloat16 allreduce copies stay 16-bit; 0 promotes to float32") \
  X(std::string, tuning, "allreduce.tuning", "RINGRT_TUNING", "auto", kFile, "the tuning file of `ringrt tune` that chooses the algorithm when ring, all2all and ring_threshold are at their defaults: auto (tuning.yaml in the cache folder, when there), off (tinygrad's rule), or a path") \
  X(std::string, algorithm, "allreduce.algorithm", "RINGRT_ALLREDUCE_ALGORITHM", "auto", one_of("auto|naive|ring|all2all|oneshot|twoshot|ring_fused|mpi"), "the allreduce's algorithm: auto (the tuning file, else the cost model; tinygrad's levels when set; across ranks MPI's own collectives up to allreduce.mpi_bytes) or one forced for every allreduce; oneshot, twoshot and ring_fused are fused (one launch per device) where the destination is the source's devices in one process, else naive, all2all and ring; mpi is MPI's own collective across ranks of one device each, else ring; reduce_scatter and allgather are fused too where their chunks lie in order, the other collectives take ring for ring, else their direct form") \
  X(int64_t, mpi_bytes, "allreduce.mpi_bytes", "RINGRT_MPI_BYTES", int64_t{8} << 20, int_in(0, INT64_MAX), "across ranks, while allreduce.algorithm is auto and ring, all2all and ring_threshold are at their defaults: a collective of at most this many bytes per device runs as MPI's own (algorithm mpi) where MPI's can serve it, a larger one by tinygrad's rule (MPI's wins small sizes, ringrt's ring large ones: docs/performance.md); 0 never") \
  X(bool, deterministic, "allreduce.deterministic", "RINGRT_DETERMINISTIC", false, kBoolean, "every reducing collective (allreduce, reduce_scatter, reduce, hierarchical, fused) folds each element in global device order, d0 op d1 op ... at the chunk's owner: the same bits for every algorithm, size, group or rank split and device; ring reduce-scatters directly, ring_fused runs as twoshot, groups reduce flat, the tuning file's choices for this mode") \
  X(std::string, wire, "allreduce.wire", "RINGRT_ALLREDUCE_WIRE", "native", one_of("native|bfloat16|fp8_e4m3|fp8_e5m2"), "the format float32 and bfloat16 allreduce, reduce_scatter and reduce chunks cross devices in, accumulated in float32: native (the dtype), bfloat16, or fp8_e4m3/fp8_e5m2 (32-element blocks with a power-of-two scale, sum only); refused for other dtypes (docs/compressed-wire.md)") \
  X(int, debug, "debug", "DEBUG", 0, int_in(0, 10), ">= 2 prints one line per allreduce: algorithm, ndev x numel, dtype")
#define RINGRT_RUNTIME_PARAMS(X) \
  X(bool, peer_reads, "runtime.peer_reads", "RINGRT_PEER_READS", true, kSwitch01, "a copy read only by kernels on a peer-reading device is elided; they read its source in place") \
  X(bool, peer_writes, "runtime.peer_writes", "RINGRT_PEER_WRITES", true, kSwitch01, "a kernel whose result is copied whole to peers that its device may write writes those copies itself; the copies are elided") \
  X(bool, kernel_split, "runtime.kernel_split", "RINGRT_KERNEL_SPLIT", true, kSwitch01, "a cpu kernel's range, and a copy that runs inline, is split across TBB workers") \
  X(bool, inline_small, "runtime.inline_small", "RINGRT_INLINE_SMALL", true, kSwitch01, "a cpu kernel or copy of at most 1 MiB that may start at once runs on the launching thread") \
  X(int64_t, stream_bytes, "runtime.stream_bytes", "RINGRT_STREAM_BYTES", int64_t{8} << 20, int_in(0, INT64_MAX), "a cpu kernel that writes at least this many bytes (output and peer outputs), none of them over an input, stores its whole 64-byte lines past the cache (non-temporal stores); 0 never") \
  X(bool, huge_pages, "runtime.huge_pages", "RINGRT_HUGE_PAGES", true, kSwitch01, "cpu device buffers of 2 MiB and more ask the kernel for transparent huge pages (madvise): 512 times fewer page faults when first touched") \
  X(bool, allreduce_in_place, "runtime.allreduce_in_place", "RINGRT_ALLREDUCE_IN_PLACE", true, kSwitch01, "an allreduce reads a buffer in place, not a contiguous copy of it") \
  X(int64_t, program_cache, "runtime.program_cache", "RINGRT_PROGRAM_CACHE", 512, int_in(1, 1 << 20), "compiled programs kept (least recently used dropped beyond); one per graph structure and settings") \
  X(int, kernel_opt, "runtime.kernel_opt", "RINGRT_KERNEL_OPT", 3, int_in(0, 3), "optimization level (-O) of cpu kernels: 3 runs fastest, 1 compiles about twice as fast (the tests use 1); read at the first cpu compile") \
  X(int, hip_logical, "runtime.hip_logical_devices", "RINGRT_HIP_LOGICAL_DEVICES", 0, int_in(0, 1024), "HIP devices to expose: 0 one per GPU; n: HIP:0..n-1 on the GPUs in turn (HIP:i on GPU i mod count), each with its own streams, events and memory; read at the first enumeration") \
  X(int, ranks_per_host, "runtime.ranks_per_host", "RINGRT_RANKS_PER_HOST", 0, int_in(0, 1 << 20), "under mpirun: 0 a host is a shared-memory node (MPI_Comm_split_type); n: ranks 0..n-1 are host 0, n..2n-1 host 1, ... (fakes hosts for tests); read when MPI starts") \
  X(int64_t, mpi_chunk_bytes, "runtime.mpi_chunk_bytes", "RINGRT_MPI_CHUNK_BYTES", 4 << 20, int_in(4096, 1 << 30), "bytes per message of a host-staged transfer between ranks (GPU memory): staging of one chunk overlaps the transfer of the last") \
  X(bool, mpi_stage_host, "runtime.mpi_stage_host", "RINGRT_MPI_STAGE_HOST", false, kSwitch01, "stage transfers between ranks through host buffers even from host memory (tests the GPU path on the cpu backend)") \
  X(bool, async, "runtime.async", "RINGRT_ASYNC", true, kSwitch01, "a realize whose devices all queue asynchronously (GPUs) returns once its work is enqueued: reading, writing or freeing a buffer waits for exactly the work it depends on, and synchronize() for all of it; 0 waits at every realize (the cpu backend always does)") \
  X(bool, graphs, "runtime.graphs", "RINGRT_GRAPHS", true, kSwitch01, "an asynchronous program's run on GPUs is recorded once as a graph (CUDA graph, hipGraph) with scratch memory of its own and then launched with one call, its nodes' pointers changed for other buffers; 0 launches each kernel and copy (a trace always does)") \
  X(double, watchdog_s, "runtime.watchdog_s", "RINGRT_WATCHDOG_S", 60, seconds_in(0.001, 1e7), "seconds an item of a run may take before the run fails with a TimeoutError") \
  X(double, mpi_start_s, "runtime.mpi_start_s", "RINGRT_MPI_START_S", 15, seconds_in(0.001, 1e7), "under mpirun: seconds the ranks wait for every rank to start MPI before a TimeoutError (the wait is the longer of this and runtime.watchdog_s)") \
  X(std::string, cache_dir, "runtime.cache_dir", "RINGRT_CACHE_DIR", "", kFolder, "compiled-kernel cache; empty: $XDG_CACHE_HOME/ringrt, else ~/.cache/ringrt (no YAML)") \
  X(int64_t, cache_max_bytes, "runtime.cache_max_bytes", "RINGRT_CACHE_MAX_BYTES", int64_t{1} << 30, int_in(int64_t{1} << 20, INT64_MAX), "the kernel cache folder's bound in bytes: past it, the entries used least recently are removed, down to 90% (safe with other processes using the folder)") \
  X(std::string, cxx, "runtime.cxx", "CXX", "g++", kCommand, "host C++ compiler command for cpu kernels, may start with a launcher: ccache g++ (no YAML); read at the first cpu compile")
// clang-format on

#define RINGRT_PARAM_FIELD(type, field, key, env, def, parser, description) type field = def;

// The allreduce settings: per thread (settings.hpp), one field per line of RINGRT_ALLREDUCE_PARAMS.
struct AllreduceSettings {
  RINGRT_ALLREDUCE_PARAMS(RINGRT_PARAM_FIELD)
  std::map<std::string, int> groups;  // device -> group id (hierarchical allreduce); from devices.groups
  bool operator==(const AllreduceSettings&) const = default;
};

// The process-wide tunables, one field per line of RINGRT_RUNTIME_PARAMS.
struct RuntimeParams {
  RINGRT_RUNTIME_PARAMS(RINGRT_PARAM_FIELD)
  bool operator==(const RuntimeParams&) const = default;
};

// One tunable, as tunables() lists it: YAML key, environment variable, default (as dumped),
// description, parser, and whether it is a field of RuntimeParams (else of AllreduceSettings).
struct Tunable {
  std::string_view key, env, default_value, description;
  ParamParser parser{ParamKind::integer};
  bool runtime = false;
  // False for kCommand and kFolder: a YAML file may not set it (see the top of this file).
  bool from_files() const { return parser.kind != ParamKind::command && parser.kind != ParamKind::folder; }
};
// Every tunable, in declaration order (allreduce first, then runtime).
const std::vector<Tunable>& tunables();
// The tunable with this YAML key, or null.
const Tunable* find_tunable(std::string_view key);

// ---- the process-wide values (RuntimeParams)

// The runtime tunables in force: for each, the value set by set_runtime_params, else its
// environment variable (read at this call), else its default. Throws ConfigError for a bad
// environment value of a tunable that is not set by code. Thread-safe.
RuntimeParams current_runtime_params();
// The runtime tunables in force as this thread last read them (current_runtime_params), read again at its
// first call after set_runtime_params or reset_runtime_params: hot paths (a device thread per kernel, a rule
// per match) pay one atomic load. The reference stays valid for the thread's life; its values change only
// at this thread's own later calls. Throws ConfigError like current_runtime_params. Thread-safe.
const RuntimeParams& runtime_params();
// Sets the tunables named in `keys` (every runtime tunable when empty) to r's values for the
// process: from now on they ignore the environment. The ringrt program installs its config's
// values so. Throws ConfigError, setting nothing, for a key that is not a runtime tunable or a value
// outside its tunable's bounds (the error a YAML file gets: "set_runtime_params: key 'runtime.kernel_opt':
// expected ..."). Thread-safe; hot paths that read runtime_params() see the change at their next call.
void set_runtime_params(const RuntimeParams& r, std::initializer_list<std::string_view> keys = {});
// The tunable runtime.watchdog_s as a duration: how long the executor waits for an item, and the ranks
// of an mpirun job for each other (the value in force: set_runtime_params's, else the environment's at
// each call, else 60 s).
std::chrono::milliseconds watchdog_timeout();

}  // namespace ringrt
