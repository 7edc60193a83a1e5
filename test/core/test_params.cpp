// The registry of tunables (core/params.hpp): every tunable is listed once with its variable;
// a key or variable declared twice fails the build; values parse with clear errors; the
// process-wide store's precedence (code > environment > default) reaches the readers (perf_options,
// allreduce_in_place, watchdog_timeout, cache_dir).
#include <fmt/format.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "codegen/compile_cache.hpp"
#include "core/errors.hpp"
#include "core/params_internal.hpp"
#include "core/settings.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/device/device.hpp"
#include "runtime/engine/executor.hpp"
#include "test/support/runtime_switches.hpp"

BOOST_AUTO_TEST_SUITE(test_params)

using namespace ringrt;
using ringrt::test::set_switches;
using ringrt::test::switches;

namespace {

// RAII for one environment variable of this process (restores the old value).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The message of the ConfigError that fn throws ("" when it throws none).
template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// Forgets the values code set, before and after a test.
struct FreshStore {
  FreshStore() { reset_runtime_params(); }
  ~FreshStore() { reset_runtime_params(); }
};

// Runs the host compiler on a snippet that includes params.hpp; returns its exit status, fills log.
int compile_snippet(const std::string& body, std::string& log) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("ringrt-params-{}", getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "snippet.cpp") << "#include \"core/params_internal.hpp\"\n" << body << "\nint main() {}\n";
  std::string cmd = fmt::format("g++ -std=c++20 -fsyntax-only -I'{}' '{}' > '{}' 2>&1", RINGRT_SOURCE_DIR,
                                (dir / "snippet.cpp").string(), (dir / "log").string());
  int rc = std::system(cmd.c_str());
  std::ifstream in(dir / "log");
  log.assign(std::istreambuf_iterator<char>(in), {});
  std::filesystem::remove_all(dir);
  return rc;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_tunable_is_listed_once_with_its_variable) {
  const std::vector<std::pair<std::string_view, std::string_view>> want{
      {"allreduce.ring", "RING"},
      {"allreduce.all2all", "ALL2ALL"},
      {"allreduce.ring_threshold", "RING_ALLREDUCE_THRESHOLD"},
      {"allreduce.reduce_leaders", "REDUCE_LEADERS"},
      {"allreduce.hierarchical", "RINGRT_HIERARCHICAL"},
      {"allreduce.cast", "ALLREDUCE_CAST"},
      {"allreduce.tuning", "RINGRT_TUNING"},
      {"allreduce.algorithm", "RINGRT_ALLREDUCE_ALGORITHM"},
      {"allreduce.mpi_bytes", "RINGRT_MPI_BYTES"},
      {"allreduce.deterministic", "RINGRT_DETERMINISTIC"},
      {"allreduce.wire", "RINGRT_ALLREDUCE_WIRE"},
      {"debug", "DEBUG"},
      {"runtime.peer_reads", "RINGRT_PEER_READS"},
      {"runtime.peer_writes", "RINGRT_PEER_WRITES"},
      {"runtime.kernel_split", "RINGRT_KERNEL_SPLIT"},
      {"runtime.inline_small", "RINGRT_INLINE_SMALL"},
      {"runtime.stream_bytes", "RINGRT_STREAM_BYTES"},
      {"runtime.huge_pages", "RINGRT_HUGE_PAGES"},
      {"runtime.allreduce_in_place", "RINGRT_ALLREDUCE_IN_PLACE"},
      {"runtime.program_cache", "RINGRT_PROGRAM_CACHE"},
      {"runtime.kernel_opt", "RINGRT_KERNEL_OPT"},
      {"runtime.hip_logical_devices", "RINGRT_HIP_LOGICAL_DEVICES"},
      {"runtime.ranks_per_host", "RINGRT_RANKS_PER_HOST"},
      {"runtime.mpi_chunk_bytes", "RINGRT_MPI_CHUNK_BYTES"},
      {"runtime.mpi_stage_host", "RINGRT_MPI_STAGE_HOST"},
      {"runtime.async", "RINGRT_ASYNC"},
      {"runtime.graphs", "RINGRT_GRAPHS"},
      {"runtime.watchdog_s", "RINGRT_WATCHDOG_S"},
      {"runtime.mpi_start_s", "RINGRT_MPI_START_S"},
      {"runtime.cache_dir", "RINGRT_CACHE_DIR"},
      {"runtime.cache_max_bytes", "RINGRT_CACHE_MAX_BYTES"},
      {"runtime.cxx", "CXX"}};
  BOOST_TEST_REQUIRE(tunables().size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    BOOST_TEST(tunables()[i].key == want[i].first);
    BOOST_TEST(tunables()[i].env == want[i].second);
    BOOST_TEST(!tunables()[i].description.empty());
    BOOST_TEST(tunables()[i].runtime == want[i].first.starts_with("runtime."));
    BOOST_TEST(tunables()[i].from_files() == (want[i].second != "CXX" && want[i].second != "RINGRT_CACHE_DIR"));
  }
  BOOST_TEST(find_tunable("runtime.watchdog_s")->default_value == "60");
  BOOST_TEST(find_tunable("allreduce.reduce_leaders")->default_value == "[]");
  BOOST_TEST(find_tunable("runtime.cxx")->default_value == "g++");
  BOOST_TEST(find_tunable("allreduce.hierarchical")->default_value == "leader");
  BOOST_TEST(find_tunable("runtime") == nullptr);
}

// The predicate behind RINGRT_CHECK_PARAMS, at compile time and at run time.
static_assert(detail::distinct_names({"a.b", "a.c", "d"}));
static_assert(!detail::distinct_names({"a.b", "d", "a.b"}));
static_assert(!detail::distinct_names({"a", "a.b"}));  // "a" would be a leaf and a section
static_assert(!detail::distinct_names({"a.b", ""}));
BOOST_AUTO_TEST_CASE(duplicate_names_are_found) {
  BOOST_TEST(detail::distinct_names({"RING", "ALL2ALL", "RING_ALLREDUCE_THRESHOLD"}));
  BOOST_TEST(!detail::distinct_names({"RING", "ALL2ALL", "RING"}));
  BOOST_TEST(detail::distinct_names({"runtime.x", "runtimes.x"}));
}

// A key or variable declared twice fails the build: a snippet that adds a line to the lists does not
// compile; the same snippet with a fresh key and variable does (so the failure is the check's).
BOOST_AUTO_TEST_CASE(a_key_declared_twice_fails_the_build) {
  auto with = [](const char* line) {
    return fmt::format("#define MORE(X) RINGRT_PARAMS(X) {}\nRINGRT_CHECK_PARAMS(MORE);", line);
  };
  std::string log;
  BOOST_TEST(compile_snippet(with("X(int, x, \"runtime.fresh\", \"RINGRT_FRESH\", 0, int_in(0, 1), \"d\")"), log) == 0,
             log);
  BOOST_TEST(compile_snippet(with("X(int, x, \"allreduce.ring\", \"RINGRT_FRESH\", 0, int_in(0, 1), \"d\")"), log) !=
             0);
  BOOST_TEST(log.find("two tunables share a YAML key") != std::string::npos, log);
  BOOST_TEST(
      compile_snippet(with("X(int, x, \"runtime.fresh\", \"RINGRT_PEER_READS\", 0, int_in(0, 1), \"d\")"), log) != 0);
  BOOST_TEST(log.find("two tunables share an environment variable") != std::string::npos, log);
}

BOOST_AUTO_TEST_CASE(values_parse_with_clear_errors) {
  AllreduceSettings a;
  RuntimeParams r;
  auto set = [&](const char* key, const char* text, ParamSource source = ParamSource::file) {
    return error_of([&] { set_param({a, r}, key, text, source, "f.yaml:2:3"); });
  };
  BOOST_TEST(set("runtime.watchdog_s", "2.5") == "");
  BOOST_TEST(r.watchdog_s == 2.5);
  BOOST_TEST(set("runtime.peer_reads", "off") == "");
  BOOST_TEST(!r.peer_reads);
  BOOST_TEST(set("allreduce.reduce_leaders", "CPU:1, HIP:2") == "");
  BOOST_TEST((a.reduce_leaders == std::vector<std::string>{"CPU:1", "HIP:2"}));
  BOOST_TEST(set("runtime.cxx", "ccache g++") == "");
  BOOST_TEST(r.cxx == "ccache g++");
  BOOST_TEST(set("allreduce.ring", "3") == "f.yaml:2:3: key 'allreduce.ring': expected an integer in [0, 2], got '3'");
  BOOST_TEST(set("runtime.watchdog_s", "0") ==
             "f.yaml:2:3: key 'runtime.watchdog_s': expected seconds in [0.001, 10000000], got '0'");
  for (const char* bad : {"1e-9", " 5", "0x10", "-1", "nan", ""})
    BOOST_TEST(set("runtime.watchdog_s", bad).find("expected seconds in") != std::string::npos, bad);
  BOOST_TEST(set("runtime.peer_reads", "yes", ParamSource::env) ==
             "f.yaml:2:3: key 'runtime.peer_reads': expected 0 or 1, got 'yes'");
  BOOST_TEST(set("allreduce.cast", "maybe") ==
             "f.yaml:2:3: key 'allreduce.cast': expected true or false (1 or 0, yes or no, on or off), got 'maybe'");
  BOOST_TEST(
      set("allreduce.reduce_leaders", "CPU:0,GPU") ==
      "f.yaml:2:3: key 'allreduce.reduce_leaders': expected device names like CPU:0, HIP:2 or rank1/CPU:0, got 'GPU'");
  BOOST_TEST(set("allreduce.reduce_leaders", "rank1/CPU:0,rank0/HIP:12") == "");  // the devices of an mpirun job
  for (const char* bad : {"rank01/CPU:0", "rank/CPU:0", "rankx/CPU:0", "rank1/", "1/CPU:0", "rank1/CPU:01", "r1/CPU:0"})
    BOOST_TEST(!split_rank(bad), bad);
  BOOST_TEST(split_rank("rank12/HIP:3")->rank == 12);
  BOOST_TEST(split_rank("rank12/HIP:3")->local == "HIP:3");
  BOOST_TEST(split_rank("CPU:2")->rank == -1);
  BOOST_TEST(set("allreduce.hierarchical", "reduce_scatter") == "");
  BOOST_TEST(a.hierarchical == "reduce_scatter");
  for (const char* bad : {"ring", "Leader", "leader|reduce_scatter", ""})
    BOOST_TEST(
        set("allreduce.hierarchical", bad) ==
            fmt::format("f.yaml:2:3: key 'allreduce.hierarchical': expected leader or reduce_scatter, got '{}'", bad),
        bad);
  BOOST_TEST(set("runtime.cache_dir", "") == "f.yaml:2:3: key 'runtime.cache_dir': expected a folder, got ''");
  BOOST_TEST(set("runtime.nope", "1") == "f.yaml:2:3: unknown setting 'runtime.nope'");
  // a value echoed back keeps its control bytes off the terminal
  BOOST_TEST(set("allreduce.hierarchical", "cpu\x01\x1b[31mRED\x7f") ==
             "f.yaml:2:3: key 'allreduce.hierarchical': expected leader or reduce_scatter, got "
             "'cpu\\x01\\x1b[31mRED\\x7f'");
  BOOST_TEST(quote_value("tab\there, é") == "'tab\\x09here, é'");
  // a long value (a line of a file the config was pointed at) is cut to its first 120 bytes
  BOOST_TEST(quote_value(std::string(500, 'x')) == "'" + std::string(120, 'x') + "...'");
  BOOST_TEST(quote_value(std::string(120, 'y')) == "'" + std::string(120, 'y') + "'");
  BOOST_TEST(error_of([&] { set_tunable(a, "runtime.peer_reads", "1", "code"); }) ==
             "code: 'runtime.peer_reads' is a process-wide setting, not an allreduce setting");
}

BOOST_AUTO_TEST_CASE(process_values_code_over_environment_over_default) {
  FreshStore fresh;
  ScopedEnv no_w("RINGRT_WATCHDOG_S", nullptr), no_p("RINGRT_PEER_READS", nullptr);
  BOOST_TEST(watchdog_timeout().count() == 60000);  // default
  {
    ScopedEnv w("RINGRT_WATCHDOG_S", "2.5");
    BOOST_TEST(watchdog_timeout().count() == 2500);  // the environment, read at each call
    set_watchdog_timeout(std::chrono::milliseconds(300));
    BOOST_TEST(watchdog_timeout().count() == 300);  // code wins
    BOOST_TEST(current_runtime_params().watchdog_s == 0.3);
  }
  reset_runtime_params();
  ScopedEnv bad("RINGRT_WATCHDOG_S", "0x10");
  BOOST_TEST(error_of([] { watchdog_timeout(); }) ==
             "environment variable RINGRT_WATCHDOG_S: key 'runtime.watchdog_s': expected seconds in [0.001, "
             "10000000], got '0x10'");
  RuntimeParams r;
  r.watchdog_s = 7;
  set_runtime_params(r, {"runtime.watchdog_s"});
  BOOST_TEST(watchdog_timeout().count() == 7000);  // a bad environment value no longer matters
  BOOST_TEST(error_of([&] { set_runtime_params(r, {"allreduce.ring"}); }) ==
             "set_runtime_params: 'allreduce.ring' is not a runtime tunable");
}

// A value outside its tunable's bounds is refused by set_runtime_params as by a YAML file, naming the key and
// the bounds, and nothing of that call is set: integers, seconds (also NaN and out of range) and words.
BOOST_AUTO_TEST_CASE(set_runtime_params_checks_each_value) {
  FreshStore fresh;
  auto refused = [](auto change, std::string_view key, std::string_view expected) {
    RuntimeParams r;
    change(r);
    std::string e = error_of([&] { set_runtime_params(r, {key, "runtime.program_cache"}); });
    BOOST_TEST(e.find(fmt::format("set_runtime_params: key '{}': expected {}", key, expected)) == 0, e);
    BOOST_TEST(current_runtime_params().program_cache == RuntimeParams{}.program_cache);  // nothing set
  };
  refused([](RuntimeParams& r) { r.kernel_opt = -2; }, "runtime.kernel_opt", "an integer in [0, 3]");
  refused([](RuntimeParams& r) { r.kernel_opt = 9; }, "runtime.kernel_opt", "an integer in [0, 3]");
  refused([](RuntimeParams& r) { r.program_cache = 0; }, "runtime.program_cache", "an integer in [1, 1048576]");
  refused([](RuntimeParams& r) { r.stream_bytes = -5; }, "runtime.stream_bytes", "an integer in [0, ");
  refused([](RuntimeParams& r) { r.watchdog_s = 0; }, "runtime.watchdog_s", "seconds in [0.001, 10000000]");
  refused([](RuntimeParams& r) { r.watchdog_s = std::nan(""); }, "runtime.watchdog_s", "seconds in [0.001, 10000000]");
  refused([](RuntimeParams& r) { r.watchdog_s = 1e300; }, "runtime.watchdog_s", "seconds in [0.001, 10000000]");
  RuntimeParams fine;
  fine.kernel_opt = 1;
  fine.watchdog_s = 0.5;
  set_runtime_params(fine, {"runtime.kernel_opt", "runtime.watchdog_s"});
  BOOST_TEST(current_runtime_params().kernel_opt == 1);
  BOOST_TEST(watchdog_timeout().count() == 500);
}

// runtime_params() stays safe to call while a thread ends, after its own copy was freed: from a thread_local
// destroyed after it, a change made then is still seen (the copy made then is the thread's last).
BOOST_AUTO_TEST_CASE(runtime_params_while_a_thread_ends) {
  FreshStore fresh;
  struct LateReader {
    int64_t* seen;
    ~LateReader() {
      RuntimeParams r;
      r.program_cache = 77;
      set_runtime_params(r, {"runtime.program_cache"});
      *seen = runtime_params().program_cache;
    }
  };
  int64_t seen = 0;
  std::thread t([&] {
    thread_local LateReader late{&seen};  // constructed first: destroyed after runtime_params' copy
    (void)late;
    BOOST_TEST(runtime_params().program_cache == RuntimeParams{}.program_cache);
  });
  t.join();
  BOOST_TEST(seen == 77);
}

// The variables are read in one scan and kept while the environment is unchanged (detail::env_values):
// every change made through setenv, unsetenv or putenv is seen by the next read, on every thread, also
// a value set back to one it had before (glibc's setenv then reuses its old "NAME=value" string), a
// putenv'd string written in place, and one reused at the same address for another variable.
BOOST_AUTO_TEST_CASE(environment_changes_are_seen_at_once) {
  ScopedEnv ring("RING", nullptr), threshold("RING_ALLREDUCE_THRESHOLD", nullptr);
  const AllreduceSettings defaults;
  BOOST_TEST(current_settings().ring == defaults.ring);
  setenv("RING", "2", 1);
  BOOST_TEST(current_settings().ring == 2);
  setenv("RING", "1", 1);  // an existing variable overwritten
  BOOST_TEST(current_settings().ring == 1);
  setenv("RING", "2", 1);  // back to an earlier value
  BOOST_TEST(current_settings().ring == 2);
  std::string entry = "RING_ALLREDUCE_THRESHOLD=12345";  // a caller's own string, added with putenv
  putenv(entry.data());
  BOOST_TEST(current_settings().ring_threshold == 12345);
  int seen_on_thread = -1;
  std::thread([&] { seen_on_thread = current_settings().ring; }).join();
  BOOST_TEST(seen_on_thread == 2);
  unsetenv("RING_ALLREDUCE_THRESHOLD");  // before `entry` goes: the environment holds its pointer
  unsetenv("RING");
  BOOST_TEST(current_settings().ring == defaults.ring);
  BOOST_TEST(current_settings().ring_threshold == defaults.ring_threshold);
  setenv("RING", "3", 1);  // a bad value still fails with the variable's name
  BOOST_TEST(error_of([] { current_settings(); }).find("RING") != std::string::npos);
  unsetenv("RING");
  std::string own = "RING=2";  // a putenv'd string written in place, then reused for another variable
  putenv(own.data());
  BOOST_TEST(current_settings().ring == 2);
  own[5] = '1';
  BOOST_TEST(current_settings().ring == 1);
  unsetenv("RING");
  own.replace(0, own.size(), "XRIN=2");  // same address, same slot in environ: only the text differs
  putenv(own.data());
  BOOST_TEST(current_settings().ring == defaults.ring);
  unsetenv("XRIN");
  {  // a caller's own array, names repeated: getenv's rule, the first wins, even as an empty (unset) path
    char cxx_empty[] = "CXX=", ring_2[] = "RING=2", cxx_clang[] = "CXX=clang++", ring_0[] = "RING=0", no_eq[] = "RING";
    char* own_environ[] = {no_eq, cxx_empty, ring_2, cxx_clang, ring_0, nullptr};
    char** saved = environ;
    environ = own_environ;
    int ring_seen = current_settings().ring;
    std::string cxx_seen = current_runtime_params().cxx;
    environ = saved;
    BOOST_TEST(ring_seen == 2);
    BOOST_TEST(cxx_seen == RuntimeParams{}.cxx);
  }
  {
    ScopedEnv big("RINGRT_TEST_BIG", std::string(1100000, 'x').c_str());  // over the 1 MiB kept per thread
    BOOST_TEST(current_settings().ring == defaults.ring);
    setenv("RING", "2", 1);
    BOOST_TEST(current_settings().ring == 2);
    setenv("RING", "1", 1);
    BOOST_TEST(current_settings().ring == 1);
    unsetenv("RING");
    BOOST_TEST(current_settings().ring == defaults.ring);
  }
}

// ScopedSettings nest per thread, and unwind in any order of destruction.
BOOST_AUTO_TEST_CASE(scoped_settings_nest_per_thread_and_unwind_in_any_order) {
  ScopedEnv ring("RING", "1");
  auto with_ring = [](int r) {
    AllreduceSettings s;
    s.ring = r;
    return s;
  };
  {
    ScopedSettings outer(with_ring(2));
    BOOST_TEST(current_settings().ring == 2);
    {
      ScopedSettings inner(with_ring(0));
      BOOST_TEST(current_settings().ring == 0);
      int on_thread = -1;
      std::thread([&] { on_thread = current_settings().ring; }).join();
      BOOST_TEST(on_thread == 1);  // another thread: the environment
    }
    BOOST_TEST(current_settings().ring == 2);
  }
  BOOST_TEST(current_settings().ring == 1);
  auto first = std::make_unique<ScopedSettings>(with_ring(2));
  auto second = std::make_unique<ScopedSettings>(with_ring(0));
  first.reset();  // the outer one first: the inner one stays in force
  BOOST_TEST(current_settings().ring == 0);
  auto third = std::make_unique<ScopedSettings>(with_ring(2));
  second.reset();  // from the middle
  BOOST_TEST(current_settings().ring == 2);
  third.reset();
  BOOST_TEST(current_settings().ring == 1);
  BOOST_CHECK_THROW(ScopedSettings(with_ring(5)), ConfigError);  // validated; nothing installed
  BOOST_TEST(current_settings().ring == 1);
}

BOOST_AUTO_TEST_CASE(hot_paths_follow_set_runtime_params) {
  FreshStore fresh;
  ScopedEnv env("RINGRT_PEER_READS", "0"), in_place("RINGRT_ALLREDUCE_IN_PLACE", nullptr);
  BOOST_TEST(!runtime_params().peer_reads);  // the environment
  BOOST_TEST(runtime_params().kernel_split);
  BOOST_TEST(allreduce_in_place());
  RuntimeParams r;
  r.peer_reads = true;
  r.allreduce_in_place = false;
  set_runtime_params(r, {"runtime.peer_reads", "runtime.allreduce_in_place"});
  BOOST_TEST(runtime_params().peer_reads);
  BOOST_TEST(!allreduce_in_place());
  set_switches(switches(false, false, true));
  BOOST_TEST((runtime_params() == switches(false, false, true)));
  BOOST_TEST(!current_runtime_params().kernel_split);
  reset_runtime_params();
  BOOST_TEST(!runtime_params().peer_reads);  // the environment again
  BOOST_TEST(runtime_params().kernel_split);
  BOOST_TEST(allreduce_in_place());
}

BOOST_AUTO_TEST_CASE(cache_folder_and_compiler_command) {
  FreshStore fresh;
  ScopedEnv dir("RINGRT_CACHE_DIR", "/from/env"), cxx("CXX", "");
  BOOST_TEST(codegen::cache_dir() == std::filesystem::path("/from/env"));
  BOOST_TEST(current_runtime_params().cxx == "g++");  // an empty CXX counts as unset
  RuntimeParams r;
  r.cache_dir = "/from/code";
  r.cxx = "clang++";
  set_runtime_params(r, {"runtime.cache_dir", "runtime.cxx"});
  BOOST_TEST(codegen::cache_dir() == std::filesystem::path("/from/code"));
  BOOST_TEST(current_runtime_params().cxx == "clang++");
}

BOOST_AUTO_TEST_CASE(dump_names_every_tunable_and_its_origin) {
  AllreduceSettings a;
  RuntimeParams r;
  a.ring = 2;
  r.watchdog_s = 1.5;
  std::string d = dump_params({a, r}, {{"allreduce.ring", "x.yaml:1:2"}, {"runtime.watchdog_s", "--set w"}});
  for (const Tunable& t : tunables()) BOOST_TEST(("\n" + d).find(fmt::format("\n{} = ", t.key)) != std::string::npos);
  BOOST_TEST(d.find("allreduce.ring = 2  (env RING; default 1; ") != std::string::npos, d);
  BOOST_TEST(d.find(")  <- x.yaml:1:2\n") != std::string::npos, d);
  BOOST_TEST(d.find("runtime.watchdog_s = 1.5  (env RINGRT_WATCHDOG_S; default 60; ") != std::string::npos, d);
  BOOST_TEST(d.find("runtime.cache_dir = \"\"  (env RINGRT_CACHE_DIR; default \"\"; ") != std::string::npos, d);
  BOOST_TEST(d.find("runtime.kernel_split = true  (env RINGRT_KERNEL_SPLIT; default true; ") != std::string::npos, d);
  size_t lines = 0, defaults = 0;
  for (size_t at = 0; (at = d.find('\n', at)) != std::string::npos; ++at) ++lines;
  for (size_t at = 0; (at = d.find("  <- default\n", at)) != std::string::npos; ++at) ++defaults;
  BOOST_TEST(lines == tunables().size());
  BOOST_TEST(defaults == tunables().size() - 2);
}

// runtime.hip_logical_devices (read by the hip backend at its first enumeration): from the environment
// and from a file, within [0, 1024], dumped with its origin.
BOOST_AUTO_TEST_CASE(hip_logical_devices_from_environment_file_and_dump) {
  FreshStore fresh;
  {
    ScopedEnv none("RINGRT_HIP_LOGICAL_DEVICES", nullptr);
    BOOST_TEST(current_runtime_params().hip_logical == 0);  // default: one device per GPU
  }
  ScopedEnv env("RINGRT_HIP_LOGICAL_DEVICES", "4");
  BOOST_TEST(current_runtime_params().hip_logical == 4);
  AllreduceSettings a;
  RuntimeParams r;
  BOOST_TEST(error_of([&] {
               set_param({a, r}, "runtime.hip_logical_devices", "8", ParamSource::file, "y:1:2");
             }) == "");
  BOOST_TEST(r.hip_logical == 8);
  BOOST_TEST(error_of([&] {
               set_param({a, r}, "runtime.hip_logical_devices", "1025", ParamSource::file, "y:1:2");
             }) == "y:1:2: key 'runtime.hip_logical_devices': expected an integer in [0, 1024], got '1025'");
  std::string d = dump_params({a, r}, {{"runtime.hip_logical_devices", "y:1:2"}});
  BOOST_TEST(d.find("runtime.hip_logical_devices = 8  (env RINGRT_HIP_LOGICAL_DEVICES; default 0; HIP devices to "
                    "expose: ") != std::string::npos,
             d);
  BOOST_TEST(d.find("GPU i mod count), each with its own streams, events and memory; read at the first "
                    "enumeration)  <- y:1:2\n") != std::string::npos,
             d);
  ScopedEnv bad("RINGRT_HIP_LOGICAL_DEVICES", "-1");
  BOOST_TEST(error_of([] { current_runtime_params(); }) ==
             "environment variable RINGRT_HIP_LOGICAL_DEVICES: key 'runtime.hip_logical_devices': expected an "
             "integer in [0, 1024], got '-1'");
}

BOOST_AUTO_TEST_SUITE_END()
