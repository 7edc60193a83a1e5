// `ringrt run --trace FILE` (runtime/cli/main.cpp TraceOutput): a Chrome trace-event JSON of the last
// timed iteration of each row, with the documented keys; a path that cannot be written fails before
// the run.
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "test/integration/cli_run.hpp"

BOOST_AUTO_TEST_SUITE(test_cli_trace)

using namespace ringrt::test;
using nlohmann::json;

BOOST_AUTO_TEST_SUITE(cli_trace)

// configs/ring.yaml (ring allreduce over CPU:0..3) at 1 KiB and 4 KiB, peer reads and writes off so every copy runs:
// one traced run per row, each with the ring's 2 n (n - 1) = 24 copies of a quarter of the buffer each
// (2 (n - 1) = 6 buffers copied in all), on the four queues CPU:0..3.
BOOST_AUTO_TEST_CASE(trace_holds_the_last_iteration_of_each_row) {
  TempDir dir;
  std::string path = (dir.path() / "ring.json").string();
  CliResult r = run_cli({"run", "configs/ring.yaml", "--set", "experiment.sizes.min=1KiB", "--set",
                         "experiment.sizes.max=4KiB", "--set", "experiment.warmup=1", "--set", "experiment.iters=2",
                         "--set", "runtime.peer_reads=false", "--set", "runtime.peer_writes=false", "--trace", path});
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  BOOST_TEST(table_rows(r.out).size() == 2u);
  BOOST_TEST(r.out.find("# --trace: the last timed iteration of each row is traced, and its time is in the table") !=
                 std::string::npos,
             r.out);  // the header says the times include the tracing
  json j = json::parse(read_file(path));
  const json& meta = j.at("metadata");
  BOOST_TEST(meta.at("ringrt_trace").get<int>() == 1);
  BOOST_TEST(meta.at("rank").get<int>() == 0);
  BOOST_TEST(meta.at("dropped").get<int>() == 0);
  BOOST_TEST(meta.at("untimed").get<int>() == 0);
  BOOST_TEST(meta.at("max_events").get<int>() == 100000);
  BOOST_TEST(meta.at("host").get<std::string>() == "");  // no mpirun
  BOOST_TEST(meta.at("origin_ns").get<int64_t>() > 0);
  std::map<int, std::string> queues;  // tid -> thread_name
  for (const json& e : j.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "thread_name") queues[e.at("tid").get<int>()] = e.at("args").at("name");
  std::set<std::string> names;
  for (const auto& [tid, name] : queues) names.insert(name);
  BOOST_TEST((names == std::set<std::string>{"CPU:0", "CPU:1", "CPU:2", "CPU:3"}));
  std::map<int, int> copies, kernels;  // per run
  std::map<int, int64_t> copied;       // bytes per run
  size_t complete = 0;
  for (const json& e : j.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    ++complete;
    const json& a = e.at("args");
    for (const char* key : {"item", "kind", "bytes", "run", "deps"}) BOOST_TEST(a.contains(key), key);
    BOOST_TEST(e.at("pid").get<int>() == 0);
    BOOST_TEST(queues.count(e.at("tid").get<int>()) == 1u);
    BOOST_TEST(e.at("dur").get<double>() >= 0.0);
    int run = a.at("run").get<int>();
    if (a.at("kind") == "copy") {
      ++copies[run];
      copied[run] += a.at("bytes").get<int64_t>();
      BOOST_TEST(a.at("dst").get<std::string>() == queues.at(e.at("tid").get<int>()));
      BOOST_TEST(a.at("src").get<std::string>() != a.at("dst").get<std::string>());
    } else {
      ++kernels[run];
      BOOST_TEST(a.at("kernel").get<std::string>() == e.at("name").get<std::string>());
    }
  }
  BOOST_TEST(meta.at("events").get<size_t>() == complete);
  BOOST_TEST((copies == std::map<int, int>{{1, 24}, {2, 24}}));
  BOOST_TEST((copied == std::map<int, int64_t>{{1, 6 * 1024}, {2, 6 * 4096}}));
  BOOST_TEST(kernels.size() == 2u);
}

// A --trace into a folder that does not exist: exit status 2 before any row runs.
BOOST_AUTO_TEST_CASE(unwritable_trace_fails_before_the_run) {
  TempDir dir;
  std::string path = (dir.path() / "no" / "t.json").string();
  CliResult r = run_cli({"run", "configs/ring.yaml", "--set", "experiment.sizes.max=1KiB", "--trace", path});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find(path) != std::string::npos, r.err);
  BOOST_TEST(table_rows(r.out).empty());
}

// Outputs that name one file, or the config, are refused (exit 2) before any file is created or written.
BOOST_AUTO_TEST_CASE(outputs_naming_one_file_are_refused_before_any_is_created) {
  TempDir dir;
  std::string x = (dir.path() / "x").string(), cfg = (dir.path() / "c.yaml").string();
  std::string yaml = read_file(std::string(RINGRT_SOURCE_DIR) + "/configs/ring.yaml");
  std::ofstream(cfg) << yaml;
  CliResult r = run_cli({"run", "configs/ring.yaml", "--csv", x, "--trace", (dir.path() / "." / "x").string()});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("name the same file") != std::string::npos, r.err);
  BOOST_TEST(!std::filesystem::exists(x));  // nothing created
  r = run_cli({"run", cfg, "--set", "experiment.sizes.max=1KiB", "--trace", cfg});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("names the config file") != std::string::npos, r.err);
  BOOST_TEST(read_file(cfg) == yaml);  // the config untouched
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
