// experiment.timing (runtime/cli/experiment_timing.cpp): `ringrt run` times each call waited for
// (latency, the default), the calls enqueued back to back under a DeviceClock (pipelined), or both side
// by side in one row; every mode names itself in the header, the table, the CSV and the JSON, keeps every
// value checked (#wrong 0, a wrong element is exit status 1), and a bad value is exit status 2 naming the
// key. On the cpu backend (these tests) realize() runs the work before it returns, so both modes time
// the same calls; the pipelined time is the devices' clock over them.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "runtime/cli/experiment_check.hpp"
#include "runtime/cli/tune.hpp"
#include "test/integration/cli_run.hpp"

BOOST_AUTO_TEST_SUITE(test_cli_timing)

namespace bdata = boost::unit_test::data;
using namespace ringrt;
using namespace ringrt::test;
using nlohmann::json;

namespace {

const char* const kModes[] = {"latency", "pipelined", "both"};

bool positive_finite(double v) { return std::isfinite(v) && v > 0; }
bool positive_finite(const std::string& text) { return !text.empty() && positive_finite(std::stod(text)); }

// The CSV's lines as maps from the header's column names to the cells.
std::vector<std::map<std::string, std::string>> csv_rows(const std::string& text) {
  std::istringstream lines(text);
  auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::istringstream in(line);
    for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    return cells;
  };
  std::string line;
  std::getline(lines, line);
  std::vector<std::string> names = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(lines, line)) {
    std::vector<std::string> cells = split(line);
    BOOST_TEST_REQUIRE(cells.size() == names.size(), line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < names.size(); ++i) row[names[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

// A sweep of two counts in each mode: the header's timing line; every table row ends with the mode, its
// times positive and finite (both: the latency's and the pipelined's, side by side before #wrong), #wrong
// 0; the CSV and the JSON carry the mode and the pipelined time where it was measured, and keep every
// column and key they had.
BOOST_DATA_TEST_CASE(each_mode_runs_checked_and_names_itself, bdata::make(kModes), mode_name) {
  const std::string mode = mode_name;
  TempDir dir;
  std::string csv = (dir.path() / "t.csv").string(), js = (dir.path() / "t.json").string();
  CliResult r =
      run_cli({"run", "configs/default.yaml", "--set", "experiment.counts=[64, 4096]", "--set", "experiment.warmup=1",
               "--set", "experiment.iters=3", "--set", "experiment.timing=" + mode, "--csv", csv, "--json", js});
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  BOOST_TEST(r.out.find("\n# timing: " + mode) != std::string::npos, r.out);
  BOOST_TEST(r.out.find("# #wrong in all: 0 OK\n") != std::string::npos, r.out);
  bool both = mode == "both";
  // both: a line of the two time groups' titles above the column names
  BOOST_TEST((r.out.find("latency: each call waited       pipelined: back to back\n") != std::string::npos) == both,
             r.out);
  BOOST_TEST((r.out.find("# Avg bus bandwidth, pipelined: ") != std::string::npos) == both, r.out);
  auto rows = table_rows(r.out);
  BOOST_TEST_REQUIRE(rows.size() == 2u);
  for (const auto& row : rows) {
    BOOST_TEST_REQUIRE(row.size() == (both ? 13u : 10u));
    BOOST_TEST(row.back() == mode);
    BOOST_TEST(row[both ? 11 : 8] == "0");  // #wrong
    BOOST_TEST(positive_finite(row[5]), row[5]);
    if (both) BOOST_TEST(positive_finite(row[8]), row[8]);
  }
  auto lines = csv_rows(read_file(csv));
  BOOST_TEST_REQUIRE(lines.size() == 2u);
  for (auto& line : lines) {
    BOOST_TEST(line["timing"] == mode);
    BOOST_TEST(line["wrong"] == "0");
    BOOST_TEST(line["collective"] == "allreduce");
    BOOST_TEST(positive_finite(line["time_us"]));
    BOOST_TEST(positive_finite(line["busbw_gbs"]));
    BOOST_TEST(line["pipelined_time_us"].empty() == (mode == "latency"));
    if (mode != "latency") BOOST_TEST(positive_finite(line["pipelined_busbw_gbs"]));
    if (mode == "pipelined") BOOST_TEST(line["pipelined_time_us"] == line["time_us"]);  // the row's only time
  }
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(read_file(js));
  BOOST_TEST(j["timing"] == mode);
  BOOST_TEST(j["step"].is_null());
  for (const auto& row : j["rows"]) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : row.items()) keys.push_back(k);
    BOOST_TEST(
        keys == (std::vector<std::string>{"size", "count", "type", "redop", "algo", "time_us", "algbw", "busbw",
                                          "wrong", "collective", "phase", "bucket", "timing", "pipelined_time_us",
                                          "pipelined_algbw", "pipelined_busbw", "max_abs_err", "max_rel_err"}),
        boost::test_tools::per_element());
    BOOST_TEST(row["max_abs_err"].is_null());  // no wire
    BOOST_TEST(row["timing"] == mode);
    BOOST_TEST(row["wrong"] == 0);
    BOOST_TEST(positive_finite(row["time_us"].get<double>()));
    BOOST_TEST(row["pipelined_time_us"].is_null() == (mode == "latency"));
    if (mode != "latency") {
      BOOST_TEST(positive_finite(row["pipelined_time_us"].get<double>()));
      BOOST_TEST(positive_finite(row["pipelined_busbw"].get<double>()));
    }
  }
}

// A wrong element is found in every mode: the last call's result is checked (both: the pipelined one).
BOOST_DATA_TEST_CASE(a_wrong_result_fails_in_every_mode, bdata::make(kModes), mode_name) {
  CliResult r = run_cli({"run", "configs/default.yaml", "--set", "experiment.counts=[100]", "--set",
                         "experiment.iters=2", "--set", std::string("experiment.timing=") + mode_name},
                        {"RINGRT_TEST_CORRUPT=1"});
  BOOST_TEST(r.status == 1, r.err);
  BOOST_TEST(r.out.find("# #wrong in all: 1 FAILED") != std::string::npos, r.out);
}

// A bad value in a file or in --set: exit status 2 with where it came from, the key and the values allowed;
// nothing runs.
BOOST_AUTO_TEST_CASE(a_bad_timing_exits_2_naming_the_key) {
  TempDir dir;
  std::string bad = dir.write("bad.yaml", "experiment:\n  iters: 2\n  timing: fastest\n");
  CliResult r = run_cli({"run", bad});
  BOOST_TEST(r.status == 2, r.err);
  BOOST_TEST(r.err.find(bad + ":3:11: key 'experiment.timing': expected one of latency, pipelined, both, got "
                              "'fastest'") != std::string::npos,
             r.err);
  BOOST_TEST(r.out.empty(), r.out);
  for (const char* value : {"sometimes", "[latency]", "Latency"}) {
    r = run_cli({"run", "configs/default.yaml", "--set", std::string("experiment.timing=") + value});
    BOOST_TEST(r.status == 2, r.err);
    BOOST_TEST(r.err.find(std::string("--set experiment.timing=") + value +
                          ": key 'experiment.timing': expected one of latency, pipelined, both") != std::string::npos,
               r.err);
    BOOST_TEST(table_rows(r.out).empty(), r.out);
  }
  r = run_cli({"config", "configs/default.yaml", "--set", "experiment.timing=nope"});
  BOOST_TEST(r.status == 2, r.err);
}

// `config --dump` shows the key and where it was set: the YAML, --set; the default is latency.
BOOST_AUTO_TEST_CASE(config_dump_names_the_timing) {
  TempDir dir;
  std::string file = dir.write("t.yaml", "experiment:\n  timing: pipelined\n");
  CliResult r = run_cli({"config", file, "--dump"});
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  BOOST_TEST(r.out.find("experiment.timing = pipelined  <- " + file + ":2:11\n") != std::string::npos, r.out);
  r = run_cli({"config", file, "--dump", "--set", "experiment.timing=both"});
  BOOST_TEST(r.out.find("experiment.timing = both  <- --set experiment.timing=both\n") != std::string::npos, r.out);
  BOOST_TEST(parse_config("", "d.yaml").timing == "latency");
}

// DDP's buckets (in place and out of place) and FSDP's units in each mode: #wrong 0 and a wrong element
// found (a pipelined last step is checked once it has run); the step's time in the JSON; the host writes
// timed (in place); a collective of pipelined steps has no time of its own (null), a step of them has.
BOOST_DATA_TEST_CASE(bucket_steps_in_every_mode, bdata::make(kModes), mode_name) {
  const std::string mode = mode_name;
  TempDir dir;
  std::string js = (dir.path() / "s.json").string();
  for (std::vector<std::string> form :
       std::vector<std::vector<std::string>>{{"configs/ddp-gpt2-small.yaml"},
                                             {"configs/ddp-gpt2-small.yaml", "--set", "experiment.in_place=false"},
                                             {"configs/fsdp-gpt2-small.yaml"}}) {
    BOOST_TEST_CONTEXT(form.back()) {
      std::vector<std::string> args = small_run(form[0]);
      args.insert(args.end(), form.begin() + 1, form.end());
      args.insert(args.end(), {"--set", "experiment.iters=2", "--set", "experiment.timing=" + mode});
      CliResult r = run_cli(with(args, {"--json", js}));
      BOOST_TEST_REQUIRE(r.status == 0, r.err);
      BOOST_TEST(r.out.find("# #wrong in all: 0 OK\n") != std::string::npos, r.out);
      BOOST_TEST((r.out.find("\n# step, pipelined: ") != std::string::npos) == (mode == "both"), r.out);
      json j = json::parse(read_file(js));
      const json& step = j["step"];
      BOOST_TEST(step["timing"] == mode);
      BOOST_TEST(positive_finite(step["time_us"].get<double>()));
      BOOST_TEST(step["pipelined_time_us"].is_null() == (mode == "latency"));
      if (mode != "latency") BOOST_TEST(positive_finite(step["pipelined_busbw"].get<double>()));
      bool in_place = form.size() == 1;
      BOOST_TEST(step["write_us"].is_null() == !in_place);
      if (in_place) BOOST_TEST(positive_finite(step["write_us"].get<double>()));
      BOOST_TEST_REQUIRE(!j["rows"].empty());
      for (const json& row : j["rows"]) {
        BOOST_TEST(row["wrong"] == 0);
        BOOST_TEST(row["timing"] == mode);
        BOOST_TEST(row["time_us"].is_null() == (mode == "pipelined"));
        BOOST_TEST(row["pipelined_time_us"].is_null());  // one clock per pipelined step, none per collective
      }
      for (const auto& row : table_rows(r.out)) BOOST_TEST(row.back() == mode);
      if (mode == "pipelined")
        BOOST_TEST(r.out.find("# Avg bus bandwidth: N/A (the collectives of pipelined steps") != std::string::npos);
      BOOST_TEST(run_cli(args, {"RINGRT_TEST_CORRUPT=1"}).status == 1);
    }
  }
}

// In process: the progress reaches its total in every mode (warmup, then iters per mode, pipelined's
// blocks), the trace hook brackets one call per row, and a row's times are as the mode says;
// timed_blocks (`ringrt tune` on GPUs) times several blocks, the median of their means.
BOOST_AUTO_TEST_CASE(run_experiment_in_every_mode) {
  for (const std::string mode : kModes) {
    for (int blocks : {1, 3}) {
      BOOST_TEST_CONTEXT(mode << ", " << blocks << " blocks") {
        ExperimentConfig c = parse_config("devices: {count: 3}\nexperiment: {counts: [7, 300], warmup: 1, iters: 2}\n",
                                          "y.yaml", {"experiment.timing=" + mode});
        c.timed_blocks = blocks;
        int64_t done = 0, total = 0, brackets = 0;
        ExperimentObserver observer;
        observer.progress = [&](int64_t d, int64_t t) { done = d, total = t; };
        observer.last_iteration = [&](bool begins) { brackets += begins ? 1 : 0; };
        ExperimentResult r = run_experiment(c, observer);
        BOOST_TEST_REQUIRE(r.rows.size() == 2u);
        int64_t per_row = 1 + 2 * ((mode != "pipelined" ? 1 : 0) + (mode != "latency" ? blocks : 0));
        BOOST_TEST(total == 2 * per_row);
        BOOST_TEST(done == total);
        BOOST_TEST(brackets == 2);
        for (const ResultRow& row : r.rows) {
          BOOST_TEST(row.wrong == 0);
          BOOST_TEST(row.timing == mode);
          BOOST_TEST(row.timed);
          BOOST_TEST(positive_finite(row.time_us));
          BOOST_TEST(row.pipelined.has_value() == (mode != "latency"));
          if (row.pipelined) BOOST_TEST(positive_finite(row.pipelined->busbw));
          if (mode == "pipelined") BOOST_TEST(row.time_us == row.pipelined->time_us);
        }
      }
    }
  }
}

// `ringrt tune` times the cpu backend as before (latency, the best round) and GPUs pipelined with the
// median of blocks and of rounds, whatever experiment.timing says; the median ignores a minority of
// outliers on either side, the best round the slow ones.
BOOST_AUTO_TEST_CASE(tune_times_gpus_pipelined_with_a_median) {
  ExperimentConfig cpu = parse_config("", "d.yaml", {"experiment.timing=both"});
  TuneTiming t = tune_timing(cpu);
  BOOST_TEST(t.timing == "latency");
  BOOST_TEST(t.blocks == 1);
  BOOST_TEST(!t.median);
  BOOST_TEST(tune_timing_text(t).empty());
  ExperimentConfig gpu = cpu;
  gpu.devices = {"HIP:0", "HIP:1"};
  TuneTiming g = tune_timing(gpu);
  BOOST_TEST(g.timing == "pipelined");
  BOOST_TEST(g.blocks == kGpuBlocks);
  BOOST_TEST(g.median);
  BOOST_TEST(tune_timing_text(g) ==
             "; timed pipelined on the devices' clocks: a run the median of 5 blocks, an algorithm the median of its "
             "rounds");
  BOOST_TEST(tune_time({100, 7, 101, 99, 400}, g) == 100.0);  // one fast and one slow outlier: the median
  BOOST_TEST(tune_time({100, 7, 101, 99, 400}, t) == 7.0);    // the best round
  BOOST_TEST(tune_time({4, 1, 3, 2}, g) == 2.5);
  BOOST_TEST(median_of({}) == 0.0);
  BOOST_TEST(median_of({3}) == 3.0);
}

// --trace in both modes records one call per row: the last, a pipelined one.
BOOST_AUTO_TEST_CASE(trace_holds_one_call_per_row_in_both_modes) {
  TempDir dir;
  std::string path = (dir.path() / "t.json").string();
  CliResult r = run_cli({"run", "configs/ring.yaml", "--set", "experiment.counts=[64, 4096]", "--set",
                         "experiment.iters=2", "--set", "experiment.timing=both", "--trace", path});
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  std::set<int64_t> runs;
  json trace = json::parse(read_file(path));
  for (const json& e : trace.at("traceEvents"))
    if (e.at("ph") == "X") runs.insert(e.at("args").at("run").get<int64_t>());
  BOOST_TEST(runs.size() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
