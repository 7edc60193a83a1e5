#include "runtime/cli/outputs.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include "core/errors.hpp"

namespace ringrt {

namespace {

// p made absolute (against the working folder) and normal, its folder's links resolved where it exists: "r.xml"
// and "$PWD/r.xml" give one path though no such file exists yet (weakly_canonical alone leaves "r.xml" relative).
std::filesystem::path spelled_out(const std::string& p) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(p, ec).lexically_normal();
  if (ec) return std::filesystem::path(p).lexically_normal();
  std::filesystem::path parent = std::filesystem::weakly_canonical(abs.parent_path(), ec);
  return ec ? abs : (parent / abs.filename()).lexically_normal();
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec1, ec2;
  if (std::filesystem::exists(a, ec1) && std::filesystem::exists(b, ec2))
    return std::filesystem::equivalent(a, b, ec1) && !ec1;
  return spelled_out(a) == spelled_out(b);
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
