// The collectives besides allreduce (reference: NCCL/RCCL ReduceScatter, AllGather, AlltoAll, Broadcast;
// tinygrad multi.py builds its allgather as an allreduce of zero-padded shards). The Tensor front end
// (runtime/api/tensor_collectives.cpp) builds each from IR the multi rules already use; collective_of
// finds them in the lowered multi-device graph by what the ALLREDUCE reads and what reads it, and the
// rules here lower them with allreduce.cpp's building blocks (allreduce_blocks.hpp). For n devices and S
// bytes per device (the buffer of each device's value):
// - reduce_scatter: the buffer cut into n equal flat chunks of S/n; chunk i ends reduced on device i
//   (NCCL's ReduceScatter). Under a fused allreduce.algorithm (oneshot, twoshot) with S/n whole: one
//   COLLECTIVE item, device i combining chunk i of every device's buffer (rewrite/collective.hpp); an
//   allgather whose shards lie one after another likewise, each device copying every device's shard. ring: chunk i
//   starts on device i+1 and travels n-1 steps, combined on arrival; each device sends and receives n-1 chunks, (n-1)/n
//   S. all2all (naive too: it has no form of its own here): device i pulls chunk i from each other device, one step,
//   the same n(n-1) copies.
// - allgather: shard i (S each) reaches every device, selected into place (never summed, so -0.0
//   survives, unlike the allreduce of zero-padded shards it replaces). ring: forwarded around the ring
//   in n-1 steps, each device sending and receiving n-1 shards, (n-1)/n of the gathered buffer; all2all
//   (naive too): device i sends its shard to each other device, one step. n(n-1) copies of S either way.
// - alltoall: direct in every setting (NCCL's is a set of point-to-point sends): device i sends its
//   chunk j (S/n) to device j, which lays it in slot i; n(n-1) copies of S/n, one step.
// - broadcast: all2all (naive too): the copy rules' n-1 copies of S from the root. ring: S cut into n
//   chunks (allreduce_chunks), each forwarded around the ring from the root (n-1 copies per chunk): the
//   root sends S once, each other device receives S once, chunk c's hop h overlapping chunk c+1's hop
//   h-1 (NCCL's pipelined ring).
// - reduce to one root: an ALLREDUCE onto one device, lowered by allreduce.cpp.
// Algorithm choice: collective_algorithm (the allreduce's settings). Over device groups
// (allreduce_algorithm names a hierarchical form), G groups of m devices, n = G m, member l of a group
// its l-th in device_groups' order (collectives_hierarchical.cpp; NCCL's and RCCL's hierarchical/2D
// algorithms):
// - reduce_scatter ("hierarchical"): intra: each group reduce-scatters its buffers so that member l
//   holds, reduced over its group, the G final chunks of every group's member l (selected side by side
//   by the kernel that makes each copied piece); inter: the members l of the G groups reduce-scatter
//   those, chunk i ending reduced over all n devices on device i. Per device (m-1)/m S inside its group
//   and (G-1)/G S/m across groups (the flat direct form sends (G-1)/G S across, m times more);
//   G m(m-1) copies of S/m and m G(G-1) of S/n.
// - allgather ("hierarchical"): the inverse, inter then intra: the members l of the G groups allgather
//   their shards (m G(G-1) copies of S/n, S the gathered buffer), then each group allgathers what its
//   members hold (G m(m-1) copies of S/m), every shard selected into place (bit for bit). Per device
//   (G-1)/G S/m across groups and (m-1)/m S inside its group.
// Each step is ring or direct by collective_algorithm for its devices and buffer (intra: m devices of
// S; inter: G devices of S/m). Groups of unequal size, a device without a group, and alltoall keep the
// hierarchical allreduce (DEBUG=2 says why: hierarchical_fallback).
#include <fmt/format.h>

#include <algorithm>

#include "core/errors.hpp"
#include "rewrite/collective.hpp"
#include "rewrite/rules/allreduce_blocks.hpp"
#include "rewrite/rules/collectives_hierarchical.hpp"
#include "rewrite/rules/multi.hpp"
#include "rewrite/rules/wire.hpp"

namespace ringrt {
namespace {

using std::optional;
using Span = std::pair<Affine, Affine>;

// The axis a SHRINK cuts into n equal parts, taking part _device_num, every other axis whole.
optional<int> own_chunk_axis(const UOp& shrink, int64_t n) {
  const Spans& sp = shrink.arg_spans();
  const Shape& in = shrink.src(0).shape();
  optional<int> axis;
  for (size_t i = 0; i < sp.size(); ++i) {
    if (sp[i] == Span{Affine{0, 0}, Affine{in[i], 0}}) continue;
    int64_t len = in[i] / n;
    if (axis || len == 0 || in[i] % n != 0 || sp[i] != Span{Affine{0, len}, Affine{len, len}}) return std::nullopt;
    axis = static_cast<int>(i);
  }
  return axis;
}

// The axis a PAD places each device's value along at _device_num (unshard_local), every other axis unpadded.
optional<int> unshard_axis(const UOp& pad, int64_t n) {
  const Spans& sp = pad.arg_spans();
  const Shape& in = pad.src(0).shape();
  optional<int> axis;
  for (size_t i = 0; i < sp.size(); ++i) {
    if (sp[i] == Span{}) continue;
    int64_t len = in[i];
    if (axis || len == 0 || sp[i] != Span{Affine{0, len}, Affine{len * (n - 1), -len}}) return std::nullopt;
    axis = static_cast<int>(i);
  }
  return axis;
}

bool device_dependent(const UOp& u) {
  if (u.op() != Ops::SHRINK && u.op() != Ops::PAD) return false;
  return std::any_of(u.arg_spans().begin(), u.arg_spans().end(),
                     [](const Span& s) { return s.first.k != 0 || s.second.k != 0; });
}

// A reader taking its own device's chunk: its axis, whether the chunk is a flat range (every axis
// before it of length 1), whether it reads the collective itself (not through a RESHAPE).
struct OwnRead {
  int axis;
  bool flat, direct;
};

// Every reader of red (through RESHAPEs) as an own-chunk SHRINK; nothing when some reader is not one.
optional<std::vector<OwnRead>> own_reads(const UOp& red, const Readers& readers, int64_t n) {
  std::vector<OwnRead> out;
  std::vector<UOp> stack{red};
  while (!stack.empty()) {
    UOp u = stack.back();
    stack.pop_back();
    auto it = readers.find(u.node());
    if (it == readers.end() || it->second.empty()) return std::nullopt;
    for (const UOp& r : it->second) {
      if (r.op() == Ops::RESHAPE) {
        stack.push_back(r);
        continue;
      }
      optional<int> axis = r.op() == Ops::SHRINK ? own_chunk_axis(r, n) : std::nullopt;
      if (!axis) return std::nullopt;
      const Shape& in = r.src(0).shape();
      out.push_back({*axis, prod(Shape(in.begin(), in.begin() + *axis)) == 1, u == red});
    }
  }
  return out;
}

// ring stays ring; naive and all2all take the direct (all2all) form.
Algorithm ring_or_direct(Algorithm algo) { return algo == Algorithm::ring ? Algorithm::ring : Algorithm::all2all; }

optional<CollectiveUse> broadcast_of(const UOp& c, const Readers& readers, const AllreduceSettings& s) {
  const UOp& x = c.src(0);
  if (!c.device().tuple() || x.device().none() || x.device().tuple() != std::holds_alternative<int64_t>(c.arg()))
    return std::nullopt;
  const std::string& root =
      x.device().tuple() ? x.device().names().at(static_cast<size_t>(c.arg_int())) : x.device().name();
  const DeviceTuple& devs = c.device().names();
  int64_t n = static_cast<int64_t>(devs.size()), numel = prod(c.shape());
  if (n < 2 || numel == 0 || std::find(devs.begin(), devs.end(), root) == devs.end()) return std::nullopt;
  const std::vector<UOp>& users = readers.at(c.node());
  if (std::any_of(users.begin(), users.end(), device_dependent)) return std::nullopt;  // a scatter
  Algorithm algo = collective_algorithm(CollectiveSize::of(Collective::broadcast, devs, numel, c.dtype()), s);
  // fused (rewrite/collective.hpp) from a value on the tuple itself, in one process; MPI's across ranks
  CollectiveSize size = CollectiveSize::of(Collective::broadcast, devs, numel, c.dtype());
  if (x.device() == c.device() && (algo == Algorithm::mpi ? mpi_serves(size) : is_fused(algo) && size.ranks <= 1))
    return CollectiveUse{Collective::broadcast, algo};
  return CollectiveUse{Collective::broadcast, algo == Algorithm::mpi ? Algorithm::ring : ring_or_direct(algo)};
}

// The collective over buf's tuple, the chunks given.
Allreduce over_tuple(const UOp& buf, Ops op, std::vector<std::pair<int64_t, int64_t>> chunks) {
  const DeviceTuple& devs = buf.device().names();
  return Allreduce{
      buf,         op,          buf.device(),     devs, static_cast<int64_t>(devs.size()), prod(buf.shape()),
      buf.shape(), buf.dtype(), std::move(chunks)};
}

// reduce_scatter: the reduced chunk i on device i, stacked (numel/n elements each). 16-bit floats
// travel as float32 when the cast setting is off, as the allreduce's do.
UOp reduce_scatter(const UOp& red, const AllreduceSettings& s, bool ring) {
  UOp buf = copy_source(red.src(0));
  DType dtype = buf.dtype();
  Ops op = static_cast<Ops>(red.arg_int());
  WireFormat wire = wire_for(Collective::reduce_scatter, dtype, op, s);  // refused where it cannot apply
  bool widen = !s.cast && (dtype == DType::float16 || dtype == DType::bfloat16);
  if (widen) buf = buf.cast(DType::float32).contiguous();
  Allreduce a = over_tuple(buf, op, {});
  a.chunks = equal_chunks(a.numel, a.ndev);
  a.first = 1;    // chunk i ends on device i
  a.wire = wire;  // the reduced chunks are float32 accumulations on a wire, cast back below
  std::vector<UOp> mine;
  for (const ReducedChunk& r : ring ? reduce_scatter_ring(a) : reduce_scatter_all2all(a))
    mine.push_back(widen || a.wired() ? r.value.cast(dtype) : r.value);
  return mstack(mine);
}

// The fused reduce_scatter (rewrite/collective.hpp) of red's buffer, stored into a new buffer of numel / n
// elements per device (the result's memory takes it); 16-bit floats reduced as float32 when the cast
// setting is off, as reduce_scatter's are.
UOp fused_reduce_scatter_of(const UOp& red, FusedAlgorithm algorithm, const AllreduceSettings& s) {
  UOp buf = copy_source(red.src(0));
  DType dtype = buf.dtype();
  bool widen = !s.cast && (dtype == DType::float16 || dtype == DType::bfloat16);
  if (widen) buf = buf.cast(DType::float32).contiguous();
  int64_t numel = prod(buf.shape()), n = static_cast<int64_t>(buf.device().count());
  UOp out = new_buffer(buf.device(), numel / n, buf.dtype(), &buf.graph());
  UOp mine =
      out.after({out.store(fused_reduce_scatter(buf.reshape({numel}), static_cast<Ops>(red.arg_int()), algorithm))});
  return widen ? mine.cast(dtype) : mine;
}

// Whether an allgather's shards lie one after another in the gathered value (every axis before the
// PAD's of length 1): then the fused allgather's flat concatenation is that value.
bool gathered_in_order(const UOp& red) {
  const UOp& pad = red.src(0);
  optional<int> axis = unshard_axis(pad, static_cast<int64_t>(pad.device().count()));
  const Shape& in = pad.src(0).shape();
  return axis && prod(Shape(in.begin(), in.begin() + *axis)) == 1;
}

// The fused allgather (rewrite/collective.hpp) of an allgather's shards, stored into a new buffer of n
// shards per device (the result's memory takes it), in the gathered value's shape.
UOp fused_allgather_of(const UOp& red, FusedAlgorithm algorithm) {
  UOp x = copy_source(red.src(0).src(0));
  int64_t len = prod(x.shape()), n = static_cast<int64_t>(x.device().count());
  UOp out = new_buffer(x.device(), n * len, x.dtype(), &x.graph());
  return out.after({out.store(fused_allgather(x.reshape({len}), algorithm))}).reshape(red.shape());
}

// allgather: every device's shard (the PAD's source) allgathered and selected into place along the axis.
UOp allgather(const UOp& red, bool ring) {
  const UOp& pad = red.src(0);
  int axis = *unshard_axis(pad, static_cast<int64_t>(pad.device().count()));
  UOp x = copy_source(pad.src(0));
  int64_t len = prod(x.shape()), n = static_cast<int64_t>(x.device().count());
  UOp flat = x.reshape({len});
  Allreduce a = over_tuple(flat, Ops::ADD, {});
  for (int64_t i = 0; i < n; ++i) a.chunks.push_back({i * len, (i + 1) * len});
  std::vector<UOp> parts;
  for (int64_t i = 0; i < n; ++i)
    parts.push_back(allgather_chunk(a, static_cast<size_t>(i), {flat.mselect(i), i}, !ring).reshape(x.shape()));
  return concat_select(parts, axis);
}

// alltoall: device j's value is chunk j (along to_axis) of every device's shard, laid along the PAD's axis.
UOp alltoall(const UOp& red, int to_axis) {
  const UOp& pad = red.src(0);
  int64_t n = static_cast<int64_t>(pad.device().count());
  int from_axis = *unshard_axis(pad, n);
  UOp x = copy_source(pad.src(0));
  const DeviceTuple& devs = x.device().names();
  int64_t len = x.shape()[static_cast<size_t>(to_axis)] / n;
  std::vector<UOp> out;
  for (int64_t j = 0; j < n; ++j) {
    std::vector<std::pair<int64_t, int64_t>> cut;
    for (int64_t e : x.shape()) cut.push_back({0, e});
    cut[static_cast<size_t>(to_axis)] = {j * len, (j + 1) * len};
    std::vector<UOp> parts;
    for (int64_t i = 0; i < n; ++i)
      parts.push_back(x.mselect(i).shrink(spans(cut)).copy_to_device(DeviceSpec(devs[static_cast<size_t>(j)])));
    out.push_back(concat_select(parts, from_axis));
  }
  return mstack(out);
}

// A reader's chunk of a reduce_scatter or an alltoall: that collective's value on each device.
optional<UOp> own_chunk(const UOp& shrink, const Readers& readers, const AllreduceSettings& s) {
  UOp red = shrink.src(0);
  while (red.op() == Ops::RESHAPE) red = red.src(0);
  if (red.op() != Ops::ALLREDUCE) return std::nullopt;
  optional<CollectiveUse> use = collective_of(red, readers, s);
  if (!use) return std::nullopt;
  int64_t n = static_cast<int64_t>(red.device().count());
  if (use->kind == Collective::reduce_scatter) {
    if (std::optional<FusedAlgorithm> fused = fused_algorithm(use->algorithm))
      return fused_reduce_scatter_of(red, *fused, s).reshape(shrink.shape());
    UOp mine = use->algorithm == Algorithm::hierarchical ? hierarchical_reduce_scatter(red, s)
                                                         : reduce_scatter(red, s, use->algorithm == Algorithm::ring);
    return mine.reshape(shrink.shape());
  }
  if (use->kind == Collective::alltoall) return alltoall(red, *own_chunk_axis(shrink, n));
  return std::nullopt;
}

// The fused broadcast (rewrite/collective.hpp) of a value on the broadcast's own tuple from its device root,
// stored into a new buffer on every device (the result's memory takes it), in the broadcast's shape.
UOp fused_broadcast_of(const UOp& c, FusedAlgorithm algorithm) {
  UOp x = copy_source(c.src(0));
  int64_t numel = prod(x.shape());
  UOp out = new_buffer(x.device(), numel, x.dtype(), &x.graph());
  return out.after({out.store(fused_broadcast(x.reshape({numel}), c.arg_int(), algorithm))}).reshape(c.shape());
}

// ring broadcast: the root's value in allreduce_chunks, each forwarded around the ring from the root.
UOp broadcast_ring(const UOp& c) {
  const UOp& x = c.src(0);
  UOp v = x.device().tuple() ? x.mselect(c.arg_int()) : x;
  const DeviceTuple& devs = c.device().names();
  int64_t root = std::find(devs.begin(), devs.end(), v.device().name()) - devs.begin(), numel = prod(c.shape());
  UOp flat = v.reshape({numel});
  Allreduce a{flat,
              Ops::ADD,
              c.device(),
              devs,
              static_cast<int64_t>(devs.size()),
              numel,
              c.shape(),
              c.dtype(),
              allreduce_chunks(numel, static_cast<int64_t>(devs.size()))};
  std::vector<UOp> parts(a.chunks.size());
  for (size_t i = 0; i < parts.size(); ++i)
    if (!a.empty(i)) parts[i] = allgather_chunk(a, i, {a.piece(flat, i), root}, false);
  return reassemble(a, parts);
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> equal_chunks(int64_t numel, int64_t n) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t i = 0; i < n; ++i) out.push_back({i * numel / n, (i + 1) * numel / n});
  return out;
}

Readers readers_of(const UOp& root) {
  Readers out;
  for (const UOp& u : root.graph().toposort({root})) {
    out.try_emplace(u.node());
    for (const UOp& src : u.src()) {
      std::vector<UOp>& users = out[src.node()];
      if (users.empty() || users.back() != u) users.push_back(u);
    }
  }
  return out;
}

namespace {
// What an ALLREDUCE u of the readers' graph is (reduce_scatter, allgather, alltoall), whatever its
// algorithm; nothing for an allreduce.
optional<Collective> allreduce_kind(const UOp& u, const Readers& readers) {
  if (!readers.count(u.node()) || u.op() != Ops::ALLREDUCE) return std::nullopt;
  const UOp& buf = u.src(0);
  int64_t n = static_cast<int64_t>(buf.device().count());
  if (!buf.device().tuple() || u.src(1).device() != buf.device() || n < 2 || prod(buf.shape()) == 0)
    return std::nullopt;
  optional<int> from =
      buf.op() == Ops::PAD && static_cast<Ops>(u.arg_int()) == Ops::ADD ? unshard_axis(buf, n) : std::nullopt;
  optional<std::vector<OwnRead>> reads = own_reads(u, readers, n);
  if (from) {
    bool exchange = reads && std::all_of(reads->begin(), reads->end(), [&](const OwnRead& r) {
                      return r.direct && r.axis != *from && r.axis == reads->front().axis;
                    });
    return exchange ? Collective::alltoall : Collective::allgather;
  }
  if (reads && std::all_of(reads->begin(), reads->end(), [](const OwnRead& r) { return r.flat; }))
    return Collective::reduce_scatter;
  return std::nullopt;
}
}  // namespace

optional<CollectiveUse> collective_of(const UOp& u, const Readers& readers, const AllreduceSettings& s) {
  if (!readers.count(u.node())) return std::nullopt;  // made by a rule: not the graph the readers describe
  if (u.op() == Ops::COPY) return broadcast_of(u, readers, s);
  optional<Collective> kind = allreduce_kind(u, readers);
  if (!kind) return std::nullopt;
  Algorithm algo = allreduce_algorithm(u, s, *kind);
  // a fused reduce_scatter (rewrite/collective.hpp; or MPI's) of a buffer that cuts into n equal chunks; else direct
  bool one_item = fused_algorithm(algo).has_value();
  if (*kind == Collective::reduce_scatter && one_item)
    return CollectiveUse{
        *kind, prod(u.src(0).shape()) % static_cast<int64_t>(u.device().count()) == 0 ? algo : Algorithm::all2all};
  if (*kind == Collective::allgather && one_item)  // fused where the shards lie one after another
    return CollectiveUse{*kind, gathered_in_order(u) ? algo : Algorithm::all2all};
  // deterministic (allreduce.deterministic): a reduce_scatter folds each chunk in tuple order on its owner, the
  // direct form; the ring's would fold chunk i from device i+1 on
  bool direct = *kind == Collective::alltoall || (*kind == Collective::reduce_scatter && s.deterministic);
  if (!is_hierarchical(algo)) return CollectiveUse{*kind, direct ? Algorithm::all2all : ring_or_direct(algo)};
  // over device groups: the hierarchical forms, or (alltoall, groups that do not fit) the hierarchical allreduce
  if (*kind == Collective::alltoall || hierarchical_unfit(u.src(0).device().names(), s)) return std::nullopt;
  return CollectiveUse{*kind, Algorithm::hierarchical};
}

optional<std::string> hierarchical_fallback(const UOp& u, const Readers& readers, const AllreduceSettings& s) {
  optional<Collective> kind = allreduce_kind(u, readers);
  if (!kind || !is_hierarchical(allreduce_algorithm(u, s))) return std::nullopt;
  optional<std::string> why =
      *kind == Collective::alltoall ? "no hierarchical form" : hierarchical_unfit(u.src(0).device().names(), s);
  if (!why) return std::nullopt;
  return fmt::format("{} as the hierarchical allreduce: {}", collective_name(*kind), *why);
}

PatternMatcher collectives_pm(const AllreduceSettings& settings, std::shared_ptr<const Readers> readers) {
  return PatternMatcher({
      // a reduce-scatter's or an alltoall's reader: the collective's value on each device
      {UPat(Ops::SHRINK).named("shrink"),
       [settings, readers](const Match& m) { return own_chunk(m["shrink"], *readers, settings); }},
      // an allgather: each shard copied into place on every device
      {UPat(Ops::ALLREDUCE).named("red"),
       [settings, readers](const Match& m) -> optional<UOp> {
         optional<CollectiveUse> use = collective_of(m["red"], *readers, settings);
         if (!use || use->kind != Collective::allgather) return std::nullopt;
         if (std::optional<FusedAlgorithm> fused = fused_algorithm(use->algorithm))
           return fused_allgather_of(m["red"], *fused);
         if (use->algorithm != Algorithm::hierarchical) return allgather(m["red"], use->algorithm == Algorithm::ring);
         const UOp& pad = m["red"].src(0);
         return hierarchical_allgather(m["red"], *unshard_axis(pad, static_cast<int64_t>(pad.device().count())),
                                       settings);
       }},
      // a ring broadcast or a fused one (the direct one is the copy rules' BROADCAST)
      {UPat(Ops::COPY).named("c"),
       [settings, readers](const Match& m) -> optional<UOp> {
         optional<CollectiveUse> use = collective_of(m["c"], *readers, settings);
         if (!use) return std::nullopt;
         if (std::optional<FusedAlgorithm> fused = fused_algorithm(use->algorithm))
           return fused_broadcast_of(m["c"], *fused);
         if (use->algorithm != Algorithm::ring) return std::nullopt;
         return broadcast_ring(m["c"]);
       }},
  });
}

}  // namespace ringrt
