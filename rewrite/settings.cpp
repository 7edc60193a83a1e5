#include "rewrite/settings.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>

#include "rewrite/errors.hpp"

namespace ringrt {
namespace {

thread_local std::vector<AllreduceSettings> scoped;

}  // namespace

bool env_switch(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  std::string_view s(v);
  if (s == "1") return true;
  if (s == "0") return false;
  throw ConfigError(fmt::format("environment variable {}: expected 0 or 1, got {}", name, quote_value(s)));
}

void set_tunable(AllreduceSettings& s, std::string_view key, std::string_view value, std::string_view where) {
  const Tunable* t = find_tunable(key);
  if (t && t->runtime)
    throw ConfigError(fmt::format("{}: '{}' is a process-wide setting, not an allreduce setting", where, key));
  RuntimeParams unused;
  set_param({s, unused}, key, value, ParamSource::code, where);
}

void apply_env(AllreduceSettings& s) {
  RuntimeParams unused;
  for_each_env_param([&](const Tunable& t, std::string_view v) {
    if (!t.runtime) set_param({s, unused}, t.key, v, ParamSource::env, fmt::format("environment variable {}", t.env));
  });
}

std::string dump_settings(const AllreduceSettings& s) {
  const RuntimeParams unused;
  std::string out;
  for (const Tunable& t : tunables())
    if (!t.runtime)
      out += fmt::format("{} = {}  (env {}; default {}; {})\n", t.key, param_value({s, unused}, t), t.env,
                         t.default_value, t.description);
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
  set_tunable(probe, "allreduce.hierarchical", s.hierarchical, "AllreduceSettings");
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
