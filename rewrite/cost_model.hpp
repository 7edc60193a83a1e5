// The allreduce's cost model: the automatic choice where no tuning file decides (rewrite/tuning.hpp),
// in the spirit of NCCL's src/graph/tuning.cc (alpha-beta): per algorithm a latency per launch and per
// step across devices, and a bandwidth term per byte moved, from a backend's figures.
//
// For n devices of S bytes each (as rccl-tests counts them), an algorithm's cost is
//   T = launches * launch_us + steps * step_us + moved / bandwidth
// launches: what one device launches in turn (kernels, copies that are not elided, its fused launch);
// steps: the times a device waits for another's work of this collective (an event across devices, a
// fused form's barrier); moved: the bytes one device reads and writes in memory, times n where the
// devices share one memory (cpu). With peer access (kernels read and write peers' memory in place:
// runtime.peer_reads and peer_writes, rewrite/rules/allreduce.cpp's forms) the copies cost nothing:
//   naive    1 launch,          0 steps,      (n+1) S   (every input read, the output written)
//   ring     2(n-1) launches,   2(n-1)-1,     5(n-1)/n S (each reduce step 3 chunks, each forward 2)
//   all2all  1 launch,          1 step,       2 S        (own chunk of every input read, written to all)
//   oneshot  1 launch,          1 barrier,    (n+1) S
//   twoshot  1 launch,          1 barrier,    2 S
//   ring_fused 1 launch,        2(n-1) waits for a neighbour's flag, 5(n-1)/n S (the ring's bytes)
// Without peer access the copies are launches and bytes too (naive n-1 copies of S, ring and all2all
// one chunk in and out per step, twoshot a second barrier and the gathers). The cheapest wins; a tie
// goes to the first of naive, ring, all2all, oneshot, twoshot, ring_fused (the unfused form over its
// fused twin).
//
// Figures per device kind: the cpu backend measures them once per machine (runtime/cpu/cpu_cost.cpp,
// at most 0.4 s) at the first automatic choice on cpu devices, and the cost file in the cache
// folder keeps them (cost_figures_path); the hip backend's are documented defaults, unmeasured
// (cost_figures). Other kinds (NULL placeholder devices) have none: tinygrad's rule chooses there.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/algorithm.hpp"

namespace ringrt {

inline constexpr std::string_view kCostFormat = "ringrt-cost-2";
inline constexpr size_t kMaxCostBytes = 4096;

struct CostFigures {
  double launch_us = 0;  // one launch on a device, microseconds
  double step_us = 0;    // one step across devices (an event waited for, a barrier), microseconds
  double gbps = 0;       // bytes read and written per second in a device's memory, GB/s (1e9 B/s)
  bool shared = false;   // the devices share one memory (their bytes add up)
  bool peer = true;      // kernels read and write peers' memory in place (copies elided)
  bool operator==(const CostFigures&) const = default;
};

// What one device does in an allreduce of `bytes` on ndev devices (the table above).
struct AlgorithmCost {
  double launches = 0, steps = 0, moved = 0;
};
// InternalError for an algorithm the table has no row for (the hierarchical forms).
AlgorithmCost algorithm_cost(Algorithm algorithm, int64_t ndev, int64_t bytes, bool peer);
// T of the table above, microseconds.
double modelled_us(const CostFigures& f, Algorithm algorithm, int64_t ndev, int64_t bytes);
// The cheapest of kAllreduceAlgorithms (naive, ring, all2all, oneshot, twoshot, ring_fused; ties to the
// first); naive for ndev < 2. deterministic (allreduce.deterministic): ring and ring_fused left out, whose
// deterministic forms (the direct reduce-scatter, twoshot) are not the ones the table models.
Algorithm modelled_choice(const CostFigures& f, int64_t ndev, int64_t bytes, bool deterministic = false);

// A backend's measurement of its figures (bounded, well under a second; thread-safe to call once).
using CostMeasure = std::function<CostFigures()>;
// Registers kind's measurement (kind: CPU, HIP, ...; a later one replaces it). Thread-safe.
void register_cost_measure(const std::string& kind, CostMeasure measure);

// The figures of a kind and where they come from, for the run header: "measured <when> (/path/cost-CPU.yaml)",
// "cached (/path/cost-CPU.yaml, <when>)", "unmeasured defaults for HIP", "measured now, not cached (why)".
struct CostModel {
  std::optional<CostFigures> figures;  // none: tinygrad's rule
  std::string origin;
};
// Once per process per kind and cache folder: the cost file when it is valid (this format, kind and
// machine), else the registered measurement, written to the cost file (a file that cannot be read or
// parsed is measured again and replaced, with one warning; one that cannot be written leaves the figures
// in this process only, said by the origin alone: an unusable cache folder is the kernel cache's one warning). HIP
// without a measurement: documented defaults. No measurement for the kind: no figures. Thread-safe: one thread
// measures, the others wait for it; a measurement started from within a measurement gets no figures. Never throws.
CostModel cost_model_for(const std::string& kind);

// The cost file of a kind: user_cache_dir()/cost-<kind>.yaml, empty without a cache folder.
std::string cost_figures_path(const std::string& kind);
// The file's text and back. parse_cost_figures throws ConfigError "NAME:LINE:COL: key 'k': ..." for a
// YAML error, a missing or unknown key, another format or kind, a figure not finite and > 0.
struct CostFile {
  std::string kind, machine, made;
  CostFigures figures;
};
std::string cost_figures_yaml(const CostFile& file);
CostFile parse_cost_figures(std::string_view yaml, const std::string& name);

// Tests: how many measurements ran in this process; forget every kind's figures (read again next time).
int64_t cost_measurements();
void forget_cost_models();

}  // namespace ringrt
