// The building blocks of the allreduce lowering (allreduce.cpp) that the other collectives
// (collectives.cpp) reuse: the chunked reduce-scatter (ring and all2all), the allgather of one chunk
// (ring and direct) and the reassembly of chunks. Internal to rewrite/rules.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/algorithm.hpp"
#include "core/settings.hpp"
#include "core/wire_format.hpp"
#include "rewrite/uop.hpp"

namespace ringrt {

// One collective being lowered: buf (contiguous, on the tuple devs) reduced with op onto device (one
// device, or a tuple). Chunks may be empty (fewer elements than devices): an empty chunk moves nothing
// and is never built. The ring starts chunk i on device (i + first) mod n, so its reduce-scatter ends it
// on (i + first - 1) mod n: the allreduce uses first 0, the reduce-scatter collective 1 (chunk i on i).
// wire (allreduce.wire, docs/compressed-wire.md): other than native, every copy of the reduce-scatter
// crosses encoded and is decoded to float32, the reduced chunks (ReducedChunk::value) are float32
// accumulations, and the allgather stores dec(enc(value)) on the owner and copies it encoded.
struct Allreduce {
  UOp buf;
  Ops op;
  DeviceSpec device;
  DeviceTuple devs;
  int64_t ndev, numel;
  Shape shape;
  DType dtype;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  int64_t first = 0;
  WireFormat wire = WireFormat::native;

  bool wired() const { return wire != WireFormat::native; }
  // x as the accumulation reads it: float32 on a wire, else as it is
  UOp acc(const UOp& x) const { return wired() ? x.cast(DType::float32) : x; }
  // x copied to device d (settled_copy, arg its source index), across the wire when there is one
  UOp send(const UOp& x, int64_t d, const Arg& arg = Arg()) const;
  // a reduced chunk's value as the result's dtype: on a wire dec(enc(value)), what its peers receive
  UOp finish(const UOp& value) const;
  DeviceSpec to(int64_t d) const { return DeviceSpec(devs[static_cast<size_t>(d)]); }  // device d of the tuple
  bool empty(size_t i) const { return chunks[i].first == chunks[i].second; }           // chunk i has no elements
  UOp piece(const UOp& x, size_t i) const { return x.shrink(spans({chunks[i]})); }     // chunk i of flat x
};

// A chunk reduced by the reduce-scatter, and the device (index in the tuple) it ends on.
struct ReducedChunk {
  UOp value;
  int64_t start = 0;
};

// x.mselect(i) (x on a device tuple, i an index into it) in the form replace_allreduce's rules settle
// it: constants made on device i, an MSTACK's source i, a movement op rebuilt on the settled MSELECT of
// its source with _device_num = i; else the MSELECT. The builders below make their selections with it,
// so a lowering never makes the chains of MSELECTs the rules would push down (half the nodes of a ring
// over 8 devices were such steps). Reference: multi.py replace_allreduce.
UOp settled_mselect(const UOp& x, int64_t i);
// x.copy_to_device(device) with COPY arg `arg` (an int64 source index into x's tuple, or none) as the
// rules settle it: constants made on device; x itself when it is already there (no index); one copy
// per device of a destination tuple, stacked (BROADCAST); from a tuple, the settled copy of its
// device arg (default 0) (COPY_TO_ONE); else the COPY. Throws ShapeError for an index outside x's tuple.
// Both take x as it is, where the rewrite settles a node's sources first: a SHRINK of an MSTACK (the
// hierarchical reduce-scatter's chunk of its group's buffers) is selected through the SHRINK into that
// device's own buffer, where the rules would first make the shrink contiguous on every device
// (mstack_early_shrink): the builders read the range in place, one kernel per device and step fewer
// (4 devices in 2 groups, ring reduce-scatter: 13 kernels, 21 before).
UOp settled_copy(const UOp& x, const DeviceSpec& device, const Arg& arg = Arg());
// The rules' form: what settled_mselect / settled_copy give, or nothing when that is the plain MSELECT
// or COPY (replace_allreduce's MSELECT and COPY rules are these).
std::optional<UOp> settle_mselect(const UOp& x, int64_t i);
std::optional<UOp> settle_copy(const UOp& x, const DeviceSpec& device, const Arg& arg);

// all2all reduce-scatter: device i pulls chunk i from every device and reduces it (one step, n-1 copies
// into each device).
std::vector<ReducedChunk> reduce_scatter_all2all(const Allreduce& a);
// ring reduce-scatter: in n-1 steps chunk i travels (i+first+step) -> (i+first+step+1), combined on
// arrival; each device sends n-1 chunks.
std::vector<ReducedChunk> reduce_scatter_ring(const Allreduce& a);
// allgather of one chunk r (len = chunk i's length) onto every device of a.device: stored into an MSELECT
// of a scratch buffer on its device, then copied to the others (all2all: from its device to each in one
// step; ring: forwarded around the ring in n-1 steps).
UOp allgather_chunk(const Allreduce& a, size_t i, const ReducedChunk& r, bool all2all);
// The allgather of every reduced chunk straight into its place in the result, one buffer of a.numel
// elements on each device of a.device: chunk i stored into its range of the block of the device it ends
// on, then copied from there into that range of every other device's block (all2all: from its device to
// each in one step; ring: forwarded around the ring in n-1 steps); onto one destination device, each
// reduced chunk copied into its range. No reassembly: the result is the buffer once every store is done
// (the memory plan writes the ranges in place: rewrite/plan/memory_plan.hpp), shaped a.shape. `into`: a
// buffer of a.numel elements per device of a.device to store into instead of a new one (an allreduce
// assigned into its source; its chunks must be read by nothing but their own reduce-scatter).
UOp allgather_into_result(const Allreduce& a, const std::vector<ReducedChunk>& reduced, bool all2all,
                          const std::optional<UOp>& into = std::nullopt);
// The non-empty chunk values side by side (flat), each element selected from its chunk, shaped a.shape.
UOp reassemble(const Allreduce& a, const std::vector<UOp>& parts);
// buf made contiguous before it is copied, unless it is a buffer already or a stack of one buffer's device values
// (in place: allreduce_in_place).
UOp copy_source(const UOp& buf);

// Group id and the indices of its devices in the tuple.
using Groups = std::vector<std::pair<int, std::vector<int64_t>>>;
// Groups of devs (settings.groups; a device without a group id joins group -1) in order of first
// appearance, each with its leader first (settings.reduce_leaders), then by name.
Groups device_groups(const DeviceTuple& devs, const AllreduceSettings& s);

// The hierarchical form of an allreduce over devs: nothing without several groups, one of them of more
// than one device; hierarchical_rs when allreduce.hierarchical is reduce_scatter and the groups have
// one size; else hierarchical (the leader form). Defined in allreduce.cpp; choice.cpp asks it first.
std::optional<Algorithm> hierarchical_form(const DeviceTuple& devs, const AllreduceSettings& s);

}  // namespace ringrt
