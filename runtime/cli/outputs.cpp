#include "runtime/cli/outputs.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include "rewrite/errors.hpp"

namespace ringrt {

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec1, ec2;
  if (std::filesystem::exists(a, ec1) && std::filesystem::exists(b, ec2))
    return std::filesystem::equivalent(a, b, ec1) && !ec1;
  return std::filesystem::weakly_canonical(a, ec1) == std::filesystem::weakly_canonical(b, ec2) && !ec1 && !ec2;
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                            const std::vector<std::pair<std::string, std::string>>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [option, path] = outputs[i];
    if (path.empty()) continue;
    for (const auto& [what, input] : inputs)
      if (!input.empty() && same_file(path, input)) throw IOError(fmt::format("{} {} names {}", option, path, what));
    for (size_t j = i + 1; j < outputs.size(); ++j)
      if (!outputs[j].second.empty() && same_file(path, outputs[j].second))
        throw IOError(
            fmt::format("{} {} and {} {} name the same file", option, path, outputs[j].first, outputs[j].second));
  }
}

}  // namespace ringrt
