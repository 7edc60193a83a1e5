#include "core/yaml_document.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <sstream>
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

}  // namespace

YAML::Node load_yaml_document(std::string_view yaml, const std::string& name) {
  std::string text(yaml);
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts docs;
  while (docs.starts.size() < 2 && parser.HandleNextDocument(docs)) {
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
