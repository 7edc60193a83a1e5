// The runtime switches: the tunables that change how work runs, never what it computes (core/params.hpp):
// runtime.peer_reads, runtime.peer_writes, runtime.kernel_split, runtime.inline_small and runtime.stream_bytes.
// Tests turn them over to show that every combination gives the same values.
#pragma once

#include "core/params.hpp"

namespace ringrt::test {

// Sets exactly the five switches from r (set_runtime_params); the other runtime tunables keep theirs.
inline void set_switches(const RuntimeParams& r) {
  set_runtime_params(r, {"runtime.peer_reads", "runtime.peer_writes", "runtime.kernel_split", "runtime.inline_small",
                         "runtime.stream_bytes"});
}

// The switches in force, with the four booleans replaced (stream_bytes kept).
inline RuntimeParams switches(bool peer_reads, bool kernel_split, bool inline_small,
                              bool peer_writes = RuntimeParams{}.peer_writes) {
  RuntimeParams r = runtime_params();
  r.peer_reads = peer_reads;
  r.kernel_split = kernel_split;
  r.inline_small = inline_small;
  r.peer_writes = peer_writes;
  return r;
}

// The switches as they were at construction come back at the end of the scope.
class SavedSwitches {
 public:
  SavedSwitches() : saved_(runtime_params()) {}
  SavedSwitches(const SavedSwitches&) = delete;
  SavedSwitches& operator=(const SavedSwitches&) = delete;
  ~SavedSwitches() { set_switches(saved_); }
  const RuntimeParams& saved() const { return saved_; }

 private:
  RuntimeParams saved_;
};

}  // namespace ringrt::test
