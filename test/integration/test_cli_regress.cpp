// `ringrt regress DIR` end to end (runtime/cli/regress.hpp) on a folder of two tiny experiments: --record writes
// the baselines (this machine, version, backend, devices, each row's figures); compared with them the run passes
// (exit 0); a planted #wrong (RINGRT_TEST_CORRUPT=1) and a planted busbw (a baseline edited far above what any run
// reaches) are regressions (exit 1) naming the experiment, the row and the figure, in stderr, the JUnit file and
// the Markdown summary; a baseline from another machine is "not comparable" (exit 0); a baseline row the run lacks
// is a regression, a row the baseline lacks is not; bad input is exit 2 naming the file. The baselines' busbw is
// set by the tests, never left to this machine's load: a verdict on busbw depends on the edited figures only.
#include <unistd.h>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <boost/test/unit_test.hpp>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "rewrite/tuning.hpp"
#include "test/integration/cli_run.hpp"

BOOST_AUTO_TEST_SUITE(test_cli_regress)

using namespace ringrt::test;
using nlohmann::json;
namespace pt = boost::property_tree;

namespace {

// A folder of experiments, allreduce.yaml (two rows) and gather.yaml (one), on 2 cpu devices, and its baselines.
struct Folder {
  TempDir dir;
  std::string experiments = (dir.path() / "regress").string();
  std::string baselines = experiments + "/baselines";
  Folder() {
    fs::create_directories(experiments);
    std::ofstream(experiments + "/allreduce.yaml") << "devices: {count: 2}\n"
                                                      "experiment: {counts: [64, 1000], warmup: 1, iters: 2}\n";
    std::ofstream(experiments + "/gather.yaml")
        << "devices: {count: 2}\nexperiment: {collective: allgather, counts: [64], warmup: 1, iters: 2}\n";
  }
  CliResult regress(std::vector<std::string> extra = {}, const std::vector<std::string>& env = {}) const {
    std::vector<std::string> args{"regress", experiments};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, env);
  }
  std::string baseline(const std::string& stem) const { return baselines + "/" + stem + ".json"; }
  // Edits a baseline file in place.
  void edit(const std::string& stem, const std::function<void(json&)>& change) const {
    json j = json::parse(read_file(baseline(stem)));
    change(j);
    std::ofstream(baseline(stem)) << j.dump(2);
  }
  // Records the baselines, then sets every row's busbw to `busbw` GB/s.
  void record_with_busbw(double busbw) const {
    CliResult r = regress({"--record"});
    BOOST_TEST_REQUIRE(r.status == 0, r.out << r.err);
    for (const char* stem : {"allreduce", "gather"})
      edit(stem, [&](json& j) {
        for (json& row : j["rows"]) row["busbw"] = busbw;
      });
  }
};

pt::ptree parse_xml(const std::string& path) {
  std::istringstream in(read_file(path));
  pt::ptree tree;
  pt::read_xml(in, tree);
  return tree;
}

std::string attr(const pt::ptree& node, const std::string& name) { return node.get<std::string>("<xmlattr>." + name); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

// --record: one baseline per experiment, with this machine, version, backend, devices and each row's figures.
BOOST_AUTO_TEST_CASE(record_writes_a_baseline_per_experiment) {
  Folder f;
  CliResult r = f.regress({"--record"});
  BOOST_TEST_REQUIRE(r.status == 0, r.out << r.err);
  BOOST_TEST(has(r.out, "# 3 rows: 0 ok, 0 regression(s), 0 not comparable, 0 without a baseline, 3 recorded"), r.out);
  json j = json::parse(read_file(f.baseline("allreduce")));
  BOOST_TEST(j.at("format") == "ringrt-baseline-1");
  BOOST_TEST(j.at("experiment") == "allreduce.yaml");
  BOOST_TEST(j.at("ringrt").get<std::string>() == ringrt::ringrt_version());
  char host[256] = {};
  BOOST_TEST_REQUIRE(gethostname(host, sizeof host - 1) == 0);
  BOOST_TEST(j.at("machine").at("host").get<std::string>() == host);
  BOOST_TEST(j.at("machine").at("cpu").get<std::string>() == ringrt::machine_identity());
  BOOST_TEST(j.at("backend") == "cpu");
  BOOST_TEST(j.at("devices") == 2);
  BOOST_TEST(j.at("busbw_tolerance") == 0.5);
  BOOST_TEST_REQUIRE(j.at("rows").size() == 2u);
  BOOST_TEST(j["rows"][0].at("row") == "allreduce sum float32 256 B");
  BOOST_TEST(j["rows"][1].at("row") == "allreduce sum float32 4000 B");
  for (const json& row : j["rows"]) {
    BOOST_TEST(row.at("wrong") == 0);
    BOOST_TEST(row.at("busbw").get<double>() > 0);
  }
  BOOST_TEST(json::parse(read_file(f.baseline("gather"))).at("rows").size() == 1u);
}

// Compared with its baselines (busbw set to a floor every run reaches), the run passes: exit 0, every row ok,
// and the JUnit file and the summary say so.
BOOST_AUTO_TEST_CASE(record_then_compare_passes) {
  Folder f;
  f.record_with_busbw(1e-9);
  std::string junit = (f.dir.path() / "regress.xml").string(), summary = (f.dir.path() / "regress.md").string();
  CliResult r = f.regress({"--junit", junit, "--summary", summary});
  BOOST_TEST_REQUIRE(r.status == 0, r.out << r.err);
  BOOST_TEST(has(r.out, "# 3 rows: 3 ok, 0 regression(s)"), r.out);
  BOOST_TEST(has(r.out, "# result: OK (exit 0)"), r.out);
  BOOST_TEST(r.err.empty(), r.err);
  pt::ptree doc = parse_xml(junit);
  BOOST_TEST(attr(doc.get_child("testsuites"), "tests") == "3");
  BOOST_TEST(attr(doc.get_child("testsuites"), "failures") == "0");
  BOOST_TEST(has(read_file(summary), "**Result: OK (exit 0)**"));
  BOOST_TEST(has(read_file(summary), "| allreduce.yaml | allreduce sum float32 4000 B | ok | 0 |"), read_file(summary));
}

// A planted #wrong (one element of every row altered): a regression naming the experiment, the row and #wrong.
BOOST_AUTO_TEST_CASE(a_planted_wrong_value_is_a_regression) {
  Folder f;
  f.record_with_busbw(1e-9);
  std::string junit = (f.dir.path() / "regress.xml").string(), summary = (f.dir.path() / "regress.md").string();
  CliResult r = f.regress({"--junit", junit, "--summary", summary}, {"RINGRT_TEST_CORRUPT=1"});
  BOOST_TEST(r.status == 1, r.out << r.err);
  BOOST_TEST(has(r.err, "ringrt: regression: allreduce.yaml: allreduce sum float32 256 B: #wrong 1 (must stay 0)"),
             r.err);
  BOOST_TEST(has(r.err, "ringrt: regression: gather.yaml: allgather float32 256 B: #wrong 1 (must stay 0)"), r.err);
  BOOST_TEST(has(r.out, "# result: REGRESSION: 3 row(s) (exit 1)"), r.out);
  pt::ptree doc = parse_xml(junit);
  BOOST_TEST(attr(doc.get_child("testsuites"), "failures") == "3");
  const pt::ptree& first = doc.get_child("testsuites.testsuite.testcase");
  BOOST_TEST(attr(first, "name") == "allreduce sum float32 256 B");
  BOOST_TEST(attr(first.get_child("failure"), "message") == "allreduce sum float32 256 B: #wrong 1 (must stay 0)");
  BOOST_TEST(has(read_file(summary), "| allreduce.yaml | allreduce sum float32 256 B | REGRESSION | 1 |"),
             read_file(summary));
  // recording wrong results is refused: the baseline stays as it was
  std::string before = read_file(f.baseline("allreduce"));
  CliResult rec = f.regress({"--record"}, {"RINGRT_TEST_CORRUPT=1"});
  BOOST_TEST(rec.status == 1, rec.out << rec.err);
  BOOST_TEST(has(rec.out, "not recorded: the experiment has wrong results"), rec.out);
  BOOST_TEST(read_file(f.baseline("allreduce")) == before);
}

// A planted busbw: the baseline's second allreduce row far above what any run reaches. That row regresses, named
// with its figure; the others pass. The tolerance comes from the experiment's key when it gives one.
BOOST_AUTO_TEST_CASE(a_planted_busbw_is_a_regression) {
  Folder f;
  f.record_with_busbw(1e-9);
  f.edit("allreduce", [](json& j) { j["rows"][1]["busbw"] = 1e9; });
  CliResult r = f.regress();
  BOOST_TEST(r.status == 1, r.out << r.err);
  BOOST_TEST(has(r.err, "ringrt: regression: allreduce.yaml: allreduce sum float32 4000 B: busbw "), r.err);
  BOOST_TEST(has(r.err,
                 " is below 500000000.000 GB/s, the baseline's 1000000000.000 GB/s less the tolerance 0.5 "
                 "(the baseline's)"),
             r.err);
  BOOST_TEST(!has(r.err, "256 B"), r.err);  // the other rows pass
  BOOST_TEST(has(r.out, "# 3 rows: 2 ok, 1 regression(s)"), r.out);
  CliResult strict = f.regress({"--set", "regress.busbw_tolerance=0.25"});
  BOOST_TEST(strict.status == 1);
  BOOST_TEST(has(strict.err,
                 " is below 750000000.000 GB/s, the baseline's 1000000000.000 GB/s less the tolerance "
                 "0.25 (regress.busbw_tolerance)"),
             strict.err);
}

// A baseline from another host: not comparable, not failed (exit 0); wrong values still fail there.
BOOST_AUTO_TEST_CASE(a_baseline_from_another_machine_is_not_comparable) {
  Folder f;
  f.record_with_busbw(1e9);  // would fail everywhere, were it compared
  for (const char* stem : {"allreduce", "gather"}) f.edit(stem, [](json& j) { j["machine"]["host"] = "elsewhere"; });
  std::string junit = (f.dir.path() / "regress.xml").string();
  CliResult r = f.regress({"--junit", junit});
  BOOST_TEST(r.status == 0, r.out << r.err);
  BOOST_TEST(has(r.out, "# 3 rows: 0 ok, 0 regression(s), 3 not comparable"), r.out);
  BOOST_TEST(has(r.out, "not comparable  allreduce sum float32 256 B: #wrong 0, busbw "), r.out);
  BOOST_TEST(has(r.out, ": recorded on host 'elsewhere' ("), r.out);
  BOOST_TEST(attr(parse_xml(junit).get_child("testsuites"), "skipped") == "3");
  // another backend or device count is not comparable either
  char host[256] = {};
  BOOST_TEST_REQUIRE(gethostname(host, sizeof host - 1) == 0);
  f.edit("allreduce", [&](json& j) {
    j["machine"]["host"] = host;  // this machine again, another device count
    j["devices"] = 8;
  });
  CliResult devices = f.regress();
  BOOST_TEST(devices.status == 0, devices.err);
  BOOST_TEST(has(devices.out, "recorded with 8 devices, this run has 2"), devices.out);
  CliResult wrong = f.regress({}, {"RINGRT_TEST_CORRUPT=1"});
  BOOST_TEST(wrong.status == 1);
  BOOST_TEST(has(wrong.err, "allreduce sum float32 256 B: #wrong 1 (must stay 0)"), wrong.err);
}

// A row the baseline has and the run does not is a regression; a row only the run has, or an experiment without a
// baseline, is reported and passes.
BOOST_AUTO_TEST_CASE(rows_and_experiments_without_a_match) {
  Folder f;
  f.record_with_busbw(1e-9);
  f.edit("allreduce", [](json& j) { j["rows"].push_back({{"row", "allreduce sum float32 1 MiB"}, {"busbw", 1.0}}); });
  f.edit("gather", [](json& j) { j["rows"] = json::array(); });
  std::ofstream(f.experiments + "/new.yaml") << "devices: {count: 2}\nexperiment: {counts: [8], iters: 1}\n";
  CliResult r = f.regress();
  BOOST_TEST(r.status == 1, r.out << r.err);
  BOOST_TEST(has(r.err, "allreduce.yaml: allreduce sum float32 1 MiB: missing from the run"), r.err);
  BOOST_TEST(!has(r.err, "gather.yaml"), r.err);
  BOOST_TEST(has(r.out, "no baseline     allgather float32 256 B: #wrong 0"), r.out);
  BOOST_TEST(has(r.out, "no baseline     allreduce sum float32 32 B: #wrong 0"), r.out);
  BOOST_TEST(has(r.out, "# 5 rows: 2 ok, 1 regression(s), 0 not comparable, 2 without a baseline"), r.out);
}

// Bad input stops before anything runs, exit 2, naming the file (and line and key): no folder, an empty one, a
// bad experiment, a baseline that is not JSON or has a bad value, an output that is a link.
BOOST_AUTO_TEST_CASE(bad_input_is_exit_2_naming_the_file) {
  Folder f;
  CliResult none = run_cli({"regress", (f.dir.path() / "nowhere").string()});
  BOOST_TEST(none.status == 2);
  BOOST_TEST(has(none.err, "nowhere: not a folder (of YAML experiments)"), none.err);
  fs::create_directories(f.dir.path() / "empty");
  CliResult empty = run_cli({"regress", (f.dir.path() / "empty").string()});
  BOOST_TEST(empty.status == 2);
  BOOST_TEST(has(empty.err, "empty: no YAML experiments (*.yaml) in the folder"), empty.err);
  f.record_with_busbw(1e-9);
  std::string good = read_file(f.baseline("gather"));
  std::ofstream(f.baseline("gather")) << good.substr(0, good.size() / 2);  // cut short
  CliResult cut = f.regress();
  BOOST_TEST(cut.status == 2);
  BOOST_TEST(has(cut.err, f.baseline("gather") + ":"), cut.err);
  BOOST_TEST(has(cut.err, ": JSON syntax error: "), cut.err);
  BOOST_TEST(!has(cut.out, "## "), cut.out);  // nothing ran
  std::ofstream(f.baseline("gather")) << good;
  std::string allreduce = read_file(f.baseline("allreduce"));
  f.edit("allreduce", [](json& j) { j["rows"][0]["busbw"] = "fast"; });
  CliResult value = f.regress();
  BOOST_TEST(value.status == 2);
  BOOST_TEST(has(value.err, f.baseline("allreduce") + ": key 'rows[0].busbw': expected GB/s >= 0, or null, got 'fast'"),
             value.err);
  std::ofstream(f.baseline("allreduce")) << allreduce;
  std::ofstream(f.experiments + "/bad.yaml") << "devices: {count: 2}\nexperiment: {iterations: 2}\n";
  CliResult yaml = f.regress();
  BOOST_TEST(yaml.status == 2);
  BOOST_TEST(has(yaml.err, "bad.yaml:2:14: key 'experiment.iterations'"), yaml.err);
  fs::remove(f.experiments + "/bad.yaml");
  std::string link = (f.dir.path() / "link.xml").string();
  BOOST_TEST_REQUIRE(::symlink("target.xml", link.c_str()) == 0);
  CliResult linked = f.regress({"--junit", link});
  BOOST_TEST(linked.status == 2);
  BOOST_TEST(has(linked.err, link), linked.err);
  CliResult tolerance = f.regress({"--set", "regress.busbw_tolerance=1.5"});
  BOOST_TEST(tolerance.status == 2);
  BOOST_TEST(has(tolerance.err, "key 'regress.busbw_tolerance': expected a fraction in [0, 1)"), tolerance.err);
}

BOOST_AUTO_TEST_SUITE_END()
