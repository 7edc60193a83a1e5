#include "runtime/cli/baseline.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/errors.hpp"
#include "core/params_internal.hpp"

namespace ringrt {
namespace {

using Json = nlohmann::ordered_json;

// The reader of one baseline file: every error names the file and the key.
struct Reader {
  std::string name;

  [[noreturn]] void fail(const std::string& key, const std::string& expected, const Json& got) const {
    // a list or an object by its kind only: dumping one nested a million deep would recurse as deep
    std::string shown = got.is_string()   ? quote_value(got.get<std::string>())
                        : got.is_array()  ? std::string("a list")
                        : got.is_object() ? std::string("an object")
                                          : got.dump();
    if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
    throw ConfigError(fmt::format("{}: key '{}': expected {}, got {}", name, key, expected, shown));
  }
  const Json& need(const Json& object, const std::string& key, const std::string& at) const {
    auto it = object.find(key);
    if (it == object.end()) throw ConfigError(fmt::format("{}: key '{}': missing", name, at));
    return *it;
  }
  void only_keys(const Json& object, const std::string& at, std::initializer_list<std::string_view> keys) const {
    if (!object.is_object()) fail(at.empty() ? "(top level)" : at, "an object", object);
    for (const auto& [k, v] : object.items())
      if (std::find(keys.begin(), keys.end(), k) == keys.end())
        throw ConfigError(fmt::format("{}: key '{}': unknown", name, at.empty() ? k : at + "." + k));
  }
  // One line a person reads: at most `most` characters, no control characters.
  std::string line(const Json& v, const std::string& key, size_t most = 200) const {
    if (!v.is_string()) fail(key, "a text", v);
    std::string t = v.get<std::string>();
    if (t.size() > most ||
        std::any_of(t.begin(), t.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
      fail(key, fmt::format("one line of at most {} characters without control characters", most), v);
    return t;
  }
  int64_t integer(const Json& v, const std::string& key, int64_t lo) const {
    if (!v.is_number_integer() || v.get<int64_t>() < lo) fail(key, fmt::format("an integer >= {}", lo), v);
    return v.get<int64_t>();
  }
  double number(const Json& v, const std::string& key, double lo, double hi, const char* expected) const {
    if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() < hi)) fail(key, expected, v);
    return v.get<double>();
  }
};

// "LINE:COL" of byte offset `at` in text (1-based).
std::string position(std::string_view text, size_t at) {
  at = std::min(at, text.size());
  size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  size_t start = text.rfind('\n', at == 0 ? 0 : at - 1);
  size_t col = start == std::string_view::npos || at == 0 ? at + 1 : at - start;
  return fmt::format("{}:{}", line, col);
}

}  // namespace

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown host";
  return buf;
}

Baseline parse_baseline(std::string_view text, const std::string& name) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& e) {  // e.what(): "[json.exception.parse_error.101] parse error at line..."
    std::string what = e.what();
    size_t at = what.find(": ", what.find("parse error"));
    throw ConfigError(fmt::format("{}:{}: JSON syntax error{}", name, position(text, e.byte == 0 ? 0 : e.byte - 1),
                                  at == std::string::npos ? "" : what.substr(at)));
  } catch (const Json::exception& e) {  // a number past double's range: "[json.exception.out_of_range.406] ..."
    std::string what = e.what();
    size_t at = what.find("] ");
    throw ConfigError(fmt::format("{}: JSON error: {}", name, at == std::string::npos ? what : what.substr(at + 2)));
  }
  Reader r{name};
  r.only_keys(root, "",
              {"format", "experiment", "ringrt", "machine", "backend", "devices", "wire", "deterministic", "made",
               "busbw_tolerance", "rows"});
  Baseline b;
  if (std::string f = r.line(r.need(root, "format", "format"), "format"); f != kBaselineFormat)
    r.fail("format", std::string(kBaselineFormat), root["format"]);
  b.experiment = r.line(r.need(root, "experiment", "experiment"), "experiment", kMaxExperimentName);
  b.ringrt = r.line(r.need(root, "ringrt", "ringrt"), "ringrt");
  const Json& machine = r.need(root, "machine", "machine");
  r.only_keys(machine, "machine", {"host", "cpu"});
  b.host = r.line(r.need(machine, "host", "machine.host"), "machine.host");
  b.machine = r.line(r.need(machine, "cpu", "machine.cpu"), "machine.cpu");
  b.backend = r.line(r.need(root, "backend", "backend"), "backend");
  b.devices = r.integer(r.need(root, "devices", "devices"), "devices", 1);
  if (root.contains("wire")) b.wire = r.line(root["wire"], "wire");
  if (root.contains("deterministic")) {
    if (!root["deterministic"].is_boolean()) r.fail("deterministic", "true or false", root["deterministic"]);
    b.deterministic = root["deterministic"].get<bool>();
  }
  if (root.contains("made")) b.made = r.line(root["made"], "made");
  if (root.contains("busbw_tolerance") && !root["busbw_tolerance"].is_null())
    b.busbw_tolerance = r.number(root["busbw_tolerance"], "busbw_tolerance", 0, 1, "a fraction in [0, 1)");
  const Json& rows = r.need(root, "rows", "rows");
  if (!rows.is_array()) r.fail("rows", "a list of rows", rows);
  std::set<std::string> seen;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string at = fmt::format("rows[{}]", i);
    const Json& row = rows[i];
    r.only_keys(row, at, {"row", "algo", "busbw", "wrong"});
    BaselineRow out;
    out.row = r.line(r.need(row, "row", at + ".row"), at + ".row");
    if (!seen.insert(out.row).second) r.fail(at + ".row", "each row once", row["row"]);
    if (row.contains("algo")) out.algo = r.line(row["algo"], at + ".algo");
    if (row.contains("busbw") && !row["busbw"].is_null())
      out.busbw = r.number(row["busbw"], at + ".busbw", 0, 1e15, "GB/s >= 0, or null");
    if (row.contains("wrong") && !row["wrong"].is_null()) out.wrong = r.integer(row["wrong"], at + ".wrong", 0);
    b.rows.push_back(std::move(out));
  }
  return b;
}

std::string baseline_json(const Baseline& b) {
  Json j;
  j["format"] = kBaselineFormat;
  j["experiment"] = b.experiment;
  j["ringrt"] = b.ringrt;
  j["machine"] = {{"host", b.host}, {"cpu", b.machine}};
  j["backend"] = b.backend;
  j["devices"] = b.devices;
  if (b.wire != "native") j["wire"] = b.wire;  // written where set, so a native run's file reads as before
  if (b.deterministic) j["deterministic"] = true;
  j["made"] = b.made;
  j["busbw_tolerance"] = b.busbw_tolerance ? Json(*b.busbw_tolerance) : Json(nullptr);
  j["rows"] = Json::array();
  for (const BaselineRow& row : b.rows)
    j["rows"].push_back({{"row", row.row},
                         {"algo", row.algo},
                         {"busbw", row.busbw ? Json(*row.busbw) : Json(nullptr)},
                         {"wrong", row.wrong ? Json(*row.wrong) : Json(nullptr)}});
  return j.dump(2) + "\n";
}

std::string not_comparable(const Baseline& b, const std::string& host, const std::string& machine,
                           const std::string& backend, int64_t devices, const std::string& wire, bool deterministic) {
  if (b.host != host || b.machine != machine)
    return fmt::format("recorded on host '{}' ({}), this is host '{}' ({})", b.host, b.machine, host, machine);
  if (b.backend != backend) return fmt::format("recorded on the {} backend, this run is {}", b.backend, backend);
  if (b.devices != devices) return fmt::format("recorded with {} devices, this run has {}", b.devices, devices);
  if (b.wire != wire) return fmt::format("recorded with allreduce.wire {}, this run's is {}", b.wire, wire);
  if (b.deterministic != deterministic)
    return fmt::format("recorded with allreduce.deterministic {}, this run's is {}", b.deterministic, deterministic);
  return "";
}

}  // namespace ringrt
