#include "core/settings.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>

#include "core/errors.hpp"
#include "core/params_internal.hpp"

namespace ringrt {
namespace {

// The innermost ScopedSettings of this thread; each links to the one before it. A plain pointer, not a
// container, so that it outlives the thread's thread_local destructors: the main thread's atexit
// handlers run after them and may read the settings (exit() called inside a scope keeps it in force).
thread_local ScopedSettings* innermost_scope = nullptr;

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
  if (innermost_scope != nullptr) return innermost_scope->settings();
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

ScopedSettings::ScopedSettings(AllreduceSettings s) : settings_(std::move(s)) {
  validate(settings_);
  outer_ = innermost_scope;
  innermost_ = &innermost_scope;
  innermost_scope = this;
}

ScopedSettings::~ScopedSettings() {  // unlinks itself from the creating thread's chain, in any order
  ScopedSettings** link = innermost_;
  while (*link != nullptr && *link != this) link = &(*link)->outer_;
  if (*link == this) *link = outer_;
}

}  // namespace ringrt
