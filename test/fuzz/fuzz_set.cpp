// Fuzz target: `--set key=value` overrides (runtime/cli/config.cpp), applied to a small valid config.
// The input is up to 8 overrides separated by NUL bytes (a command line's arguments cannot contain
// one). Seeds: test/fuzz/corpus/set.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cli/config.hpp"
#include "test/fuzz/fuzz_target.hpp"

namespace {
constexpr const char* kBase =
    "backend: cpu\ndevices: {count: 4}\nexperiment: {op: sum, dtype: float32, counts: [64, 1024]}\n";
constexpr size_t kMaxOverrides = 8;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > ringrt::kMaxConfigBytes) return 0;
  std::vector<std::string> overrides(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] != 0) {
      overrides.back() += static_cast<char>(data[i]);
    } else if (overrides.size() < kMaxOverrides) {
      overrides.emplace_back();
    }
  }
  ringrt::fuzz::expect_parsed_or_refused([&] { ringrt::parse_config(kBase, "base.yaml", overrides); });
  return 0;
}
