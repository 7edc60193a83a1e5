#include "core/yaml_document.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "core/errors.hpp"

namespace ringrt {
namespace {

// Records where each document of a YAML stream starts, nothing else.
struct DocumentStarts : YAML::EventHandler {
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// A tab in the indentation of the error's line or of the two before it (0-based lines), where yaml-cpp
// reports one ("illegal map value" at or just after it): {line, column}, 0-based. A tab further up, inside a
// block scalar or a quoted string where it is legal, is not the error.
std::optional<std::pair<int, int>> tab_in_indentation(std::string_view text, int last) {
  int line = 0;
  for (size_t at = 0; at <= text.size() && line <= last; ++line) {
    size_t end = std::min(text.find('\n', at), text.size());
    if (line >= last - 2)
      for (size_t i = at; i < end && (text[i] == ' ' || text[i] == '\t'); ++i)
        if (text[i] == '\t') return std::pair(line, static_cast<int>(i - at));
    at = end + 1;
  }
  return std::nullopt;
}

}  // namespace

YAML::Node load_yaml_document(std::string_view yaml, const std::string& name) {
  std::string text(yaml);
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts docs;
  try {
    while (docs.starts.size() < 2 && parser.HandleNextDocument(docs)) {
    }
  } catch (const YAML::ParserException& e) {  // yaml-cpp says "illegal map value" and the like for a tab
    if (auto tab = tab_in_indentation(text, e.mark.line))
      throw ConfigError(
          fmt::format("{}:{}:{}: YAML syntax error: a tab in the indentation (YAML indents with spaces "
                      "only; the parser says: {})",
                      name, tab->first + 1, tab->second + 1, e.msg));
    throw;
  }
  if (docs.starts.size() > 1) {
    const YAML::Mark& second = docs.starts[1];
    bool stuck = second.pos == docs.starts[0].pos;
    throw ConfigError(fmt::format("{}:{}:{}: {}", name, second.line + 1, second.column + 1,
                                  stuck ? "YAML syntax error: this cannot start a value (a stray ',', ']' or '}'?)"
                                        : "a second YAML document; a config is one document"));
  }
  return docs.starts.empty() ? YAML::Node() : YAML::Load(text);
}

}  // namespace ringrt
