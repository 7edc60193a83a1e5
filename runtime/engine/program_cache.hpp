// The program cache (internal): compiled Programs by (lowered root, settings), so that running the
// same computation again does no rewriting, scheduling or compiling. Bounded: least recently used
// programs are dropped beyond kProgramCacheCapacity. Reference: tinygrad engine/schedule.py's
// schedule cache (keyed on the graph).
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "rewrite/lower/lower.hpp"
#include "rewrite/settings.hpp"
#include "runtime/engine/executor.hpp"

namespace ringrt {

// The most programs the cache holds: each holds its compiled kernels (a few KiB to MiB of code on a
// device) and the lowered graph. A training step realizes a few dozen distinct programs; 512 keeps
// every program of a long-running loop cached while bounding a process that builds new shapes forever.
inline constexpr size_t kProgramCacheCapacity = 512;

// The compiled program realizing roots (logical nodes) with these settings and their lowering, built
// on a miss (lower_multi, plan_schedule, Program: throws what they throw: ShapeError, CompileError).
// Thread-safe; two threads missing on the same key may both build (the later one is kept).
std::pair<std::shared_ptr<Program>, Lowered> program_for(const std::vector<UOp>& roots,
                                                         const AllreduceSettings& settings);

// How many programs program_for has built in this process (its misses).
size_t programs_built();

}  // namespace ringrt
