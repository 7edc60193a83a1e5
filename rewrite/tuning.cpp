#include "rewrite/tuning.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "core/errors.hpp"
#include "core/files.hpp"
#include "core/params_internal.hpp"
#include "core/yaml_document.hpp"
#include "ringrt_version.hpp"  // generated: RINGRT_VERSION_TEXT (cmake/RingrtVersion.cmake)

namespace ringrt {
namespace {

// The words of the tuning file's `collective` and `algorithm` (and `us` keys), in the order messages list them.
std::vector<std::string_view> tuned_words() {
  std::vector<std::string_view> out;
  for (Collective c : kTunedCollectives) out.push_back(collective_name(c));
  return out;
}
std::vector<std::string_view> algorithm_words() {
  std::vector<std::string_view> out;
  for (Algorithm a : kForcedAlgorithms) out.push_back(algorithm_name(a));
  return out;
}

// A choice's collective, kind, device count, dtype and settings, the collective by name (the file's order).
auto group_of(const TunedChoice& c) {
  return std::tuple(collective_name(c.collective), std::string_view(c.kind), c.devices, c.dtype, c.wire,
                    c.deterministic, c.ranks);
}

// The reader of one tuning file: every error names the file, line, column and key.
struct Reader {
  std::string name;

  [[noreturn]] void fail(const YAML::Node& n, const std::string& key, const std::string& what) const {
    const YAML::Mark m = n.Mark();
    std::string at = m.is_null() ? name : fmt::format("{}:{}:{}", name, m.line + 1, m.column + 1);
    throw ConfigError(fmt::format("{}: key '{}': {}", at, key, what));
  }
  YAML::Node need(const YAML::Node& map, const YAML::Node& n, const std::string& key) const {
    if (!n) fail(map, key, "missing");
    return n;
  }
  std::string text(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, key, "expected a text");
    return n.Scalar();
  }
  int64_t integer(const YAML::Node& n, const std::string& key, int64_t lo, int64_t hi) const {
    std::string t = text(n, key);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || v < lo || v > hi)
      fail(n, key, fmt::format("expected an integer in [{}, {}], got {}", lo, hi, quote_value(t)));
    return v;
  }
  double micros(const YAML::Node& n, const std::string& key) const {
    std::string t = text(n, key);
    double v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !(v >= 0 && v < 1e12))
      fail(n, key, fmt::format("expected microseconds >= 0, got {}", quote_value(t)));
    return v;
  }
  std::string word(const YAML::Node& n, const std::string& key, const std::vector<std::string_view>& words) const {
    std::string t = text(n, key);
    if (std::find(words.begin(), words.end(), t) == words.end())
      fail(n, key, fmt::format("expected one of {}, got {}", fmt::join(words, " | "), quote_value(t)));
    return t;
  }
  // A map of these keys, each at most once (yaml-cpp keeps the first of duplicates silently).
  void only_keys(const YAML::Node& map, const std::string& where, std::initializer_list<std::string_view> keys) const {
    if (!map.IsMap()) fail(map, where, "expected a map");
    std::set<std::string> seen;
    for (const auto& kv : map) {
      std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      std::string at = where.empty() ? k : where + "." + k;
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) fail(kv.first, at, "unknown key");
      if (!seen.insert(k).second) fail(kv.first, at, "given twice");
    }
  }
  // Text of one line a person reads (the run header prints it): no control characters.
  std::string line(const YAML::Node& n, const std::string& key) const {
    std::string t = text(n, key);
    if (t.size() > 200 ||
        std::any_of(t.begin(), t.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; }))
      fail(n, key, "expected one line of at most 200 characters without control characters");
    return t;
  }

  TunedChoice choice(const YAML::Node& c, const std::string& at) const {
    only_keys(c, at,
              {"collective", "kind", "devices", "dtype", "wire", "deterministic", "ranks", "bytes", "min_bytes",
               "max_bytes", "algorithm", "us"});
    TunedChoice out;
    out.collective =
        *parse_collective(word(need(c, c["collective"], at + ".collective"), at + ".collective", tuned_words()));
    const YAML::Node kind = need(c, c["kind"], at + ".kind");
    out.kind = text(kind, at + ".kind");
    if (out.kind.empty() || out.kind.size() > 16 ||
        !std::all_of(out.kind.begin(), out.kind.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; }))
      fail(kind, at + ".kind", fmt::format("expected a device kind (CPU, HIP), got {}", quote_value(out.kind)));
    out.devices = integer(need(c, c["devices"], at + ".devices"), at + ".devices", 2, 1 << 20);
    const YAML::Node dt = need(c, c["dtype"], at + ".dtype");
    try {
      out.dtype = parse_dtype(text(dt, at + ".dtype"));
    } catch (const ConfigError& e) {
      fail(dt, at + ".dtype", e.what());
    }
    if (const YAML::Node w = c["wire"])
      out.wire = parse_wire_format(word(w, at + ".wire", {"native", "bfloat16", "fp8_e4m3", "fp8_e5m2"}));
    if (const YAML::Node d = c["deterministic"])
      out.deterministic = word(d, at + ".deterministic", {"true", "false"}) == "true";
    if (const YAML::Node r = c["ranks"]) {  // each rank holds one device at least
      out.ranks = integer(r, at + ".ranks", 2, 1 << 20);
      if (out.ranks > out.devices)
        fail(r, at + ".ranks", fmt::format("{} ranks of {} devices", out.ranks, out.devices));
    }
    out.bytes = integer(need(c, c["bytes"], at + ".bytes"), at + ".bytes", 1, INT64_MAX);
    out.min_bytes = integer(need(c, c["min_bytes"], at + ".min_bytes"), at + ".min_bytes", 0, INT64_MAX);
    out.max_bytes = integer(need(c, c["max_bytes"], at + ".max_bytes"), at + ".max_bytes", 1, INT64_MAX);
    if (out.min_bytes >= out.max_bytes) fail(c, at, "an empty band: min_bytes >= max_bytes");
    if (out.bytes < out.min_bytes || out.bytes >= out.max_bytes)
      fail(c, at, "bytes outside its band [min_bytes, max_bytes)");
    const YAML::Node algo = need(c, c["algorithm"], at + ".algorithm");
    out.algorithm = *parse_algorithm(word(algo, at + ".algorithm", algorithm_words()));
    if ((out.algorithm == Algorithm::naive || is_fused(out.algorithm)) && out.collective != Collective::allreduce)
      fail(algo, at + ".algorithm",
           fmt::format("{} has ring and all2all (its direct form), not {}", collective_name(out.collective),
                       algorithm_name(out.algorithm)));
    if ((out.algorithm == Algorithm::mpi) != (out.ranks > 0) &&
        (out.algorithm == Algorithm::mpi || is_fused(out.algorithm)))
      fail(algo, at + ".algorithm",
           out.ranks > 0 ? fmt::format("across ranks the choices are naive, ring, all2all and mpi, not {}",
                                       algorithm_name(out.algorithm))
                         : "mpi is a choice across ranks only (the key ranks)");
    if (const YAML::Node us = c["us"]) {
      if (!us.IsMap()) fail(us, at + ".us", "expected a map of algorithm: microseconds");
      for (const auto& kv : us) {
        std::string algo = word(kv.first, at + ".us", algorithm_words());
        out.us[*parse_algorithm(algo)] = micros(kv.second, at + ".us." + algo);
      }
    }
    return out;
  }
};

// The first "model name" of /proc/cpuinfo, else "unknown CPU".
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  for (int i = 0; i < 4096 && std::getline(in, line); ++i)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      std::string m = line.substr(line.find(':') + 1);
      m.erase(0, m.find_first_not_of(" \t"));
      return m;
    }
  return "unknown CPU";
}

// The tunings read so far, by setting and file: each file is read once per process, so a run keeps one
// choice from start to end even when the file is tuned again meanwhile.
std::mutex g_tunings_mu;
std::map<std::string, Tuning> g_tunings;
constexpr size_t kMaxSettings = 64;  // bounds the map: beyond, an entry is dropped (read again if asked)

Tuning load_tuning(const std::string& setting, const std::string& path) {
  if (path.empty())
    return {nullptr, setting == "off" ? "off: tinygrad's rule" : "none: tinygrad's rule (no cache folder)"};
  bool own = setting == "auto";  // found by ringrt, not named by the user: the folder and the file must be private
  struct stat st {};
  if (own && ::lstat(path.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR))  // no file: not a fault
    return {nullptr, fmt::format("none: tinygrad's rule (no file {})", path)};
  auto ignored = [&](const std::string& why) {
    warn_once(
        "tuning " + path,
        fmt::format("the tuning file {} is ignored: {}; the automatic choice goes on without it (the run header's "
                    "'algorithm choice:' line says what chooses)",
                    path, why));
    return Tuning{nullptr, fmt::format("ignored: tinygrad's rule ({}: {})", path, why)};
  };
  if (std::string dir = std::filesystem::path(path).parent_path().string(); own)
    if (std::string problem = private_dir_problem(dir); !problem.empty())
      return ignored(fmt::format("its folder is refused ({})", problem));
  TuningTable t;
  try {
    t = parse_tuning(read_file(path, kMaxTuningBytes, own ? FileTrust::own : FileTrust::named), path);
  } catch (const UserError& e) {  // the message names the file (and line, key) already
    std::string why = e.what();   // "PATH: reason" loses the path; "PATH:LINE:COL: ..." keeps its position
    return ignored(why.starts_with(path + ": ") ? why.substr(path.size() + 2) : why);
  }
  if (t.version != ringrt_version())
    return ignored(fmt::format("made by ringrt {}, this is {}: run `ringrt tune` again", t.version, ringrt_version()));
  if (t.machine != machine_identity())
    return ignored(
        fmt::format("made on another machine ({}), this is {}: run `ringrt tune` here", t.machine, machine_identity()));
  std::string origin = fmt::format("{} (ringrt tune, {}, {} choices)", path, t.made, t.choices.size());
  return {std::make_shared<const TuningTable>(std::move(t)), origin};
}

}  // namespace

const TunedChoice* TuningTable::find(Collective collective, std::string_view kind, int64_t devices, DType dtype,
                                     int64_t bytes, WireFormat wire, bool deterministic, int64_t ranks) const {
  for (const TunedChoice& c : choices)
    if (c.collective == collective && c.kind == kind && c.devices == devices && c.dtype == dtype && c.wire == wire &&
        c.deterministic == deterministic && c.ranks == ranks && bytes >= c.min_bytes && bytes < c.max_bytes)
      return &c;
  return nullptr;
}

std::string ringrt_version() { return RINGRT_VERSION_TEXT; }

std::string machine_identity() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  double gib = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) / (1 << 30) : 0;
  return fmt::format("{} | {} cpus | {} GiB", cpu_model(), std::thread::hardware_concurrency(), std::lround(gib));
}

TuningTable parse_tuning(std::string_view yaml, const std::string& name) {
  Reader r{name};
  YAML::Node loaded;
  try {
    loaded = load_yaml_document(yaml, name);
  } catch (const YAML::Exception& e) {  // a syntax error, or nesting past yaml-cpp's depth guard
    throw ConfigError(fmt::format("{}:{}:{}: YAML syntax error: {}", name, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  const YAML::Node root = loaded;
  if (!root.IsMap())  // empty, or not ringrt's file at all: say so, not "key '': ..."
    throw ConfigError(fmt::format("{}: {}, not a tuning file (a map of format, ringrt, machine, made and choices)",
                                  name, root.IsNull() ? "empty" : "not a map"));
  r.only_keys(root, "", {"format", "ringrt", "machine", "made", "choices"});
  const YAML::Node format = r.need(root, root["format"], "format");
  if (r.text(format, "format") != kTuningFormat)
    r.fail(format, "format", fmt::format("expected {}, got {}", kTuningFormat, quote_value(format.Scalar())));
  TuningTable t;
  t.version = r.line(r.need(root, root["ringrt"], "ringrt"), "ringrt");
  t.machine = r.line(r.need(root, root["machine"], "machine"), "machine");
  t.made = root["made"] ? r.line(root["made"], "made") : "";
  const YAML::Node choices = r.need(root, root["choices"], "choices");
  if (!choices.IsSequence() || choices.size() == 0) r.fail(choices, "choices", "expected a list of choices");
  for (size_t i = 0; i < choices.size(); ++i) t.choices.push_back(r.choice(choices[i], fmt::format("choices[{}]", i)));
  // bands of one collective, kind, device count and dtype must not overlap: one choice per size. Sorted by
  // (group, min_bytes), an overlap shows between neighbours (n log n for a file of thousands of choices).
  auto group = [&](size_t i) { return group_of(t.choices[i]); };
  std::vector<size_t> order(t.choices.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tuple_cat(group(a), std::tie(t.choices[a].min_bytes, a)) <
           std::tuple_cat(group(b), std::tie(t.choices[b].min_bytes, b));
  });
  for (size_t k = 1; k < order.size(); ++k) {
    size_t prev = order[k - 1], i = order[k];
    if (group(prev) == group(i) && t.choices[i].min_bytes < t.choices[prev].max_bytes)
      r.fail(choices[std::max(i, prev)], fmt::format("choices[{}]", std::max(i, prev)),
             fmt::format("its band overlaps choices[{}]'s", std::min(i, prev)));
  }
  return t;
}

std::string tuning_yaml(const TuningTable& t) {
  std::string out = fmt::format(
      "# ringrt tuning file, written by `ringrt tune`: the fastest algorithm measured per collective, device\n"
      "# kind, device count, dtype and size band on this machine (see rewrite/tuning.hpp). Used by `ringrt run`\n"
      "# and the C++ API while allreduce.ring, all2all and ring_threshold are at their defaults (allreduce.tuning).\n"
      "format: {}\nringrt: {}\nmachine: {}\nmade: {}\nchoices:\n",
      kTuningFormat, yaml_quoted(t.version), yaml_quoted(t.machine), yaml_quoted(t.made));
  for (const TunedChoice& c : t.choices) {
    std::vector<std::string> us;
    for (const auto& [algo, v] : c.us) us.push_back(fmt::format("{}: {:.1f}", algorithm_name(algo), v));
    std::string settings;  // written only where not the default, so a native file reads as before
    if (c.wire != WireFormat::native) settings += fmt::format("wire: {}, ", wire_format_name(c.wire));
    if (c.deterministic) settings += "deterministic: true, ";
    if (c.ranks > 0) settings += fmt::format("ranks: {}, ", c.ranks);
    out += fmt::format(
        "  - {{collective: {}, kind: {}, devices: {}, dtype: {}, {}bytes: {}, min_bytes: {}, max_bytes: {}, "
        "algorithm: {}, us: {{{}}}}}\n",
        collective_name(c.collective), yaml_quoted(c.kind), c.devices, dtype_name(c.dtype), settings, c.bytes,
        c.min_bytes, c.max_bytes, algorithm_name(c.algorithm), fmt::join(us, ", "));
  }
  return out;
}

void set_bands(std::vector<TunedChoice>& choices) {
  auto group = [](const TunedChoice& c) { return group_of(c); };
  std::stable_sort(choices.begin(), choices.end(), [&](const TunedChoice& a, const TunedChoice& b) {
    return group(a) < group(b) || (group(a) == group(b) && a.bytes < b.bytes);
  });
  for (size_t i = 0; i < choices.size(); ++i) {
    bool first = i == 0 || group(choices[i - 1]) != group(choices[i]);
    bool last = i + 1 == choices.size() || group(choices[i + 1]) != group(choices[i]);
    // the edge between two measured sizes a < b: their geometric middle, inside (a, b]
    auto edge = [](int64_t a, int64_t b) {
      return std::clamp(static_cast<int64_t>(std::sqrt(static_cast<double>(a) * static_cast<double>(b))), a + 1, b);
    };
    choices[i].min_bytes = first ? 0 : edge(choices[i - 1].bytes, choices[i].bytes);
    choices[i].max_bytes = last ? INT64_MAX : edge(choices[i].bytes, choices[i + 1].bytes);
  }
}

std::string tuning_path(const std::string& setting) {
  if (setting == "off") return "";
  if (setting != "auto") return setting;
  std::filesystem::path dir = user_cache_dir();
  return dir.empty() ? "" : (dir / "tuning.yaml").string();
}

Tuning tuning_for(const std::string& setting) {
  std::string path = tuning_path(setting);
  std::string key = setting + "\n" + path;  // another cache folder is another file
  std::lock_guard lock(g_tunings_mu);
  auto it = g_tunings.find(key);
  if (it != g_tunings.end()) return it->second;
  if (g_tunings.size() >= kMaxSettings) g_tunings.erase(g_tunings.begin());
  return g_tunings.emplace(key, load_tuning(setting, path)).first->second;
}

bool automatic_levels(const AllreduceSettings& s) {
  static const AllreduceSettings kDefaults;
  return s.ring == kDefaults.ring && s.all2all == kDefaults.all2all && s.ring_threshold == kDefaults.ring_threshold &&
         s.algorithm == kDefaults.algorithm;
}

std::string utc_now(const char* format) {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::string yaml_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace ringrt
