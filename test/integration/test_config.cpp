// The YAML experiment config: every class of bad input stops `ringrt` with exit status 2 and a message
// naming the file, the 1-based line and column, the key and what was expected; good input parses to
// the right values with the precedence --set > environment > YAML > default.
// Reference: README.md "YAML reference", runtime/cli/config.hpp.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <csignal>
#include <cstdlib>
#include <map>

#include "core/errors.hpp"
#include "core/interrupt.hpp"
#include "runtime/api/internal.hpp"
#include "runtime/cli/config.hpp"
#include "runtime/cli/experiment_check.hpp"
#include "runtime/cli/report.hpp"
#include "test/integration/cli_run.hpp"
#include "test/support/checks.hpp"

BOOST_AUTO_TEST_SUITE(test_config)

namespace bdata = boost::unit_test::data;
using namespace ringrt;
using namespace ringrt::test;
namespace tt = boost::test_tools;

namespace {

struct BadConfig {
  const char* name;  // the class of mistake
  const char* yaml;  // written to bad.yaml
  const char* env;   // "" or one VAR=value
  const char* want;  // a substring of the message (after "bad.yaml" where it starts with ':')
};
std::ostream& operator<<(std::ostream& os, const BadConfig& b) { return os << b.name; }

const BadConfig kBad[] = {
    {"yaml_syntax_error", "backend: cpu\ndevices:\n  count: 4\n bad: 1\n", "", ":4:2: YAML syntax error"},
    {"unknown_top_key", "backend: cpu\nbakend: cpu\n", "",
     ":2:1: key 'bakend': expected one of allreduce, backend, debug, devices, experiment, regress, runtime, got an "
     "unknown key"},
    {"unknown_nested_key", "experiment:\n  op: sum\n  itters: 3\n", "",
     ":3:3: key 'experiment.itters': expected one of experiment.buckets, experiment.check,"},
    {"unknown_allreduce_key", "allreduce:\n  rings: 2\n", "", ":2:3: key 'allreduce.rings': expected one of"},
    {"duplicate_key", "experiment:\n  iters: 2\n  iters: 3\n", "",
     ":3:3: key 'experiment.iters': expected each key once"},
    {"wrong_type_int", "experiment:\n  op: sum\n  iters: ten\n", "",
     ":3:10: key 'experiment.iters': expected an integer in [1, 1000000], got 'ten'"},
    {"wrong_type_map", "devices: 4\n", "", ":1:10: key 'devices': expected a map of count, groups, got '4'"},
    {"wrong_type_list", "devices:\n  groups: {a: 1}\n", "", ":2:11: key 'devices.groups': expected a non-empty list"},
    {"wrong_type_bool", "experiment:\n  check: maybe\n", "", ":2:10: key 'experiment.check': expected true or false"},
    {"wrong_type_in_place", "experiment:\n  in_place: 2\n", "",
     ":2:13: key 'experiment.in_place': expected true or false"},
    {"bad_timing", "experiment:\n  timing: fast\n", "",
     ":2:11: key 'experiment.timing': expected one of latency, pipelined, both, got 'fast'"},
    {"bad_op", "experiment:\n  op: avg\n", "",
     ":2:7: key 'experiment.op': expected one of sum, max, min, prod, got 'avg'"},
    {"bad_dtype", "experiment:\n  dtype: float8\n", "", ":2:10: key 'experiment.dtype': expected one of float32,"},
    {"bad_tunable_value", "allreduce:\n  ring: 3\n", "",
     ":2:9: key 'allreduce.ring': expected an integer in [0, 2], got '3'"},
    {"negative_size", "experiment:\n  sizes: {min: -1KiB, max: 4KiB}\n", "",
     ":2:16: key 'experiment.sizes.min': expected a positive size in bytes"},
    {"zero_size", "experiment:\n  sizes:\n    min: 1KiB\n    max: 0\n", "",
     ":4:10: key 'experiment.sizes.max': expected a positive size in bytes"},
    {"bad_size_unit", "experiment:\n  sizes: {min: 1KB, max: 4KiB}\n", "", ":2:16: key 'experiment.sizes.min'"},
    {"factor_below_2", "experiment:\n  sizes: {min: 1KiB, max: 4KiB, factor: 1}\n", "",
     ":2:41: key 'experiment.sizes.factor': expected an integer in [2,"},
    {"min_above_max", "experiment:\n  sizes:\n    min: 4KiB\n    max: 1KiB\n", "",
     ":4:10: key 'experiment.sizes.max': expected experiment.sizes.min <= experiment.sizes.max, got min 4 KiB > max 1 "
     "KiB"},
    {"size_below_one_element", "experiment:\n  dtype: float64\n  sizes: {min: 4B, max: 1KiB}\n", "",
     ":3:16: key 'experiment.sizes.min': expected at least one float64 element (8 B), got 4 B"},
    {"zero_count", "experiment:\n  counts: [16, 0]\n", "",
     ":2:16: key 'experiment.counts': expected an integer in [1, 281474976710656], got '0'"},
    {"sizes_and_counts", "experiment:\n  sizes: {max: 4KiB}\n  counts: [16]\n", "",
     ":3:11: key 'experiment.counts': expected only one of experiment.sizes, experiment.counts, experiment.buckets"},
    {"tab_in_indentation", "experiment:\n  op: sum\n\tdtype: float32\n", "",
     ":3:1: YAML syntax error: a tab in the indentation (YAML indents with spaces only"},
    // a legal tab in a block scalar far above another error: that error, not the tab
    {"tab_in_a_block_scalar", "note: |\n  one\n  \ttwo\nbackend: cpu\ndevices:\n  count: 4\nexperiment: [1,\n", "",
     ":8:1: YAML syntax error: end of sequence flow not found"},
    {"zero_devices", "devices:\n  count: 0\n", "",
     ":2:10: key 'devices.count': expected an integer in [1, 1024], got '0'"},
    {"unknown_device", "devices:\n  count: [CPU:0, CPU:1, GPU:2, CPU:3]\n", "",
     ":2:25: key 'devices.count': expected a device CPU:i with 0 <= i < 4 (a list of 4 cpu devices names CPU:0 .. "
     "CPU:3, in any order: they are virtual), got 'GPU:2'"},
    {"device_out_of_range", "devices:\n  count: [CPU:0, CPU:4]\n", "",
     ":2:18: key 'devices.count': expected a device CPU:i"},
    {"device_twice", "devices:\n  count: [CPU:0, CPU:0]\n", "",
     ":2:11: key 'devices.count': expected each device once"},
    {"groups_wrong_length", "backend: cpu\ndevices:\n  count: 4\n  groups: [0, 0, 1]\n", "",
     ":4:11: key 'devices.groups': expected 4 group ids, one per device of (CPU:0, CPU:1, CPU:2, CPU:3), got 3"},
    {"leader_not_a_device",
     "devices:\n  count: 4\n  groups: [0, 0, 1, 1]\nallreduce:\n  reduce_leaders: [CPU:0, CPU:9]\n", "",
     ":5:19: key 'allreduce.reduce_leaders': expected devices of (CPU:0, CPU:1, CPU:2, CPU:3), got 'CPU:9'"},
    {"two_leaders_in_a_group", "devices:\n  groups: [0, 0, 1, 1]\nallreduce:\n  reduce_leaders: [CPU:0, CPU:1]\n", "",
     ":4:19: key 'allreduce.reduce_leaders': expected at most one leader per group"},
    {"scalar_tunable_as_list", "runtime:\n  watchdog_s: [30]\n", "",
     ":2:15: key 'runtime.watchdog_s': expected one value (this key takes no list), got a list"},
    {"top_level_not_a_map", "- 1\n- 2\n", "", ":1:1: key '(top level)': expected a map of"},
    {"bad_environment_value", "backend: cpu\n", "RING=abc",
     "environment variable RING: key 'allreduce.ring': expected an integer in [0, 2], got 'abc'"},
    {"bad_runtime_switch", "runtime:\n  peer_reads: sometimes\n", "",
     ":2:15: key 'runtime.peer_reads': expected true or false (1 or 0, yes or no, on or off), got 'sometimes'"},
    {"bad_watchdog", "runtime:\n  watchdog_s: 0\n", "",
     ":2:15: key 'runtime.watchdog_s': expected seconds in [0.001, 10000000], got '0'"},
    {"compiler_from_a_file", "runtime:\n  cxx: sh -c 'touch /tmp/owned' #\n", "",
     ":2:8: key 'runtime.cxx': expected it from the environment variable CXX or --set runtime.cxx=..."},
    {"cache_folder_from_a_file", "runtime: {cache_dir: /tmp/shared}\n", "",
     ":1:22: key 'runtime.cache_dir': expected it from the environment variable RINGRT_CACHE_DIR or --set"},
    {"bad_environment_switch", "backend: cpu\n", "RINGRT_KERNEL_SPLIT=yes",
     "environment variable RINGRT_KERNEL_SPLIT: key 'runtime.kernel_split': expected 0 or 1, got 'yes'"},
    {"bad_environment_leader", "backend: cpu\n", "REDUCE_LEADERS=CPU:0,HIP:3",
     "environment variable REDUCE_LEADERS: key 'allreduce.reduce_leaders': expected devices of"},
};

// RAII for one environment variable of this process.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~EnvVar() { unsetenv(name_); }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* name_;
};

void check_bad_config(const BadConfig& bad) {
  TempDir dir;
  std::string path = dir.write("bad.yaml", bad.yaml);
  std::vector<std::string> env;
  if (*bad.env) env.push_back(bad.env);
  CliResult r = run_cli({"run", path}, env);
  BOOST_TEST(r.status == 2);
  std::string want = bad.want[0] == ':' ? path + bad.want : std::string(bad.want);
  BOOST_TEST(r.err.find(want) != std::string::npos, "stderr: " << r.err << "want: " << want);
  BOOST_TEST(r.out.empty(), r.out);  // nothing runs
}

struct NoHipDevices {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    boost::test_tools::assertion_result r(hip_devices().empty());
    r.message() << "needs a machine without HIP devices";
    return r;
  }
};

}  // namespace

BOOST_DATA_TEST_CASE(bad_config_exits_2_with_location, bdata::make(kBad), bad) { check_bad_config(bad); }

// backend: hip where there is no GPU: refused naming the key (on a machine with GPUs: a skip, not a pass)
BOOST_AUTO_TEST_CASE(hip_without_gpus, *boost::unit_test::precondition(NoHipDevices{})) {
  check_bad_config({"hip_without_gpus", "backend: hip\n", "", "key 'backend'"});
}

BOOST_AUTO_TEST_CASE(missing_file_exits_2) {
  CliResult r = run_cli({"run", "configs/no-such-file.yaml"});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("configs/no-such-file.yaml: cannot open the file") != std::string::npos, r.err);
}

BOOST_AUTO_TEST_CASE(bad_set_overrides_exit_2) {
  for (auto [set, want] :
       {std::pair{"experiment.sizes.max=-4KiB", "key 'experiment.sizes.max': expected a positive size"},
        {"experiment.nope=1", "key 'experiment.nope': expected one of experiment.buckets"},
        {"devices.groups=[0,1]", "key 'devices.groups': expected 4 group ids"},
        {"allreduce.ring=x", "key 'allreduce.ring': expected an integer"},
        {"runtime.watchdog_s=-1", "key 'runtime.watchdog_s': expected seconds in [0.001, 10000000], got '-1'"},
        {"experiment.counts=[1,", "YAML syntax error in the value"}}) {
    CliResult r = run_cli({"run", "configs/default.yaml", "--set", set});
    BOOST_TEST(r.status == 2, set);
    BOOST_TEST(r.err.find(std::string("--set ") + set + ": ") != std::string::npos, r.err);
    BOOST_TEST(r.err.find(want) != std::string::npos, r.err);
  }
}

BOOST_AUTO_TEST_CASE(values_and_defaults) {
  ExperimentConfig c = parse_config("", "empty.yaml");
  BOOST_TEST(c.backend == (hip_devices().empty() ? "cpu" : "hip"));
  BOOST_TEST(c.op_name == "sum");
  BOOST_TEST((c.dtype == DType::float32));
  BOOST_TEST(c.warmup == 2);
  BOOST_TEST(c.iters == 10);
  BOOST_TEST(c.check);
  BOOST_TEST((c.settings.ring == AllreduceSettings{}.ring));

  c = parse_config(
      "backend: cpu\ndevices: {count: [CPU:2, CPU:0, CPU:1], groups: [0, 1, 1]}\n"
      "allreduce: {ring: 2, ring_threshold: 1000, reduce_leaders: [CPU:1], cast: false}\ndebug: 1\n"
      "experiment: {op: max, dtype: half, sizes: {min: 512B, max: 1 KiB, factor: 2}, warmup: 0, iters: 3, check: no}\n",
      "x.yaml");
  BOOST_TEST((c.devices == std::vector<std::string>{"CPU:2", "CPU:0", "CPU:1"}));
  BOOST_TEST((c.settings.groups == std::map<std::string, int>{{"CPU:2", 0}, {"CPU:0", 1}, {"CPU:1", 1}}));
  BOOST_TEST(c.settings.ring == 2);
  BOOST_TEST(c.settings.ring_threshold == 1000);
  BOOST_TEST((c.settings.reduce_leaders == std::vector<std::string>{"CPU:1"}));
  BOOST_TEST(!c.settings.cast);
  BOOST_TEST(c.settings.debug == 1);
  BOOST_TEST((c.op == ReduceOp::max));
  BOOST_TEST((c.dtype == DType::float16));
  BOOST_TEST((c.sweep_counts() == std::vector<int64_t>{256, 512}));
  BOOST_TEST(c.warmup == 0);
  BOOST_TEST(c.iters == 3);
  BOOST_TEST(!c.check);
  BOOST_TEST(c.origins.at("allreduce.ring") == "x.yaml:3:19");
}

BOOST_AUTO_TEST_CASE(sizes_sweep_by_factor) {
  ExperimentConfig c = parse_config("experiment: {sizes: {min: 1KiB, max: 64MiB, factor: 4}}", "d.yaml");
  std::vector<int64_t> counts = c.sweep_counts();
  BOOST_TEST(counts.size() == 9u);  // 1 KiB, 4 KiB, ..., 64 MiB
  BOOST_TEST(counts.front() == 256);
  BOOST_TEST(counts.back() == (int64_t{64} << 20) / 4);
  c = parse_config("experiment: {sizes: {min: 1000, max: 5000, factor: 2}}", "d.yaml");
  BOOST_TEST((c.sweep_counts() == std::vector<int64_t>{250, 500, 1000}));  // 1000, 2000, 4000 bytes
  BOOST_TEST(format_bytes(1024) == "1 KiB");
  BOOST_TEST(format_bytes(64 << 20) == "64 MiB");
  BOOST_TEST(format_bytes(1000) == "1000 B");
}

BOOST_AUTO_TEST_CASE(precedence_set_over_env_over_yaml_over_default) {
  const char* yaml = "allreduce: {ring: 2, all2all: 1}\n";
  BOOST_TEST(parse_config("", "d.yaml").settings.ring == 1);  // default
  BOOST_TEST(parse_config(yaml, "y.yaml").settings.ring == 2);
  EnvVar ring("RING", "0");
  ExperimentConfig c = parse_config(yaml, "y.yaml");
  BOOST_TEST(c.settings.ring == 0);
  BOOST_TEST(c.settings.all2all == 1);  // untouched by the environment
  BOOST_TEST(c.origins.at("allreduce.ring") == "environment variable RING");
  c = parse_config(yaml, "y.yaml", {"allreduce.ring=2", "experiment.dtype=float16", "experiment.sizes={max: 2KiB}"});
  BOOST_TEST(c.settings.ring == 2);
  BOOST_TEST(c.origins.at("allreduce.ring") == "--set allreduce.ring=2");
  BOOST_TEST((c.dtype == DType::float16));
  BOOST_TEST((c.sweep_counts() == std::vector<int64_t>{512}));
}

// The same precedence for a performance switch and the watchdog, with each value's origin.
BOOST_AUTO_TEST_CASE(precedence_of_runtime_tunables) {
  const char* yaml = "runtime: {peer_reads: false, watchdog_s: 2.5}\n";
  ExperimentConfig c = parse_config("", "d.yaml");
  BOOST_TEST(c.runtime.peer_reads);  // default
  BOOST_TEST(c.runtime.watchdog_s == 60.0);
  BOOST_TEST(c.origins.count("runtime.peer_reads") == 0u);
  c = parse_config(yaml, "y.yaml");
  BOOST_TEST(!c.runtime.peer_reads);
  BOOST_TEST(c.runtime.watchdog_s == 2.5);
  BOOST_TEST(c.origins.at("runtime.peer_reads") == "y.yaml:1:23");
  BOOST_TEST(c.origins.at("runtime.watchdog_s") == "y.yaml:1:42");
  {
    EnvVar peer("RINGRT_PEER_READS", "1"), watchdog("RINGRT_WATCHDOG_S", "9");
    c = parse_config(yaml, "y.yaml");
    BOOST_TEST(c.runtime.peer_reads);
    BOOST_TEST(c.runtime.watchdog_s == 9.0);
    BOOST_TEST(c.origins.at("runtime.peer_reads") == "environment variable RINGRT_PEER_READS");
    BOOST_TEST(c.origins.at("runtime.watchdog_s") == "environment variable RINGRT_WATCHDOG_S");
    c = parse_config(yaml, "y.yaml", {"runtime.peer_reads=off", "runtime.watchdog_s=0.25"});
    BOOST_TEST(!c.runtime.peer_reads);
    BOOST_TEST(c.runtime.watchdog_s == 0.25);
    BOOST_TEST(c.origins.at("runtime.peer_reads") == "--set runtime.peer_reads=off");
    BOOST_TEST(c.origins.at("runtime.watchdog_s") == "--set runtime.watchdog_s=0.25");
  }
  // the compiler command and the cache folder: not from a file, but from the environment and --set
  EnvVar cxx("CXX", "clang++");
  c = parse_config("", "d.yaml", {"runtime.cache_dir=/tmp/mine"});
  BOOST_TEST(c.runtime.cxx == "clang++");
  BOOST_TEST(c.runtime.cache_dir == "/tmp/mine");
  BOOST_CHECK_THROW(parse_config("runtime: {cxx: g++}\n", "y.yaml"), ConfigError);
}

BOOST_AUTO_TEST_CASE(set_replaces_the_sweep_form_of_the_yaml) {
  const char* yaml = "experiment: {counts: [8, 16]}\n";
  ExperimentConfig c = parse_config(yaml, "y.yaml", {"experiment.sizes.max=4KiB"});
  BOOST_TEST((c.form == SweepForm::sizes));
  BOOST_TEST((c.sweep_counts() == std::vector<int64_t>{256, 1024}));  // min stays the default 1 KiB
  c = parse_config(yaml, "y.yaml", {"experiment.buckets=[3, 5]"});
  BOOST_TEST((c.form == SweepForm::buckets));
  BOOST_TEST((c.sweep_counts() == std::vector<int64_t>{3, 5}));
  BOOST_CHECK_THROW(parse_config(yaml, "y.yaml", {"experiment.counts=[1]", "experiment.buckets=[1]"}), ConfigError);
}

BOOST_AUTO_TEST_CASE(describe_config_lists_every_key) {
  ExperimentConfig c = parse_config("experiment: {counts: [8, 16]}\n", "y.yaml");
  std::string d = describe_config(c);
  for (const char* key :
       {"backend = ", "devices.count = [CPU:0, CPU:1, CPU:2, CPU:3]", "devices.groups = []",
        "experiment.collective = allreduce", "experiment.op = sum", "experiment.dtype = float32",
        "experiment.counts = [8, 16]  <- y.yaml:1:22", "experiment.warmup = 2", "experiment.iters = 10",
        "experiment.check = true", "experiment.in_place = true", "experiment.timing = latency  <- default"})
    BOOST_TEST(d.find(key) != std::string::npos, key);
  for (const Tunable& t : tunables()) BOOST_TEST(d.find(std::string(t.key) + " = ") != std::string::npos);
  // backend: auto (the default) names what it resolved to and why
  std::string want =
      hip_devices().empty() ? "backend = cpu  <- auto (no GPU): default" : "backend = hip  <- auto (GPUs)";
  BOOST_TEST(d.find(want) != std::string::npos, d);
}

// experiment.collective takes every collective, experiment.root a device index; a root outside the
// devices and buckets of another collective than allreduce are ConfigErrors at their key.
BOOST_AUTO_TEST_CASE(collective_and_root_keys) {
  ExperimentConfig c = parse_config("experiment: {collective: broadcast, root: 3}\n", "y.yaml");
  BOOST_TEST((c.collective == Collective::broadcast));
  BOOST_TEST(c.root == 3);
  BOOST_TEST(describe_config(c).find("experiment.root = 3  <- y.yaml:1:43") != std::string::npos);
  BOOST_CHECK_EXCEPTION(parse_config("experiment: {collective: scatter}\n", "y.yaml"), ConfigError,
                        message_has({"experiment.collective", "reduce_scatter", "alltoall", "scatter"}));
  BOOST_CHECK_EXCEPTION(parse_config("experiment: {collective: reduce, root: 4}\n", "y.yaml"), ConfigError,
                        message_has({"y.yaml:1:40", "experiment.root", "4 devices", "got 4"}));
  BOOST_CHECK_EXCEPTION(parse_config("experiment: {collective: allgather, buckets: [8]}\n", "y.yaml"), ConfigError,
                        message_has({"experiment.buckets", "allreduce", "allgather"}));
}

// experiment.sharding: FSDP's strategies with buckets only; the collective it names is one of the two
// it runs (reduce_scatter unless set), in_place stays true; `config --dump` shows it.
// devices.groups: [] clears a file's groups (config --dump prints no groups so).
BOOST_AUTO_TEST_CASE(empty_groups_clear_the_files) {
  ExperimentConfig c = parse_config("devices: {count: 4, groups: [0, 0, 1, 1]}\n", "y.yaml", {"devices.groups=[]"});
  BOOST_TEST(c.groups.empty());
  BOOST_TEST(c.settings.groups.empty());
}

BOOST_AUTO_TEST_CASE(sharding_key) {
  ExperimentConfig c = parse_config("experiment: {sharding: shard_grad_op, buckets: [8, 12]}\n", "y.yaml");
  BOOST_TEST(c.sharding == "shard_grad_op");
  BOOST_TEST((c.collective == Collective::reduce_scatter));
  BOOST_TEST(describe_config(c).find("experiment.sharding = shard_grad_op  <- y.yaml:1:24") != std::string::npos);
  BOOST_TEST(parse_config("experiment: {buckets: [8]}\n", "y.yaml").sharding == "no_shard");
  BOOST_CHECK_EXCEPTION(parse_config("experiment: {sharding: zero3, buckets: [8]}\n", "y.yaml"), ConfigError,
                        message_has({"y.yaml:1:24", "experiment.sharding", "full_shard", "zero3"}));
  BOOST_CHECK_EXCEPTION(parse_config("experiment: {sharding: full_shard, counts: [8]}\n", "y.yaml"), ConfigError,
                        message_has({"y.yaml:1:24", "experiment.sharding", "experiment.buckets", "counts"}));
  BOOST_CHECK_EXCEPTION(
      parse_config("experiment: {sharding: full_shard, buckets: [8], collective: broadcast}\n", "y.yaml"), ConfigError,
      message_has({"experiment.collective", "reduce_scatter or allgather", "broadcast"}));
  BOOST_CHECK_EXCEPTION(
      parse_config("experiment: {sharding: full_shard, buckets: [8]}\n", "y.yaml", {"experiment.in_place=false"}),
      ConfigError, message_has({"--set experiment.in_place=false", "experiment.in_place", "true"}));
}

// Each collective run in process on 3 cpu devices (count 7: rounded down to a multiple of 3 for
// reduce_scatter, allgather, alltoall, as rccl-tests does): #wrong 0, busbw / algbw the rccl-tests
// factor, redop "none" where nothing is reduced, the root's result alone for reduce; a corrupted
// element is found; `schedule` plans each (the lowering's algorithm, copies between the devices).
BOOST_AUTO_TEST_CASE(every_collective_runs_checked) {
  std::map<std::string, double> factor{{"allreduce", 4.0 / 3}, {"reduce_scatter", 2.0 / 3}, {"allgather", 2.0 / 3},
                                       {"alltoall", 2.0 / 3},  {"broadcast", 1.0},          {"reduce", 1.0}};
  for (const auto& [collective, f] : factor) {
    BOOST_TEST_CONTEXT(collective) {
      ExperimentConfig c = parse_config(
          "devices: {count: 3}\nallreduce: {ring: 2}\nexperiment: {counts: [7], "
          "warmup: 0, iters: 1, dtype: int32, op: max, root: 2}\n",
          "y.yaml", {"experiment.collective=" + collective});
      ExperimentResult r = run_experiment(c);
      BOOST_TEST_REQUIRE(r.rows.size() == 1u);
      bool rounds = collective == "reduce_scatter" || collective == "allgather" || collective == "alltoall";
      BOOST_TEST(r.rows[0].count == (rounds ? 6 : 7));
      for (const ResultRow& row : r.rows) {
        BOOST_TEST(row.wrong == 0);
        BOOST_TEST(row.busbw == row.algbw * f, tt::tolerance(1e-9));
        BOOST_TEST(
            row.redop ==
            (collective == "allgather" || collective == "alltoall" || collective == "broadcast" ? "none" : "max"));
        BOOST_TEST(row.algo == (collective == "alltoall" ? "all2all" : "ring"));
      }
      Schedule s = run_collective(c, collective_input_placeholder(c, 63)).schedule();
      BOOST_TEST(s.copies().size() > 0u);
      setenv("RINGRT_TEST_CORRUPT", "1", 1);
      BOOST_TEST(run_experiment(c).wrong() == 1);
      unsetenv("RINGRT_TEST_CORRUPT");
    }
  }
}

// check_result reads a result and makes its reference a range at a time: whatever the range, it counts
// exactly the elements that differ from the right result, computed here element by element from both
// results' values (int32: exact). The wrong result is the same collective reducing with max instead of
// sum; a result of another length counts every element of every device.
BOOST_AUTO_TEST_CASE(check_result_counts_the_same_in_any_range) {
  for (std::string collective : {"allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce"}) {
    BOOST_TEST_CONTEXT(collective) {
      ExperimentConfig c = parse_config("devices: {count: 3}\nexperiment: {counts: [37], dtype: int32}\n", "y.yaml",
                                        {"experiment.collective=" + collective, "experiment.root=1"});
      ExperimentConfig as_max = c;
      as_max.op = ReduceOp::max;
      int64_t count = collective_count(c, 37);
      Tensor x = make_collective_input(c, count);
      Tensor right = run_collective(c, x).realize(), wrong = run_collective(as_max, x).realize();
      auto right_values = right.local_host_shards(), wrong_values = wrong.local_host_shards();
      BOOST_TEST_REQUIRE(right_values.size() == wrong_values.size());
      int64_t differ = 0;
      for (size_t d = 0; d < right_values.size(); ++d)
        for (int64_t i = 0; i < right_values[d].second.numel(); ++i)
          differ += right_values[d].second.get_int(i) != wrong_values[d].second.get_int(i) ? 1 : 0;
      bool reduces = collective_reduces(c.collective);
      BOOST_TEST((differ > 0) == reduces);  // gathers and copies do not reduce: max changes nothing
      for (int64_t chunk : {int64_t{1}, int64_t{4}, int64_t{5}, kCheckChunk}) {
        BOOST_TEST_CONTEXT("chunk " << chunk) {
          BOOST_TEST(check_result(c, right, collective_reference(c, count), chunk) == 0);
          BOOST_TEST(check_result(c, wrong, collective_reference(c, count), chunk) == differ);
        }
      }
      Tensor longer = run_collective(c, make_collective_input(c, 2 * count)).realize();
      ReferenceFor ref = collective_reference(c, count);
      BOOST_TEST(check_result(c, longer, ref, 4) == ref.numel * static_cast<int64_t>(right_values.size()));
      BOOST_CHECK_THROW(right.read_local_shards(0, [](const std::string&, int64_t, const HostBuffer&) {}), ShapeError);
    }
  }
}

// A stop request (core/interrupt.hpp: the `ringrt` program's SIGINT and SIGTERM) ends the host's
// loops over a row's elements, its input, its reference and its check, at once: at 64 MiB on 4 devices
// they are seconds between two polls of observer.stop. A run stops with the rows finished before.
BOOST_AUTO_TEST_CASE(a_stop_request_ends_the_host_loops_of_a_row) {
  ExperimentConfig c =
      parse_config("devices: {count: 2}\nexperiment: {counts: [8, 262144], warmup: 0, iters: 1}\n", "y.yaml");
  request_interrupt(SIGTERM);
  BOOST_CHECK_THROW(input_row(c, 1 << 20, 0), Interrupted);
  BOOST_CHECK_THROW(reference_of(DType::float32, 2, 0, 1 << 20, ReduceOp::sum, [](int64_t, int64_t) { return 1.0; }),
                    Interrupted);
  ExperimentResult stopped = run_experiment(c);  // no observer.stop: the request alone stops it
  clear_interrupt();
  BOOST_TEST(stopped.stopped);
  BOOST_TEST(stopped.rows.empty());
  HostBuffer row = input_row(c, 1 << 17, 1);  // no request: to the end
  BOOST_TEST(row.get((1 << 17) - 1) ==
             static_cast<double>(static_cast<float>(input_value(DType::float32, ReduceOp::sum, 1, (1 << 17) - 1))));
  ExperimentResult whole = run_experiment(c);
  BOOST_TEST(!whole.stopped);
  BOOST_TEST_REQUIRE(whole.rows.size() == 2u);
  BOOST_TEST(whole.rows[1].wrong == 0);
}

// A count the collective cannot take as given is rounded, and said so: the header names each (the table's count
// column is what ran), `schedule` on stderr; a count that fits is not mentioned.
BOOST_AUTO_TEST_CASE(rounded_counts_are_named) {
  CliResult r = run_cli({"run", "configs/default.yaml", "--set", "devices.count=3", "--set",
                         "experiment.collective=reduce_scatter", "--set", "experiment.counts=[7, 9]", "--set",
                         "experiment.iters=1"});
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  BOOST_TEST(
      r.out.find("# counts rounded to a multiple of the 3 devices (reduce_scatter): 7 -> 6\n") != std::string::npos,
      r.out);
  auto rows = table_rows(r.out);
  BOOST_TEST_REQUIRE(rows.size() == 2u);
  BOOST_TEST(rows[0].at(1) == "6");
  BOOST_TEST(rows[1].at(1) == "9");
  CliResult s = run_cli({"schedule", "configs/default.yaml", "--set", "devices.count=3", "--set",
                         "experiment.collective=reduce_scatter", "--count", "2"});
  BOOST_TEST_REQUIRE(s.status == 0, s.err);
  BOOST_TEST(s.err.find("--count 2 planned as 3 (reduce_scatter over 3 devices takes a multiple of them)") !=
                 std::string::npos,
             s.err);
  CliResult fits =
      run_cli({"run", "configs/default.yaml", "--set", "experiment.counts=[7]", "--set", "experiment.iters=1"});
  BOOST_TEST(fits.out.find("# counts rounded") == std::string::npos, fits.out);  // an allreduce takes any count
}

// The kernel cache's folder, size and bound (runtime.cache_max_bytes) in the run header and `config --dump`; a
// bound below 1 MiB is refused naming the key.
BOOST_AUTO_TEST_CASE(the_kernel_cache_and_its_bound_are_shown) {
  TempDir dir;
  std::vector<std::string> env{"RINGRT_CACHE_DIR=" + (dir.path() / "cache").string(),
                               "RINGRT_CACHE_MAX_BYTES=67108864"};
  CliResult r = run_cli(
      {"run", "configs/default.yaml", "--set", "experiment.sizes.max=1KiB", "--set", "experiment.iters=1"}, env);
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  std::string want = "# kernel cache: " + (dir.path() / "cache").string() + ", ";
  BOOST_TEST(r.out.find(want) != std::string::npos, r.out);
  BOOST_TEST(r.out.find("MiB (bound 64 MiB, runtime.cache_max_bytes)") != std::string::npos, r.out);
  CliResult d = run_cli({"config", "configs/default.yaml", "--dump"}, env);
  BOOST_TEST(d.out.find("kernel cache: " + (dir.path() / "cache").string() + ", ") != std::string::npos, d.out);
  BOOST_TEST(d.out.find("runtime.cache_max_bytes = 67108864") != std::string::npos, d.out);
  CliResult bad = run_cli({"config", "configs/default.yaml", "--set", "runtime.cache_max_bytes=1000"});
  BOOST_TEST(bad.status == 2);
  BOOST_TEST(bad.err.find("runtime.cache_max_bytes") != std::string::npos, bad.err);
}

BOOST_AUTO_TEST_SUITE_END()
