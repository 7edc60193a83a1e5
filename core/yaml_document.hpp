// The one safe way ringrt loads a YAML document (configs, tuning files): yaml-cpp with its one known
// hang walked around.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

namespace ringrt {

// The one document of `yaml` (null when there is none); `name` stands for the file in messages. Not
// YAML::LoadAll: on a token that cannot start a value at the top level (a stray ',', found by fuzzing)
// yaml-cpp 0.7's parser returns an empty document without consuming it, and LoadAll loops forever,
// allocating (yaml-cpp issue 1040). So the documents are walked by hand, at most two: a second one is an
// error, and one that starts where the first did made no progress, a syntax error. A syntax error at or
// after a line indented with a tab is reported as that tab (yaml-cpp says "illegal map value" and the like).
// Throws ConfigError "NAME:LINE:COL: ..."; lets yaml-cpp's other exceptions (YAML::Exception, with its mark)
// through.
YAML::Node load_yaml_document(std::string_view yaml, const std::string& name);

}  // namespace ringrt
