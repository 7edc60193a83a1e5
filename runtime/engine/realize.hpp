// The realize engine (internal): the storage registry, the state behind a Tensor handle, assignment
// ordering and realize. The Tensor front end (runtime/api/, a room above) builds graphs and calls this; the program
// cache (runtime/engine/program_cache.hpp) and the executor (runtime/engine/executor.hpp) run them.
// Reference: tinygrad tensor.py realize, engine/realize.py, schedule.py (assign ordering).
//
// Storages. Every realized BUFFER's device memory is a DeviceStorage registered by buffer id while a
// tensor state holds it; the executor finds inputs there. Live states are registered too (weakly), so
// an assignment can first realize every tensor that still reads the destination's old contents.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "core/settings.hpp"
#include "rewrite/interpreter.hpp"
#include "rewrite/uop.hpp"
#include "runtime/engine/executor.hpp"

namespace ringrt {

// What a Tensor handle points at: its graph and the storages that graph reads.
struct TensorState {
  UOp uop;
  std::vector<std::shared_ptr<DeviceStorage>> storages;  // every buffer the graph reads
  // For a shrink (of a shrink ...) of a tensor: that tensor and the region of it, in its coordinates;
  // assign() writes through the view into it.
  std::shared_ptr<TensorState> view_base;
  std::vector<std::pair<int64_t, int64_t>> view_region;
  // Realized without memory of its own: uop is a contiguous range of another tensor's buffer (a
  // contiguous() of a view, see as_buffer_view). A value all the same: it gets its own copy before
  // that buffer is written (an assignment's write) or before it is written itself (own).
  bool borrowed = false;
  // Made by Tensor::placeholder, or built on one: a graph for planning, with buffers that have no memory.
  bool placeholder = false;
};
using StatePtr = std::shared_ptr<TensorState>;

// Throws DeviceError naming op when st is a placeholder (Tensor::placeholder): it has no memory to
// realize, read or write.
void check_has_memory(const TensorState& st, const char* op);

// A new live state of u that keeps storages alive.
StatePtr make_state(UOp u, std::vector<std::shared_ptr<DeviceStorage>> storages);
// Adds to st.storages those of `more` it does not hold yet: the list names each storage once, so a
// graph built step by step from itself (X.assign(X + 1) in a loop) keeps a list of constant length.
void hold(TensorState& st, const std::vector<std::shared_ptr<DeviceStorage>>& more);

// Device memory for BUFFER buf (numel elements of its dtype on each of its devices), registered by
// its id and filled from data (one flat HostBuffer per device, or one for all; empty: uninitialized).
// Throws DeviceError when it does not fit.
std::shared_ptr<DeviceStorage> new_storage(const UOp& buf, const std::vector<HostBuffer>& data);
// The live storage of buffer id; null when none.
std::shared_ptr<DeviceStorage> find_storage(int64_t id);
// The reference interpreter's value of u, reading realized buffers from device memory; another rank's
// device blocks are a DeviceError, or zeros with remote_as_zeros (DeviceStorage::to_host).
std::vector<HostBuffer> interpret_buffers(const UOp& u, bool remote_as_zeros = false);

// The id of the BUFFER under a view of it (movement ops, MULTI). Throws InternalError for a value
// with no buffer under it.
int64_t buffer_id_of(const UOp& view);
// Whether u is a realized buffer seen as a tensor: a BUFFER or a RESHAPE of one, under a MULTI.
bool is_buffer_view(const UOp& u);
// root as a view of a buffer when it is a CONTIGUOUS of movement ops over a realized BUFFER (through
// a MULTI) whose elements, on every device, are one contiguous range of the buffer at the same offset:
// the buffer, a 1-D SHRINK to that range (none for the whole buffer) and a RESHAPE to the local shape,
// under a MULTI on the root's shard axis. Otherwise nothing. Throws what lower_multi throws for the
// movement ops. Reference: tinygrad's BUFFER_VIEW.
std::optional<UOp> as_buffer_view(const UOp& root, const AllreduceSettings& settings);

// Realizes the states with one program (one compile of all their kernels), their assignments first
// (each runs once, innermost first, after every live reader of its destination's old contents is
// realized). `views`: a contiguous() of a contiguous range of a realized buffer becomes that range
// (borrowed, no kernel); false: every state gets memory of its own. Throws what lowering, compiling
// and running throw (ShapeError, CompileError, DeviceError, TimeoutError). Thread-safe: one realize
// runs at a time in the process (handles on several threads may share a state). An assignment whose
// run timed out counts as run (its work still lands), so a retry does not apply it again.
void realize_states(const std::vector<StatePtr>& states, bool views);
// Makes writing buffer id safe (write after read): realizes every live tensor other than owner
// that still reads its old contents (an unrealized graph over it; one holding `assignment`, which
// reads the new contents, or being realized up this thread's stack is not waited for; one that fails
// is left to fail later), then gives every value borrowing its memory a copy of its own. Call before
// anything writes the buffer in place.
void before_write(const StatePtr& owner, int64_t id, std::optional<UOp> assignment = std::nullopt);
// The process-wide lock realize_states, before_write and own hold (recursive): whoever changes a
// state or writes a storage outside them (runtime/engine/host_write.cpp) holds it too.
std::recursive_mutex& realize_mutex();
// Realizes st into memory of its own, to be written in place (a borrowed value gets a copy first, so
// the write never reaches the lender).
void own(const StatePtr& st);
// root with every assignment that has run replaced by its destination (the value it left there): a value
// built on a tensor before its assignment ran keeps no chain of earlier steps (X.assign(X + 1) repeated:
// each step's graph stays as small as the first's). The same values; root when none has run.
UOp with_run_assigns_settled(const UOp& root);

// The roots of the global graph's collection (runtime/engine/collect.hpp): every live state's graph
// and the destination of every assignment record a live graph still holds (the others are dropped;
// dead states' and storages' records too). Call only while no thread uses the global graph.
std::vector<UOp> engine_roots();
// What the engine holds now: live storages, tensor states and assignment records.
struct EngineCounts {
  size_t storages = 0, states = 0, assignments = 0;
};
EngineCounts engine_counts();

}  // namespace ringrt
