// Fuzz target: the regression baseline parser (runtime/cli/baseline.cpp parse_baseline), with the input as the
// file's text. Inputs longer than a baseline may be (kMaxBaselineBytes) are skipped: `ringrt regress` never reads
// past it. Seeds: test/fuzz/corpus/baseline (a baseline `ringrt regress --record` wrote and damaged copies of it).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/cli/baseline.hpp"
#include "test/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > ringrt::kMaxBaselineBytes) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ringrt::fuzz::expect_parsed_or_refused([&] { ringrt::parse_baseline(text, "fuzz.json"); });
  return 0;
}
