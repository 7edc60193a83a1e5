// The registry of tunables (see params.hpp). Design: the X-lists expand into a table of rows; each
// row holds the tunable's description and three functions generated from its line: set (parse text
// into the field), show (the field as text) and copy (the field from another RuntimeParams). Every
// reader (environment, YAML, --set, dumps, the process-wide store) walks that table.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "core/errors.hpp"
#include "core/params_internal.hpp"

extern char** environ;  // POSIX: the process environment (setenv, putenv and unsetenv change it)

namespace ringrt {
namespace {

using Parsed = std::variant<int64_t, bool, double, std::string, std::vector<std::string>>;

// Whether a parser's values fit a field of type T: a mismatch on a line of the lists fails the build.
template <class T>
constexpr bool accepts(ParamParser p) {
  switch (p.kind) {
    case ParamKind::integer:
      return std::is_same_v<T, int64_t> || (std::is_same_v<T, int> && p.lo >= INT_MIN && p.hi <= INT_MAX);
    case ParamKind::boolean:
    case ParamKind::switch01:
      return std::is_same_v<T, bool>;
    case ParamKind::seconds:
      return std::is_same_v<T, double> && p.min_s <= p.max_s;
    case ParamKind::devices:
      return std::is_same_v<T, std::vector<std::string>>;
    case ParamKind::command:
    case ParamKind::folder:
    case ParamKind::file:
      return std::is_same_v<T, std::string>;
    case ParamKind::choice:
      return std::is_same_v<T, std::string> && !p.choices.empty();
  }
  return false;
}

[[noreturn]] void bad_value(std::string_view where, std::string_view key, std::string_view expected,
                            std::string_view text) {
  throw ConfigError(
      fmt::format("{}: key {}: expected {}, got {}", where, quote_value(key), expected, quote_value(text)));
}

int64_t parse_integer(ParamParser p, std::string_view key, std::string_view text, std::string_view where) {
  int64_t out = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || out < p.lo || out > p.hi)
    bad_value(where, key, fmt::format("an integer in [{}, {}]", p.lo, p.hi), text);
  return out;
}

double parse_seconds(ParamParser p, std::string_view key, std::string_view text, std::string_view where) {
  double s = 0;  // decimal, no sign, padding or hex (from_chars); NaN fails the range test
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), s, std::chars_format::general);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !(s >= p.min_s && s <= p.max_s))
    bad_value(where, key, fmt::format("seconds in [{}, {}]", p.min_s, p.max_s), text);
  return s;
}

std::vector<std::string> parse_devices(std::string_view key, std::string_view text, std::string_view where) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= text.size();) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) {
      if (!split_rank(item)) bad_value(where, key, "device names like CPU:0, HIP:2 or rank1/CPU:0", item);
      out.emplace_back(item);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// One of the words of p.choices, exactly; else "expected leader or reduce_scatter" (a, b or c).
std::string parse_choice(ParamParser p, std::string_view key, std::string_view text, std::string_view where) {
  std::vector<std::string_view> words;
  for (size_t start = 0; start <= p.choices.size();) {
    size_t bar = std::min(p.choices.find('|', start), p.choices.size());
    words.push_back(p.choices.substr(start, bar - start));
    start = bar + 1;
  }
  if (std::find(words.begin(), words.end(), text) != words.end()) return std::string(text);
  std::string expected(words.back());
  if (words.size() > 1)
    expected = fmt::format("{} or {}", fmt::join(words.begin(), words.end() - 1, ", "), words.back());
  bad_value(where, key, expected, text);
}

Parsed parse(ParamParser p, std::string_view key, std::string_view text, ParamSource source, std::string_view where) {
  switch (p.kind) {
    case ParamKind::integer:
      return parse_integer(p, key, text, where);
    case ParamKind::switch01:
      if (source == ParamSource::env) {
        if (text != "0" && text != "1") bad_value(where, key, "0 or 1", text);
        return text == "1";
      }
      [[fallthrough]];
    case ParamKind::boolean:
      if (auto b = parse_bool(text)) return *b;
      bad_value(where, key, "true or false (1 or 0, yes or no, on or off)", text);
    case ParamKind::seconds:
      return parse_seconds(p, key, text, where);
    case ParamKind::devices:
      return parse_devices(key, text, where);
    case ParamKind::command:
    case ParamKind::folder:
    case ParamKind::file:
      if (text.empty())
        bad_value(where, key,
                  p.kind == ParamKind::command  ? "a command"
                  : p.kind == ParamKind::folder ? "a folder"
                                                : "a file (or auto, off)",
                  text);
      return std::string(text);
    case ParamKind::choice:
      return parse_choice(p, key, text, where);
  }
  throw InternalError(fmt::format("parse: unknown kind for '{}'", key));
}

template <class T>
void assign(T& field, Parsed value) {
  if constexpr (std::is_same_v<T, int>)
    field = static_cast<int>(std::get<int64_t>(value));
  else
    field = std::get<T>(std::move(value));
}

std::string show(int v) { return std::to_string(v); }
std::string show(int64_t v) { return std::to_string(v); }
std::string show(bool v) { return v ? "true" : "false"; }
std::string show(double v) { return fmt::format("{}", v); }
std::string show(const std::string& v) { return v.empty() ? "\"\"" : v; }
std::string show(const std::vector<std::string>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

// A line of the lists as a row of the table: its description, and functions that set its field from
// parsed text, show it, and (runtime rows) copy it from another RuntimeParams.
struct Row {
  Tunable info;
  void (*set)(ParamRefs, Parsed);
  std::string (*show)(ConstParamRefs);
  void (*copy)(RuntimeParams&, const RuntimeParams&);
};

#define RINGRT_TYPE_CHECK(type, field, key, env, def, parser, description) \
  static_assert(accepts<type>(parser), "the parser of " key " does not fit its type");
RINGRT_PARAMS(RINGRT_TYPE_CHECK)
#define RINGRT_ALLREDUCE_ROW(type, field, key, env, def, parser, description) \
  Row{{key, env, "", description, parser, false},                             \
      [](ParamRefs p, Parsed v) { assign(p.allreduce.field, std::move(v)); }, \
      [](ConstParamRefs p) { return show(p.allreduce.field); },               \
      nullptr},
#define RINGRT_RUNTIME_ROW(type, field, key, env, def, parser, description) \
  Row{{key, env, "", description, parser, true},                            \
      [](ParamRefs p, Parsed v) { assign(p.runtime.field, std::move(v)); }, \
      [](ConstParamRefs p) { return show(p.runtime.field); },               \
      [](RuntimeParams& to, const RuntimeParams& from) { to.field = from.field; }},

// The table, built once; each row's default_value is its field's default as shown. Never freed, like
// every table here: an atexit handler registered before it was built (MPI's finalize, a device drain)
// runs after the statics built later are destroyed, and may still read the settings.
const std::vector<Row>& rows() {
  static const std::vector<Row>* table = [] {
    auto* t =
        new std::vector<Row>{RINGRT_ALLREDUCE_PARAMS(RINGRT_ALLREDUCE_ROW) RINGRT_RUNTIME_PARAMS(RINGRT_RUNTIME_ROW)};
    static auto* defaults = new std::vector<std::string>();  // the storage default_value views
    const AllreduceSettings a;
    const RuntimeParams r;
    defaults->reserve(t->size());
    for (Row& row : *t) row.info.default_value = defaults->emplace_back(row.show({a, r}));
    return t;
  }();
  return *table;
}

const Row& row_of(std::string_view key, std::string_view where) {
  for (const Row& r : rows())
    if (r.info.key == key) return r;
  throw ConfigError(fmt::format("{}: unknown setting {}", where, quote_value(key)));
}

// The process-wide store: the values set by code, and which of them are set.
struct ProcessStore {
  std::mutex mutex;
  RuntimeParams values;
  std::vector<char> is_set;  // per row of rows(); allreduce rows stay 0
  std::atomic<uint64_t> generation{0};
};
ProcessStore& store() {
  static ProcessStore* s = [] {  // never freed: device threads may read it until the process ends
    auto* p = new ProcessStore();
    p->is_set.assign(rows().size(), 0);
    return p;
  }();
  return *s;
}

}  // namespace

const std::vector<Tunable>& tunables() {
  static const std::vector<Tunable>* t = [] {  // never freed, like rows()
    auto* out = new std::vector<Tunable>();
    for (const Row& r : rows()) out->push_back(r.info);
    return out;
  }();
  return *t;
}

const Tunable* find_tunable(std::string_view key) {
  for (const Tunable& t : tunables())
    if (t.key == key) return &t;
  return nullptr;
}

void set_param(ParamRefs p, std::string_view key, std::string_view text, ParamSource source, std::string_view where) {
  const Row& r = row_of(key, where);
  r.set(p, parse(r.info.parser, key, text, source, where));
}

std::string param_value(ConstParamRefs p, const Tunable& t) { return row_of(t.key, "param_value").show(p); }

std::string dump_params(ConstParamRefs p, const std::map<std::string, std::string>& origins) {
  std::string out;
  for (const Row& r : rows()) {
    auto it = origins.find(std::string(r.info.key));
    out += fmt::format("{} = {}  (env {}; default {}; {})  <- {}\n", r.info.key, r.show(p), r.info.env,
                       r.info.default_value, r.info.description, it == origins.end() ? "default" : it->second);
  }
  return out;
}

namespace {
// The process's runtime values (code over environment over default); with `only`, that key's alone
// (the others keep their defaults): watchdog_timeout reads one variable per run, not every one.
RuntimeParams read_runtime_params(std::string_view only) {
  RuntimeParams out;
  AllreduceSettings unused;
  ProcessStore& s = store();
  const std::vector<Row>& table = rows();
  std::span<const char* const> env = detail::env_values();  // indexed like rows(): tunables() is their info
  std::lock_guard lock(s.mutex);
  for (size_t i = 0; i < table.size(); ++i) {
    const Row& r = table[i];
    if (!r.info.runtime || (!only.empty() && r.info.key != only)) continue;
    if (s.is_set[i]) {
      r.copy(out, s.values);
    } else if (const char* v = env[i]) {
      r.set({unused, out},
            parse(r.info.parser, r.info.key, v, ParamSource::env, fmt::format("environment variable {}", r.info.env)));
    }
  }
  return out;
}
}  // namespace

RuntimeParams current_runtime_params() { return read_runtime_params({}); }

namespace {
// This thread's copy of the runtime tunables (runtime_params), on the heap and freed when the thread ends.
// A call after that (a static's destructor, an atexit handler, a thread_local destroyed later) makes one
// copy that is never freed: one per thread at most, and only while the thread ends.
struct ParamsCopy {
  RuntimeParams values;
  uint64_t seen = UINT64_MAX;
};
thread_local ParamsCopy* this_thread_params = nullptr;
thread_local bool this_thread_params_freed = false;
struct FreeParamsAtThreadExit {
  ~FreeParamsAtThreadExit() {
    delete this_thread_params;
    this_thread_params = nullptr;
    this_thread_params_freed = true;
  }
};
thread_local FreeParamsAtThreadExit free_params_at_thread_exit;
}  // namespace

const RuntimeParams& runtime_params() {
  if (this_thread_params == nullptr) {
    if (!this_thread_params_freed) (void)&free_params_at_thread_exit;  // constructs it: its destructor frees
    this_thread_params = new ParamsCopy();
  }
  ParamsCopy& copy = *this_thread_params;
  uint64_t generation = runtime_params_generation();  // before the read: a change during it reads again
  if (generation != copy.seen) {
    copy.values = current_runtime_params();
    copy.seen = generation;
  }
  return copy.values;
}

void set_runtime_params(const RuntimeParams& values, std::initializer_list<std::string_view> keys) {
  for (std::string_view k : keys)
    if (const Tunable* t = find_tunable(k); !t || !t->runtime)
      throw ConfigError(fmt::format("set_runtime_params: '{}' is not a runtime tunable", k));
  ProcessStore& s = store();
  const std::vector<Row>& table = rows();
  // Each value set is checked as its text would be (an integer or seconds in the tunable's bounds, a word of
  // its choice), before anything is set: a bad value is the ConfigError a YAML file or --set gets.
  AllreduceSettings unused;
  for (const Row& r : table) {
    bool named = keys.size() == 0 || std::find(keys.begin(), keys.end(), r.info.key) != keys.end();
    ParamKind kind = r.info.parser.kind;
    if (!r.info.runtime || !named ||
        (kind != ParamKind::integer && kind != ParamKind::seconds && kind != ParamKind::choice))
      continue;
    (void)parse(r.info.parser, r.info.key, r.show({unused, values}), ParamSource::code, "set_runtime_params");
  }
  std::lock_guard lock(s.mutex);
  for (size_t i = 0; i < table.size(); ++i) {
    const Row& r = table[i];
    bool named = keys.size() == 0 || std::find(keys.begin(), keys.end(), r.info.key) != keys.end();
    if (!r.info.runtime || !named) continue;
    r.copy(s.values, values);
    s.is_set[i] = 1;
  }
  ++s.generation;
}

void reset_runtime_params() {
  ProcessStore& s = store();
  std::lock_guard lock(s.mutex);
  std::fill(s.is_set.begin(), s.is_set.end(), 0);
  s.values = RuntimeParams{};
  ++s.generation;
}

// Read per run, so it must be cheap: set in code, or neither there nor in the environment (the default),
// it needs no RuntimeParams; only a value in the environment is parsed (and checked) each time.
std::chrono::milliseconds watchdog_timeout() {
  static const auto row = static_cast<size_t>(&row_of("runtime.watchdog_s", "watchdog_timeout") - rows().data());
  static const std::string& env = *new std::string(rows()[row].info.env);  // never freed, like rows()
  static const double by_default = RuntimeParams{}.watchdog_s;
  auto ms = [](double seconds) { return std::chrono::milliseconds(std::llround(seconds * 1000)); };
  ProcessStore& s = store();
  {
    std::lock_guard lock(s.mutex);
    if (s.is_set[row]) return ms(s.values.watchdog_s);
  }
  if (std::getenv(env.c_str()) == nullptr) return ms(by_default);
  return ms(read_runtime_params("runtime.watchdog_s").watchdog_s);
}

uint64_t runtime_params_generation() { return store().generation.load(std::memory_order_acquire); }

std::string quote_value(std::string_view text) {
  constexpr size_t kShown = 120;  // an error shows the start of a value, never a whole file's line
  std::string out = "'";
  bool cut = text.size() > kShown;
  if (cut) text = text.substr(0, kShown);
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  return out + (cut ? "...'" : "'");
}

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
  if (name[colon + 1] == '0' && colon + 2 < name.size()) return std::nullopt;  // one name per device: no "CPU:00"
  int index = 0;
  for (size_t i = colon + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    index = index * 10 + (name[i] - '0');
  }
  return std::pair{std::string(name.substr(0, colon)), index};
}

std::optional<RankedDeviceName> split_rank(std::string_view name) {
  constexpr std::string_view kPrefix = "rank";
  size_t slash = name.find('/');
  if (slash == std::string_view::npos)
    return parse_device_name(name) ? std::optional<RankedDeviceName>({-1, name}) : std::nullopt;
  std::string_view digits = name.substr(0, slash).substr(std::min(kPrefix.size(), slash));
  if (name.substr(0, kPrefix.size()) != kPrefix || digits.empty() || digits.size() > 7 ||
      (digits[0] == '0' && digits.size() > 1) || !parse_device_name(name.substr(slash + 1)))
    return std::nullopt;
  int rank = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    rank = rank * 10 + (c - '0');
  }
  return RankedDeviceName{rank, name.substr(slash + 1)};
}

namespace {
constexpr size_t kTunableCount = std::initializer_list<std::string_view>{RINGRT_PARAMS(RINGRT_PARAM_ENV)}.size();

// Per tunable (index in tunables()), its value among `entries` ("NAME=value", n of them), or null, as
// getenv finds it: the first entry of a name wins, and there an empty path or command counts as unset.
void find_values(const char* const* entries, size_t n, std::array<const char*, kTunableCount>& values) {
  static const auto* index = [] {  // never freed, like rows()
    auto* out = new std::unordered_map<std::string_view, size_t>();
    for (size_t i = 0; i < tunables().size(); ++i) out->emplace(tunables()[i].env, i);
    return out;
  }();
  if (tunables().size() != kTunableCount) throw std::logic_error("env_values: the tunables are not the X-lists'");
  std::array<bool, kTunableCount> found{};
  values.fill(nullptr);
  for (size_t k = 0; k < n; ++k) {
    std::string_view entry(entries[k]);
    size_t eq = entry.find('=');
    auto it = eq == std::string_view::npos ? index->end() : index->find(entry.substr(0, eq));
    if (it == index->end() || found[it->second]) continue;
    found[it->second] = true;
    const Tunable& t = tunables()[it->second];
    bool text =
        t.parser.kind == ParamKind::command || t.parser.kind == ParamKind::folder || t.parser.kind == ParamKind::file;
    if (!(text && eq + 1 == entry.size())) values[it->second] = entries[k] + eq + 1;
  }
}

size_t environment_size() {
  size_t n = 0;
  while (environ != nullptr && environ[n] != nullptr) ++n;
  return n;
}

// The tunables' variables as found in one scan of the environment, kept per thread while the
// environment's text is the same: getenv scans every variable per call, and current_settings() reads
// every allreduce tunable per realize (with 40 variables set, a third of a small allreduce's host time).
// A scan copies the entries and points the values into the copy; each later read compares `environ`'s
// entries with the copy (strcmp: 0.1 us for 40 variables, 1-2 us for 300, fewer than the getenv calls
// it replaces), so every change is seen: one made through setenv, putenv or unsetenv, a write into a
// putenv'd string, a freed one whose address comes back holding another variable. An environment over
// kMaxCopyBytes is scanned at every read instead of copied.
constexpr size_t kMaxCopyBytes = size_t{1} << 20;

struct EnvCopy {
  bool kept = false;                 // the copy holds the environment of the last scan
  std::vector<uint32_t> start;       // entry k's text begins at text[start[k]]
  std::vector<char> text;            // the entries, each with its NUL
  std::vector<const char*> entries;  // into text
  std::array<const char*, kTunableCount> values{};
};

bool environment_unchanged(const EnvCopy& copy) {
  if (!copy.kept) return false;
  size_t k = 0;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e, ++k)
    if (k == copy.entries.size() || std::strcmp(*e, copy.entries[k]) != 0) return false;
  return k == copy.entries.size();
}

void copy_environment(EnvCopy& copy) {
  size_t n = environment_size(), bytes = 0;
  copy.start.clear();
  for (size_t k = 0; k < n && bytes <= kMaxCopyBytes; ++k) {
    copy.start.push_back(static_cast<uint32_t>(bytes));
    bytes += std::strlen(environ[k]) + 1;
  }
  copy.kept = bytes <= kMaxCopyBytes;
  if (!copy.kept) {  // too large to keep: the values point into the environment itself
    copy.entries.clear();
    find_values(environ, n, copy.values);
    return;
  }
  copy.text.resize(bytes);
  copy.entries.resize(n);
  for (size_t k = 0; k < n; ++k) {
    char* at = copy.text.data() + copy.start[k];
    std::memcpy(at, environ[k], (k + 1 < n ? copy.start[k + 1] : bytes) - copy.start[k]);
    copy.entries[k] = at;
  }
  find_values(copy.entries.data(), n, copy.values);
}

// This thread's copy, made at its first read and freed when the thread ends. The pointers are
// trivially destructible: the main thread's atexit handlers (MPI's finalize reads the watchdog setting)
// run after its thread_local destructors, and then read the environment directly.
thread_local EnvCopy* this_thread_copy = nullptr;
thread_local bool this_thread_ending = false;
struct FreeCopyAtThreadExit {
  ~FreeCopyAtThreadExit() {
    delete this_thread_copy;
    this_thread_copy = nullptr;
    this_thread_ending = true;
  }
};
thread_local FreeCopyAtThreadExit free_copy_at_thread_exit;
thread_local std::array<const char*, kTunableCount> values_after_thread_exit{};
}  // namespace

std::span<const char* const> detail::env_values() {
  if (this_thread_ending) {
    find_values(environ, environment_size(), values_after_thread_exit);
    return values_after_thread_exit;
  }
  if (this_thread_copy == nullptr) {
    (void)&free_copy_at_thread_exit;  // constructs it on this thread: its destructor frees the copy
    this_thread_copy = new EnvCopy();
  }
  if (!environment_unchanged(*this_thread_copy)) copy_environment(*this_thread_copy);
  return this_thread_copy->values;
}

}  // namespace ringrt
