#include "runtime/cli/report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "codegen/compile_cache.hpp"
#include "core/algorithm.hpp"
#include "core/errors.hpp"
#include "core/files.hpp"
#include "rewrite/cost_model.hpp"
#include "rewrite/rules/multi.hpp"
#include "rewrite/tuning.hpp"

namespace ringrt {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  for (size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
  }
  return out;
}

std::string groups_text(const ExperimentConfig& cfg) {
  return cfg.groups.empty() ? "none" : fmt::format("[{}]", fmt::join(cfg.groups, ", "));
}

// "node1 (ranks 0, 1), node2 (ranks 2, 3)": each host's name and ranks.
std::string hosts_text(const RankInfo& me) {
  std::vector<std::string> hosts;
  for (int h = 0; h < me.hosts; ++h) {
    std::vector<int> ranks;
    for (int r = 0; r < me.ranks; ++r)
      if (me.host_of_rank[static_cast<size_t>(r)] == h) ranks.push_back(r);
    hosts.push_back(fmt::format("{} (ranks {})", me.host_names.at(static_cast<size_t>(h)), fmt::join(ranks, ", ")));
  }
  return fmt::format("{}", fmt::join(hosts, ", "));
}

// "key = value  <- origin": where the key was set, or for a map (experiment.sizes) where each of its
// leaves that was set got its value, named by the leaf when they differ ("factor: FILE:13:42, max:
// --set ..."), once when they are one (a --set of the whole map); "default" when none was set.
std::string origin_line(const ExperimentConfig& cfg, const std::string& key, const std::string& value) {
  std::vector<std::string> named, origins;
  for (auto it = cfg.origins.lower_bound(key); it != cfg.origins.end(); ++it) {
    if (it->first != key && !it->first.starts_with(key + ".")) break;
    named.push_back(it->first == key ? it->second
                                     : fmt::format("{}: {}", it->first.substr(key.size() + 1), it->second));
    origins.push_back(it->second);
  }
  bool one = !origins.empty() && std::all_of(origins.begin(), origins.end(), [&](auto& o) { return o == origins[0]; });
  return fmt::format("{} = {}  <- {}\n", key, value,
                     origins.empty() ? "default"
                     : one           ? origins[0]
                                     : fmt::format("{}", fmt::join(named, ", ")));
}

// Every tunable with its value and where it was set (dump_params), then the groups, as config --dump.
std::vector<std::string> settings_lines(const ExperimentConfig& cfg) {
  std::vector<std::string> out = lines_of(dump_params({cfg.settings, cfg.runtime}, cfg.origins));
  out.push_back(lines_of(origin_line(cfg, "devices.groups", fmt::format("[{}]", fmt::join(cfg.groups, ", ")))).back());
  out.push_back(choice_line(cfg));
  return out;
}

// A table line: size, count, type, redop, algo; a time group (time, algbw, busbw); #wrong; with FSDP
// steps (experiment.sharding) three columns more: the collective, its phase, its bucket; the timing.
// experiment.timing both puts the pipelined time group beside the latency one, before #wrong, as
// nccl-tests prints its out-of-place and in-place times side by side in one row: one line per size
// compares the two at a glance, and every other column (size, algo, #wrong) is said once.
constexpr char kLeadColumns[] = "{:>12} {:>13} {:>9} {:>6} {:>15}";
constexpr char kTimeColumns[] = " {:>11} {:>8} {:>8}";
constexpr char kWrongColumn[] = " {:>7}";
constexpr char kErrorColumns[] = " {:>9} {:>9}";  // allreduce.wire with check: max abs and rel error
constexpr char kStepColumns[] = " {:>14} {:>5} {:>4}";
constexpr char kTimingColumn[] = " {:>9}";
using Cells = std::array<std::string, 3>;

// One table line (with its newline) from its cells: `times` holds one time group, or two with timing
// both; `step` is empty but in FSDP steps.
std::string table_line(const std::array<std::string, 5>& lead, const std::vector<Cells>& times,
                       const std::string& wrong, const std::optional<Cells>& step, const std::string& timing,
                       const std::optional<std::array<std::string, 2>>& errors = std::nullopt) {
  std::string out = fmt::format(kLeadColumns, lead[0], lead[1], lead[2], lead[3], lead[4]);
  for (const Cells& t : times) out += fmt::format(kTimeColumns, t[0], t[1], t[2]);
  out += fmt::format(kWrongColumn, wrong);
  if (errors) out += fmt::format(kErrorColumns, (*errors)[0], (*errors)[1]);
  if (step) out += fmt::format(kStepColumns, (*step)[0], (*step)[1], (*step)[2]);
  return out + fmt::format(kTimingColumn, timing) + "\n";
}

// A time group's cells: time (us), algbw and busbw (GB/s), or N/A where nothing was timed.
Cells time_cells(const std::optional<Timed>& t) {
  if (!t) return {"N/A", "N/A", "N/A"};
  return {fmt::format("{:.1f}", t->time_us), fmt::format("{:.2f}", t->algbw), fmt::format("{:.2f}", t->busbw)};
}

// The header's timing line: how the times were taken (experiment.timing; experiment.hpp, run_experiment).
std::string timing_text(const ExperimentConfig& cfg) {
  std::string latency = "latency (each timed call realized and waited for, on the host's clock)";
  std::string pipelined =
      cfg.form == SweepForm::buckets
          ? "pipelined (each timed step's collectives enqueued back to back, the whole step timed on the devices' "
            "clocks: no collective has a time of its own)"
          : "pipelined (the timed calls enqueued back to back, one wait at the end, timed on the devices' clocks, "
            "divided by the iterations)";
  if (cfg.timing == "latency") return latency;
  if (cfg.timing == "pipelined") return pipelined;
  return "both: " + latency + ", then " + pipelined + ", side by side";
}

bool sharded(const ExperimentConfig& cfg) { return cfg.form == SweepForm::buckets && cfg.sharding != "no_shard"; }

// The header's first line: what runs, e.g. "allreduce sum float32 over 4 cpu devices".
std::string what_runs(const ExperimentConfig& cfg) {
  if (sharded(cfg))  // FSDP runs two collectives, both reducing or gathering
    return fmt::format("FSDP {} steps (allgather, reduce_scatter {}) {} over {} {} devices", cfg.sharding, cfg.op_name,
                       dtype_name(cfg.dtype), cfg.devices.size(), cfg.backend);
  return fmt::format("{} {}{} over {} {} devices{}", collective_name(cfg.collective),
                     collective_reduces(cfg.collective) ? cfg.op_name + " " : "", dtype_name(cfg.dtype),
                     cfg.devices.size(), cfg.backend,
                     cfg.collective == Collective::broadcast || cfg.collective == Collective::reduce
                         ? fmt::format(", root {} ({})", cfg.root, cfg.devices.at(static_cast<size_t>(cfg.root)))
                         : "");
}

// How the steps of a bucket form run, for the header's warmup line.
std::string steps_text(const ExperimentConfig& cfg) {
  if (cfg.form != SweepForm::buckets) return "";
  if (sharded(cfg))
    return fmt::format(
        ", buckets: FSDP units (the last the root), parameters sharded and {}, gradients written "
        "from the host and reduce-scattered",
        cfg.sharding == "full_shard" ? "gathered in forward and again in backward" : "gathered once in forward");
  return cfg.in_place ? ", buckets: persistent, written from the host and allreduced in place"
                      : ", buckets: allreduced out of place";
}

}  // namespace

namespace {
// Whether devices.groups make the hierarchical forms (rewrite/rules/allreduce.cpp hierarchical_form): several
// groups, one of more than one device (a job of one device per rank on several hosts is flat).
bool hierarchical_groups(const std::vector<int>& groups) {
  std::map<int, int> size;
  for (int g : groups) ++size[g];
  return size.size() > 1 && std::any_of(size.begin(), size.end(), [](const auto& kv) { return kv.second > 1; });
}

// The automatic choice in deterministic mode (allreduce.deterministic; collective_algorithm): no tuning file, no
// hierarchical form for a reducing collective, the cost model without ring and ring_fused, else tinygrad's rule.
std::string deterministic_choice_line(const ExperimentConfig& cfg) {
  const AllreduceSettings& s = cfg.settings;
  std::string head =
      "algorithm choice: deterministic (allreduce.deterministic: each element folded in device order; "
      "no tuned choice for it";
  bool grouped = hierarchical_groups(cfg.groups);
  if (grouped) head += "; reducing collectives flat over the device groups";
  Collective kind = cfg.collective == Collective::reduce ? Collective::allreduce : cfg.collective;
  CollectiveSize c = CollectiveSize::of(kind, cfg.devices, 1, cfg.dtype);
  if (!cfg.devices.empty() && c.ranks == 0 && kind == Collective::allreduce && s.tuning != "off" && c.ndev > 1)
    if (CostModel m = cost_model_for(c.kind); m.figures)
      return fmt::format("{}): cost model without ring and ring_fused, {} figures {}", head, c.kind, m.origin);
  return head + "): tinygrad's rule";
}
}  // namespace

// Where the automatic algorithm choice comes from: the tuning file (tuning_for), the cost model of the
// devices' kind (cost_model_for: an allreduce without a tuned choice) or tinygrad's rule, or
// that an algorithm (allreduce.algorithm) or ring/all2all are forced. "algorithm choice: /path/tuning.yaml (ringrt
// tune, ..., 36 choices)".
std::string choice_line(const ExperimentConfig& cfg) {
  const AllreduceSettings& s = cfg.settings;
  // forced for every allreduce; the other collectives take ring or their direct form
  if (std::optional<Algorithm> forced = forced_algorithm(s))
    return fmt::format("algorithm choice: {}, forced (allreduce.algorithm {}{})", algorithm_name(*forced),
                       algorithm_name(*forced),
                       is_fused(*forced) ? "; what it cannot fuse runs unfused, as `algorithms` says"
                       : *forced == Algorithm::mpi
                           ? "; where MPI's collective cannot serve (one process, several "
                             "devices of a rank, 16-bit floats or FP8 reduced, a wire, "
                             "deterministic, a reduce) the ring (an alltoall: its direct form), as `algorithms` says"
                           : "");
  if (!automatic_levels(s)) {  // the levels as collective_algorithm reads them; no tuning file
    std::string set = fmt::format("allreduce.ring {}, allreduce.all2all {}, allreduce.ring_threshold {}", s.ring,
                                  s.all2all, s.ring_threshold);
    if (s.all2all >= 2) return "algorithm choice: all2all, forced (" + set + ")";
    if (s.ring >= 2 && s.all2all == 0) return "algorithm choice: ring, forced (" + set + ")";
    auto level = [&](int l) {
      return l >= 2   ? std::string("always")
             : l == 1 ? fmt::format("above {} elements on 3+ devices", s.ring_threshold)
                      : std::string("never");
    };
    return fmt::format("algorithm choice: as set, not tuned: all2all {}, else ring {}, else naive ({})",
                       level(s.all2all), level(s.ring), set);
  }
  Tuning t = tuning_for(s.tuning);
  // the device set and settings: a file tuned for other devices (kind, count), another dtype or other
  // allreduce.wire / deterministic settings has no choice here
  CollectiveSize c = CollectiveSize::of(cfg.collective == Collective::reduce ? Collective::allreduce : cfg.collective,
                                        cfg.devices, 1, cfg.dtype);
  WireFormat wire = parse_wire_format(s.wire);
  bool covered = t.table && std::any_of(t.table->choices.begin(), t.table->choices.end(), [&](const TunedChoice& x) {
                   return x.collective == c.collective && x.kind == c.kind && x.devices == c.ndev &&
                          x.dtype == c.dtype && x.wire == wire && x.deterministic == s.deterministic &&
                          x.ranks == (c.ranks > 1 ? c.ranks : 0);  // in one process, or across as many ranks
                 });
  if (s.deterministic && combines(cfg.collective)) {  // the others move values: deterministic changes nothing
    bool flat = !hierarchical_groups(cfg.groups);
    if (covered && flat && c.ranks <= 1) return "algorithm choice: deterministic, " + t.origin;
    return deterministic_choice_line(cfg);
  }
  if (hierarchical_groups(cfg.groups))  // a tuning file, if any, is for flat ones
    return std::string("algorithm choice: hierarchical over device groups, tinygrad's rule inside") +
           (t.table ? " (the tuning file is for flat collectives)" : "");
  if (cfg.devices.empty()) return "algorithm choice: " + t.origin;
  // across ranks: the file's choices across as many ranks, else MPI's own up to allreduce.mpi_bytes, else the rule
  if (c.ranks > 1) {
    // a reduce onto one root takes the allreduce's tuned choice but never MPI's own (no fused form of it)
    std::string untuned =
        !mpi_by_default(CollectiveSize::of(cfg.collective, cfg.devices, 1, cfg.dtype), s)
            ? "tinygrad's rule"
            : fmt::format("MPI's own (mpi) up to allreduce.mpi_bytes ({} B), else tinygrad's rule", s.mpi_bytes);
    if (covered) return fmt::format("algorithm choice: across {} ranks, {}; else {}", c.ranks, t.origin, untuned);
    return fmt::format("algorithm choice: across {} ranks, {}{}", c.ranks, untuned,
                       t.table ? fmt::format(" (the tuning file has no choice across {} ranks)", c.ranks) : "");
  }
  if (covered) return "algorithm choice: " + t.origin;
  // no tuned choice: an allreduce takes the cost model of its devices' kind where it has figures
  // (collective_algorithm, rewrite/cost_model.hpp), unless allreduce.tuning is off
  std::string modelled;
  if (c.collective == Collective::allreduce && s.tuning != "off" && c.ndev > 1) {
    CostModel m = cost_model_for(c.kind);
    if (m.figures)
      modelled =
          fmt::format("cost model, {} figures {} (launch {:.2f} us, step {:.2f} us, {:.0f} GB/s{})", c.kind, m.origin,
                      m.figures->launch_us, m.figures->step_us, m.figures->gbps, m.figures->shared ? " shared" : "");
  }
  if (!t.table && modelled.empty()) return "algorithm choice: " + t.origin;
  if (!t.table) {  // "none: tinygrad's rule (no file ...)" -> "none (no file ...)": the model chooses
    std::string origin = t.origin;
    if (size_t at = origin.find(": tinygrad's rule "); at != std::string::npos) origin.erase(at, 17);
    return "algorithm choice: " + modelled + "; tuning file: " + origin;
  }
  std::string why = fmt::format("{} has no choice for {} on {} {} devices in {}{}", tuning_path(s.tuning),
                                collective_name(c.collective), c.ndev, c.kind, dtype_name(c.dtype),
                                s.wire == "native" ? "" : " over allreduce.wire " + s.wire);
  std::string then = modelled.empty() ? "tinygrad's rule" : "the cost model";
  if (cfg.collective != Collective::alltoall)
    warn_once("tuning cover " + why, "the tuning file " + why + "; " + then + " chooses");
  return "algorithm choice: " + (modelled.empty() ? "tinygrad's rule (" + why + ")" : modelled + " (" + why + ")");
}

namespace {
// "kernel cache: DIR, N entries, X MiB (bound Y MiB)": the folder runtime.cache_dir names (codegen/compile_cache.hpp;
// none: kernels kept for the process only) and how much of runtime.cache_max_bytes it holds.
std::string kernel_cache_line() {
  std::filesystem::path dir = codegen::cache_dir();
  double bound = static_cast<double>(current_runtime_params().cache_max_bytes) / (1 << 20);
  if (dir.empty()) return "kernel cache: none (no cache folder: kernels are kept for the process only)";
  codegen::CacheUsage u = codegen::cache_usage(dir);
  return fmt::format("kernel cache: {}, {} entr{}, {:.1f} MiB (bound {:.0f} MiB, runtime.cache_max_bytes)",
                     dir.string(), u.entries, u.entries == 1 ? "y" : "ies", static_cast<double>(u.bytes) / (1 << 20),
                     bound);
}
}  // namespace

std::string describe_config(const ExperimentConfig& cfg) {
  std::string out;
  auto line = [&](const std::string& key, const std::string& value) { out += origin_line(cfg, key, value); };
  line("backend", cfg.backend);
  line("devices.count", fmt::format("[{}]", fmt::join(cfg.devices, ", ")));
  line("devices.groups", fmt::format("[{}]", fmt::join(cfg.groups, ", ")));
  out += dump_params({cfg.settings, cfg.runtime}, cfg.origins);  // every tunable, with where it was set
  out += choice_line(cfg) + "\n";
  out += kernel_cache_line() + "\n";
  line("experiment.collective", std::string(collective_name(cfg.collective)));
  line("experiment.root", std::to_string(cfg.root));
  line("experiment.op", cfg.op_name);
  line("experiment.dtype", std::string(dtype_name(cfg.dtype)));
  if (cfg.form == SweepForm::sizes)
    line("experiment.sizes", fmt::format("{{min: {}, max: {}, factor: {}}}", format_bytes(cfg.size_min),
                                         format_bytes(cfg.size_max), cfg.size_factor));
  else
    line(cfg.form == SweepForm::counts ? "experiment.counts" : "experiment.buckets",
         fmt::format("[{}]", fmt::join(cfg.counts, ", ")));
  line("experiment.warmup", std::to_string(cfg.warmup));
  line("experiment.iters", std::to_string(cfg.iters));
  line("experiment.check", cfg.check ? "true" : "false");
  line("experiment.timing", cfg.timing);
  line("experiment.in_place", cfg.in_place ? "true" : "false");
  line("experiment.sharding", cfg.sharding);
  line("regress.busbw_tolerance",
       cfg.busbw_tolerance ? fmt::format("{}", *cfg.busbw_tolerance) : "the baseline's, else 0.5 (ringrt regress)");
  return out;
}

std::string format_header(const ExperimentConfig& cfg) {
  std::string out;
  out += fmt::format("# ringrt run {}: {}\n", cfg.file, what_runs(cfg));
  out += fmt::format("# backend: {}\n# devices: {}\n# groups: {}\n", cfg.backend, fmt::join(cfg.devices, ", "),
                     groups_text(cfg));
  if (const RankInfo& me = rank_info(); me.ranks > 1)  // under mpirun: the table is rank 0's, #wrong every rank's
    out += fmt::format("# ranks: {} on {} host(s): {}; rank 0 prints, #wrong sums every rank\n", me.ranks, me.hosts,
                       hosts_text(me));
  const char* form = cfg.form == SweepForm::buckets ? "steps" : "iterations";
  out += fmt::format("# warmup: {} {}, timed: {} {}, check: {}{}\n", cfg.warmup, form, cfg.iters, form,
                     cfg.check ? "true" : "false", steps_text(cfg));
  out += fmt::format("# timing: {}\n", timing_text(cfg));
  out += "# " + kernel_cache_line() + "\n";
  // counts the collective cannot take as given (a multiple of the devices for reduce_scatter, allgather and
  // alltoall; FSDP pads up): each, and what runs; the table's count column is what runs
  std::vector<std::string> rounded;
  for (int64_t c : cfg.form == SweepForm::buckets ? cfg.counts : cfg.sweep_counts())
    if (int64_t runs = collective_count(cfg, c); runs != c) rounded.push_back(fmt::format("{} -> {}", c, runs));
  if (!rounded.empty())
    out += fmt::format("# counts rounded to a multiple of the {} devices ({}): {}\n", cfg.devices.size(),
                       collective_name(cfg.collective), fmt::join(rounded, ", "));
  out += "# settings:\n";
  for (const std::string& l : settings_lines(cfg)) out += "#   " + l + "\n";
  out += "#\n";
  bool both = cfg.timing == "both";
  if (both) {  // the time groups' titles, right-aligned over them
    size_t lead = fmt::format(kLeadColumns, "", "", "", "", "").size(),
           group = fmt::format(kTimeColumns, "", "", "").size();
    out += fmt::format("{:<{}}{:>{}}{:>{}}\n", "#", lead, "latency: each call waited", group, "pipelined: back to back",
                       group);
  }
  std::vector<Cells> names(both ? 2 : 1, Cells{"time", "algbw", "busbw"}),
      units(names.size(), {"(us)", "(GB/s)", "(GB/s)"});
  std::optional<Cells> step =
      sharded(cfg) ? std::optional<Cells>(Cells{"collective", "phase", "bucket"}) : std::nullopt;
  // allreduce.wire with check: each row's largest error against the exact result (docs/compressed-wire.md)
  using Errors = std::optional<std::array<std::string, 2>>;
  bool wired = cfg.check && cfg.settings.wire != "native";
  out += table_line({"#       size", "count", "type", "redop", "algo"}, names, "#wrong", step, "timing",
                    wired ? Errors({"maxabs", "maxrel"}) : std::nullopt);
  std::string unit_line =
      table_line({"#        (B)", "(elements)", "", "", ""}, units, "",
                 step ? std::optional<Cells>(Cells{}) : std::nullopt, "", wired ? Errors({"", ""}) : std::nullopt);
  unit_line.erase(unit_line.find_last_not_of(" \n") + 1);  // no trailing blanks
  return out + unit_line + "\n";
}

std::string format_row(const ResultRow& r) {
  std::vector<Cells> times{
      time_cells(r.timed ? std::optional<Timed>(Timed{r.time_us, r.algbw, r.busbw}) : std::nullopt)};
  if (r.timing == "both") times.push_back(time_cells(r.pipelined));
  std::optional<Cells> step;
  if (!r.phase.empty()) step = Cells{std::string(collective_name(r.collective)), r.phase, std::to_string(r.bucket)};
  std::optional<std::array<std::string, 2>> errors;
  if (r.max_abs_err && r.max_rel_err)
    errors = std::isnan(*r.max_abs_err) ? std::array<std::string, 2>{"N/A", "N/A"}  // not measured (make_row)
                                        : std::array<std::string, 2>{fmt::format("{:.2e}", *r.max_abs_err),
                                                                     fmt::format("{:.2e}", *r.max_rel_err)};
  return table_line({std::to_string(r.bytes), std::to_string(r.count), r.type, r.redop, r.algo}, times,
                    r.wrong < 0 ? "N/A" : std::to_string(r.wrong), step, r.timing, errors);
}

std::string row_name(const ResultRow& r) {
  std::string out = std::string(collective_name(r.collective)) +
                    (r.redop.empty() || r.redop == "none" ? "" : " " + r.redop) + " " + r.type + " " +
                    format_bytes(r.bytes);
  if (r.bucket >= 0) out += " bucket " + std::to_string(r.bucket);
  return r.phase.empty() ? out : out + " " + r.phase;
}

std::string format_footer(const ExperimentResult& result) {
  std::string out;
  if (result.step) {
    const StepSummary& s = *result.step;
    std::string collectives = s.collectives != s.buckets ? fmt::format(" ({} collectives)", s.collectives) : "";
    out +=
        fmt::format("# step: {} buckets{}, {} B per device, {:.1f} us per step, algbw {:.2f} GB/s, busbw {:.2f} GB/s",
                    s.buckets, collectives, s.bytes, s.time_us, s.algbw, s.busbw);
    // the host writes of in-place buckets are timed apart: the step time is the allreduces alone
    out += s.write_us ? fmt::format("; host writes {:.1f} us per step (not in the step time)\n", *s.write_us) : "\n";
    if (s.timing == "both" && s.pipelined)  // the step line above is the latency steps'
      out += fmt::format("# step, pipelined: {:.1f} us per step, algbw {:.2f} GB/s, busbw {:.2f} GB/s\n",
                         s.pipelined->time_us, s.pipelined->algbw, s.pipelined->busbw);
  }
  bool checked = std::any_of(result.rows.begin(), result.rows.end(), [](const ResultRow& r) { return r.wrong >= 0; });
  std::string verdict =
      !checked ? "not checked" : fmt::format("{} {}", result.wrong(), result.wrong() ? "FAILED" : "OK");
  if (result.stopped)  // a stopped run is never OK: the rows not run were not checked
    verdict = fmt::format("{}{}stopped after {} of {} rows", checked ? fmt::format("{} ", result.wrong()) : "",
                          result.wrong() ? "FAILED, " : "", result.rows.size(), result.planned);
  out += "# #wrong in all: " + verdict + "\n";
  double sum = 0, pipelined_sum = 0;
  size_t timed = 0, pipelined = 0;
  for (const ResultRow& r : result.rows) {
    if (r.timed) sum += r.busbw, ++timed;
    if (r.timing == "both" && r.pipelined) pipelined_sum += r.pipelined->busbw, ++pipelined;
  }
  if (timed == 0 && !result.rows.empty())  // pipelined steps: one clock times each whole step
    out += "# Avg bus bandwidth: N/A (the collectives of pipelined steps are not timed alone: see the step line)\n";
  else
    out += fmt::format("# Avg bus bandwidth: {:.3f} GB/s\n", timed == 0 ? 0.0 : sum / timed);
  if (pipelined > 0) out += fmt::format("# Avg bus bandwidth, pipelined: {:.3f} GB/s\n", pipelined_sum / pipelined);
  return out;
}

std::string csv_text(const ExperimentConfig& cfg, const ExperimentResult& result) {
  std::ostringstream out;
  // columns added after the first ones are appended: timing, then the pipelined time and bandwidths, then the
  // wire's errors
  out << "size_bytes,count,type,redop,algo,time_us,algbw_gbs,busbw_gbs,wrong,ndev,backend,collective,phase,bucket,"
         "timing,pipelined_time_us,pipelined_algbw_gbs,pipelined_busbw_gbs,max_abs_err,max_rel_err\n";
  auto times = [](const std::optional<Timed>& t) {  // empty where nothing was timed
    return t ? fmt::format("{:.3f},{:.4f},{:.4f}", t->time_us, t->algbw, t->busbw) : std::string(",,");
  };
  auto error = [](const std::optional<double>& e) {  // empty without a wire or where not measured
    return e && !std::isnan(*e) ? fmt::format("{:.6e}", *e) : std::string();
  };
  for (const ResultRow& r : result.rows)
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.bytes, r.count, r.type, r.redop, r.algo,
                       times(r.timed ? std::optional<Timed>(Timed{r.time_us, r.algbw, r.busbw}) : std::nullopt),
                       r.wrong < 0 ? "" : std::to_string(r.wrong), cfg.devices.size(), cfg.backend,
                       collective_name(r.collective), r.phase, r.bucket < 0 ? "" : std::to_string(r.bucket), r.timing,
                       times(r.pipelined), error(r.max_abs_err), error(r.max_rel_err));
  return out.str();
}

std::string json_text(const ExperimentConfig& cfg, const ExperimentResult& result) {
  using Json = nlohmann::ordered_json;
  Json j;
  j["backend"] = cfg.backend;
  j["devices"] = cfg.devices;
  j["groups"] = cfg.groups;
  j["collective"] = std::string(collective_name(cfg.collective));
  j["op"] = cfg.op_name;
  j["dtype"] = std::string(dtype_name(cfg.dtype));
  j["settings"] = settings_lines(cfg);
  j["rows"] = Json::array();
  auto number = [](bool has, double v) { return has ? Json(v) : Json(nullptr); };  // null: not timed
  for (const ResultRow& r : result.rows)
    j["rows"].push_back(
        {{"size", r.bytes},
         {"count", r.count},
         {"type", r.type},
         {"redop", r.redop},
         {"algo", r.algo},
         {"time_us", number(r.timed, r.time_us)},
         {"algbw", number(r.timed, r.algbw)},
         {"busbw", number(r.timed, r.busbw)},
         {"wrong", r.wrong < 0 ? Json(nullptr) : Json(r.wrong)},
         {"collective", std::string(collective_name(r.collective))},  // keys added after the first ones: appended
         {"phase", r.phase.empty() ? Json(nullptr) : Json(r.phase)},
         {"bucket", r.bucket < 0 ? Json(nullptr) : Json(r.bucket)},
         {"timing", r.timing},
         {"pipelined_time_us", number(r.pipelined.has_value(), r.pipelined.value_or(Timed{}).time_us)},
         {"pipelined_algbw", number(r.pipelined.has_value(), r.pipelined.value_or(Timed{}).algbw)},
         {"pipelined_busbw", number(r.pipelined.has_value(), r.pipelined.value_or(Timed{}).busbw)},
         // allreduce.wire's measured errors: null without a wire, check off or where not measured
         {"max_abs_err", number(r.max_abs_err && !std::isnan(*r.max_abs_err), r.max_abs_err.value_or(0))},
         {"max_rel_err", number(r.max_rel_err && !std::isnan(*r.max_rel_err), r.max_rel_err.value_or(0))}});
  j["step"] = nullptr;
  Timed p = result.step ? result.step->pipelined.value_or(Timed{}) : Timed{};
  if (result.step)
    j["step"] = {{"buckets", result.step->buckets},
                 {"bytes", result.step->bytes},
                 {"time_us", result.step->time_us},
                 {"algbw", result.step->algbw},
                 {"busbw", result.step->busbw},
                 {"write_us", result.step->write_us ? Json(*result.step->write_us) : Json(nullptr)},
                 {"collectives", result.step->collectives},
                 {"timing", result.step->timing},
                 {"pipelined_time_us", number(result.step->pipelined.has_value(), p.time_us)},
                 {"pipelined_algbw", number(result.step->pipelined.has_value(), p.algbw)},
                 {"pipelined_busbw", number(result.step->pipelined.has_value(), p.busbw)}};
  j["sharding"] = cfg.sharding;  // added after the first keys: appended
  j["timing"] = cfg.timing;
  j["wire"] = cfg.settings.wire;  // allreduce.wire and allreduce.deterministic, as schedule --json names them
  j["deterministic"] = cfg.settings.deterministic;
  return j.dump(2) + "\n";
}

void write_csv(OutputFile& file, const ExperimentConfig& cfg, const ExperimentResult& result) {
  file.write(csv_text(cfg, result));
}

void write_json(OutputFile& file, const ExperimentConfig& cfg, const ExperimentResult& result) {
  file.write(json_text(cfg, result));
}

std::string schedule_json(const Schedule& schedule, int64_t ndev, int64_t count, DType dtype, const std::string& choice,
                          bool deterministic, const std::string& wire) {
  nlohmann::ordered_json j;
  j["algorithms"] = schedule.algorithms;
  j["ndev"] = ndev;
  j["count"] = count;
  j["dtype"] = std::string(dtype_name(dtype));
  j["copies"] = nlohmann::ordered_json::array();
  for (const CopyItem& c : schedule.copies())
    j["copies"].push_back({{"src", c.src}, {"dst", c.dst}, {"bytes", c.bytes}});
  j["kernels"] = schedule.kernels();
  constexpr std::string_view kPrefix = "algorithm choice: ";  // added after the first keys: appended
  if (!choice.empty()) j["choice"] = choice.starts_with(kPrefix) ? choice.substr(kPrefix.size()) : choice;
  j["fused"] = nlohmann::ordered_json::array();  // fused collective items (rewrite/collective.hpp)
  for (const FusedItem& f : schedule.fused_items)
    j["fused"].push_back({{"item", f.item},
                          {"devices", f.device},
                          {"collective", f.collective},
                          {"algorithm", f.algorithm},
                          {"op", f.op},
                          {"count", f.numel}});
  j["deterministic"] = deterministic;  // allreduce.deterministic (added after "fused")
  j["wire"] = wire;                    // allreduce.wire (added after "deterministic")
  return j.dump(2) + "\n";
}

std::string schedule_text(const Schedule& schedule, int64_t ndev, int64_t count, DType dtype, Collective collective,
                          const std::string& choice, bool deterministic, const std::string& wire) {
  std::string out = fmt::format("{} of {} x {} {}: algorithms [{}], {} copies, {} kernels", collective_name(collective),
                                ndev, count, dtype_name(dtype), fmt::join(schedule.algorithms, ", "),
                                schedule.copies().size(), schedule.kernels());
  if (!schedule.fused_items.empty()) out += fmt::format(", {} fused", schedule.fused_items.size());
  if (deterministic) out += ", deterministic";
  if (wire != "native") out += ", wire " + wire;
  out += "\n";
  out += schedule.to_string();
  if (!out.empty() && out.back() != '\n') out += '\n';
  return choice.empty() ? out : out + choice + "\n";
}

void write_schedule_dot(OutputFile& file, const Tensor& lazy, const AllreduceSettings& settings) {
  std::ostringstream out;
  out << lazy.to_dot(settings);
  file.write(out.str());
}

}  // namespace ringrt
