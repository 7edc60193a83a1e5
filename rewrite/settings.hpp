// The allreduce tunables: declared once (name, environment variable, YAML key, default, meaning),
// settable from YAML, the environment, the command line or code, and dumpable.
// Reference: tinygrad helpers.py RING, ALL2ALL, getenv("RING_ALLREDUCE_THRESHOLD"), REDUCE_LEADERS.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringrt {

// "true", "yes", "on", "1" -> true; "false", "no", "off", "0" -> false (any case); nothing otherwise.
// The one boolean syntax of settings, YAML values and --set.
std::optional<bool> parse_bool(std::string_view text);
// A device name "KIND:index" (CPU:0, HIP:12; index at most 5 digits) split into its kind and index;
// nothing for any other form. The one device-name syntax of settings and the device registry.
std::optional<std::pair<std::string, int>> parse_device_name(std::string_view name);

// An on/off switch from the environment variable `name`: unset -> fallback, "1" on, "0" off; any
// other value (also empty or padded) is a ConfigError naming the variable and the value.
bool env_switch(const char* name, bool fallback);

struct AllreduceSettings {
  int ring = 1;                             // 0 never; 1 when ndev > 2 and numel > threshold; 2 always
  int all2all = 0;                          // same levels; all2all wins over ring
  int64_t ring_threshold = 256000;          // elements
  std::vector<std::string> reduce_leaders;  // devices that lead their group
  std::map<std::string, int> groups;        // device -> group id (hierarchical allreduce)
  bool cast = true;                         // float16/bfloat16 copies stay 16-bit; false promotes to float32
  int debug = 0;                            // >= 2 prints one line per allreduce
  bool operator==(const AllreduceSettings&) const = default;
};

// One tunable: its YAML key, environment variable ("" if none), default and meaning.
struct Tunable {
  std::string_view key, env, default_value, description;
};
const std::vector<Tunable>& tunables();

// Sets the tunable with this YAML key from text ("2", "true", "HIP:0,HIP:2"). `where` prefixes the
// error ("config.yaml:3:9" or "environment variable RING"). Throws ConfigError for an unknown key or a
// value out of range or of the wrong form.
void set_tunable(AllreduceSettings& s, std::string_view key, std::string_view value, std::string_view where);
// Applies RING, ALL2ALL, RING_ALLREDUCE_THRESHOLD, REDUCE_LEADERS, ALLREDUCE_CAST and DEBUG when set.
void apply_env(AllreduceSettings& s);
// "key = value  (env VAR; meaning)" lines, one per tunable.
std::string dump_settings(const AllreduceSettings& s);

// The settings in force on this thread: the innermost ScopedSettings, else the defaults with the
// environment applied (throws ConfigError for a bad environment value).
AllreduceSettings current_settings();

// Throws ConfigError for values out of range (ring/all2all not 0..2, negative threshold or debug)
// and for reduce leaders or group members that are not device names.
void validate(const AllreduceSettings& s);

// Installs settings for this thread until destroyed (like tinygrad's Context). Nestable; the whole
// struct is installed, so start from current_settings() to change one field. Throws ConfigError
// (see validate). Destroy it on the thread that created it.
class ScopedSettings {
 public:
  explicit ScopedSettings(AllreduceSettings s);
  ~ScopedSettings();
  ScopedSettings(const ScopedSettings&) = delete;
  ScopedSettings& operator=(const ScopedSettings&) = delete;

 private:
  std::vector<AllreduceSettings>* stack_;
};

}  // namespace ringrt
