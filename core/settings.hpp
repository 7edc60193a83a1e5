// The allreduce settings of a thread: AllreduceSettings (declared in params.hpp, one line per
// tunable of RINGRT_ALLREDUCE_PARAMS), the environment's values, ScopedSettings, and the allreduce
// view of the registry (set_tunable, apply_env, dump_settings).
// Reference: tinygrad helpers.py RING, ALL2ALL, getenv("RING_ALLREDUCE_THRESHOLD"), REDUCE_LEADERS.
#pragma once

#include <ringrt/core/params.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ringrt {

// An on/off switch from the environment variable `name`: unset -> fallback, "1" on, "0" off; any
// other value (also empty or padded) is a ConfigError naming the variable and the value.
bool env_switch(const char* name, bool fallback);

// Sets the allreduce tunable with this YAML key from text ("2", "true", "HIP:0,HIP:2"). `where`
// prefixes the error ("config.yaml:3:9" or "environment variable RING"). Throws ConfigError for an
// unknown key, a runtime tunable (see set_param), or a value out of range or of the wrong form.
void set_tunable(AllreduceSettings& s, std::string_view key, std::string_view value, std::string_view where);
// Applies RING, ALL2ALL, RING_ALLREDUCE_THRESHOLD, REDUCE_LEADERS, ALLREDUCE_CAST and DEBUG when set.
void apply_env(AllreduceSettings& s);
// "key = value  (env VAR; default D; meaning)" lines, one per allreduce tunable, then devices.groups.
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
  const AllreduceSettings& settings() const { return settings_; }

 private:
  AllreduceSettings settings_;
  ScopedSettings* outer_;       // the one in force before this, or null
  ScopedSettings** innermost_;  // the creating thread's innermost ScopedSettings
};

}  // namespace ringrt
