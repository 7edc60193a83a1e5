#include "rewrite/settings.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <charconv>
#include <cstdlib>

#include "rewrite/errors.hpp"

namespace ringrt {

const std::vector<Tunable>& tunables() {
  static const std::vector<Tunable> t{
      {"allreduce.ring", "RING", "1", "ring allreduce: 0 never, 1 when ndev > 2 and numel > ring_threshold, 2 always"},
      {"allreduce.all2all", "ALL2ALL", "0", "all2all allreduce, same levels as ring; wins over ring"},
      {"allreduce.ring_threshold", "RING_ALLREDUCE_THRESHOLD", "256000",
       "elements above which ring/all2all level 1 applies (tinygrad's empirical crossover)"},
      {"allreduce.reduce_leaders", "REDUCE_LEADERS", "", "devices that lead their group (comma list in env)"},
      {"allreduce.cast", "ALLREDUCE_CAST", "1", "float16/bfloat16 allreduce copies stay 16-bit; 0 promotes to float32"},
      {"debug", "DEBUG", "0", ">= 2 prints one line per allreduce: algorithm, ndev x numel, dtype"},
  };
  return t;
}

namespace {

int64_t parse_int(std::string_view v, std::string_view key, std::string_view where, int64_t lo, int64_t hi) {
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || out < lo || out > hi)
    throw ConfigError(fmt::format("{}: {} must be an integer in [{}, {}], got '{}'", where, key, lo, hi, v));
  return out;
}

bool parse_bool_or_throw(std::string_view v, std::string_view key, std::string_view where) {
  if (auto b = parse_bool(v)) return *b;
  throw ConfigError(fmt::format("{}: {} must be true or false (1 or 0), got '{}'", where, key, v));
}

thread_local std::vector<AllreduceSettings> scoped;

}  // namespace

std::optional<bool> parse_bool(std::string_view text) {
  std::string l(text);
  for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "1" || l == "true" || l == "yes" || l == "on") return true;
  if (l == "0" || l == "false" || l == "no" || l == "off") return false;
  return std::nullopt;
}

std::optional<std::pair<std::string, int>> parse_device_name(std::string_view name) {
  size_t colon = name.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= name.size() || name.size() - colon > 6)
    return std::nullopt;
  int index = 0;
  for (size_t i = colon + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    index = index * 10 + (name[i] - '0');
  }
  return std::pair{std::string(name.substr(0, colon)), index};
}

bool env_switch(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  std::string_view s(v);
  if (s == "1") return true;
  if (s == "0") return false;
  throw ConfigError(fmt::format("environment variable {}: expected 0 or 1, got '{}'", name, s));
}

void set_tunable(AllreduceSettings& s, std::string_view key, std::string_view value, std::string_view where) {
  if (key == "allreduce.ring") {
    s.ring = static_cast<int>(parse_int(value, key, where, 0, 2));
  } else if (key == "allreduce.all2all") {
    s.all2all = static_cast<int>(parse_int(value, key, where, 0, 2));
  } else if (key == "allreduce.ring_threshold") {
    s.ring_threshold = parse_int(value, key, where, 0, INT64_MAX);
  } else if (key == "allreduce.reduce_leaders") {
    s.reduce_leaders.clear();
    size_t start = 0;
    while (start <= value.size()) {
      size_t comma = value.find(',', start);
      std::string_view item = value.substr(start, comma == std::string_view::npos ? value.npos : comma - start);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (!item.empty()) {
        if (!parse_device_name(item))
          throw ConfigError(
              fmt::format("{}: {} must list device names like CPU:0 or HIP:2, got '{}'", where, key, item));
        s.reduce_leaders.emplace_back(item);
      }
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  } else if (key == "allreduce.cast") {
    s.cast = parse_bool_or_throw(value, key, where);
  } else if (key == "debug") {
    s.debug = static_cast<int>(parse_int(value, key, where, 0, 10));
  } else {
    throw ConfigError(fmt::format("{}: unknown setting '{}'", where, key));
  }
}

void apply_env(AllreduceSettings& s) {
  for (const auto& t : tunables()) {
    if (t.env.empty()) continue;
    const char* v = std::getenv(std::string(t.env).c_str());
    if (v == nullptr) continue;
    set_tunable(s, t.key, v, fmt::format("environment variable {}", t.env));
  }
}

std::string dump_settings(const AllreduceSettings& s) {
  auto value = [&](std::string_view key) -> std::string {
    if (key == "allreduce.ring") return std::to_string(s.ring);
    if (key == "allreduce.all2all") return std::to_string(s.all2all);
    if (key == "allreduce.ring_threshold") return std::to_string(s.ring_threshold);
    if (key == "allreduce.reduce_leaders") return fmt::format("[{}]", fmt::join(s.reduce_leaders, ", "));
    if (key == "allreduce.cast") return s.cast ? "true" : "false";
    return std::to_string(s.debug);
  };
  std::string out;
  for (const auto& t : tunables())
    out +=
        fmt::format("{} = {}  (env {}; default {}; {})\n", t.key, value(t.key), t.env, t.default_value, t.description);
  std::vector<std::string> groups;
  for (const auto& [dev, g] : s.groups) groups.push_back(fmt::format("{}: {}", dev, g));
  out += fmt::format("devices.groups = {{{}}}\n", fmt::join(groups, ", "));
  return out;
}

AllreduceSettings current_settings() {
  if (!scoped.empty()) return scoped.back();
  AllreduceSettings s;
  apply_env(s);
  return s;
}

void validate(const AllreduceSettings& s) {
  auto check = [](bool ok, const std::string& what) {
    if (!ok) throw ConfigError("AllreduceSettings: " + what);
  };
  check(s.ring >= 0 && s.ring <= 2, fmt::format("ring must be 0, 1 or 2, got {}", s.ring));
  check(s.all2all >= 0 && s.all2all <= 2, fmt::format("all2all must be 0, 1 or 2, got {}", s.all2all));
  check(s.ring_threshold >= 0, fmt::format("ring_threshold must be >= 0, got {}", s.ring_threshold));
  check(s.debug >= 0, fmt::format("debug must be >= 0, got {}", s.debug));
  AllreduceSettings probe;
  for (const auto& d : s.reduce_leaders) set_tunable(probe, "allreduce.reduce_leaders", d, "AllreduceSettings");
  for (const auto& [d, g] : s.groups) set_tunable(probe, "allreduce.reduce_leaders", d, "AllreduceSettings::groups");
}

ScopedSettings::ScopedSettings(AllreduceSettings s) {
  validate(s);
  scoped.push_back(std::move(s));
  stack_ = &scoped;
}
ScopedSettings::~ScopedSettings() {
  if (!stack_->empty()) stack_->pop_back();  // the creating thread's stack, wherever it is destroyed
}

}  // namespace ringrt
