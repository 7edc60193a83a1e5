// The tunables' internals (not installed): the name checks of the table in core/params.hpp, the loader's hooks
// (set a tunable from text, read the environment, dump the values; runtime/cli/config.cpp), the tests' reset, and
// the text helpers shared by settings, YAML and `--set`. Defined in core/params.cpp.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "core/params.hpp"

namespace ringrt {

namespace detail {
// True when no two names are equal and none is a section of another ("a" and "a.b"): a tunable's
// YAML key must name one leaf, and its environment variable one tunable.
constexpr bool distinct_names(std::initializer_list<std::string_view> names) {
  for (auto a = names.begin(); a != names.end(); ++a)
    for (auto b = names.begin(); b != names.end(); ++b) {
      if (a == b) continue;
      if (*a == *b || a->empty()) return false;
      if (b->size() > a->size() && b->substr(0, a->size()) == *a && (*b)[a->size()] == '.') return false;
    }
  return true;
}
}  // namespace detail

#define RINGRT_PARAM_KEY(type, field, key, env, def, parser, description) key,
#define RINGRT_PARAM_ENV(type, field, key, env, def, parser, description) env,
// Fails the build when two tunables of LIST (an X-list like the ones above) share a YAML key or an
// environment variable, or a key is a section of another.
#define RINGRT_CHECK_PARAMS(LIST)                                                      \
  static_assert(::ringrt::detail::distinct_names({LIST(RINGRT_PARAM_KEY)}),            \
                "two tunables share a YAML key (or one key is a section of another)"); \
  static_assert(::ringrt::detail::distinct_names({LIST(RINGRT_PARAM_ENV)}),            \
                "two tunables share an environment variable")

#define RINGRT_PARAMS(X) RINGRT_ALLREDUCE_PARAMS(X) RINGRT_RUNTIME_PARAMS(X)
RINGRT_CHECK_PARAMS(RINGRT_PARAMS);

// Where a value comes from; it decides how strict the parser is (kSwitch01 from the environment
// takes only "0" and "1").
enum class ParamSource { code, file, env, set };

// The two stores, for the functions that take any tunable.
struct ParamRefs {
  AllreduceSettings& allreduce;
  RuntimeParams& runtime;
};
struct ConstParamRefs {
  const AllreduceSettings& allreduce;
  const RuntimeParams& runtime;
};

// Sets the tunable `key` from text ("2", "true", "CPU:0,CPU:2", "1.5"). `where` starts the error.
// Throws ConfigError "WHERE: unknown setting 'KEY'" or "WHERE: key 'KEY': expected ..., got '...'".
void set_param(ParamRefs p, std::string_view key, std::string_view text, ParamSource source, std::string_view where);
// Calls fn(tunable, value) for every tunable whose environment variable is set, in declaration
// order (a kCommand, kFolder or kFile variable set to "" counts as unset).
template <class Fn>
void for_each_env_param(Fn&& fn);
// The value of the tunable as dumped: 2, true, [CPU:0, CPU:2], 1.5, g++, "" for an empty text.
std::string param_value(ConstParamRefs p, const Tunable& t);
// "key = value  (env VAR; default D; description)  <- ORIGIN" per tunable, one a line; ORIGIN is
// origins[key] ("FILE:LINE:COL", "environment variable X", "--set k=v"), else "default".
std::string dump_params(ConstParamRefs p, const std::map<std::string, std::string>& origins);

// Forgets every value set by set_runtime_params (tests).
void reset_runtime_params();
// Increases at every set_runtime_params and reset_runtime_params: hot paths keep a value until it changes.
uint64_t runtime_params_generation();

// ---- helpers

// "true", "yes", "on", "1" -> true; "false", "no", "off", "0" -> false (any case); nothing otherwise.
// The one boolean syntax of settings, YAML values and --set.
std::optional<bool> parse_bool(std::string_view text);
// `text` in single quotes for an error message, each control byte (below 0x20, and 0x7f) written as \xNN:
// a value from a file, the environment or the command line echoed back cannot drive the terminal. At most its
// first 120 bytes, then "...": an error never echoes a whole line of a file it was pointed at.
std::string quote_value(std::string_view text);
// A device name "KIND:index" (CPU:0, HIP:12; index at most 5 digits, no sign, no leading zero, so
// each device has one name) split into its kind and index; nothing for any other form. The one device-name syntax of
// settings and the device registry.
std::optional<std::pair<std::string, int>> parse_device_name(std::string_view name);
// A device name of an SPMD job, "rank<R>/KIND:index" (rank2/CPU:0; R without sign or leading zero),
// split into R and the local name; a name without the prefix is (-1, name). Nothing for a malformed
// prefix or local name.
struct RankedDeviceName {
  int rank = -1;
  std::string_view local;
};
std::optional<RankedDeviceName> split_rank(std::string_view name);

namespace detail {
// Per tunable (index in tunables()), its variable's value, or null when unset (also when empty, for a
// path or command); valid on this thread until its next call.
std::span<const char* const> env_values();
}  // namespace detail

template <class Fn>
void for_each_env_param(Fn&& fn) {
  std::span<const char* const> env = detail::env_values();
  for (size_t i = 0; i < env.size(); ++i)
    if (env[i] != nullptr) fn(tunables()[i], std::string_view(env[i]));
}

}  // namespace ringrt
