// The `ringrt` program end to end, run as a subprocess: every config in configs/ runs with #wrong 0,
// the exit statuses 0/1/2, `schedule --json` (a contract other tools parse), --dot, --emit-source,
// --csv, --json, `config --dump`, the precedence --set > environment > YAML (stopped and killed runs:
// test_cli_stop.cpp). Reference: README.md "The main job". Sizes are overridden small:
// realization may run on the reference interpreter.
#include <fmt/format.h>

#include <algorithm>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <utility>

#include "codegen/compiler.hpp"
#include "rewrite/tuning.hpp"
#include "runtime/cli/config.hpp"
#include "test/integration/cli_run.hpp"

BOOST_AUTO_TEST_SUITE(test_cli)

namespace bdata = boost::unit_test::data;
using namespace ringrt;
using namespace ringrt::test;
using nlohmann::json;

namespace {

// ordered_json keeps the keys in the printed order.
nlohmann::ordered_json schedule_json(const std::vector<std::string>& extra, const std::vector<std::string>& env = {}) {
  std::vector<std::string> args{"schedule", "configs/default.yaml", "--count", "400", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  CliResult r = run_cli(args, env);
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  return nlohmann::ordered_json::parse(r.out);
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_documented_configs_exist) {
  std::vector<std::string> files = config_files();
  for (const char* name : {"default", "ring", "all2all", "naive", "hierarchical", "ddp-gpt2-small"})
    BOOST_TEST((std::find(files.begin(), files.end(), std::string("configs/") + name + ".yaml") != files.end()), name);
}

BOOST_DATA_TEST_CASE(every_config_runs_with_no_wrong_values, bdata::make(config_files()), config) {
  CliResult r = run_cli(small_run(config));
  BOOST_TEST_REQUIRE(r.status == 0, config << ": " << r.err);
  auto rows = table_rows(r.out);
  BOOST_TEST_REQUIRE(!rows.empty());
  bool sharded = load_config(std::string(RINGRT_SOURCE_DIR) + "/" + config).sharding != "no_shard";
  for (const auto& row : rows) {
    // FSDP: collective, phase, bucket after #wrong; then the timing (experiment.timing, latency by default)
    BOOST_TEST_REQUIRE(row.size() == (sharded ? 13u : 10u));
    BOOST_TEST(row[8] == "0", config << ": " << r.out);
    BOOST_TEST(row.back() == "latency");
  }
  BOOST_TEST(r.out.find("# #wrong in all: 0 OK") != std::string::npos);
  BOOST_TEST(r.err.find('\r') == std::string::npos);  // no progress bar when not on a TTY
  BOOST_TEST(r.err.empty(), r.err);
}

BOOST_AUTO_TEST_CASE(forced_configs_use_their_algorithm) {
  for (auto [config, algo] :
       {std::pair{"ring", "ring"}, {"all2all", "all2all"}, {"naive", "naive"}, {"hierarchical", "hierarchical"}}) {
    CliResult r = run_cli({"run", std::string("configs/") + config + ".yaml", "--set", "experiment.counts=[64]",
                           "--set", "experiment.iters=1"});
    BOOST_TEST_REQUIRE(r.status == 0, r.err);
    BOOST_TEST(table_rows(r.out).at(0).at(4) == algo);
  }
}

BOOST_AUTO_TEST_CASE(header_names_backend_devices_groups_and_settings) {
  CliResult r =
      run_cli({"run", "configs/hierarchical.yaml", "--set", "experiment.counts=[64]", "--set", "experiment.iters=1"});
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  BOOST_TEST(r.out.find("# backend: cpu\n") != std::string::npos);
  BOOST_TEST(r.out.find("# devices: CPU:0, CPU:1, CPU:2, CPU:3\n") != std::string::npos);
  BOOST_TEST(r.out.find("# groups: [0, 0, 1, 1]\n") != std::string::npos);
  for (const Tunable& t : tunables()) BOOST_TEST(r.out.find("#   " + std::string(t.key) + " = ") != std::string::npos);
  BOOST_TEST(r.out.find("allreduce.reduce_leaders = [CPU:1, CPU:2]") != std::string::npos);
  BOOST_TEST(r.out.find(")  <- configs/hierarchical.yaml:") != std::string::npos, r.out);  // where each came from
  BOOST_TEST(r.out.find("#   runtime.kernel_split = true  (env RINGRT_KERNEL_SPLIT; default true; ") !=
             std::string::npos);
  // the groups as config --dump prints them, with where they were set
  BOOST_TEST(r.out.find("#   devices.groups = [0, 0, 1, 1]  <- configs/hierarchical.yaml:7:11\n") != std::string::npos,
             r.out);
}

BOOST_AUTO_TEST_CASE(ddp_config_reports_the_step) {
  CliResult r = run_cli(small_run("configs/ddp-gpt2-small.yaml"));
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  BOOST_TEST(table_rows(r.out).size() == 3u);
  BOOST_TEST(r.out.find("# step: 3 buckets, 20640 B per device, ") != std::string::npos, r.out);
  // persistent buckets by default: written from the host each step (timed apart), allreduced in place
  BOOST_TEST(r.out.find(", buckets: persistent, written from the host and allreduced in place\n") != std::string::npos);
  BOOST_TEST(r.out.find(" us per step (not in the step time)\n") != std::string::npos, r.out);
  // the out-of-place form stays available, with the same step line less the writes
  std::vector<std::string> args = small_run("configs/ddp-gpt2-small.yaml");
  args.insert(args.end(), {"--set", "experiment.in_place=false"});
  CliResult out_of_place = run_cli(args);
  BOOST_TEST_REQUIRE(out_of_place.status == 0, out_of_place.err);
  BOOST_TEST(out_of_place.out.find("# step: 3 buckets, 20640 B per device, ") != std::string::npos);
  BOOST_TEST(out_of_place.out.find("host writes") == std::string::npos);
  BOOST_TEST(out_of_place.out.find("# #wrong in all: 0 OK") != std::string::npos);
}

// The in-place buckets are checked against the host: a wrong element, for every op, is exit status 1.
BOOST_AUTO_TEST_CASE(ddp_in_place_wrong_results_fail) {
  for (const char* op : {"sum", "max", "min", "prod"}) {
    std::vector<std::string> args = small_run("configs/ddp-gpt2-small.yaml");
    args.insert(args.end(), {"--set", std::string("experiment.op=") + op});
    CliResult good = run_cli(args);
    BOOST_TEST(good.status == 0, op << ": " << good.err << good.out);
    CliResult bad = run_cli(args, {"RINGRT_TEST_CORRUPT=1"});
    BOOST_TEST(bad.status == 1, op << ": " << bad.err);
  }
}

BOOST_AUTO_TEST_CASE(exit_status_1_for_wrong_results) {
  std::vector<std::string> args{"run",   "configs/default.yaml", "--set", "experiment.counts=[100]",
                                "--set", "experiment.iters=1"};
  CliResult r = run_cli(args, {"RINGRT_TEST_CORRUPT=1"});
  BOOST_TEST(r.status == 1, r.err);
  BOOST_TEST(table_rows(r.out).at(0).at(8) == "1");
  BOOST_TEST(r.out.find("FAILED") != std::string::npos);
  // Without the check, nothing is compared: N/A and exit 0.
  args.insert(args.end(), {"--set", "experiment.check=false"});
  r = run_cli(args, {"RINGRT_TEST_CORRUPT=1"});
  BOOST_TEST(r.status == 0, r.err);
  BOOST_TEST(table_rows(r.out).at(0).at(8) == "N/A");
}

// --version prints the build's version stamp (the one tuning files carry) and exits 0.
BOOST_AUTO_TEST_CASE(version_flag) {
  CliResult r = run_cli({"--version"});
  BOOST_TEST(r.status == 0, r.err);
  BOOST_TEST(r.out == "ringrt " + ringrt::ringrt_version() + "\n");
}

BOOST_AUTO_TEST_CASE(exit_status_2_for_bad_command_lines) {
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {},
           {"run"},
           {"frobnicate"},
           {"run", "configs/default.yaml", "--bogus"},
           {"run", "configs/default.yaml", "--set", "no-equals-sign"},
           {"schedule", "configs/default.yaml"},
           {"schedule", "configs/default.yaml", "--count", "0"},
           {"schedule", "configs/default.yaml", "--count", "4", "--emit-source", "x", "--target", "cuda"}}) {
    CliResult r = run_cli(args);
    BOOST_TEST(r.status == 2, r.err);
    BOOST_TEST(!r.err.empty());
  }
  BOOST_TEST(run_cli({"--help"}).status == 0);
}

// A fused allreduce (allreduce.algorithm, rewrite/collective.hpp) is one item, no copies, named in "fused".
BOOST_AUTO_TEST_CASE(schedule_json_names_a_fused_allreduce) {
  for (const std::string algo : {"oneshot", "twoshot", "ring_fused"}) {
    nlohmann::ordered_json j = schedule_json({"--set", "allreduce.algorithm=" + algo});
    BOOST_TEST((j["algorithms"].get<std::vector<std::string>>() == std::vector<std::string>{algo}));
    BOOST_TEST(j["copies"].empty());
    BOOST_TEST(j["kernels"] == 0);
    BOOST_TEST_REQUIRE(j["fused"].size() == 1u);
    BOOST_TEST(j["fused"][0]["algorithm"] == algo);
    BOOST_TEST(j["fused"][0]["collective"] == "allreduce");
    BOOST_TEST(j["fused"][0]["op"] == "ADD");
    BOOST_TEST(j["fused"][0]["count"] == 400);
    BOOST_TEST(j["fused"][0]["devices"] == "(CPU:0, CPU:1, CPU:2, CPU:3)");
    BOOST_TEST(j["choice"].get<std::string>().starts_with(algo + ", forced (allreduce.algorithm"));
  }
  CliResult bad =
      run_cli({"schedule", "configs/default.yaml", "--count", "4", "--set", "allreduce.algorithm=threeshot"});
  BOOST_TEST(bad.status == 2);
  BOOST_TEST(bad.err.find("allreduce.algorithm") != std::string::npos, bad.err);
}

BOOST_AUTO_TEST_CASE(schedule_json_is_the_documented_contract) {
  nlohmann::ordered_json j = schedule_json({"--set", "allreduce.ring=2"});
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  BOOST_TEST((keys == std::vector<std::string>{"algorithms", "ndev", "count", "dtype", "copies", "kernels", "choice",
                                               "fused", "deterministic", "wire"}));
  BOOST_TEST(j["deterministic"] == false);
  BOOST_TEST(j["wire"] == "native");
  BOOST_TEST(j["fused"].empty());  // no fused collective item under ring
  BOOST_TEST(j["choice"].get<std::string>().starts_with("ring, forced (allreduce.ring 2"));
  BOOST_TEST((j["algorithms"].get<std::vector<std::string>>() == std::vector<std::string>{"ring"}));
  BOOST_TEST(j["ndev"] == 4);
  BOOST_TEST(j["count"] == 400);
  BOOST_TEST(j["dtype"] == "float32");
  BOOST_TEST(j["kernels"].get<int64_t>() > 0);
  BOOST_TEST_REQUIRE(j["copies"].size() == 24u);  // reduce-scatter 3 x 4 + allgather 3 x 4
  std::set<std::pair<std::string, std::string>> edges;
  int64_t bytes = 0;
  for (const auto& c : j["copies"]) {
    BOOST_TEST(c.size() == 3u);
    edges.insert({c["src"].get<std::string>(), c["dst"].get<std::string>()});
    bytes += c["bytes"].get<int64_t>();
  }
  std::set<std::pair<std::string, std::string>> ring{
      {"CPU:0", "CPU:1"}, {"CPU:1", "CPU:2"}, {"CPU:2", "CPU:3"}, {"CPU:3", "CPU:0"}};
  BOOST_TEST((edges == ring));
  BOOST_TEST(bytes == 2 * 3 * 400 * 4);  // every chunk travels ndev-1 hops in each phase
}

// allreduce.deterministic (YAML, --set or RINGRT_DETERMINISTIC): the JSON says so; the forced ring keeps its
// allgather round the ring, its reduce-scatter direct (chunk i folded in device order on device i)
BOOST_AUTO_TEST_CASE(schedule_json_says_when_deterministic) {
  for (const auto& [extra, env] :
       {std::pair<std::vector<std::string>, std::vector<std::string>>{{"--set", "allreduce.deterministic=true"}, {}},
        {{}, {"RINGRT_DETERMINISTIC=1"}}}) {
    std::vector<std::string> args{"--set", "allreduce.ring=2"};
    args.insert(args.end(), extra.begin(), extra.end());
    nlohmann::ordered_json j = schedule_json(args, env);
    BOOST_TEST(j["deterministic"] == true);
    BOOST_TEST((j["algorithms"].get<std::vector<std::string>>() == std::vector<std::string>{"ring"}));
    BOOST_TEST(j["copies"].size() == 24u);  // direct reduce-scatter 3 x 4, ring allgather 3 x 4
  }
  CliResult text =
      run_cli({"schedule", "configs/default.yaml", "--count", "400", "--set", "allreduce.deterministic=1"});
  BOOST_TEST(text.out.find(", deterministic\n") != std::string::npos, text.out);
  BOOST_TEST(text.out.find("algorithm choice: deterministic") != std::string::npos, text.out);
}

BOOST_AUTO_TEST_CASE(schedule_text_and_dot) {
  TempDir dir;
  std::string dot = (dir.path() / "graph.dot").string();
  CliResult r = run_cli({"schedule", "configs/naive.yaml", "--count", "4096", "--dot", dot});
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  BOOST_TEST(r.out.find("algorithms [naive], 12 copies") != std::string::npos, r.out);
  BOOST_TEST(read_file(dot).rfind("digraph", 0) == 0u);
}

// --emit-source writes one file per kernel item ("<item>_<kernel name>.<cpp|hip|cu>", as many as the
// JSON's "kernels"), and each compiles: cpu files with the host compiler, hip and nvidia files (one
// source) with the build's GPU compiler when the hip backend is built (hipRTC for gfx90a, NVRTC for sm_90).
BOOST_DATA_TEST_CASE(emit_source_writes_one_compiling_file_per_kernel, bdata::make({"cpu", "hip", "nvidia"}), target) {
  TempDir dir;
  fs::path out = dir.path() / "kernels";
  CliResult r = run_cli(
      {"schedule", "configs/ring.yaml", "--count", "400", "--json", "--emit-source", out.string(), "--target", target});
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  int64_t kernels = json::parse(r.out)["kernels"].get<int64_t>();  // stdout stays the JSON object
  BOOST_TEST(kernels > 1);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(out)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  BOOST_TEST(static_cast<int64_t>(files.size()) == kernels);
  BOOST_TEST(r.err.find(fmt::format("wrote {} {} kernel sources", kernels, target)) != std::string::npos, r.err);
  const std::string t = target, suffix = t == "cpu" ? "cpp" : t == "hip" ? "hip" : "cu";
  const std::regex name(std::string(R"((\d{3})_([Er]_[0-9a-f]{16})\.)") + suffix);
  std::set<int> items;
  for (const fs::path& f : files) {
    std::smatch m;
    std::string base = f.filename().string();
    BOOST_TEST_REQUIRE(std::regex_match(base, m, name), base);
    items.insert(std::stoi(m[1].str()));
    std::string src = read_file(f), kernel = m[2].str();
    if (std::string(target) == "cpu") {
      BOOST_TEST(src.find("extern \"C\" void " + kernel + "(void** bufs") != std::string::npos, src);
      BOOST_TEST(codegen::HostCompiler().load(src, kernel)->function(kernel) != nullptr);
    } else {
      BOOST_TEST(src.find("extern \"C\" __global__ void " + kernel + "(") != std::string::npos, src);
#ifdef RINGRT_HAVE_HIP
      std::string code = codegen::HiprtcCompiler(RINGRT_TEST_GPU_ARCH).compile(src, kernel);
      BOOST_TEST(code.compare(0, 4,
                              "\x7f"
                              "ELF") == 0,
                 base);
#endif
    }
  }
  BOOST_TEST(items.size() == files.size());  // one file per item
}

BOOST_AUTO_TEST_CASE(emit_source_errors_exit_2) {
  TempDir dir;
  std::string file = dir.write("plain-file", "x");
  for (std::vector<std::string> extra : std::vector<std::vector<std::string>>{
           {"--emit-source", (dir.path() / "a").string()},                     // no --target
           {"--target", "cpu"},                                                // no --emit-source
           {"--emit-source", (dir.path() / "b").string(), "--target", "CPU"},  // not hip|cpu
           {"--emit-source", file + "/sub", "--target", "cpu"}}) {             // cannot create the directory
    std::vector<std::string> args{"schedule", "configs/default.yaml", "--count", "64"};
    args.insert(args.end(), extra.begin(), extra.end());
    CliResult r = run_cli(args);
    BOOST_TEST(r.status == 2, r.err);
    BOOST_TEST(!r.err.empty());
  }
  BOOST_TEST(!fs::exists(dir.path() / "a"));
  BOOST_TEST(!fs::exists(dir.path() / "b"));
  CliResult r =
      run_cli({"schedule", "configs/default.yaml", "--count", "64", "--emit-source", file + "/sub", "--target", "cpu"});
  BOOST_TEST(r.err.find("plain-file/sub") != std::string::npos, r.err);
}

BOOST_AUTO_TEST_CASE(precedence_set_over_environment_over_yaml) {
  // ring.yaml says ring: 2; RING=0 in the environment wins over it; --set wins over both.
  auto algo = [](const std::vector<std::string>& set, const std::vector<std::string>& env) {
    std::vector<std::string> args{"schedule", "configs/ring.yaml", "--count", "400", "--json"};
    args.insert(args.end(), set.begin(), set.end());
    CliResult r = run_cli(args, env);
    BOOST_TEST_REQUIRE(r.status == 0, r.err);
    return json::parse(r.out)["algorithms"][0].get<std::string>();
  };
  BOOST_TEST(algo({}, {}) == "ring");
  BOOST_TEST(algo({}, {"RING=0"}) == "naive");
  BOOST_TEST(algo({"--set", "allreduce.ring=2"}, {"RING=0"}) == "ring");
  BOOST_TEST(algo({"--set", "allreduce.all2all=2"}, {}) == "all2all");
}

BOOST_AUTO_TEST_CASE(csv_and_json_files) {
  TempDir dir;
  std::string csv = (dir.path() / "out.csv").string(), js = (dir.path() / "out.json").string();
  CliResult r = run_cli({"run", "configs/default.yaml", "--set", "experiment.counts=[64, 256]", "--set",
                         "experiment.iters=1", "--csv", csv, "--json", js});
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  std::string text = read_file(csv);
  // the columns as they were, then the ones added since (test_cli_timing.cpp: the timing's)
  BOOST_TEST(text.rfind("size_bytes,count,type,redop,algo,time_us,algbw_gbs,busbw_gbs,wrong,ndev,backend,"
                        "collective,phase,bucket,timing,pipelined_time_us,pipelined_algbw_gbs,pipelined_busbw_gbs,"
                        "max_abs_err,max_rel_err\n",
                        0) == 0u);
  BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 3);
  BOOST_TEST(text.find("\n256,64,float32,sum,") != std::string::npos, text);  // (the algorithm: the machine's choice)
  BOOST_TEST(text.find(",4,cpu,allreduce,,,latency,,,,,\n") != std::string::npos, text);  // no wire: no errors
  json j = json::parse(read_file(js));
  BOOST_TEST(j["rows"].size() == 2u);
  BOOST_TEST(j["rows"][1]["count"] == 256);
  BOOST_TEST(j["rows"][1]["wrong"] == 0);
  BOOST_TEST(j["rows"][1]["collective"] == "allreduce");
  BOOST_TEST(j["rows"][1]["phase"].is_null());
  BOOST_TEST(j["devices"].size() == 4u);
  BOOST_TEST(j["step"].is_null());
  // buckets: the step object, its keys in order, write_us for the host writes of in-place buckets
  std::vector<std::string> args = small_run("configs/ddp-gpt2-small.yaml");
  args.insert(args.end(), {"--json", js});
  r = run_cli(args);
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  nlohmann::ordered_json step = nlohmann::ordered_json::parse(read_file(js))["step"];
  std::vector<std::string> keys;
  for (const auto& [k, v] : step.items()) keys.push_back(k);
  BOOST_TEST(
      keys == (std::vector<std::string>{"buckets", "bytes", "time_us", "algbw", "busbw", "write_us", "collectives",
                                        "timing", "pipelined_time_us", "pipelined_algbw", "pipelined_busbw"}),
      boost::test_tools::per_element());
  BOOST_TEST(step["buckets"] == 3);
  BOOST_TEST(step["write_us"].is_number());
}

BOOST_AUTO_TEST_CASE(config_dump_prints_every_setting_and_its_origin) {
  CliResult r = run_cli(
      {"config", "configs/hierarchical.yaml", "--dump", "--set", "experiment.iters=3", "--set", "runtime.peer_reads=0"},
      {"RING_ALLREDUCE_THRESHOLD=1000", "RINGRT_WATCHDOG_S=5", "RINGRT_PEER_READS=1"});
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  // every tunable, on a line of its own that ends with where its value came from
  std::regex line(
      "(^|\n)([a-z0-9_.]+) = [^\n]*\\)  <- (default|environment variable [A-Z_0-9]+|--set "
      "[^\n]+|configs/[^\n]+)(?=\n)");
  std::set<std::string> dumped;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), line); it != std::sregex_iterator(); ++it)
    dumped.insert((*it)[2]);
  for (const Tunable& t : tunables()) BOOST_TEST(dumped.count(std::string(t.key)) == 1u, t.key << ": " << r.out);
  BOOST_TEST(r.out.find("runtime.watchdog_s = 5  (env RINGRT_WATCHDOG_S; default 60; ") != std::string::npos, r.out);
  BOOST_TEST(r.out.find(")  <- environment variable RINGRT_WATCHDOG_S\n") != std::string::npos);
  BOOST_TEST(r.out.find("runtime.peer_reads = false  (env RINGRT_PEER_READS; ") != std::string::npos);  // --set wins
  BOOST_TEST(r.out.find(")  <- --set runtime.peer_reads=0\n") != std::string::npos);
  BOOST_TEST(r.out.find("runtime.inline_small = true  (env RINGRT_INLINE_SMALL; default true; ") != std::string::npos);
  BOOST_TEST(r.out.find("runtime.cxx = g++  (env CXX; default g++; ") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("experiment.collective = allreduce  <- default\n") != std::string::npos);
  BOOST_TEST(r.out.find("experiment.timing = latency  <- default\n") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("allreduce.ring_threshold = 1000  (env RING_ALLREDUCE_THRESHOLD") != std::string::npos);
  BOOST_TEST(r.out.find("<- environment variable RING_ALLREDUCE_THRESHOLD") != std::string::npos);
  BOOST_TEST(r.out.find("experiment.iters = 3  <- --set experiment.iters=3") != std::string::npos);
  BOOST_TEST(r.out.find("devices.groups = [0, 0, 1, 1]  <- configs/hierarchical.yaml:7:11") != std::string::npos,
             r.out);
  BOOST_TEST(
      r.out.find("experiment.sizes = {min: 1 KiB, max: 64 MiB, factor: 4}  <- factor: configs/hierarchical.yaml:13:") !=
          std::string::npos,
      r.out);
  TempDir dir;  // runtime.hip_logical_devices from a file (the environment's is checked in test_params)
  std::string logical = dir.write("l.yaml", "runtime: {hip_logical_devices: 2}\n");
  CliResult l = run_cli({"config", logical, "--dump"});
  BOOST_TEST(
      l.out.find("runtime.hip_logical_devices = 2  (env RINGRT_HIP_LOGICAL_DEVICES; default 0; ") != std::string::npos,
      l.out << l.err);
  BOOST_TEST(l.out.find(")  <- " + logical + ":1:32\n") != std::string::npos, l.out);
  CliResult set = run_cli({"config", "configs/hierarchical.yaml", "--dump", "--set", "experiment.sizes.max=4KiB"});
  // a map set leaf by leaf: where each leaf came from, named by the leaf
  BOOST_TEST(set.out.find(
                 "experiment.sizes = {min: 1 KiB, max: 4 KiB, factor: 4}  <- factor: configs/hierarchical.yaml:13:") !=
                 std::string::npos,
             set.out);
  BOOST_TEST(
      set.out.find(", max: --set experiment.sizes.max=4KiB, min: configs/hierarchical.yaml:13:") != std::string::npos,
      set.out);
  // the whole map set at once: its one origin, once
  CliResult whole = run_cli(
      {"config", "configs/hierarchical.yaml", "--dump", "--set", "experiment.sizes={min: 2KiB, max: 8KiB, factor: 2}"});
  BOOST_TEST(whole.out.find("experiment.sizes = {min: 2 KiB, max: 8 KiB, factor: 2}  <- --set "
                            "experiment.sizes={min: 2KiB, max: 8KiB, factor: 2}\n") != std::string::npos,
             whole.out << whole.err);
}

// A runtime tunable set in the YAML, the environment or --set reaches the code that reads it: with
// runtime.allreduce_in_place off, the allreduce copies its input to a contiguous buffer first.
BOOST_AUTO_TEST_CASE(runtime_tunables_reach_the_program) {
  TempDir dir;
  std::string off = dir.write("off.yaml", "runtime:\n  allreduce_in_place: false\n");
  std::vector<std::string> schedule{"schedule", off, "--count", "400", "--json"};
  auto kernels = [&](const std::vector<std::string>& extra, const std::vector<std::string>& env) {
    std::vector<std::string> args = schedule;
    args.insert(args.end(), extra.begin(), extra.end());
    CliResult r = run_cli(args, env);
    BOOST_TEST_REQUIRE(r.status == 0, r.err);
    return json::parse(r.out)["kernels"].get<int>();
  };
  int from_file = kernels({}, {});
  int from_env = kernels({}, {"RINGRT_ALLREDUCE_IN_PLACE=1"});
  int from_set = kernels({"--set", "runtime.allreduce_in_place=true"}, {"RINGRT_ALLREDUCE_IN_PLACE=0"});
  BOOST_TEST(from_env == from_set);
  BOOST_TEST(from_file > from_env);
  BOOST_TEST(kernels({}, {"RINGRT_ALLREDUCE_IN_PLACE=0"}) == from_file);
}

// Found by trying to break the program: each is exit 2 with a message naming the problem, or (more
// cpu devices than the default 4) a correct run.
BOOST_AUTO_TEST_CASE(bad_input_found_by_the_breaker) {
  TempDir dir;
  auto expect_2 = [](const CliResult& r, const std::string& words) {
    BOOST_TEST(r.status == 2, r.err);
    BOOST_TEST(r.err.find(words) != std::string::npos, r.err);
  };
  expect_2(run_cli({"run", dir.path().string()}), "is a directory");
  expect_2(run_cli({"frob", "configs/naive.yaml"}),
           "unknown subcommand 'frob': run, schedule, config, tune or regress");
  std::string two_docs = dir.write("two.yaml", "backend: cpu\n---\nbogus: 1\n");
  expect_2(run_cli({"config", two_docs}), two_docs + ":2:1: a second YAML document");
  for (const char* opt : {"--csv", "--json"})
    expect_2(run_cli({"run", "configs/naive.yaml", opt, ""}), "an empty path");
  expect_2(run_cli({"schedule", "configs/naive.yaml", "--count", "8", "--dot", ""}), "an empty path");
  expect_2(run_cli({"schedule", "configs/naive.yaml", "--count", "8", "--emit-source", "", "--target", "cpu"}),
           "an empty path");
  int switches = 0;
  for (const Tunable& t : tunables()) {
    if (t.parser.kind != ParamKind::switch01) continue;
    ++switches;
    for (const char* value : {"", " 1", "+1", "01", "yes"}) {
      std::string env = fmt::format("{}={}", t.env, value);
      std::string want =
          fmt::format("environment variable {}: key '{}': expected 0 or 1, got '{}'", t.env, t.key, value);
      expect_2(run_cli({"run", "configs/naive.yaml", "--set", "experiment.counts=[8]"}, {env}), want);
      expect_2(run_cli({"config", "configs/naive.yaml", "--dump"}, {env}), want);  // config checks what run reads
    }
  }
  BOOST_TEST(switches == 9);  // peer reads and writes, kernel split, inline small, huge pages, in place, mpi stage
                              // host, async, graphs
  for (const char* value : {"1e-9", " 5", "0x10", "0"})
    expect_2(run_cli({"run", "configs/naive.yaml", "--set", "experiment.counts=[8]"},
                     {std::string("RINGRT_WATCHDOG_S=") + value}),
             "RINGRT_WATCHDOG_S");
  // 6 cpu devices (more than the default 4): a run with every value right
  for (const char* algo : {"naive", "ring", "all2all"}) {
    CliResult r = run_cli({"run", std::string("configs/") + algo + ".yaml", "--set", "devices.count=6", "--set",
                           "experiment.counts=[37, 3000]", "--set", "experiment.iters=1"});
    BOOST_TEST(r.status == 0, r.err);
    BOOST_TEST(r.out.find("CPU:5") != std::string::npos);
    for (const auto& row : table_rows(r.out)) BOOST_TEST(row.at(8) == "0");
  }
}

BOOST_AUTO_TEST_CASE(output_paths_are_checked_before_the_run) {
  TempDir dir;
  std::string js = (dir.path() / "out.json").string();
  // a --csv naming a folder: refused with the system's reason before any row runs; --json untouched
  CliResult r = run_cli(
      {"run", "configs/naive.yaml", "--set", "experiment.counts=[8]", "--csv", dir.path().string(), "--json", js});
  BOOST_TEST(r.status == 2, r.err);
  BOOST_TEST(r.err.find(dir.path().string() + ": cannot write the file: Is a directory") != std::string::npos, r.err);
  BOOST_TEST(table_rows(r.out).empty(), r.out);
  // a procfs file looks regular but cannot be written: refused up front too
  r = run_cli({"run", "configs/naive.yaml", "--set", "experiment.counts=[8]", "--csv", "/proc/version"});
  BOOST_TEST(r.status == 2, r.err);
  BOOST_TEST(r.err.find("/proc/version: is a kernel interface file") != std::string::npos, r.err);
  BOOST_TEST(table_rows(r.out).empty(), r.out);
  // --dot into a missing folder: nothing planned or printed
  r = run_cli(
      {"schedule", "configs/naive.yaml", "--count", "8", "--json", "--dot", (dir.path() / "no/x.dot").string()});
  BOOST_TEST(r.status == 2, r.err);
  BOOST_TEST(r.err.find("No such file or directory") != std::string::npos, r.err);
  BOOST_TEST(r.out.empty(), r.out);
  // standard output that cannot be written (a full disk) is exit 2 with the reason, not a silent 0
  std::string cmd = "cd " + shell_quote(RINGRT_SOURCE_DIR) + " && " + shell_quote(RINGRT_CLI_PATH) +
                    " schedule configs/naive.yaml --count 8 --json >/dev/full 2>" +
                    shell_quote((dir.path() / "err").string());
  int raw = std::system(cmd.c_str());
  BOOST_TEST((WIFEXITED(raw) ? WEXITSTATUS(raw) : -1) == 2);
  BOOST_TEST(read_file(dir.path() / "err").find("cannot write the standard output: No space left on device") !=
                 std::string::npos,
             read_file(dir.path() / "err"));
}

BOOST_AUTO_TEST_CASE(schedule_plans_without_memory_or_compiling) {
  TempDir dir;
  fs::path cache = dir.path() / "cache";
  // 2^28 float32 per device on 4 devices: 4 GiB if it were allocated; ring chunks of 2^26 elements
  CliResult r = run_cli({"schedule", "configs/ring.yaml", "--count", "268435456", "--json"},
                        {"RINGRT_CACHE_DIR=" + cache.string()});
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  json j = json::parse(r.out);
  BOOST_TEST(j["copies"].size() == 24u);  // ring: 2n(n-1)
  for (const auto& c : j["copies"]) BOOST_TEST(c["bytes"] == (int64_t{1} << 28));
  BOOST_TEST(!fs::exists(cache));  // nothing compiled
  if (kSanitizedBuild) return;     // no `ulimit -v` under a sanitizer (cli_run.hpp)
  // planning starts no device threads: 256 cpu devices plan in 1.5 GB of address space (a queue thread
  // each, at the usual 8 MiB stack reservation, was 2 GiB: "could not start a thread")
  std::string cmd = "cd " + shell_quote(RINGRT_SOURCE_DIR) + " && ulimit -v 1500000 && " +
                    shell_quote(RINGRT_CLI_PATH) +
                    " schedule configs/ring.yaml --count 8 --set devices.count=256 --json >" +
                    shell_quote((dir.path() / "out").string()) + " 2>&1";
  int raw = std::system(cmd.c_str());
  BOOST_TEST((WIFEXITED(raw) ? WEXITSTATUS(raw) : -1) == 0, read_file(dir.path() / "out"));
}

BOOST_AUTO_TEST_CASE(limits_of_the_input_exit_2) {
  TempDir dir;
  auto expect_2 = [](const CliResult& r, const std::string& words) {
    BOOST_TEST(r.status == 2, r.err);
    BOOST_TEST(r.err.find(words) != std::string::npos, r.err);
  };
  expect_2(run_cli({"schedule", "configs/naive.yaml", "--count", "99999999999999999999"}), "out of range");
  std::string deep = dir.write("deep.yaml", "a: " + std::string(100000, '[') + std::string(100000, ']') + "\n");
  expect_2(run_cli({"config", deep}), "nested too deeply");
  std::string counts = "experiment:\n  counts: [1";
  for (int i = 0; i < 4096; ++i) counts += ", 1";
  expect_2(run_cli({"config", dir.write("long.yaml", counts + "]\n")}),
           "long.yaml:2:11: key 'experiment.counts': expected a list of at most 4096 entries, got 4097 entries");
  if (kSanitizedBuild) return;  // no `ulimit -v` under a sanitizer (cli_run.hpp)
  // a small address space: thread creation fails (EAGAIN); a resource message, not an internal error
  // (without inline_small the copies are queued, so a device's queue thread must start). The same run
  // first without the limit, so its kernels are cached: the compiler itself cannot run in 50 MB.
  std::vector<std::string> args{"run",   "configs/naive.yaml",        "--set", "experiment.counts=[8]",
                                "--set", "runtime.inline_small=false"};
  CliResult warm = run_cli(args);
  BOOST_TEST_REQUIRE(warm.status == 0, warm.err);
  CliResult limited = run_cli(args, {}, "ulimit -v 50000");
  BOOST_TEST(limited.status == 2, limited.err);
  BOOST_TEST(limited.err.find("out of a system resource") != std::string::npos, limited.err);
}

BOOST_AUTO_TEST_CASE(a_size_that_does_not_fit_is_refused_before_it_starts,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
                       boost::test_tools::assertion_result r(!kSanitizedBuild);
                       r.message() << "a sanitizer build cannot run under `ulimit -v`";
                       return r;
                     })) {
  TempDir dir;
  // ulimit -v about 2.9 GiB: 8 elements fit; 2^28 float32 on each of 4 devices (4 GiB of input alone)
  // do not, and are refused with the numbers before the sweep starts: no row runs
  std::string cmd = "cd " + shell_quote(RINGRT_SOURCE_DIR) + " && ulimit -v 3000000 && " +
                    shell_quote(RINGRT_CLI_PATH) +
                    " run configs/naive.yaml --set 'experiment.counts=[8, 268435456]' --set experiment.warmup=0"
                    " --set experiment.iters=1 >" +
                    shell_quote((dir.path() / "out").string()) + " 2>" + shell_quote((dir.path() / "err").string());
  int raw = std::system(cmd.c_str());
  std::string out = read_file(dir.path() / "out"), err = read_file(dir.path() / "err");
  BOOST_TEST((WIFEXITED(raw) ? WEXITSTATUS(raw) : -1) == 2, err);
  BOOST_TEST(err.find("count 268435456 x 4 devices float32 needs about ") != std::string::npos, err);
  BOOST_TEST(err.find("GiB available (ulimit -v)") != std::string::npos, err);
  BOOST_TEST(table_rows(out).empty(), out);  // not even the row of 8: the sweep never started
}

BOOST_AUTO_TEST_SUITE_END()
