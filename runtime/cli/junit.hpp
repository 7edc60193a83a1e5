// JUnit XML, the test report CI dashboards read (Jenkins, GitLab, GitHub's test reporters), of `ringrt run
// --junit FILE` (a test case per row of the sweep) and `ringrt regress --junit FILE` (runtime/cli/regress.hpp).
// The elements and attributes are the ones every reader takes (Ant's JUnit task, Jenkins' schema):
//   <testsuites tests failures errors skipped time>
//     <testsuite name tests failures errors skipped time timestamp>
//       <properties><property name value/>...</properties>
//       <testcase name classname time>
//         <failure message type>details</failure> | <error message type>details</error> | <skipped message/>
//         <system-out>text</system-out>
// Every text is escaped here (& < > " '), and what XML 1.0 cannot hold (control characters other than tab,
// newline and return; bytes that are not UTF-8) becomes '?': a row or a message cannot break the file.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/cli/config.hpp"
#include "runtime/cli/experiment.hpp"

namespace ringrt {

using JunitProperties = std::vector<std::pair<std::string, std::string>>;

struct JunitCase {
  enum class Outcome { passed, failed, error, skipped };
  std::string name;       // what was tested: the row's name (row_name, runtime/cli/report.hpp)
  std::string classname;  // where it belongs: the experiment
  double seconds = 0;     // how long it took
  Outcome outcome = Outcome::passed;
  std::string message;  // failed, error, skipped: one line saying why
  std::string details;  // failed, error: the body (the row's table line)
  std::string output;   // <system-out>, when not empty
  JunitProperties properties;
};

struct JunitSuite {
  std::string name;
  std::string timestamp;  // ISO 8601, e.g. 2026-12-05T10:00:00 (UTC); "" leaves it out
  double seconds = 0;
  JunitProperties properties;
  std::vector<JunitCase> cases;
};

// text with & < > " ' escaped, and what XML 1.0 cannot hold replaced by '?' (see the header comment).
std::string xml_escaped(std::string_view text);

// The XML document of the suites, with its declaration and a final newline.
std::string junit_xml(const std::vector<JunitSuite>& suites);

// The error case that keeps a report of a run that did not finish from reading as a pass: named "(the run)",
// in classname, with message ("kernel compile failed: ...", stopped_text(SIGINT)) as its message and body.
JunitCase run_error_case(const std::string& classname, const std::string& message);

// "stopped by SIGINT", "stopped by SIGTERM", "stopped by signal N".
std::string stopped_text(int sig);

// Now, UTC, as a JUnit timestamp.
std::string junit_timestamp();

// The JUnit suite of one `ringrt run`: named for cfg.file, a test case per row of `result` (its name row_name,
// its classname the experiment's file name, its time seconds[i] where given), failed where #wrong > 0 with the
// row's table line (format_row under the header's column titles) in the failure; the figures (time_us, algbw,
// busbw, algo, wrong) as properties; the backend and devices as the suite's properties.
JunitSuite run_suite(const ExperimentConfig& cfg, const ExperimentResult& result, const std::vector<double>& seconds,
                     const std::string& timestamp);

}  // namespace ringrt
