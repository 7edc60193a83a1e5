// The hierarchical reduce-scatter and allgather over G equal device groups of m devices (reference:
// NCCL's and RCCL's hierarchical / 2D collectives; the forms, their invariants and bytes open
// collectives.cpp). Member l of group g is device groups[g].second[l] in device_groups' order. Each step
// is ring or direct (all2all) as collective_algorithm chooses for its devices and elements, as the flat
// collectives choose, and reuses allreduce_blocks.hpp's reduce-scatter and allgather of one chunk.
#include "rewrite/rules/collectives_hierarchical.hpp"

#include <utility>
#include <vector>

#include "rewrite/rules/allreduce_blocks.hpp"
#include "rewrite/rules/multi.hpp"
#include "rewrite/rules/wire.hpp"

namespace ringrt {
namespace {

using Chunks = std::vector<std::pair<int64_t, int64_t>>;

// p chunks of len elements side by side.
Chunks even_chunks(size_t p, int64_t len) {
  Chunks out;
  for (int64_t i = 0; i < static_cast<int64_t>(p); ++i) out.push_back({i * len, (i + 1) * len});
  return out;
}

bool ring_for(size_t ndev, int64_t numel, const AllreduceSettings& s) {
  return collective_algorithm(static_cast<int64_t>(ndev), numel, s) == Algorithm::ring;
}

// The collective over the devices idx of devs (buf: their values stacked, or any value of the graph
// for an allgather), with these chunks of a flat buffer.
Allreduce over(const UOp& buf, const DeviceTuple& devs, const std::vector<int64_t>& idx, Ops op, Chunks chunks,
               DType dtype) {
  DeviceTuple names;
  for (int64_t i : idx) names.push_back(devs[static_cast<size_t>(i)]);
  int64_t numel = chunks.back().second;
  return Allreduce{buf,          op,    DeviceSpec(names), names, static_cast<int64_t>(idx.size()), numel,
                   Shape{numel}, dtype, std::move(chunks)};
}

// The index in the tuple of member l of every group, group by group.
std::vector<int64_t> peers_of(const Groups& groups, size_t l) {
  std::vector<int64_t> out;
  for (const auto& group : groups) out.push_back(group.second[l]);
  return out;
}

// The reduce-scatter of a with chunk i ending on device i, across `wire` (allreduce.wire: its copies encoded,
// its sums float32).
std::vector<ReducedChunk> scatter(Allreduce a, bool ring, WireFormat wire) {
  a.first = 1;
  a.wire = wire;
  return ring ? reduce_scatter_ring(a) : reduce_scatter_all2all(a);
}

// Flat x (chunks of c elements) with its chunks laid out in order; x when order keeps them. Not made
// contiguous: each piece the reduce-scatter copies is selected from x by the kernel that makes it.
UOp arranged(const UOp& x, const std::vector<int64_t>& order, int64_t c) {
  bool same = true;
  for (size_t i = 0; i < order.size(); ++i) same = same && order[i] == static_cast<int64_t>(i);
  if (same) return x;
  std::vector<UOp> parts;
  for (int64_t o : order) parts.push_back(x.shrink(spans({{o * c, (o + 1) * c}})));
  return concat_select(parts, 0);
}

}  // namespace

std::optional<std::string> hierarchical_unfit(const DeviceTuple& devs, const AllreduceSettings& s) {
  for (const auto& d : devs)
    if (!s.groups.count(d)) return "groups do not cover the tuple";
  Groups groups = device_groups(devs, s);
  for (const auto& group : groups)
    if (group.second.size() != groups[0].second.size()) return "groups of unequal size";
  return std::nullopt;
}

UOp hierarchical_reduce_scatter(const UOp& red, const AllreduceSettings& s) {
  UOp buf = copy_source(red.src(0));
  DType dtype = buf.dtype();
  Ops op = static_cast<Ops>(red.arg_int());
  // allreduce.wire: refused where it cannot apply; both phases' copies cross it, the partials between them
  // stay float32 (docs/compressed-wire.md)
  WireFormat wire = wire_for(Collective::reduce_scatter, dtype, op, s);
  bool widen = !s.cast && (dtype == DType::float16 || dtype == DType::bfloat16);  // as the flat form
  if (widen) buf = buf.cast(DType::float32).contiguous();
  const DeviceTuple& devs = buf.device().names();
  Groups groups = device_groups(devs, s);
  size_t ngroups = groups.size(), m = groups[0].second.size();
  int64_t numel = prod(buf.shape()), c = numel / static_cast<int64_t>(devs.size());
  int64_t part = static_cast<int64_t>(ngroups) * c;  // what member l reduces inside its group
  UOp flat = buf.reshape({numel});
  // member l's part: the final chunks of every group's member l, group by group
  std::vector<int64_t> order;
  for (size_t l = 0; l < m; ++l)
    for (int64_t i : peers_of(groups, l)) order.push_back(i);
  // intra: each group reduce-scatters its arranged buffers, member l ending with its part reduced over the group
  std::vector<std::vector<ReducedChunk>> parts;
  bool intra_ring = ring_for(m, numel, s);
  for (const auto& [g, idx] : groups) {
    std::vector<UOp> shards;
    for (int64_t i : idx) shards.push_back(arranged(flat.mselect(i), order, c));
    parts.push_back(scatter(over(mstack(shards), devs, idx, op, even_chunks(m, part), buf.dtype()), intra_ring, wire));
  }
  // inter: member l of every group reduce-scatters its part; group g's chunk ends on group g's member l
  std::vector<UOp> mine(devs.size());
  bool inter_ring = ring_for(ngroups, part, s);
  for (size_t l = 0; l < m; ++l) {
    std::vector<int64_t> peers = peers_of(groups, l);
    std::vector<UOp> held;
    for (const auto& p : parts) held.push_back(p[l].value);
    DType held_dtype = wire == WireFormat::native ? buf.dtype() : DType::float32;  // a wire's sums
    std::vector<ReducedChunk> done =
        scatter(over(mstack(held), devs, peers, op, even_chunks(ngroups, c), held_dtype), inter_ring, wire);
    for (size_t g = 0; g < ngroups; ++g)
      mine[static_cast<size_t>(peers[g])] =
          widen || wire != WireFormat::native ? done[g].value.cast(dtype) : done[g].value;
  }
  return mstack(mine);
}

UOp hierarchical_allgather(const UOp& red, int axis, const AllreduceSettings& s) {
  UOp x = copy_source(red.src(0).src(0));
  const DeviceTuple& devs = x.device().names();
  Groups groups = device_groups(devs, s);
  size_t ngroups = groups.size(), m = groups[0].second.size();
  int64_t len = prod(x.shape()), n = static_cast<int64_t>(devs.size());
  UOp flat = x.reshape({len});
  // inter: member l's shard reaches member l of every group, which then holds them group by group
  std::vector<UOp> held(devs.size());
  bool inter_ring = ring_for(ngroups, static_cast<int64_t>(ngroups) * len, s);
  for (size_t l = 0; l < m; ++l) {
    std::vector<int64_t> peers = peers_of(groups, l);
    Allreduce a = over(flat, devs, peers, Ops::ADD, even_chunks(ngroups, len), x.dtype());
    std::vector<UOp> gathered;
    for (size_t g = 0; g < ngroups; ++g)
      gathered.push_back(allgather_chunk(a, g, {flat.mselect(peers[g]), static_cast<int64_t>(g)}, !inter_ring));
    UOp side = concat_select(gathered, 0);
    for (size_t g = 0; g < ngroups; ++g) held[static_cast<size_t>(peers[g])] = side.mselect(static_cast<int64_t>(g));
  }
  // intra: each group allgathers what its members hold; member t's chunk g' is the shard of group g''s member t
  std::vector<UOp> out(devs.size());
  bool intra_ring = ring_for(m, n * len, s);
  for (const auto& [g, idx] : groups) {
    Allreduce a = over(flat, devs, idx, Ops::ADD, even_chunks(m, static_cast<int64_t>(ngroups) * len), x.dtype());
    std::vector<UOp> parts(devs.size());
    for (size_t t = 0; t < m; ++t) {
      UOp got = allgather_chunk(a, t, {held[static_cast<size_t>(idx[t])], static_cast<int64_t>(t)}, !intra_ring);
      for (size_t h = 0; h < ngroups; ++h) {
        int64_t at = static_cast<int64_t>(h) * len;
        parts[static_cast<size_t>(groups[h].second[t])] = got.shrink(spans({{at, at + len}})).reshape(x.shape());
      }
    }
    UOp whole = concat_select(parts, axis);  // every shard in place, on the group's devices
    for (size_t t = 0; t < m; ++t) out[static_cast<size_t>(idx[t])] = whole.mselect(static_cast<int64_t>(t));
  }
  return mstack(out);
}

}  // namespace ringrt
