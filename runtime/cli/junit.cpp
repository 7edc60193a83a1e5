#include "runtime/cli/junit.hpp"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>

#include "core/files.hpp"
#include "rewrite/tuning.hpp"
#include "runtime/cli/report.hpp"

namespace ringrt {
namespace {

std::string attr(const std::string& name, const std::string& value) {
  return fmt::format(" {}=\"{}\"", name, xml_escaped(value));
}

std::string seconds_text(double s) { return fmt::format("{:.6f}", s > 0 ? s : 0.0); }

std::string properties_xml(const JunitProperties& p, const char* indent) {
  if (p.empty()) return "";
  std::string out = fmt::format("{}<properties>\n", indent);
  for (const auto& [name, value] : p)
    out += fmt::format("{}  <property{}{}/>\n", indent, attr("name", name), attr("value", value));
  return out + fmt::format("{}</properties>\n", indent);
}

std::string case_xml(const JunitCase& c) {
  std::string out = fmt::format("    <testcase{}{}{}>\n", attr("name", c.name), attr("classname", c.classname),
                                attr("time", seconds_text(c.seconds)));
  out += properties_xml(c.properties, "      ");
  using O = JunitCase::Outcome;
  if (c.outcome == O::failed || c.outcome == O::error) {
    const char* tag = c.outcome == O::failed ? "failure" : "error";
    out += fmt::format("      <{}{}{}>{}</{}>\n", tag, attr("message", c.message),
                       attr("type", c.outcome == O::failed ? "regression" : "error"), xml_escaped(c.details), tag);
  } else if (c.outcome == O::skipped) {
    out += fmt::format("      <skipped{}/>\n", attr("message", c.message));
  }
  if (!c.output.empty()) out += fmt::format("      <system-out>{}</system-out>\n", xml_escaped(c.output));
  return out + "    </testcase>\n";
}

struct Counts {
  size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
  void add(const JunitCase& c) {
    ++tests;
    failures += c.outcome == JunitCase::Outcome::failed;
    errors += c.outcome == JunitCase::Outcome::error;
    skipped += c.outcome == JunitCase::Outcome::skipped;
  }
  std::string attrs() const {
    return fmt::format(" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\"", tests, failures,
                       errors, skipped, seconds_text(seconds));
  }
};

}  // namespace

std::string xml_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    size_t n = utf8_length(text, i);
    if (n == 0 ||
        (n == 1 && ((static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f))) {
      out += '?';
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(text.substr(i, n));
    } else if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '"') {
      out += "&quot;";
    } else if (c == '\'') {
      out += "&apos;";
    } else {
      out += c;
    }
    i += n;
  }
  return out;
}

std::string junit_xml(const std::vector<JunitSuite>& suites) {
  Counts all;
  std::string body;
  for (const JunitSuite& s : suites) {
    Counts one;
    one.seconds = s.seconds;
    std::string cases;
    for (const JunitCase& c : s.cases) {
      one.add(c);
      all.add(c);
      cases += case_xml(c);
    }
    all.seconds += s.seconds;
    body += fmt::format("  <testsuite{}{}{}>\n", attr("name", s.name), one.attrs(),
                        s.timestamp.empty() ? "" : attr("timestamp", s.timestamp));
    body += properties_xml(s.properties, "    ") + cases + "  </testsuite>\n";
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites{}>\n{}</testsuites>\n", all.attrs(),
                     body);
}

JunitCase run_error_case(const std::string& classname, const std::string& message) {
  JunitCase c;
  c.name = "(the run)";
  c.classname = classname;
  c.outcome = JunitCase::Outcome::error;
  c.message = message;
  c.details = message;
  return c;
}

std::string stopped_text(int sig) {
  return sig == SIGINT    ? std::string("stopped by SIGINT")
         : sig == SIGTERM ? std::string("stopped by SIGTERM")
                          : fmt::format("stopped by signal {}", sig);
}

std::string junit_timestamp() { return utc_now("%Y-%m-%dT%H:%M:%S"); }

JunitSuite run_suite(const ExperimentConfig& cfg, const ExperimentResult& result, const std::vector<double>& seconds,
                     const std::string& timestamp) {
  JunitSuite suite;
  suite.name = cfg.file;
  suite.timestamp = timestamp;
  suite.properties = {{"backend", cfg.backend},
                      {"devices", fmt::format("{}", cfg.devices.size())},
                      {"collective", std::string(collective_name(cfg.collective))},
                      {"timing", cfg.timing}};
  std::string experiment = std::filesystem::path(cfg.file).filename().string();
  std::string header = format_header(cfg);  // its last two lines: the table's column titles
  size_t titles = header.rfind('\n', header.rfind('\n', header.size() - 2) - 1) + 1;
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const ResultRow& r = result.rows[i];
    JunitCase c;
    c.name = row_name(r);
    c.classname = experiment;
    c.seconds = i < seconds.size() ? seconds[i] : 0.0;
    c.output = header.substr(titles) + format_row(r);
    c.properties = {{"algo", r.algo}, {"count", std::to_string(r.count)}, {"wrong", std::to_string(r.wrong)}};
    if (r.timed)
      c.properties.insert(c.properties.end(), {{"time_us", fmt::format("{:.3f}", r.time_us)},
                                               {"algbw_gbs", fmt::format("{:.4f}", r.algbw)},
                                               {"busbw_gbs", fmt::format("{:.4f}", r.busbw)}});
    if (r.wrong > 0) {
      c.outcome = JunitCase::Outcome::failed;
      c.message =
          fmt::format("{}: #wrong {} (elements that differ from the host's reference; must be 0)", c.name, r.wrong);
      c.details = c.output;
    }
    suite.seconds += c.seconds;
    suite.cases.push_back(std::move(c));
  }
  return suite;
}

}  // namespace ringrt
