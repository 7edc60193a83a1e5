// What a fuzz target of ringrt promises (test/fuzz/fuzz_*.cpp): any input either parses or is refused
// with a UserError (exit 2 in the ringrt program). Anything else a parser throws or does is a bug:
// another exception type aborts here, so libFuzzer and the replay driver (replay_main.cpp) report it
// with the input that caused it; a crash, a hang (libFuzzer's -timeout) or unbounded memory
// (-rss_limit_mb) are reported by the fuzzer itself.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/errors.hpp"

namespace ringrt::fuzz {

// Runs `parse`, accepting success or a UserError; aborts on any other exception.
template <typename Parse>
void expect_parsed_or_refused(Parse&& parse) {
  try {
    parse();
  } catch (const UserError&) {  // refused with a message: the expected outcome for bad input
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: not a UserError: %s\n", e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz: a non-std exception\n");
    std::abort();
  }
}

}  // namespace ringrt::fuzz
