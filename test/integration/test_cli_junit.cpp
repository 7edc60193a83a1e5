// `ringrt run --junit FILE` (runtime/cli/junit.hpp), parsed back with Boost.PropertyTree's XML reader: a test
// case per row with the row's name, figures and table line; a row with #wrong > 0 (RINGRT_TEST_CORRUPT=1, which
// alters one element of every row) is a failure naming the row; the escaping of text XML cannot hold; a --junit
// path that names another output or a link fails before the run.
#include <unistd.h>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/cli/junit.hpp"
#include "test/integration/cli_run.hpp"

BOOST_AUTO_TEST_SUITE(test_cli_junit)

using namespace ringrt::test;
namespace pt = boost::property_tree;

namespace {

pt::ptree parse_xml(const std::string& text) {
  std::istringstream in(text);
  pt::ptree tree;
  pt::read_xml(in, tree);
  return tree;
}

std::string attr(const pt::ptree& node, const std::string& name) { return node.get<std::string>("<xmlattr>." + name); }

// The <testcase> elements of a <testsuite>.
std::vector<pt::ptree> cases_of(const pt::ptree& suite) {
  std::vector<pt::ptree> out;
  for (const auto& [tag, child] : suite)
    if (tag == "testcase") out.push_back(child);
  return out;
}

std::string property(const pt::ptree& testcase, const std::string& name) {
  for (const auto& [tag, p] : testcase.get_child("properties"))
    if (tag == "property" && attr(p, "name") == name) return attr(p, "value");
  return "(none)";
}

const std::vector<std::string> kSmallRun{"run",   "configs/default.yaml", "--set", "experiment.sizes.max=4KiB",
                                         "--set", "experiment.iters=1"};

}  // namespace

BOOST_AUTO_TEST_CASE(a_test_case_per_row) {
  TempDir dir;
  std::string file = (dir.path() / "run.xml").string();
  std::vector<std::string> args = kSmallRun;
  args.insert(args.end(), {"--junit", file});
  CliResult r = run_cli(args);
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  pt::ptree doc = parse_xml(read_file(file));
  const pt::ptree& all = doc.get_child("testsuites");
  BOOST_TEST(attr(all, "tests") == "2");
  BOOST_TEST(attr(all, "failures") == "0");
  const pt::ptree& suite = all.get_child("testsuite");
  BOOST_TEST(attr(suite, "name") == "configs/default.yaml");
  std::vector<pt::ptree> cases = cases_of(suite);
  BOOST_TEST_REQUIRE(cases.size() == 2u);
  BOOST_TEST(attr(cases[0], "name") == "allreduce sum float32 1 KiB");
  BOOST_TEST(attr(cases[1], "name") == "allreduce sum float32 4 KiB");
  auto rows = table_rows(r.out);
  for (size_t i = 0; i < cases.size(); ++i) {
    BOOST_TEST(attr(cases[i], "classname") == "default.yaml");
    BOOST_TEST(cases[i].count("failure") == 0u);
    BOOST_TEST(property(cases[i], "wrong") == "0");
    // the table prints busbw to 2 decimals, the property to 4: the same figure
    BOOST_TEST(std::abs(std::stod(property(cases[i], "busbw_gbs")) - std::stod(rows[i].at(7))) <= 0.005 + 1e-9);
    BOOST_TEST(cases[i].get<std::string>("system-out").find(rows[i].at(0)) != std::string::npos);
  }
}

// Every row with #wrong 1: a failure each, its message naming the row and #wrong, its body the table line.
BOOST_AUTO_TEST_CASE(a_row_with_wrong_values_is_a_failure) {
  TempDir dir;
  std::string file = (dir.path() / "run.xml").string();
  std::vector<std::string> args = kSmallRun;
  args.insert(args.end(), {"--junit", file});
  CliResult r = run_cli(args, {"RINGRT_TEST_CORRUPT=1"});
  BOOST_TEST_REQUIRE(r.status == 1, r.err);
  pt::ptree doc = parse_xml(read_file(file));
  BOOST_TEST(attr(doc.get_child("testsuites"), "failures") == "2");
  std::vector<pt::ptree> cases = cases_of(doc.get_child("testsuites.testsuite"));
  BOOST_TEST_REQUIRE(cases.size() == 2u);
  for (const pt::ptree& c : cases) {
    BOOST_TEST_REQUIRE(c.count("failure") == 1u);
    const pt::ptree& failure = c.get_child("failure");
    BOOST_TEST(attr(failure, "message").find(attr(c, "name") + ": #wrong 1 ") == 0, attr(failure, "message"));
    BOOST_TEST(failure.data().find("#wrong") != std::string::npos, failure.data());  // the column titles
    BOOST_TEST(failure.data().find("float32    sum") != std::string::npos, failure.data());
  }
}

BOOST_AUTO_TEST_CASE(text_xml_cannot_hold_is_escaped) {
  BOOST_TEST(ringrt::xml_escaped("<a & \"b\" 'c'>") == "&lt;a &amp; &quot;b&quot; &apos;c&apos;&gt;");
  BOOST_TEST(ringrt::xml_escaped("tab\tline\nbell\a del\x7f end") == "tab\tline\nbell? del? end");
  BOOST_TEST(ringrt::xml_escaped("caf\xc3\xa9 \xe2\x82\xac") == "caf\xc3\xa9 \xe2\x82\xac");  // UTF-8 kept
  BOOST_TEST(ringrt::xml_escaped("bad \xff\xc3 \xed\xa0\x80 \xc0\xaf") == "bad ?? ??? ??");   // not UTF-8: '?'
  // a document with such text parses, and gives the text back escaped
  ringrt::JunitCase c;
  c.name = "a <row> & \x01";
  c.outcome = ringrt::JunitCase::Outcome::failed;
  c.message = "\"quoted\"";
  pt::ptree doc = parse_xml(ringrt::junit_xml({ringrt::JunitSuite{"s", "", 0, {}, {c}}}));
  BOOST_TEST(attr(doc.get_child("testsuites.testsuite.testcase"), "name") == "a <row> & ?");
  BOOST_TEST(attr(doc.get_child("testsuites.testsuite.testcase.failure"), "message") == "\"quoted\"");
}

// Like --csv and --json: another output's path or a symbolic link is refused before the run (exit 2).
BOOST_AUTO_TEST_CASE(a_bad_junit_path_fails_before_the_run) {
  TempDir dir;
  std::string csv = (dir.path() / "out.csv").string(), link = (dir.path() / "link.xml").string();
  std::vector<std::string> args = kSmallRun;
  args.insert(args.end(), {"--csv", csv, "--junit", csv});
  CliResult same = run_cli(args);
  BOOST_TEST(same.status == 2);
  BOOST_TEST(same.err.find("--csv " + csv + " and --junit " + csv + " name the same file") != std::string::npos,
             same.err);
  BOOST_TEST(table_rows(same.out).empty());
  BOOST_TEST_REQUIRE(::symlink("target.xml", link.c_str()) == 0);
  args = kSmallRun;
  args.insert(args.end(), {"--junit", link});
  CliResult linked = run_cli(args);
  BOOST_TEST(linked.status == 2);
  BOOST_TEST(linked.err.find(link) != std::string::npos, linked.err);
  BOOST_TEST(!std::filesystem::exists(dir.path() / "target.xml"));
}

BOOST_AUTO_TEST_SUITE_END()
