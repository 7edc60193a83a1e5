// `ringrt tune` (runtime/cli/tune.cpp): the file it writes holds the fastest algorithm measured at each
// point, `ringrt run` follows it and names it in the header, a file made elsewhere is ignored with a
// warning, and bad requests fail before anything is measured.
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "rewrite/cost_model.hpp"
#include "rewrite/tuning.hpp"
#include "test/integration/cli_run.hpp"

BOOST_AUTO_TEST_SUITE(test_cli_tune)

using namespace ringrt;
using namespace ringrt::test;

namespace {

const std::vector<std::string> kSmall{"--set", "devices.count=2",   "--set", "experiment.warmup=1",
                                      "--set", "experiment.iters=1"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_tune)

// Two sizes on 2 devices, allreduce: three algorithms each, the choice the fastest of the times written.
BOOST_AUTO_TEST_CASE(tune_writes_the_fastest_and_run_follows_it) {
  TempDir dir;
  std::string file = (dir.path() / "tuning.yaml").string();
  CliResult t = run_cli(with({"tune", "configs/default.yaml", "--out", file, "--collectives", "allreduce", "--rounds",
                              "1", "--set", "experiment.sizes={min: 4KiB, max: 64KiB, factor: 16}"},
                             kSmall));
  BOOST_TEST_REQUIRE(t.status == 0, t.err);
  BOOST_TEST(t.out.find("; timed ") == std::string::npos, t.out);  // cpu devices: latency, the best round
  TuningTable table = parse_tuning(read_file(file), file);
  BOOST_TEST(table.version == ringrt_version());
  BOOST_TEST(table.machine == machine_identity());
  BOOST_TEST_REQUIRE(table.choices.size() == 2u);
  std::map<int64_t, Algorithm> chosen;  // bytes -> algorithm
  for (const TunedChoice& c : table.choices) {
    BOOST_TEST((c.collective == Collective::allreduce));
    BOOST_TEST(c.kind == "CPU");
    BOOST_TEST(c.devices == 2);
    BOOST_TEST_REQUIRE(c.us.size() == 6u);    // naive, ring, all2all, oneshot, twoshot, ring_fused
    Algorithm fastest = c.us.begin()->first;  // ties: the first by name
    for (const auto& [algo, us] : c.us) {
      BOOST_TEST(us > 0.0);
      if (us < c.us.at(fastest)) fastest = algo;
    }
    BOOST_TEST((c.algorithm == fastest));
    chosen[c.bytes] = c.algorithm;
  }
  BOOST_TEST_REQUIRE(chosen.count(4096) == 1u);
  BOOST_TEST(table.find(Collective::allreduce, "CPU", 2, DType::float32, 8191)->bytes ==
             4096);  // below sqrt(4 KiB * 64 KiB)
  BOOST_TEST(table.find(Collective::allreduce, "CPU", 2, DType::float32, 16384)->bytes == 65536);
  CliResult r = run_cli(with({"run", "configs/default.yaml", "--set", "allreduce.tuning=" + file, "--set",
                              "experiment.sizes={min: 4KiB, max: 4KiB, factor: 2}"},
                             kSmall));
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  BOOST_TEST(r.out.find("algorithm choice: " + file + " (ringrt tune, ") != std::string::npos, r.out);
  auto rows = table_rows(r.out);
  BOOST_TEST_REQUIRE(rows.size() == 1u);
  BOOST_TEST(rows[0].at(4) == algorithm_name(chosen.at(4096)));
  BOOST_TEST(rows[0].at(8) == "0");  // #wrong
}

// allreduce.wire and allreduce.deterministic are part of a choice's key: tuning under them writes choices that
// name them, keeps the file's choices for the other settings, and a run follows the choice of its own setting.
BOOST_AUTO_TEST_CASE(wire_and_deterministic_are_part_of_the_key) {
  TempDir dir;
  std::string file = (dir.path() / "tuning.yaml").string();
  auto tune = [&](const std::vector<std::string>& sets) {
    std::vector<std::string> args{"tune",          "configs/default.yaml",
                                  "--out",         file,
                                  "--collectives", "allreduce",
                                  "--rounds",      "1",
                                  "--set",         "experiment.sizes={min: 4KiB, max: 4KiB, factor: 2}"};
    CliResult t = run_cli(with(with(args, sets), kSmall));
    BOOST_TEST_REQUIRE(t.status == 0, t.err);
    return parse_tuning(read_file(file), file);
  };
  tune({});
  tune({"--set", "allreduce.wire=fp8_e4m3"});
  TuningTable both = tune({"--set", "allreduce.deterministic=true"});
  BOOST_TEST_REQUIRE(both.choices.size() == 3u);  // native, fp8_e4m3 and deterministic: each kept
  // the algorithms that run under each: all six natively; on a wire the fused ones run unfused and are not
  // timed again; deterministic mode runs ring_fused as twoshot
  for (auto [wire, det, timed] :
       {std::tuple(WireFormat::native, false, 6u), std::tuple(WireFormat::fp8_e4m3, false, 3u),
        std::tuple(WireFormat::native, true, 5u)}) {
    const TunedChoice* c = both.find(Collective::allreduce, "CPU", 2, DType::float32, 4096, wire, det);
    BOOST_TEST_REQUIRE(c != nullptr, wire_format_name(wire) << " " << det);
    BOOST_TEST(c->us.size() == timed);
    BOOST_TEST(c->us.count(c->algorithm) == 1u);  // the choice is one that was timed
  }
  BOOST_TEST(both.find(Collective::allreduce, "CPU", 2, DType::float32, 4096, WireFormat::bfloat16, false) == nullptr);
  BOOST_TEST(read_file(file).find("wire: fp8_e4m3, ") != std::string::npos);
  // a run under each setting follows its own choice; one with no choice for its wire says so
  auto run = [&](const std::string& set) {
    CliResult r = run_cli(with({"run", "configs/default.yaml", "--set", "allreduce.tuning=" + file, "--set", set,
                                "--set", "experiment.sizes={min: 4KiB, max: 4KiB, factor: 2}"},
                               kSmall));
    BOOST_TEST_REQUIRE(r.status == 0, r.err);
    return r.out;
  };
  BOOST_TEST(run("allreduce.wire=fp8_e4m3").find("algorithm choice: " + file + " (ringrt tune, ") != std::string::npos);
  BOOST_TEST(run("allreduce.deterministic=true").find("algorithm choice: deterministic, " + file) != std::string::npos);
  std::string other = run("allreduce.wire=bfloat16");
  BOOST_TEST(other.find("has no choice for allreduce on 2 CPU devices in float32 over allreduce.wire bfloat16") !=
                 std::string::npos,
             other);
}

// The cache folder's tuning file is ringrt's own: a tune that keeps its other settings' choices reads it as a run
// does, so a link planted in its place is refused (a warning), nothing is taken from its target, and the tune's
// file replaces the link; the target is left as it was. A link loop likewise.
BOOST_AUTO_TEST_CASE(a_tune_reads_no_planted_link_in_the_cache_folder) {
  TempDir dir, cache;
  ::chmod(cache.path().c_str(), 0700);
  std::string elsewhere = (dir.path() / "elsewhere.yaml").string(), own = (cache.path() / "tuning.yaml").string();
  std::vector<std::string> args{"tune",          "configs/default.yaml",
                                "--collectives", "allreduce",
                                "--rounds",      "1",
                                "--set",         "experiment.sizes={min: 4KiB, max: 4KiB, factor: 2}"};
  CliResult first = run_cli(with(with(args, {"--out", elsewhere, "--set", "allreduce.wire=fp8_e4m3"}), kSmall));
  BOOST_TEST_REQUIRE(first.status == 0, first.err);
  std::string target = read_file(elsewhere);
  std::filesystem::create_symlink(elsewhere, own);
  CliResult t = run_cli(with(args, kSmall), {"RINGRT_CACHE_DIR=" + cache.path().string()});
  BOOST_TEST_REQUIRE(t.status == 0, t.err);
  BOOST_TEST(t.err.find("is a symbolic link") != std::string::npos, t.err);
  BOOST_TEST(!std::filesystem::is_symlink(own));
  TuningTable table = parse_tuning(read_file(own), own);
  BOOST_TEST_REQUIRE(table.choices.size() == 1u);  // the native choice alone: the link's fp8 one not taken
  BOOST_TEST((table.choices[0].wire == WireFormat::native));
  BOOST_TEST(read_file(elsewhere) == target);
  // a link to itself (a loop) is refused alike, not an error after minutes of measuring
  std::filesystem::remove(own);
  std::filesystem::create_symlink("tuning.yaml", own);
  CliResult loop = run_cli(with(args, kSmall), {"RINGRT_CACHE_DIR=" + cache.path().string()});
  BOOST_TEST(loop.status == 0, loop.err);
  BOOST_TEST(!std::filesystem::is_symlink(own));
}

// A file from another machine: a warning, the cost model (naive for 2 devices), the header saying why.
BOOST_AUTO_TEST_CASE(a_file_from_another_machine_is_ignored) {
  TempDir dir;
  TuningTable t{ringrt_version(), "another machine | 64 cpus | 512 GiB", "now", {}};
  t.choices.push_back({Collective::allreduce,
                       "CPU",
                       2,
                       DType::float32,
                       4096,
                       0,
                       0,
                       Algorithm::ring,
                       {{Algorithm::ring, 1.0}, {Algorithm::naive, 2.0}}});
  set_bands(t.choices);
  std::string file = dir.write("other.yaml", tuning_yaml(t));
  CliResult r = run_cli(with({"run", "configs/default.yaml", "--set", "allreduce.tuning=" + file, "--set",
                              "experiment.sizes={min: 4KiB, max: 4KiB, factor: 2}"},
                             kSmall));
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  BOOST_TEST(r.err.find("is ignored: made on another machine") != std::string::npos, r.err);
  // the cost model chooses instead (rewrite/cost_model.hpp), from this machine's figures (the cost file
  // the run read or wrote: the same cache folder)
  BOOST_TEST(r.out.find("algorithm choice: cost model, CPU figures ") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("; tuning file: ignored (" + file + ": made on another machine") != std::string::npos, r.out);
  CostModel model = cost_model_for("CPU");
  BOOST_TEST_REQUIRE(model.figures.has_value(), model.origin);
  BOOST_TEST(table_rows(r.out).at(0).at(4) == algorithm_name(modelled_choice(*model.figures, 2, 4096)), r.out);
}

// Device groups make the allreduce hierarchical: the choice line says so, and mentions the tuning file
// only when there is one (a file of this machine's; `off`: none).
BOOST_AUTO_TEST_CASE(the_choice_line_of_groups_names_a_tuning_file_only_when_there_is_one) {
  TempDir dir;
  TuningTable t{ringrt_version(), machine_identity(), "now", {}};
  t.choices.push_back({Collective::allreduce,
                       "CPU",
                       4,
                       DType::float32,
                       4096,
                       0,
                       0,
                       Algorithm::ring,
                       {{Algorithm::ring, 1.0}, {Algorithm::naive, 2.0}}});
  set_bands(t.choices);
  std::string file = dir.write("here.yaml", tuning_yaml(t));
  const std::string line = "algorithm choice: hierarchical over device groups, tinygrad's rule inside";
  for (const std::string& tuning : {std::string("off"), file}) {
    CliResult r = run_cli({"config", "configs/hierarchical.yaml", "--dump", "--set", "allreduce.tuning=" + tuning});
    BOOST_TEST_CONTEXT(tuning) {
      BOOST_TEST_REQUIRE(r.status == 0, r.err);
      std::string tail = tuning == "off" ? "\n" : " (the tuning file is for flat collectives)\n";
      BOOST_TEST(r.out.find(line + tail) != std::string::npos, r.out);
    }
  }
}

// Levels set by hand: the header's choice line says what they choose, and the run (4 devices, 1,000
// elements each) chooses that: forced all2all or ring, or the levels' rule with the threshold.
BOOST_AUTO_TEST_CASE(the_choice_line_says_what_set_levels_choose) {
  struct Row {
    std::vector<std::string> sets;
    std::string line, algorithm;
  };
  const std::vector<Row> rows{
      {{"allreduce.all2all=2"},
       "algorithm choice: all2all, forced (allreduce.ring 1, allreduce.all2all 2, ",
       "all2all"},
      {{"allreduce.ring=2"}, "algorithm choice: ring, forced (allreduce.ring 2, allreduce.all2all 0, ", "ring"},
      {{"allreduce.ring=0"}, "as set, not tuned: all2all never, else ring never, else naive", "naive"},
      {{"allreduce.ring_threshold=999"}, "all2all never, else ring above 999 elements on 3+ devices, else", "ring"},
      {{"allreduce.ring_threshold=1000"}, "all2all never, else ring above 1000 elements on 3+ devices", "naive"},
      {{"allreduce.ring=2", "allreduce.all2all=1", "allreduce.ring_threshold=10"},
       "all2all above 10 elements on 3+ devices, else ring always, else naive",
       "all2all"}};
  for (const Row& row : rows) {
    std::vector<std::string> args{"run",   "configs/default.yaml",     "--set", "devices.count=4",
                                  "--set", "experiment.counts=[1000]", "--set", "experiment.warmup=1",
                                  "--set", "experiment.iters=1"};
    for (const std::string& s : row.sets) args.insert(args.end(), {"--set", s});
    CliResult r = run_cli(args);
    BOOST_TEST_CONTEXT(fmt::format("{}", fmt::join(row.sets, " "))) {
      BOOST_TEST_REQUIRE(r.status == 0, r.err);
      BOOST_TEST(r.out.find(row.line) != std::string::npos, r.out);
      BOOST_TEST(table_rows(r.out).at(0).at(4) == row.algorithm);
    }
  }
}

// Bad requests end with status 2 and a message before anything is measured or written.
BOOST_AUTO_TEST_CASE(bad_requests_fail_first) {
  TempDir dir;
  CliResult r = run_cli({"tune", "configs/default.yaml", "--collectives", "alltoall"});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("alltoall") != std::string::npos, r.err);
  r = run_cli({"tune", "configs/default.yaml", "--out", (dir.path() / "no" / "t.yaml").string()});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("cannot write the tuning file: No such file") != std::string::npos, r.err);
  r = run_cli({"tune", "configs/default.yaml", "--set", "devices.count=1", "--out", (dir.path() / "t.yaml").string()});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("a choice needs at least 2") != std::string::npos, r.err);
  r = run_cli({"tune", "configs/default.yaml", "--set", "allreduce.tuning=off"});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("nowhere to write") != std::string::npos, r.err);
  BOOST_TEST(!fs::exists(dir.path() / "t.yaml"));
  // a FIFO or a folder at --out stays what it is
  std::string fifo = (dir.path() / "fifo").string();
  BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  r = run_cli(with({"tune", "configs/default.yaml", "--out", fifo}, kSmall));
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("not a regular file") != std::string::npos, r.err);
  BOOST_TEST(fs::is_fifo(fifo));
  // a path the config names is written only with --out; --out never replaces the config
  std::string victim = dir.write("victim.txt", "precious\n");
  std::string evil = dir.write("evil.yaml", "allreduce: {tuning: " + victim + "}\ndevices: {count: 2}\n");
  r = run_cli({"tune", evil});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("written only with --out") != std::string::npos, r.err);
  r = run_cli({"tune", evil, "--out", evil});
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("would replace the config file") != std::string::npos, r.err);
  BOOST_TEST(read_file(victim) == "precious\n");
  // nothing to measure: a reduce-scatter of one element on 2 devices
  r = run_cli(with({"tune", "configs/default.yaml", "--collectives", "reduce_scatter", "--set", "experiment.counts=[1]",
                    "--out", (dir.path() / "t.yaml").string()},
                   kSmall));
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("no point to measure") != std::string::npos, r.err);
  BOOST_TEST(r.out.empty());
}

// A size given twice is measured once: one choice, its band the whole range.
BOOST_AUTO_TEST_CASE(a_size_given_twice_is_measured_once) {
  TempDir dir;
  std::string file = (dir.path() / "t.yaml").string();
  CliResult r = run_cli(with({"tune", "configs/default.yaml", "--out", file, "--collectives", "allreduce", "--rounds",
                              "1", "--set", "experiment.counts=[256, 256, 256]"},
                             kSmall));
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  TuningTable t = parse_tuning(read_file(file), file);
  BOOST_TEST_REQUIRE(t.choices.size() == 1u);
  BOOST_TEST(t.choices[0].min_bytes == 0);
  BOOST_TEST(t.choices[0].max_bytes == INT64_MAX);
  // an allreduce of fewer elements than devices is measured too (each device holds the whole buffer)
  r = run_cli(with(with({"tune", "configs/default.yaml", "--out", file, "--collectives", "allreduce,allreduce",
                         "--rounds", "1", "--set", "experiment.counts=[1]"},
                        kSmall),
                   {"--set", "devices.count=3"}));
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  BOOST_TEST(r.out.find("# ringrt tune configs/default.yaml: allreduce over") == 0, r.out);
  t = parse_tuning(read_file(file), file);
  BOOST_TEST_REQUIRE(t.choices.size() == 2u);  // 2 and 3 devices
  BOOST_TEST(t.choices[1].devices == 3);
  for (const auto& e : fs::directory_iterator(dir.path()))  // the temporary file renamed, none left
    BOOST_TEST(e.path().filename() == "t.yaml");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
