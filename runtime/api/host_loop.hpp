// The poll of the host's loops over a result's elements (making an input, a reference, a check: seconds at 64
// MiB on 4 devices) for a stop request (core/interrupt.hpp; the `ringrt` program's SIGINT and SIGTERM), so
// that such a loop ends within milliseconds. Internal: runtime/api/reference.cpp and runtime/cli/experiment.cpp.
#pragma once

#include <fmt/format.h>

#include <cstdint>

#include "core/errors.hpp"
#include "core/interrupt.hpp"

namespace ringrt {

inline constexpr int64_t kPollElements = int64_t{1} << 16;  // elements between two polls

// At every kPollElements-th element i: throws Interrupted ("WHAT stopped by signal N") when a stop was asked for.
inline void stop_if_interrupted(int64_t i, const char* what) {
  if (i % kPollElements == 0 && interrupt_signal() != 0)
    throw Interrupted(fmt::format("{} stopped by signal {}", what, interrupt_signal()));
}

}  // namespace ringrt
