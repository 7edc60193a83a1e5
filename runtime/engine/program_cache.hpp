// The program cache (internal): compiled Programs keyed by structure, so that running the same
// computation again, on the same buffers or on new ones of the same shapes, does no rewriting,
// scheduling or compiling. Reference: tinygrad engine/schedule.py's schedule cache (the graph with its
// buffers replaced by parameters).
//
// A key is a graph's Canonical form (rewrite/canonical.hpp) and the allreduce settings. On a miss the
// graph is rebuilt in a graph of the entry's own (parameter i = BUFFER id i, run-time scalar j = CONST
// slot j) and lowered and planned there, so everything the lowering makes dies with the entry; a run
// binds parameter i to the storage of the caller's i-th buffer and passes the caller's scalar values
// as the kernels' arguments (a learning rate that changes every step builds nothing). Bounded: least recently used
// entries are dropped beyond runtime.program_cache programs (core/params.hpp).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/settings.hpp"
#include "rewrite/canonical.hpp"
#include "rewrite/lower/lower.hpp"
#include "runtime/engine/executor.hpp"

namespace ringrt {

// A cached program bound to the buffers of one graph.
class ProgramRef {
 public:
  struct Built;  // the entry: its graph, lowering and program (program_cache.cpp)
  ProgramRef(std::shared_ptr<const Built> built, std::vector<int64_t> buffers, std::vector<uint64_t> scalars);
  // The lowering of the roots, in the entry's graph: shapes, dtypes, devices and shard axes equal the
  // caller's (its nodes are not the caller's).
  const Lowered& lowered() const;
  // Program::run with parameter i read from storages(buffers[i]) and the caller's run-time scalars'
  // values (Canonical::scalars); the program's own scratch buffers are fresh memory; the entry is the
  // run's owner (a run may stay in flight). Throws what Program::run throws.
  std::shared_ptr<const PendingWork> run(const std::vector<std::vector<Block>>& outs, const StorageLookup& storages,
                                         ExecOptions options = {}) const;

 private:
  std::shared_ptr<const Built> built_;
  std::vector<int64_t> buffers_;
  std::vector<uint64_t> scalars_;
};

// The compiled program realizing roots (logical nodes of one graph) with these settings, built on a
// miss (lower_multi, plan_schedule, Program: throws what they throw: ShapeError, CompileError).
// Thread-safe; two threads missing on the same key may both build (the later one is kept).
ProgramRef program_for(const std::vector<UOp>& roots, const AllreduceSettings& settings);

struct ProgramCacheStats {
  size_t hits = 0, misses = 0, evictions = 0;  // since the process started; misses = programs built
  size_t size = 0, capacity = 0;               // programs cached now; the bound (runtime.program_cache)
};
ProgramCacheStats program_cache_stats();

}  // namespace ringrt
