// Fuzz target: the tuning file parser (rewrite/tuning.cpp parse_tuning), with the input as the file's
// text. Inputs longer than a tuning file may be (kMaxTuningBytes) are skipped: tuning_for never reads
// past it. Seeds: test/fuzz/corpus/tuning (a file `ringrt tune` wrote and damaged copies of it).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rewrite/tuning.hpp"
#include "test/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > ringrt::kMaxTuningBytes) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ringrt::fuzz::expect_parsed_or_refused([&] { ringrt::parse_tuning(text, "fuzz.yaml"); });
  return 0;
}
