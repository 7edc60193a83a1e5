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
  // a run over another wire, or in deterministic mode, is not comparable with a native baseline (other bytes
  // cross, through other forms): not a regression
  f.edit("allreduce", [](json& j) { j["devices"] = 2; });
  CliResult wired = f.regress({"--set", "allreduce.wire=fp8_e4m3"});
  BOOST_TEST(wired.status == 0, wired.out << wired.err);
  BOOST_TEST(has(wired.out, "recorded with allreduce.wire native, this run's is fp8_e4m3"), wired.out);
  CliResult det = f.regress({"--set", "allreduce.deterministic=true"});
  BOOST_TEST(det.status == 0, det.out << det.err);
  BOOST_TEST(has(det.out, "recorded with allreduce.deterministic false, this run's is true"), det.out);
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

// File names a baseline, the JUnit file and a terminal cannot hold as they are (bytes that are not UTF-8, an
// escape sequence, over 200 bytes): shown and stored as printable_name writes them (\xFF), every experiment runs,
// and what --record writes the next compare accepts.
BOOST_AUTO_TEST_CASE(names_that_are_not_printable_are_escaped_and_recorded) {
  Folder f;
  const std::string yaml = "devices: {count: 2}\nexperiment: {counts: [64], warmup: 1, iters: 2}\n";
  const std::string odd = "b\xff\x1b[31m.yaml", longer = std::string(240, 'l') + ".yaml";
  std::ofstream(f.experiments + "/" + odd) << yaml;
  std::ofstream(f.experiments + "/" + longer) << yaml;
  std::string junit = (f.dir.path() / "r.xml").string(), summary = (f.dir.path() / "r.md").string();
  CliResult r = f.regress({"--record", "--junit", junit, "--summary", summary});
  BOOST_TEST_REQUIRE(r.status == 0, r.out << r.err);
  BOOST_TEST(has(r.out, "## b\\xFF\\x1B[31m.yaml: "), r.out);
  BOOST_TEST(!has(r.out, "\x1b"), r.out);
  BOOST_TEST(has(r.out, "5 recorded"), r.out);
  BOOST_TEST(has(r.out, "# result: OK (exit 0)"), r.out);
  json j = json::parse(read_file(f.baselines + "/b\xff\x1b[31m.json"));
  BOOST_TEST(j.at("experiment") == "b\\xFF\\x1B[31m.yaml");
  BOOST_TEST(attr(parse_xml(junit).get_child("testsuites"), "tests") == "5");
  BOOST_TEST(has(read_file(summary), "| b\\xFF\\x1B[31m.yaml | allreduce sum float32 256 B | recorded |"));
  for (const char* stem : {"allreduce", "gather"})
    f.edit(stem, [](json& b) {
      for (json& row : b["rows"]) row["busbw"] = 1e-9;
    });
  for (const std::string& stem : {std::string("b\xff\x1b[31m"), std::string(240, 'l')}) {
    json b = json::parse(read_file(f.baseline(stem)));
    for (json& row : b["rows"]) row["busbw"] = 1e-9;
    std::ofstream(f.baseline(stem)) << b.dump(2);
  }
  CliResult compare = f.regress();
  BOOST_TEST(compare.status == 0, compare.out << compare.err);
  BOOST_TEST(has(compare.out, "# 5 rows: 5 ok"), compare.out);
}

// Two rows of one name (a size given twice) could never be compared: --record refuses that experiment (exit 2,
// naming the file and the row), writes no baseline for it and records the others.
BOOST_AUTO_TEST_CASE(record_refuses_two_rows_of_one_name) {
  Folder f;
  std::ofstream(f.experiments + "/dup.yaml") << "devices: {count: 2}\nexperiment: {counts: [64, 64], iters: 1}\n";
  std::string junit = (f.dir.path() / "r.xml").string();
  CliResult r = f.regress({"--record", "--junit", junit});
  BOOST_TEST(r.status == 2, r.out << r.err);
  BOOST_TEST(has(r.err, "dup.yaml: two rows are named 'allreduce sum float32 256 B'"), r.err);
  BOOST_TEST(!fs::exists(f.baseline("dup")));
  BOOST_TEST(fs::exists(f.baseline("gather")));
  BOOST_TEST(has(r.out, "3 recorded"), r.out);
  BOOST_TEST(has(r.out, "# result: ERROR: 1 experiment(s) failed to run (exit 2)"), r.out);
  BOOST_TEST(attr(parse_xml(junit).get_child("testsuites"), "errors") == "1");
}

// A baseline that cannot be written (a link planted in its place, a folder there) fails its experiment, exit 2,
// with the reason; its rows are not "recorded"; the link's target is untouched, and nothing is left behind.
BOOST_AUTO_TEST_CASE(a_baseline_not_written_is_not_recorded) {
  Folder f;
  fs::create_directories(f.baselines);
  std::string target = (f.dir.path() / "target.txt").string();
  std::ofstream(target) << "keep";
  BOOST_TEST_REQUIRE(::symlink(target.c_str(), f.baseline("allreduce").c_str()) == 0);
  fs::create_directories(f.baseline("gather"));
  CliResult r = f.regress({"--record"});
  BOOST_TEST(r.status == 2, r.out << r.err);
  BOOST_TEST(has(r.err, f.baseline("allreduce") + ": is a symbolic link; ringrt does not write through links"), r.err);
  BOOST_TEST(has(r.err, f.baseline("gather") + ": is not a regular file"), r.err);
  BOOST_TEST(has(r.out, "0 recorded"), r.out);
  BOOST_TEST(has(r.out, "not recorded: the baseline could not be written"), r.out);
  BOOST_TEST(read_file(target) == "keep");
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(f.baselines)) files += entry.path().filename().string()[0] == '.';
  BOOST_TEST(files == 0u);  // no temporary file left
  // a good baseline survives a record that fails: it is replaced whole or not at all
  fs::remove(f.baseline("allreduce"));
  fs::remove(f.baseline("gather"));
  BOOST_TEST_REQUIRE(f.regress({"--record"}).status == 0);
  std::string before = read_file(f.baseline("allreduce"));
  CliResult wrong = f.regress({"--record"}, {"RINGRT_TEST_CORRUPT=1"});
  BOOST_TEST(wrong.status == 1);
  BOOST_TEST(read_file(f.baseline("allreduce")) == before);
}

// Output files that name one file, one spelled relative and one absolute, though it does not exist yet: a usage
// error before anything runs.
BOOST_AUTO_TEST_CASE(outputs_spelled_relative_and_absolute_collide) {
  Folder f;
  std::string rel = "regress-same-file-" + std::to_string(::getpid()) + ".xml";
  std::string abs = std::string(RINGRT_SOURCE_DIR) + "/" + rel;
  CliResult r = f.regress({"--junit", rel, "--summary", abs});
  BOOST_TEST(r.status == 2, r.out << r.err);
  BOOST_TEST(has(r.err, "name the same file"), r.err);
  BOOST_TEST(!fs::exists(abs));
  CliResult run = run_cli({"run", f.experiments + "/gather.yaml", "--csv", rel, "--json", abs});
  BOOST_TEST(run.status == 2, run.out << run.err);
  BOOST_TEST(has(run.err, "name the same file"), run.err);
  BOOST_TEST(!fs::exists(abs));
}

// What regress reads: a link planted among the experiments or the baselines is refused (exit 2) and not read; a
// subfolder named x.yaml is skipped; --baselines that names no folder is exit 2 when comparing; recording
// creates a missing one and refuses a file or a link.
BOOST_AUTO_TEST_CASE(links_folders_and_baselines_folders) {
  Folder f;
  std::string secret = (f.dir.path() / "secret").string();
  std::ofstream(secret) << "password: hunter2\n";
  fs::create_directories(f.experiments + "/sub.yaml");
  BOOST_TEST_REQUIRE(::symlink(secret.c_str(), (f.experiments + "/zz.yaml").c_str()) == 0);
  CliResult link = f.regress();
  BOOST_TEST(link.status == 2, link.out << link.err);
  BOOST_TEST(has(link.err, "zz.yaml: is a symbolic link; regress reads only regular files in DIR"), link.err);
  BOOST_TEST(!has(link.err, "hunter2"), link.err);
  fs::remove(f.experiments + "/zz.yaml");
  CliResult sub = f.regress();
  BOOST_TEST(sub.status == 0, sub.out << sub.err);
  BOOST_TEST(has(sub.out, ": 2 experiments,"), sub.out);
  CliResult typo = f.regress({"--baselines", (f.dir.path() / "typo").string()});
  BOOST_TEST(typo.status == 2, typo.out << typo.err);
  BOOST_TEST(has(typo.err, "typo: no such folder"), typo.err);
  CliResult file = f.regress({"--baselines", secret});
  BOOST_TEST(file.status == 2);
  BOOST_TEST(has(file.err, "secret: not a folder"), file.err);
  CliResult record_file = f.regress({"--record", "--baselines", secret});
  BOOST_TEST(record_file.status == 2);
  BOOST_TEST(has(record_file.err, "the baselines' folder is not a folder"), record_file.err);
  std::string made = (f.dir.path() / "made").string();
  BOOST_TEST(f.regress({"--record", "--baselines", made}).status == 0);
  BOOST_TEST(fs::exists(made + "/gather.json"));
  std::string linked = (f.dir.path() / "linked").string();
  BOOST_TEST_REQUIRE(::symlink(made.c_str(), linked.c_str()) == 0);
  CliResult record_link = f.regress({"--record", "--baselines", linked});
  BOOST_TEST(record_link.status == 2);
  BOOST_TEST(has(record_link.err, "is a symbolic link"), record_link.err);
  fs::rename(made + "/gather.json", made + "/real.json");
  BOOST_TEST_REQUIRE(::symlink((made + "/real.json").c_str(), (made + "/gather.json").c_str()) == 0);
  CliResult base_link = f.regress({"--baselines", made});
  BOOST_TEST(base_link.status == 2);
  BOOST_TEST(has(base_link.err, "gather.json: is a symbolic link"), base_link.err);
}

BOOST_AUTO_TEST_SUITE_END()
