#include "rewrite/cost_model.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "core/errors.hpp"
#include "core/files.hpp"
#include "core/params_internal.hpp"
#include "core/yaml_document.hpp"
#include "rewrite/tuning.hpp"

namespace ringrt {
namespace {

// The hip backend's figures, unmeasured (runtime/hip/ registers no measurement): a kernel launch costs
// about 5 us on the host, a step across GPUs (an event one stream waits for, a barrier over peer memory)
// about 10 us, and a device's copies and combines stream at about 1500 GB/s, a third of the device
// memory bandwidth of current datacenter GPUs (MI300X 5.3 TB/s, H100 3.35 TB/s), for the links
// between GPUs are slower than the memory. Peer access: GPUs of one node read each other's memory.
constexpr CostFigures kHipDefaults{5.0, 10.0, 1500.0, false, true};

struct Registry {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, CostMeasure> measures;
  std::map<std::string, CostModel> models;  // by kind and cost file
  std::set<std::string> measuring;          // keys being measured now (another thread waits)
};
Registry& registry() {
  static auto* r = new Registry();  // never freed: used from other objects' destructors at exit
  return *r;
}
std::atomic<int64_t> g_measurements{0};
thread_local bool t_measuring = false;  // this thread runs a measurement: a choice inside it gets none

bool valid(const CostFigures& f) {
  auto ok = [](double v) { return std::isfinite(v) && v > 0 && v < 1e12; };
  return ok(f.launch_us) && ok(f.step_us) && ok(f.gbps);
}

// The figures of kind from its cost file at path, or why not ("" when there is no file).
std::optional<CostFile> read_cost_file(const std::string& kind, const std::string& path, std::string& why) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) return std::nullopt;
  if (std::string problem = private_dir_problem(std::filesystem::path(path).parent_path()); !problem.empty()) {
    why = fmt::format("its folder is refused ({})", problem);
    return std::nullopt;
  }
  try {
    CostFile f = parse_cost_figures(read_file(path, kMaxCostBytes, FileTrust::own), path);
    if (f.kind != kind) why = fmt::format("{}: for {}, not {}", path, f.kind, kind);
    if (f.machine != machine_identity()) why = fmt::format("{}: made on another machine ({})", path, f.machine);
    if (why.empty()) return f;
  } catch (const UserError& e) {
    why = e.what();
  }
  return std::nullopt;
}

// Measures kind (with its registered measure) and writes the cost file; the model and its origin.
CostModel measure_and_cache(const std::string& kind, const CostMeasure& measure, const std::string& path,
                            const std::string& stale) {
  CostFigures f;
  try {
    t_measuring = true;
    f = measure();
    t_measuring = false;
  } catch (const std::exception& e) {
    t_measuring = false;
    warn_once("cost measure " + kind,
              fmt::format("measuring the {} cost figures failed: {}; tinygrad's rule chooses", kind, e.what()));
    return {std::nullopt, fmt::format("tinygrad's rule ({} cost figures not measured: {})", kind, e.what())};
  }
  g_measurements.fetch_add(1, std::memory_order_relaxed);
  if (!valid(f)) return {std::nullopt, fmt::format("tinygrad's rule ({} cost figures out of range)", kind)};
  if (!stale.empty()) warn_once("cost file " + path, fmt::format("the cost file is measured again: {}", stale));
  if (path.empty()) return {f, "measured now, not cached (no cache folder)"};
  CostFile file{kind, machine_identity(), utc_now(), f};
  try {
    // the cache folder made private as the kernel cache makes it (codegen/compile_cache.cpp), then checked
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    std::error_code ignored;
    std::filesystem::create_directories(dir.parent_path(), ignored);
    ::mkdir(dir.c_str(), 0700);
    if (std::string problem = private_dir_problem(dir); !problem.empty())
      throw IOError(fmt::format("{}: the cache folder is refused ({})", dir.string(), problem));
    // written whole under another name, then renamed: a process reading it meanwhile sees the old or the new
    std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
    write_file(tmp, cost_figures_yaml(file));
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      throw IOError(fmt::format("{}: cannot rename into place: {}", path, std::strerror(err)));
    }
  } catch (const UserError& e) {  // no warning: an unusable cache folder is the kernel cache's one warning
    return {f, fmt::format("measured now, not cached ({})", e.what())};
  }
  return {f, fmt::format("measured {} ({})", file.made, path)};
}

CostModel load_model(const std::string& kind, const std::string& path, const CostMeasure* measure) {
  std::string why;
  if (!path.empty())
    if (std::optional<CostFile> f = read_cost_file(kind, path, why))
      return {f->figures, fmt::format("cached ({}, {})", path, f->made)};
  if (measure) return measure_and_cache(kind, *measure, path, why);
  if (kind == "HIP") return {kHipDefaults, "unmeasured defaults for HIP"};
  return {std::nullopt, fmt::format("tinygrad's rule (no cost figures for {} devices)", kind)};
}

}  // namespace

AlgorithmCost algorithm_cost(Algorithm algorithm, int64_t ndev, int64_t bytes, bool peer) {
  double n = static_cast<double>(ndev), s = static_cast<double>(bytes), chunk = s / n, copies = peer ? 0 : 1;
  switch (algorithm) {
    case Algorithm::naive:
      return {1 + copies * (n - 1), copies, (n + 1) * s + copies * 2 * (n - 1) * s};
    case Algorithm::ring:
      return {(2 + copies) * (n - 1), 2 * (n - 1) - 1, (n - 1) * (5 + copies * 2) * chunk};
    case Algorithm::all2all:
      return {1 + copies * 2 * (n - 1), 1 + copies, 2 * s + copies * 4 * (n - 1) * chunk};
    case Algorithm::oneshot:
      return {1, 1, (n + 1) * s};
    case Algorithm::twoshot:
      return {1, 1 + copies, 2 * s + copies * 2 * (n - 1) * chunk};
    case Algorithm::ring_fused:
      return {1, 2 * (n - 1), (n - 1) * (5 + copies * 2) * chunk};
    default:
      break;
  }
  throw InternalError(fmt::format("algorithm_cost: no algorithm {}", algorithm_name(algorithm)));
}

double modelled_us(const CostFigures& f, Algorithm algorithm, int64_t ndev, int64_t bytes) {
  AlgorithmCost c = algorithm_cost(algorithm, ndev, bytes, f.peer);
  double moved = c.moved * (f.shared ? static_cast<double>(ndev) : 1.0);
  return c.launches * f.launch_us + c.steps * f.step_us + moved / (f.gbps * 1e3);  // GB/s = 1e3 B/us
}

Algorithm modelled_choice(const CostFigures& f, int64_t ndev, int64_t bytes, bool deterministic) {
  if (ndev < 2) return Algorithm::naive;
  Algorithm best = kAllreduceAlgorithms[0];
  double best_us = modelled_us(f, best, ndev, bytes);
  for (Algorithm a : kAllreduceAlgorithms) {
    // deterministic: ring and ring_fused run other forms than the ones modelled (allreduce.cpp)
    if (deterministic && (a == Algorithm::ring || a == Algorithm::ring_fused)) continue;
    if (double us = modelled_us(f, a, ndev, bytes); us < best_us) best = a, best_us = us;
  }
  return best;
}

void register_cost_measure(const std::string& kind, CostMeasure measure) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.measures[kind] = std::move(measure);
}

CostModel cost_model_for(const std::string& kind) {
  if (t_measuring) return {std::nullopt, "tinygrad's rule (inside a measurement)"};
  std::string path = cost_figures_path(kind), key = kind + "\n" + path;  // another cache folder, another file
  Registry& r = registry();
  std::unique_lock lock(r.mu);
  r.cv.wait(lock, [&] { return !r.measuring.contains(key); });  // one thread measures, the others wait
  if (auto it = r.models.find(key); it != r.models.end()) return it->second;
  std::optional<CostMeasure> measure;
  if (auto it = r.measures.find(kind); it != r.measures.end()) measure = it->second;
  r.measuring.insert(key);
  lock.unlock();
  CostModel model;
  try {
    model = load_model(kind, path, measure ? &*measure : nullptr);
  } catch (const std::exception& e) {  // never throws: the rule chooses
    model = {std::nullopt, fmt::format("tinygrad's rule ({})", e.what())};
  }
  lock.lock();
  r.measuring.erase(key);
  r.models[key] = model;
  r.cv.notify_all();
  return model;
}

std::string cost_figures_path(const std::string& kind) {
  // a kind names a file: upper-case letters only (device names' kinds are, core/params.cpp)
  if (kind.empty() || kind.size() > 16 ||
      !std::all_of(kind.begin(), kind.end(), [](char c) { return c >= 'A' && c <= 'Z'; }))
    return "";
  std::filesystem::path dir = user_cache_dir();
  return dir.empty() ? "" : (dir / ("cost-" + kind + ".yaml")).string();
}

std::string cost_figures_yaml(const CostFile& f) {
  return fmt::format(
      "# ringrt cost figures of {} devices on this machine, measured at the first automatic allreduce choice\n"
      "# (rewrite/cost_model.hpp); delete this file to measure them again.\n"
      "format: {}\nkind: {}\nmachine: {}\nmade: {}\nlaunch_us: {:.4f}\nstep_us: {:.4f}\ngbps: {:.2f}\n"
      "shared: {}\npeer: {}\n",
      f.kind, kCostFormat, yaml_quoted(f.kind), yaml_quoted(f.machine), yaml_quoted(f.made), f.figures.launch_us,
      f.figures.step_us, f.figures.gbps, f.figures.shared, f.figures.peer);
}

CostFile parse_cost_figures(std::string_view yaml, const std::string& name) {
  auto fail = [&](const YAML::Node& n, const std::string& key, const std::string& what) {
    const YAML::Mark m = n.Mark();
    std::string at = m.is_null() ? name : fmt::format("{}:{}:{}", name, m.line + 1, m.column + 1);
    throw ConfigError(fmt::format("{}: key '{}': {}", at, key, what));
  };
  YAML::Node root;
  try {
    root = load_yaml_document(yaml, name);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}:{}:{}: YAML syntax error: {}", name, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap()) fail(root, "", "expected a map");
  static const std::set<std::string> kKeys{"format",  "kind", "machine", "made", "launch_us",
                                           "step_us", "gbps", "shared",  "peer"};
  std::set<std::string> seen;
  for (const auto& kv : root) {
    std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    if (!kKeys.contains(k)) fail(kv.first, k, "unknown key");
    if (!seen.insert(k).second) fail(kv.first, k, "given twice");
  }
  auto text = [&](const std::string& key) {
    const YAML::Node n = root[key];
    if (!n) fail(root, key, "missing");
    if (!n.IsScalar()) fail(n, key, "expected a text");
    std::string t = n.Scalar();
    if (t.size() > 200 ||
        std::any_of(t.begin(), t.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
      fail(n, key, "expected one line of at most 200 characters without control characters");
    return t;
  };
  auto number = [&](const std::string& key) {
    std::string t = text(key);
    double v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v) || !(v > 0) || v >= 1e12)
      fail(root[key], key, fmt::format("expected a number > 0, got {}", quote_value(t)));
    return v;
  };
  auto boolean = [&](const std::string& key) {
    std::string t = text(key);
    if (t != "true" && t != "false")
      fail(root[key], key, fmt::format("expected true or false, got {}", quote_value(t)));
    return t == "true";
  };
  if (std::string format = text("format"); format != kCostFormat)
    fail(root["format"], "format", fmt::format("expected {}, got {}", kCostFormat, quote_value(format)));
  CostFile f;
  f.kind = text("kind");
  f.machine = text("machine");
  f.made = text("made");
  f.figures = {number("launch_us"), number("step_us"), number("gbps"), boolean("shared"), boolean("peer")};
  return f;
}

int64_t cost_measurements() { return g_measurements.load(std::memory_order_relaxed); }

void forget_cost_models() {
  Registry& r = registry();
  std::unique_lock lock(r.mu);
  r.cv.wait(lock, [&] { return r.measuring.empty(); });
  r.models.clear();
}

}  // namespace ringrt
