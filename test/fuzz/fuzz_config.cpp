// Fuzz target: the YAML experiment loader (runtime/cli/config.cpp parse_config), with the input as the
// file's text. Inputs longer than a config file may be (kMaxConfigBytes) are skipped: load_config never
// reads past it. Seeds: test/fuzz/corpus/config (the shipped configs and hostile inputs).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/cli/config.hpp"
#include "test/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > ringrt::kMaxConfigBytes) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ringrt::fuzz::expect_parsed_or_refused([&] { ringrt::parse_config(text, "fuzz.yaml"); });
  return 0;
}
