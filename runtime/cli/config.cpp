// The YAML loader of ExperimentConfig. Design: one table of leaf keys (the experiment's own keys
// plus every tunable of core/params.hpp); sections are the prefixes of leaf keys. A walker takes
// a YAML node at a key path: a leaf goes to its setter, a section must be a map whose keys are known.
// The same walker serves the file and each `--set key=value` (the value is parsed as YAML), so an
// override can set any key, and both report errors the same way. Checks that join several keys
// (groups vs devices, leaders vs devices, sizes vs dtype) run once at the end, at the key's origin.
#include "runtime/cli/config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "core/errors.hpp"
#include "core/files.hpp"
#include "core/params_internal.hpp"
#include "core/yaml_document.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/cli/config_ranks.hpp"

namespace ringrt {
namespace {

// experiment.collective's words, in the order its message lists them.
const std::vector<std::string> kExperimentCollectives = [] {
  std::vector<std::string> out;
  for (Collective c : {Collective::allreduce, Collective::reduce_scatter, Collective::allgather, Collective::broadcast,
                       Collective::reduce, Collective::alltoall})
    out.emplace_back(collective_name(c));
  return out;
}();

enum Level { kDefault, kYaml, kEnv, kSet };

[[noreturn]] void fail(const std::string& where, const std::string& key, const std::string& expected,
                       const std::string& got) {
  config_fail(where, key, expected, got);
}

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsScalar()) return quote_value(n.Scalar());
  return n.IsSequence() ? "a list" : "a map";
}

std::optional<int64_t> to_int(std::string_view text) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

// "4096", "512B", "1 KiB", "64MiB", "1GiB" -> bytes; nullopt for anything else (including signs).
std::optional<int64_t> to_bytes(std::string text) {
  static const std::pair<std::string_view, int> units[] = {{"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}};
  int shift = 0;
  for (auto [unit, s] : units)
    if (text.size() > unit.size() && text.ends_with(unit)) {
      text.resize(text.size() - unit.size());
      shift = s;
      break;
    }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  auto v = to_int(text);
  if (!v || *v > (INT64_MAX >> shift)) return std::nullopt;
  return *v << shift;
}

const char* const kSizeForm = "a positive size in bytes (an integer, or with a unit: 512B, 1KiB, 64MiB, 1GiB)";

struct Loader {
  ExperimentConfig cfg;
  std::string file;
  Level level = kYaml;
  std::string set_text;  // the `--set k=v` being applied (level kSet)
  std::string backend = "auto";
  std::optional<int64_t> device_count;
  std::vector<std::string> device_list, device_where;  // a list from devices.count, with each name's origin
  std::vector<std::string> local_devices;  // of a list of the job's devices: this rank's entries, local names
  Level form_level = kDefault;
  std::map<std::string, std::function<void(const YAML::Node&, const std::string&)>> leaves;

  std::string where(const YAML::Node& n) const {
    if (level == kSet) return set_text;
    const YAML::Mark m = n.Mark();
    return m.is_null() ? file : fmt::format("{}:{}:{}", file, m.line + 1, m.column + 1);
  }
  const std::string& scalar(const YAML::Node& n, const std::string& key, const std::string& expected) const {
    if (!n.IsScalar()) fail(where(n), key, expected, describe(n));
    return n.Scalar();
  }
  int64_t integer(const YAML::Node& n, const std::string& key, int64_t lo, int64_t hi) const {
    std::string expected =
        hi == INT64_MAX ? fmt::format("an integer >= {}", lo) : fmt::format("an integer in [{}, {}]", lo, hi);
    auto v = to_int(scalar(n, key, expected));
    if (!v || *v < lo || *v > hi) fail(where(n), key, expected, describe(n));
    return *v;
  }
  bool boolean(const YAML::Node& n, const std::string& key) const {
    auto b = parse_bool(scalar(n, key, "true or false"));
    if (!b) fail(where(n), key, "true or false (1 or 0, yes or no, on or off)", describe(n));
    return *b;
  }
  std::string choice(const YAML::Node& n, const std::string& key, const std::vector<std::string>& options) const {
    std::string expected = fmt::format("one of {}", fmt::join(options, ", "));
    const std::string& s = scalar(n, key, expected);
    if (std::find(options.begin(), options.end(), s) == options.end()) fail(where(n), key, expected, describe(n));
    return s;
  }
  // A list of at most `most` entries; ConfigError naming the key and the length beyond.
  void check_length(const YAML::Node& n, const std::string& key, size_t most) const {
    if (n.IsSequence() && n.size() > most)
      fail(where(n), key, fmt::format("a list of at most {} entries", most), fmt::format("{} entries", n.size()));
  }
  std::vector<int64_t> int_list(const YAML::Node& n, const std::string& key, int64_t lo, int64_t hi,
                                size_t most = kMaxListEntries) const {
    std::string expected = fmt::format("a non-empty list of integers >= {}", lo);
    if (!n.IsSequence() || n.size() == 0) fail(where(n), key, expected, describe(n));
    check_length(n, key, most);
    std::vector<int64_t> out;
    for (const auto& e : n) out.push_back(integer(e, key, lo, hi));
    return out;
  }
  // Sizes, counts and buckets are alternatives: a later level replaces the form, one level may not mix them.
  void set_form(SweepForm form, const std::string& key, const std::string& at) {
    static const char* names[] = {"experiment.sizes", "experiment.counts", "experiment.buckets"};
    if (form_level == level && cfg.form != form)
      fail(at, key, "only one of experiment.sizes, experiment.counts, experiment.buckets",
           fmt::format("{} as well", names[static_cast<int>(cfg.form)]));
    if (cfg.form != form && form == SweepForm::sizes)
      cfg.size_min = 1024, cfg.size_max = int64_t{64} << 20, cfg.size_factor = 4;
    cfg.form = form;
    form_level = level;
  }

  Loader(const Loader&) = delete;  // the setters capture `this`
  Loader& operator=(const Loader&) = delete;
  Loader() {
    add_device_keys();
    add_experiment_keys();
    add_tunable_keys();
  }

  // The setters of backend and devices.*.
  void add_device_keys() {
    leaves["backend"] = [this](auto& n, auto& k) { backend = choice(n, k, {"auto", "cpu", "hip"}); };
    leaves["devices.count"] = [this](const YAML::Node& n, const std::string& k) {
      const char* expected = "a device count >= 1 or a list of device names";
      device_list.clear(), device_where.clear(), device_count.reset();
      if (n.IsScalar()) {
        device_count = integer(n, k, 1, 1024);
        return;
      }
      if (!n.IsSequence() || n.size() == 0) fail(where(n), k, expected, describe(n));
      check_length(n, k, kMaxDevices);
      for (const auto& e : n) {
        device_list.push_back(scalar(e, k, "a device name (CPU:0, HIP:1)"));
        device_where.push_back(where(e));
      }
    };
    leaves["devices.groups"] = [this](auto& n, auto& k) {
      cfg.groups.clear();
      if (n.IsSequence() && n.size() == 0) return;  // [] (as config --dump prints none): no groups
      for (int64_t g : int_list(n, k, 0, INT32_MAX, kMaxDevices)) cfg.groups.push_back(static_cast<int>(g));
    };
  }

  // The setters of experiment.*.
  void add_experiment_keys() {
    leaves["experiment.collective"] = [this](auto& n, auto& k) {
      cfg.collective = *parse_collective(choice(n, k, kExperimentCollectives));
    };
    leaves["experiment.root"] = [this](auto& n, auto& k) {
      cfg.root = static_cast<int>(integer(n, k, 0, kMaxDevices));
    };
    leaves["experiment.op"] = [this](auto& n, auto& k) {
      cfg.op_name = choice(n, k, {"sum", "max", "min", "prod"});
      cfg.op = *parse_reduce_op(cfg.op_name);
    };
    leaves["experiment.dtype"] = [this](auto& n, auto& k) {
      const char* expected =
          "one of float32, float16, bfloat16, float64, int32, int64, int16, int8, uint32, uint8 (or an alias: float, "
          "half, bf16, double, int, long, char, uchar, short, uint)";
      const std::string& s = scalar(n, k, expected);
      try {
        cfg.dtype = parse_dtype(s);
      } catch (const ConfigError&) {
        fail(where(n), k, expected, describe(n));
      }
      if (cfg.dtype == DType::bool_) fail(where(n), k, expected, describe(n));
    };
    auto size = [this](const YAML::Node& n, const std::string& k) {
      set_form(SweepForm::sizes, k, where(n));
      auto v = to_bytes(scalar(n, k, kSizeForm));
      if (!v || *v <= 0) fail(where(n), k, kSizeForm, describe(n));
      return *v;
    };
    leaves["experiment.sizes.min"] = [this, size](auto& n, auto& k) { cfg.size_min = size(n, k); };
    leaves["experiment.sizes.max"] = [this, size](auto& n, auto& k) { cfg.size_max = size(n, k); };
    leaves["experiment.sizes.factor"] = [this](auto& n, auto& k) {
      set_form(SweepForm::sizes, k, where(n));
      cfg.size_factor = integer(n, k, 2, 1 << 20);
    };
    leaves["experiment.counts"] = [this](auto& n, auto& k) {
      set_form(SweepForm::counts, k, where(n));
      cfg.counts = int_list(n, k, 1, kMaxElements);  // a tensor's most elements
    };
    leaves["experiment.buckets"] = [this](auto& n, auto& k) {
      set_form(SweepForm::buckets, k, where(n));
      cfg.counts = int_list(n, k, 1, kMaxElements);  // a tensor's most elements
    };
    leaves["experiment.warmup"] = [this](auto& n, auto& k) {
      cfg.warmup = static_cast<int>(integer(n, k, 0, 1000000));
    };
    leaves["experiment.iters"] = [this](auto& n, auto& k) { cfg.iters = static_cast<int>(integer(n, k, 1, 1000000)); };
    leaves["experiment.check"] = [this](auto& n, auto& k) { cfg.check = boolean(n, k); };
    leaves["experiment.timing"] = [this](auto& n, auto& k) {
      cfg.timing = choice(n, k, {"latency", "pipelined", "both"});
    };
    leaves["experiment.in_place"] = [this](auto& n, auto& k) { cfg.in_place = boolean(n, k); };
    leaves["experiment.sharding"] = [this](auto& n, auto& k) {
      cfg.sharding = choice(n, k, {"no_shard", "shard_grad_op", "full_shard"});
    };
    leaves["regress.busbw_tolerance"] = [this](auto& n, auto& k) {
      const char* expected = "a fraction in [0, 1) (0.5: busbw may fall to half its baseline's)";
      const std::string& t = scalar(n, k, expected);
      double v = -1;
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !(v >= 0 && v < 1))
        fail(where(n), k, expected, describe(n));
      cfg.busbw_tolerance = v;
    };
  }

  // The setters of every tunable (core/params.hpp), parsed by set_param. A file may not set a
  // command or a folder (Tunable::from_files): the environment and --set may.
  void add_tunable_keys() {
    for (const Tunable& t : tunables()) {
      if (leaves.count(std::string(t.key)))
        throw InternalError(fmt::format("tunable '{}': a key of the config", t.key));
      leaves[std::string(t.key)] = [this, &t](const YAML::Node& n, const std::string& k) {
        if (level == kYaml && !t.from_files())
          fail(where(n), k,
               fmt::format("it from the environment variable {} or --set {}=... (a config file may not choose a "
                           "program to run or a folder of code to load)",
                           t.env, k),
               "it in a config file");
        std::string text;
        if (n.IsSequence() && t.parser.kind == ParamKind::devices) {  // reduce_leaders as a YAML list
          check_length(n, k, kMaxDevices);
          std::vector<std::string> items;
          for (const auto& e : n) items.push_back(scalar(e, k, "a list of device names"));
          text = fmt::format("{}", fmt::join(items, ","));
        } else if (!n.IsNull()) {
          text = scalar(n, k, n.IsSequence() ? "one value (this key takes no list)" : "a value");
        }
        set_param({cfg.settings, cfg.runtime}, k, text, level == kSet ? ParamSource::set : ParamSource::file, where(n));
      };
    }
  }

  bool is_leaf(const std::string& key) const { return leaves.count(key) > 0; }
  // The names directly under a section ("" is the top level).
  std::vector<std::string> children(const std::string& section) const {
    std::vector<std::string> out;
    std::string prefix = section.empty() ? "" : section + ".";
    for (const auto& [key, fn] : leaves) {
      if (!key.starts_with(prefix)) continue;
      std::string rest = key.substr(prefix.size());
      rest = rest.substr(0, rest.find('.'));
      if (std::find(out.begin(), out.end(), rest) == out.end()) out.push_back(rest);
    }
    return out;
  }

  // "one of experiment.op, experiment.dtype, ...": the keys allowed directly under a section.
  std::string one_of_keys(const std::string& section) const {
    std::vector<std::string> names = children(section);
    if (!section.empty())
      for (std::string& n : names) n = section + "." + n;
    return fmt::format("one of {}", fmt::join(names, ", "));
  }

  void walk(const std::string& key, const YAML::Node& node) {
    if (is_leaf(key)) {
      leaves.at(key)(node, key);
      cfg.origins[key] = where(node);
      return;
    }
    if (node.IsNull()) return;  // an empty section sets nothing
    std::vector<std::string> names = children(key);
    if (!node.IsMap())
      fail(where(node), key.empty() ? "(top level)" : key, fmt::format("a map of {}", fmt::join(names, ", ")),
           describe(node));
    std::set<std::string> seen;
    for (const auto& kv : node) {
      const std::string& name = scalar(kv.first, key, "a key name");
      std::string sub = key.empty() ? name : key + "." + name;
      if (!seen.insert(name).second) fail(where(kv.first), sub, "each key once", "it again");
      if (std::find(names.begin(), names.end(), name) == names.end())
        fail(where(kv.first), sub, one_of_keys(key), "an unknown key");
      walk(sub, kv.second);
    }
  }

  void apply_override(const std::string& text) {
    level = kSet;
    set_text = "--set " + text;
    size_t eq = text.find('=');
    std::string key = text.substr(0, eq);
    if (eq == std::string::npos || key.empty())
      throw ConfigError(fmt::format("{}: expected key=value (e.g. allreduce.ring=2)", set_text));
    if (!is_leaf(key) && (key.find("..") != std::string::npos || key.back() == '.' || children(key).empty())) {
      std::string parent = key.substr(0, std::min(key.size(), key.rfind('.')));
      if (parent == key || children(parent).empty()) parent.clear();  // unknown section: list the top level
      fail(set_text, key, one_of_keys(parent), "an unknown key");
    }
    YAML::Node value;
    try {
      value = YAML::Load(text.substr(eq + 1));
    } catch (const YAML::DeepRecursion& e) {
      throw ConfigError(fmt::format("{}: the value is nested too deeply (lists or maps more than {} levels deep)",
                                    set_text, e.depth() - 1));
    } catch (const YAML::Exception& e) {
      throw ConfigError(fmt::format("{}: YAML syntax error in the value: {}", set_text, e.msg));
    }
    walk(key, value);
  }

  void apply_environment() {
    level = kEnv;
    for_each_env_param([this](const Tunable& t, std::string_view value) {
      std::string at = fmt::format("environment variable {}", t.env);
      set_param({cfg.settings, cfg.runtime}, t.key, value, ParamSource::env, at);
      cfg.origins[std::string(t.key)] = at;
    });
  }

  std::string origin(const std::string& key) const {
    auto it = cfg.origins.find(key);
    return it == cfg.origins.end() ? "default" : it->second;
  }

  // Resolves the backend and the devices, then the checks that join several keys.
  void finish() {
    // The HIP devices are fixed at the first enumeration (hip_device_names): a config that sets
    // runtime.hip_logical_devices installs it before this one, so that the devices it names exist.
    // runtime.* keys the config sets are in force before devices are listed and MPI starts (its
    // start-up wait is the watchdog's; hosts come from ranks_per_host), not only once loading ends
    for (const Tunable& t : tunables())
      if (t.runtime && cfg.origins.count(std::string(t.key))) set_runtime_params(cfg.runtime, {t.key});
    cfg.backend = backend == "auto" ? (hip_devices().empty() ? "cpu" : "hip") : backend;
    if (backend == "auto")  // config --dump: "backend = cpu  <- auto (no GPU): FILE:LINE:COL"
      cfg.origins["backend"] =
          fmt::format("auto ({}): {}", cfg.backend == "cpu" ? "no GPU" : "GPUs", origin("backend"));
    bool cpu = cfg.backend == "cpu";
    int64_t available = cpu ? 1024 : static_cast<int64_t>(hip_devices().size());
    if (!cpu && available == 0)
      fail(origin("backend"), "backend",
           "a backend with devices (the hip backend sees no GPU: none present, or no driver; use cpu)", "'hip'");
    bool job_list = resolve_devices(cpu, available);  // the job's devices, as listed
    size_t ndev = job_list ? local_devices.size() : cfg.devices.size();
    if (cpu && ndev > 0) cpu_devices(static_cast<int>(ndev));  // CPU:0 .. CPU:ndev-1 exist from now on
    if (!job_list) cfg.devices = global_devices(cfg.devices);  // under mpirun: every rank's, "rank<R>/CPU:i"
    if (cfg.groups.empty() && !(cfg.groups = host_groups(cfg.devices)).empty())
      cfg.origins["devices.groups"] = "the hosts of the ranks (MPI)";
    cfg.groups = groups_in_every_rank(cfg.groups, cfg.devices.size());
    check_groups();
    check_leaders();
    check_collective();
    check_sizes();
  }

  // cfg.devices from devices.count: the listed names (each a device of the backend, once), or the
  // first n devices (default: 4 CPUs, or every GPU present).
  // Under mpirun the list may name the job's devices instead ("rank1/CPU:0", every entry so): each rank
  // then owns its entries, and cfg.devices is the list as written (config --dump prints it so): true.
  bool resolve_devices(bool cpu, int64_t available) {
    std::string prefix = cpu ? "CPU:" : "HIP:";
    auto ranked = [](const std::string& d) { return d.find('/') != std::string::npos; };
    if (std::any_of(device_list.begin(), device_list.end(), ranked)) {
      local_devices = job_devices(device_list, device_where, prefix, cpu, available);
      cfg.devices = device_list;
      return true;
    }
    if (!device_list.empty()) {
      int64_t n = static_cast<int64_t>(device_list.size());
      std::string expected = cpu ? fmt::format(
                                       "a device CPU:i with 0 <= i < {} (a list of {} cpu devices names CPU:0 .. "
                                       "CPU:{}, in any order: they are virtual)",
                                       n, n, n - 1)
                                 : fmt::format("a device HIP:i with 0 <= i < {} (the GPUs present)", available);
      for (size_t i = 0; i < device_list.size(); ++i) {
        const std::string& d = device_list[i];
        auto parsed = parse_device_name(d);  // the one device-name syntax: no sign, no leading zero
        bool kind = parsed && parsed->first + ":" == prefix;
        if (!kind || parsed->second >= (cpu ? n : available))
          fail(device_where[i], "devices.count", expected, "'" + d + "'");
        if (std::count(device_list.begin(), device_list.end(), d) > 1)
          fail(device_where[i], "devices.count", "each device once", "'" + d + "' twice");
      }
      cfg.devices = device_list;
    } else {
      int64_t n = device_count.value_or(cpu ? 4 : available);
      if (n > available)
        fail(origin("devices.count"), "devices.count", fmt::format("at most {} (the GPUs present)", available),
             std::to_string(n));
      for (int64_t i = 0; i < n; ++i) cfg.devices.push_back(prefix + std::to_string(i));
    }
    return false;
  }

  // devices.groups: one group id per device; they become the allreduce settings' groups.
  void check_groups() {
    size_t ndev = cfg.devices.size();
    if (!cfg.groups.empty() && cfg.groups.size() != ndev)
      fail(origin("devices.groups"), "devices.groups",
           fmt::format("{} group ids, one per device of ({})", ndev, fmt::join(cfg.devices, ", ")),
           fmt::format("{} ([{}])", cfg.groups.size(), fmt::join(cfg.groups, ", ")));
    cfg.settings.groups.clear();
    for (size_t i = 0; i < cfg.groups.size(); ++i) cfg.settings.groups[cfg.devices[i]] = cfg.groups[i];
  }

  // allreduce.reduce_leaders: devices of the run, at most one per group.
  void check_leaders() {
    cfg.settings.reduce_leaders = leaders_on_every_rank(cfg.settings.reduce_leaders);
    std::map<int, std::string> leader_of;
    for (const std::string& l : cfg.settings.reduce_leaders) {
      auto it = std::find(cfg.devices.begin(), cfg.devices.end(), l);
      if (it == cfg.devices.end())
        fail(origin("allreduce.reduce_leaders"), "allreduce.reduce_leaders",
             fmt::format("devices of ({})", fmt::join(cfg.devices, ", ")), "'" + l + "'");
      if (cfg.groups.empty()) continue;
      int g = cfg.groups[static_cast<size_t>(it - cfg.devices.begin())];
      if (leader_of.count(g))
        fail(origin("allreduce.reduce_leaders"), "allreduce.reduce_leaders", "at most one leader per group",
             fmt::format("'{}' and '{}' in group {}", leader_of[g], l, g));
      leader_of[g] = l;
    }
  }

  // experiment.root: a device of the run; experiment.buckets: allreduce (no_shard) or, sharded, one of
  // the two collectives FSDP runs (reduce_scatter unless set: the one `ringrt schedule` plans).
  void check_collective() {
    if (cfg.root >= static_cast<int>(cfg.devices.size()))
      fail(origin("experiment.root"), "experiment.root",
           fmt::format("an index into the {} devices ({})", cfg.devices.size(), fmt::join(cfg.devices, ", ")),
           std::to_string(cfg.root));
    if (cfg.sharding == "no_shard") {
      if (cfg.form == SweepForm::buckets && cfg.collective != Collective::allreduce)
        fail(origin("experiment.buckets"), "experiment.buckets", "experiment.collective allreduce (gradient buckets)",
             "experiment.collective " + std::string(collective_name(cfg.collective)));
      return;
    }
    if (cfg.form != SweepForm::buckets)
      fail(origin("experiment.sharding"), "experiment.sharding",
           "no_shard, or experiment.buckets (the FSDP units' flat parameters) to shard",
           fmt::format("'{}' with a sweep of sizes or counts", cfg.sharding));
    if (origin("experiment.collective") == "default") cfg.collective = Collective::reduce_scatter;
    if (cfg.collective != Collective::reduce_scatter && cfg.collective != Collective::allgather)
      fail(origin("experiment.collective"), "experiment.collective",
           "reduce_scatter or allgather with experiment.sharding (the step runs both; this one is planned by "
           "`ringrt schedule`)",
           "'" + std::string(collective_name(cfg.collective)) + "'");
    if (!cfg.in_place)
      fail(origin("experiment.in_place"), "experiment.in_place",
           "true with experiment.sharding (FSDP's gradients are written from the host every step)", "false");
  }

  // experiment.sizes: min holds at least one element and is at most max.
  void check_sizes() {
    if (cfg.form == SweepForm::sizes) {
      int64_t item = itemsize(cfg.dtype);
      if (cfg.size_min < item)
        fail(origin("experiment.sizes.min"), "experiment.sizes.min",
             fmt::format("at least one {} element ({} B)", dtype_name(cfg.dtype), item), format_bytes(cfg.size_min));
      if (cfg.size_min > cfg.size_max) {
        std::string key = origin("experiment.sizes.max") == "default" ? "experiment.sizes.min" : "experiment.sizes.max";
        fail(origin(key), key, "experiment.sizes.min <= experiment.sizes.max",
             fmt::format("min {} > max {}", format_bytes(cfg.size_min), format_bytes(cfg.size_max)));
      }
    }
  }
};

ExperimentConfig finish_loading(Loader& loader, const YAML::Node& root, const std::vector<std::string>& overrides) {
  loader.level = kYaml;
  loader.walk("", root);
  loader.apply_environment();
  for (const std::string& o : overrides) loader.apply_override(o);
  loader.finish();
  return std::move(loader.cfg);
}

}  // namespace

std::vector<int64_t> ExperimentConfig::sweep_counts() const {
  if (form != SweepForm::sizes) return counts;
  std::vector<int64_t> out;
  for (int64_t bytes = size_min; bytes <= size_max; bytes *= size_factor) {
    out.push_back(bytes / itemsize(dtype));
    if (bytes > INT64_MAX / size_factor) break;
  }
  return out;
}

namespace {}  // namespace

ExperimentConfig parse_config(std::string_view yaml, const std::string& name,
                              const std::vector<std::string>& overrides) {
  Loader loader;
  loader.file = name;
  loader.cfg.file = name;
  YAML::Node root;
  try {
    root = load_yaml_document(yaml, name);
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp says only "bad file"
    throw ConfigError(
        fmt::format("{}:{}:{}: YAML nested too deeply (lists or maps more than {} levels deep; a "
                    "config is a few levels deep)",
                    name, e.mark.line + 1, e.mark.column + 1, e.depth() - 1));
  } catch (const YAML::ParserException& e) {
    throw ConfigError(fmt::format("{}:{}:{}: YAML syntax error: {}", name, e.mark.line + 1, e.mark.column + 1, e.msg));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: cannot read YAML: {}", name, e.msg));
  }
  return finish_loading(loader, root, overrides);
}

ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::string text;
  try {
    text = read_file(path, kMaxConfigBytes);  // a regular file only: never a FIFO, /dev/zero, a folder
  } catch (const IOError& e) {
    throw ConfigError(e.what());
  }
  return parse_config(text, path, overrides);
}

std::string format_bytes(int64_t bytes) {
  static const std::pair<const char*, int> units[] = {{"GiB", 30}, {"MiB", 20}, {"KiB", 10}};
  for (auto [unit, shift] : units)
    if (bytes > 0 && bytes % (int64_t{1} << shift) == 0) return fmt::format("{} {}", bytes >> shift, unit);
  return fmt::format("{} B", bytes);
}

}  // namespace ringrt
