// Schedule::source and Schedule::emit_sources (runtime/api/tensor.hpp): the kernel sources of a schedule,
// rendered from the same kernel IR the executor compiles (codegen/item_kernel.hpp).
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "codegen/render.hpp"
#include "rewrite/files.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/engine/internal.hpp"

namespace ringrt {

namespace {

// The file suffix of a target; ConfigError for an unknown one. "hip" and "nvidia" are one source
// (render_hip): hipRTC compiles it on AMD, NVRTC on NVIDIA.
const char* suffix_of(const std::string& target) {
  if (target == "cpu") return ".cpp";
  if (target == "hip") return ".hip";
  if (target == "nvidia") return ".cu";
  throw ConfigError(fmt::format("kernel source target '{}': expected 'hip', 'nvidia' or 'cpu'", target));
}

}  // namespace

std::string Schedule::source(size_t i, const std::string& target) const {
  suffix_of(target);
  kernel_items.at(i);  // std::out_of_range for a bad i
  const codegen::Kernel& k = kernel_of(*this, i);
  return target == "cpu" ? codegen::render_cpp(k) : codegen::render_hip(k);
}

std::vector<std::string> Schedule::emit_sources(const std::string& dir, const std::string& target) const {
  const char* suffix = suffix_of(target);
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IOError(fmt::format("kernel source directory '{}': cannot create it: {}", dir, ec.message()));
  if (!fs::is_directory(dir, ec))
    throw IOError(fmt::format("kernel source directory '{}': exists and is not a directory", dir));
  std::vector<std::string> paths;
  for (size_t i = 0; i < kernel_items.size(); ++i) {
    const KernelItem& ki = kernel_items[i];
    fs::path path = fs::path(dir) / fmt::format("{:03}_{}{}", ki.item, ki.name, suffix);
    std::string text = source(i, target);
    write_file(path.string(), text);  // IOError naming the path; a planted link is not followed
    paths.push_back(path.string());
  }
  return paths;
}

}  // namespace ringrt
