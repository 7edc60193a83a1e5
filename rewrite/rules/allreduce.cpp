// Allreduce lowering (reference: multi.py handle_allreduce, handle_allreduce_multirank,
// replace_allreduce; allreduce-without-mstack.diff).
//
// Algorithms, for n devices each holding a buffer of numel elements:
// - naive: every device copies every other device's buffer into a per-source scratch buffer (MSELECT
//   stores) and combines them with its own, read in place: n(n-1) copies, one kernel.
// - ring: the buffer is cut into n chunks (see allreduce_chunks). Reduce-scatter: in n-1 steps chunk i
//   travels (i+step) -> (i+step+1), combined on arrival, and ends reduced on device (i-1) mod n.
//   Allgather: each reduced chunk is stored into its range of the result (one buffer per device) and
//   forwarded around the ring into the same range of each device's result. 2n(n-1) copies, each over
//   a ring edge; no reassembly (allgather_into_result).
// - all2all: device i pulls chunk i from every other device and reduces it into its range of its
//   result, then pushes that range to all: 2n(n-1) copies, fewer serial steps than ring.
//   Ring and all2all in place (Tensor::allreduce_in_place): the result is the source buffer itself;
//   chunk c of it is read by chunk c's reduce-scatter alone, and its allgather's stores wait for that.
// - hierarchical: with device groups (settings.groups: several groups, one of them of more than one
//   device), in the form allreduce.hierarchical names:
//   leader ("hierarchical"): reduce inside each group onto its leader (leaders first), allreduce across
//     the leaders, broadcast back inside each group.
//   reduce_scatter ("hierarchical_rs"; Horovod's hierarchical allreduce, NCCL's reduce-scatter, network
//     allreduce, allgather): m groups of k devices, device j of a group its j-th in device_groups' order.
//     Device j pulls chunk j (allreduce_chunks into k) of its group's buffers and reduces it; each chunk
//     j is allreduced across the m devices j by a nested ALLREDUCE (naive, ring or all2all as chosen for
//     it), the k of them independent; each group allgathers its k chunks. It needs groups of one size:
//     groups of unequal size get the leader form (the DEBUG line says so).
// - mpi: across ranks of one device each, MPI's own non-blocking allreduce on each rank's buffer (the
//   COLLECTIVE node of the fused forms, run by the cluster: runtime/mpi/transfers.hpp). The cross-host level
//   of the hierarchical forms takes it too: their nested allreduces across groups choose like any other.
// Choice (rewrite/rules/choice.cpp): with a tuning file (rewrite/tuning.hpp, `ringrt tune`) and ring/all2all at their
// automatic levels, the algorithm measured fastest on this machine for the collective, devices, dtype and size. Without
// a tuned choice, an allreduce on devices with cost figures (cpu measured, hip defaults) takes the cost model's
// cheapest (rewrite/cost_model.hpp), unless allreduce.tuning is off. Otherwise tinygrad's rule: all2all when ALL2ALL >=
// 2, or ALL2ALL >= 1 with n > 2 and numel > threshold; else ring likewise with RING; else naive. 256000 elements is
// tinygrad's empirical crossover below which ring's extra kernel launches and chunk reassembly lose to naive (on GPUs;
// on this project's cpu backend all2all won at 4 devices from 256 KiB up, which is why the choice is measured per
// machine). Cost of the hierarchical forms (alpha-beta model, bandwidth terms): m groups of k devices, S bytes per
// device; each device sends and receives at B_intra inside its group and at B_net to other groups, both
// directions and all its links at once; a bandwidth-optimal allreduce of X bytes over p devices takes
// 2(p-1)/p X/B.
//   leader:         T = 2(k-1) S/B_intra + 2(m-1)/m S/B_net
//     the leader takes in (k-1) buffers of S, later sends out (k-1); one device per group uses the network.
//   reduce_scatter: T = 2(k-1)/k S/B_intra + 2(m-1)/m S/(k B_net)
//     each device moves (k-1)/k S in and out in each group phase; all k devices of a group allreduce
//     their S/k share over the network at once.
// (On a full mesh with a link of B_link per pair the group terms are 2S/B_link and 2S/(k B_link).)
// reduce_scatter divides the group term by k, and the network term by k when every device has its own
// network path; when the k devices of a group share one path of B_net per group, both forms' network
// terms are 2(m-1)/m S/B_net. Its price is copies and launches: 2k(k-1) copies per group and k network
// allreduces against 2(k-1) copies per group and one, so the leader form wins while S is small enough for
// per-copy latency to dominate, reduce_scatter once S is bandwidth-bound (by up to k). Across the m
// leaders naive (m(m-1) copies of S) equals the bandwidth-optimal term for m = 2. Not measured: on the
// cpu backend every device shares one memory, so neither B_intra nor B_net exists there.
// The reduction uses the op's own combine (ADD, MUL, MAX, MIN); the reassembly of the disjoint chunks
// selects each element from its chunk (never a sum with zeros, which would turn -0.0 into +0.0).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>

#include "core/errors.hpp"
#include "core/params_internal.hpp"
#include "rewrite/collective.hpp"
#include "rewrite/cost_model.hpp"
#include "rewrite/rules/allreduce_blocks.hpp"
#include "rewrite/rules/multi.hpp"
#include "rewrite/rules/wire.hpp"
#include "rewrite/tuning.hpp"

namespace ringrt {
namespace {

using std::optional;

int group_of(const AllreduceSettings& s, const std::string& dev) {
  auto it = s.groups.find(dev);
  return it == s.groups.end() ? -1 : it->second;
}

}  // namespace

Groups device_groups(const DeviceTuple& devs, const AllreduceSettings& s) {
  Groups groups;
  for (size_t i = 0; i < devs.size(); ++i) {
    int g = group_of(s, devs[i]);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& p) { return p.first == g; });
    if (it == groups.end()) it = groups.insert(groups.end(), {g, {}});
    it->second.push_back(static_cast<int64_t>(i));
  }
  auto leader = [&](int64_t i) {
    return std::find(s.reduce_leaders.begin(), s.reduce_leaders.end(), devs[static_cast<size_t>(i)]) ==
           s.reduce_leaders.end();
  };
  for (auto& [g, idx] : groups)
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      return std::pair(leader(a), devs[static_cast<size_t>(a)]) < std::pair(leader(b), devs[static_cast<size_t>(b)]);
    });
  return groups;
}

// The hierarchical form of an allreduce over devs: nothing without several groups, one of them of more
// than one device; hierarchical_rs when allreduce.hierarchical is reduce_scatter and the groups have
// one size; else hierarchical (the leader form, also for reduce_scatter over groups of unequal size).
optional<Algorithm> hierarchical_form(const DeviceTuple& devs, const AllreduceSettings& s) {
  Groups groups = device_groups(devs, s);
  auto size_of = [](const auto& g) { return g.second.size(); };
  if (groups.size() < 2 || std::all_of(groups.begin(), groups.end(), [&](const auto& g) { return size_of(g) == 1; }))
    return std::nullopt;
  bool equal =
      std::all_of(groups.begin(), groups.end(), [&](const auto& g) { return size_of(g) == size_of(groups[0]); });
  return s.hierarchical == "reduce_scatter" && equal ? Algorithm::hierarchical_rs : Algorithm::hierarchical;
}

namespace {

// An allreduce served by other allreduces: 16-bit floats widened to float32 when the cast setting is
// off, a one-device destination tuple as that device's allreduce stacked, a destination tuple other
// than buf's as one allreduce per destination device; nothing otherwise.
optional<UOp> reroute_allreduce(const UOp& buf, Ops op, const DeviceSpec& device, const AllreduceSettings& s) {
  const DeviceTuple& devs = buf.device().names();
  DType dtype = buf.dtype();
  // 16-bit floats travel as float32 when the cast setting is off
  if (!s.cast && (dtype == DType::float16 || dtype == DType::bfloat16)) {
    UOp wide = buf.cast(DType::float32).allreduce(op, device);
    return wide.cast(dtype);
  }
  // a one-device tuple output is a single-device allreduce, stacked
  if (device.tuple() && device.count() == 1) return mstack({buf.allreduce(op, DeviceSpec(device.names()[0]))});
  if (device.tuple() && device.names() != devs) {
    std::vector<UOp> out;
    for (const auto& d : device.names()) out.push_back(buf.allreduce(op, DeviceSpec(d)));
    return mstack(out);
  }
  return std::nullopt;
}

// naive over a wire (naive_allreduce).
UOp naive_wire_allreduce(const Allreduce& a) {
  const UOp& buf = a.buf;
  if (a.device.single()) {
    std::vector<UOp> copies;
    for (int64_t i = 0; i < a.ndev; ++i) copies.push_back(wire_copy(a.wire, buf.mselect(i), a.device));
    return fold(a.op, copies).cast(a.dtype);
  }
  UOp dnum = device_num(a.ndev, &buf.graph());
  // every device's buffer encoded once, where it lies (bfloat16 data on the bfloat16 wire already is)
  std::optional<WireValue> sent;
  if (!on_the_wire(a.wire, a.dtype)) sent = wire_encode(a.wire, buf.reshape({a.numel}));
  std::vector<UOp> terms;
  for (int64_t i = 0; i < a.ndev; ++i) {
    UOp scratch = new_buffer(a.device, a.numel, DType::float32, &buf.graph());
    std::vector<UOp> stores;
    for (int64_t j = 0; j < a.ndev; ++j)
      if (j != i)
        stores.push_back(scratch.mselect(j).store(sent ? wire_decode(wire_send(wire_select(*sent, i), a.to(j)))
                                                       : a.send(buf.mselect(i).reshape({a.numel}), j)));
    UOp mine = broadcast_to(dnum.eq(const_uop(DType::int32, static_cast<double>(i), &buf.graph())), a.shape);
    UOp own = sent ? wire_decode(*sent).reshape(a.shape) : a.acc(buf);
    terms.push_back(mine.where(own, scratch.after(stores).reshape(a.shape)));
  }
  return fold(a.op, terms).cast(a.dtype);
}

// naive: every device's buffer copied to every other device and combined there. On a wire every buffer
// crosses encoded, a device's own included (dec(enc(x)) in place), so every device folds the same values
// in float32; the result is cast back to the dtype.
UOp naive_allreduce(const Allreduce& a) {
  if (a.wired()) return naive_wire_allreduce(a);
  const UOp& buf = a.buf;
  if (a.device.single()) {
    std::vector<UOp> copies;
    for (int64_t i = 0; i < a.ndev; ++i) copies.push_back(buf.mselect(i).copy_to_device(a.device));
    return fold(a.op, copies);
  }
  // copies gather into per-source scratch buffers by MSELECT stores; a device reads its own shard in place
  UOp dnum = device_num(a.ndev, &buf.graph());
  std::vector<UOp> terms;
  for (int64_t i = 0; i < a.ndev; ++i) {
    UOp scratch = new_buffer(a.device, a.numel, a.dtype, &buf.graph());
    std::vector<UOp> stores;
    for (int64_t j = 0; j < a.ndev; ++j)
      if (j != i) stores.push_back(scratch.mselect(j).store(buf.mselect(i).reshape({a.numel}).copy_to_device(a.to(j))));
    UOp mine = broadcast_to(dnum.eq(const_uop(DType::int32, static_cast<double>(i), &buf.graph())), a.shape);
    terms.push_back(mine.where(buf, scratch.after(stores).reshape(a.shape)));
  }
  return fold(a.op, terms);
}

}  // namespace

optional<UOp> settle_mselect(const UOp& x, int64_t i) {
  DeviceSpec device(x.device().names().at(static_cast<size_t>(i)));
  if (optional<UOp> placed = const_on_device(x, device)) return placed;  // one device's value of constants
  if (x.op() == Ops::MSTACK) return x.src(static_cast<size_t>(i));       // the stacked node
  // before a movement op, whose bounds take _device_num = i
  if (group::movement().contains(x.op()) && x.src().size() == 1) return at_device(x, settled_mselect(x.src(0), i), i);
  return std::nullopt;
}

UOp settled_mselect(const UOp& x, int64_t i) {
  optional<UOp> settled = settle_mselect(x, i);
  return settled ? *settled : x.mselect(i);
}

optional<UOp> settle_copy(const UOp& x, const DeviceSpec& device, const Arg& arg) {
  if (optional<UOp> placed = const_on_device(x, device)) return placed;  // constants made on the destination
  bool plain = std::holds_alternative<std::monostate>(arg);
  if (x.device().single() && device == x.device() && plain) return x;  // already there
  if (device.tuple() && x.device().single()) {                         // BROADCAST: one copy per device, stacked
    std::vector<UOp> out;
    for (const auto& d : device.names()) out.push_back(settled_copy(x, DeviceSpec(d)));
    return mstack(out);
  }
  if (x.device().tuple()) {  // COPY_TO_ONE: the chosen device's value (default the first), copied
    int64_t i = std::holds_alternative<int64_t>(arg) ? std::get<int64_t>(arg) : 0;
    return settled_copy(settled_mselect(x, i), device);
  }
  return std::nullopt;
}

UOp settled_copy(const UOp& x, const DeviceSpec& device, const Arg& arg) {
  optional<UOp> settled = settle_copy(x, device, arg);
  return settled ? *settled : x.graph().make(Ops::COPY, x.dtype(), {x, device_uop(device, &x.graph())}, arg);
}

// all2all reduce-scatter: device i pulls chunk i from every device and reduces it.
std::vector<ReducedChunk> reduce_scatter_all2all(const Allreduce& a) {
  UOp flat = a.buf.reshape({a.numel});
  std::vector<ReducedChunk> out(a.chunks.size());
  // on a wire each device's buffer is encoded once (an encode per device, not one per piece sent) where the
  // pieces' blocks are the buffer's: bfloat16 has none; FP8's where every chunk starts on a multiple of 32
  // (allreduce_chunks cuts there when numel is a multiple of 32). Else each piece is encoded (its blocks from its
  // start).
  bool aligned = std::all_of(a.chunks.begin(), a.chunks.end(), [](const auto& c) { return c.first % kWireBlock == 0; });
  std::optional<WireValue> sent;
  if (a.wired() && !on_the_wire(a.wire, a.dtype) && (a.wire == WireFormat::bfloat16 || aligned))
    sent = wire_encode(a.wire, flat);
  for (int64_t i = 0; i < a.ndev; ++i) {
    size_t c = static_cast<size_t>(i);
    if (a.empty(c)) continue;
    std::vector<UOp> on_i;  // on a wire the peers' pieces cross encoded; device i reads its own in place
    for (int64_t j = 0; j < a.ndev; ++j) {
      UOp piece = a.piece(settled_mselect(flat, j), c);
      if (j == i)
        on_i.push_back(a.acc(settled_copy(piece, a.to(i))));
      else if (sent)
        on_i.push_back(
            wire_decode(wire_send(wire_piece(wire_select(*sent, j), a.chunks[c].first, a.chunks[c].second), a.to(i))));
      else
        on_i.push_back(a.send(piece, i));
    }
    out[c] = {fold(a.op, on_i), i};
  }
  return out;
}

// ring reduce-scatter: in n-1 steps chunk i travels (i+first+step) -> (i+first+step+1), combined on
// arrival, and ends on device (i+first-1) mod n.
std::vector<ReducedChunk> reduce_scatter_ring(const Allreduce& a) {
  UOp flat = a.buf.reshape({a.numel});
  std::vector<ReducedChunk> out(a.chunks.size());
  for (int64_t i = 0; i < a.ndev; ++i) {
    size_t c = static_cast<size_t>(i);
    if (a.empty(c)) continue;
    UOp chunk = a.piece(flat, c), reduced = chunk;
    for (int64_t step = 0; step < a.ndev - 1; ++step) {
      int64_t src = (i + a.first + step) % a.ndev, dest = (i + a.first + step + 1) % a.ndev;
      UOp cp = a.send(reduced, dest, reduced.device().tuple() ? Arg(src) : Arg());
      reduced = cp.alu(a.op, {a.acc(settled_copy(chunk, a.to(dest), Arg(dest)))});
    }
    out[c] = {reduced, (i + a.first + a.ndev - 1) % a.ndev};
  }
  return out;
}

UOp allgather_chunk(const Allreduce& a, size_t i, const ReducedChunk& r, bool all2all) {
  int64_t start = r.start, len = a.chunks[i].second - a.chunks[i].first;
  UOp scratch = new_buffer(a.device, len, a.dtype, &a.buf.graph());
  UOp state = scratch.after({scratch.mselect(start).store(r.value)});
  if (all2all) {
    std::vector<UOp> stores;
    for (int64_t j = 0; j < a.ndev; ++j)
      if (j != start) stores.push_back(scratch.mselect(j).store(state.mselect(start).copy_to_device(a.to(j))));
    return state.after(stores);
  }
  for (int64_t step = 1; step < a.ndev; ++step) {  // forward the chunk around the ring
    int64_t prev = (start + step - 1) % a.ndev, dest = (start + step) % a.ndev;
    state = state.after({scratch.mselect(dest).store(state.mselect(prev).copy_to_device(a.to(dest)))});
  }
  return state;
}

UOp reassemble(const Allreduce& a, const std::vector<UOp>& parts) {
  std::vector<UOp> kept;
  for (size_t i = 0; i < parts.size(); ++i)
    if (!a.empty(i)) kept.push_back(parts[i]);
  return concat_select(kept, 0).reshape(a.shape);
}

UOp allgather_into_result(const Allreduce& a, const std::vector<ReducedChunk>& reduced, bool all2all,
                          const std::optional<UOp>& into) {
  UOp out = into ? *into : new_buffer(a.device, a.numel, a.dtype, &a.buf.graph());
  std::vector<UOp> stores;
  // on a wire other than the dtype, a copy crosses encoded; the value is dec(enc(.)) already, so exactly
  bool encode = a.wired() && !on_the_wire(a.wire, a.dtype);
  auto gather = [&](const UOp& x, int64_t d) {
    return encode ? wire_copy(a.wire, x, a.to(d)).cast(a.dtype) : x.copy_to_device(a.to(d));
  };
  if (a.device.single()) {  // one destination device: each reduced chunk copied straight into its range
    for (size_t i = 0; i < a.chunks.size(); ++i)
      if (!a.empty(i))
        stores.push_back(a.piece(out, i).store(a.wired() ? wire_copy(a.wire, reduced[i].value, a.device).cast(a.dtype)
                                                         : reduced[i].value.copy_to_device(a.device)));
    return out.after(stores).reshape(a.shape);
  }
  // every reduced chunk stored first, so that the plan (in the graph's order) queues no device's
  // reduce behind its copies of another chunk, which wait for that chunk's reduce
  std::vector<UOp> states(a.chunks.size());
  for (size_t i = 0; i < a.chunks.size(); ++i)
    if (!a.empty(i))
      states[i] =
          out.after({stores.emplace_back(a.piece(out.mselect(reduced[i].start), i).store(a.finish(reduced[i].value)))});
  for (size_t i = 0; i < a.chunks.size(); ++i) {
    if (a.empty(i)) continue;
    auto range = [&](int64_t d) { return a.piece(out.mselect(d), i); };  // chunk i of device d's block
    int64_t start = reduced[i].start;
    UOp state = states[i];
    if (all2all) {
      UOp from = a.piece(state.mselect(start), i);
      std::optional<WireValue> sent;  // on a wire the chunk is encoded once at its owner, for every peer
      if (encode) sent = wire_encode(a.wire, from);
      for (int64_t j = 0; j < a.ndev; ++j)
        if (j != start)
          stores.push_back(
              range(j).store(sent ? wire_decode(wire_send(*sent, a.to(j))).cast(a.dtype) : gather(from, j)));
      continue;
    }
    for (int64_t step = 1; step < a.ndev; ++step) {  // forward the chunk around the ring
      int64_t prev = (start + step - 1) % a.ndev, dest = (start + step) % a.ndev;
      UOp copy = gather(a.piece(state.mselect(prev), i), dest);
      state = out.after({stores.emplace_back(range(dest).store(copy))});
    }
  }
  return out.after(stores).reshape(a.shape);
}

UOp copy_source(const UOp& buf) {
  auto base = [](UOp u) {
    while (u.op() == Ops::RESHAPE) u = u.src(0);
    return u;
  };
  UOp under = base(buf);
  // a stack of one buffer's device values (a hierarchical form's group: leader_allreduce) reads in place too
  bool stacked = under.op() == Ops::MSTACK && std::all_of(under.src().begin(), under.src().end(), [&](const UOp& s) {
                   UOp m = base(s);
                   return m.op() == Ops::MSELECT && base(m.src(0)).op() == Ops::BUFFER;
                 });
  return (under.op() == Ops::BUFFER || stacked) && allreduce_in_place() ? buf : buf.contiguous();
}

namespace {

// The allreduce of no elements: nothing to reduce or move, the empty result made on the destination.
UOp nothing_to_reduce(const UOp& buf, const DeviceSpec& device) {
  return broadcast_to(const_uop(buf.dtype(), 0, device, &buf.graph()), buf.shape());
}

// leader form: reduce inside each group onto its leader, allreduce across the leaders, broadcast back.
UOp leader_allreduce(const UOp& buf, const UOp& red, const Groups& groups, const AllreduceSettings& s) {
  Ops op = static_cast<Ops>(red.arg_int());
  const DeviceTuple& devs = buf.device().names();
  // reduce inside each group onto its leader
  std::vector<UOp> inner;
  for (const auto& [g, idx] : groups) {
    std::vector<UOp> members;
    for (int64_t i : idx) members.push_back(buf.mselect(i));
    inner.push_back(mstack(members).allreduce(op, DeviceSpec(devs[static_cast<size_t>(idx[0])])));
  }
  // allreduce across the leaders
  DeviceTuple leaders;
  for (const auto& u : inner) leaders.push_back(u.device().name());
  UOp outer = mstack(inner).allreduce(op, DeviceSpec(leaders));
  // broadcast back inside each group
  auto from_leader = [&](const std::string& dev) {  // a device outside the tuple takes the first leader's
    int g = group_of(s, dev);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& p) { return p.first == g; });
    bool inside = std::find(devs.begin(), devs.end(), dev) != devs.end();
    int64_t b = inside && it != groups.end() ? it - groups.begin() : 0;
    return outer.mselect(b).copy_to_device(DeviceSpec(dev));
  };
  const DeviceSpec& target = red.src(1).device();
  if (target.single()) return from_leader(target.name());
  std::vector<UOp> out;
  for (const auto& d : target.names()) out.push_back(from_leader(d));
  return mstack(out);
}

// reduce_scatter form (see the top of the file), over groups of one size k.
UOp reduce_scatter_allreduce(UOp buf, Ops op, const DeviceSpec& device, const Groups& groups) {
  int64_t numel = prod(buf.shape()), k = static_cast<int64_t>(groups[0].second.size());
  if (numel == 0) return nothing_to_reduce(buf, device);
  buf = copy_source(buf);
  const DeviceTuple& devs = buf.device().names();
  // each group's buffers as an allreduce on the group's devices, reduce-scattered: device j holds chunk j
  std::vector<Allreduce> in_group;
  std::vector<std::vector<ReducedChunk>> reduced;
  for (const auto& [g, idx] : groups) {
    DeviceTuple members;
    std::vector<UOp> shards;
    for (int64_t i : idx) {
      members.push_back(devs[static_cast<size_t>(i)]);
      shards.push_back(buf.mselect(i));
    }
    in_group.push_back({mstack(shards), op, DeviceSpec(members), members, k, numel, buf.shape(), buf.dtype(),
                        allreduce_chunks(numel, k)});
    reduced.push_back(reduce_scatter_all2all(in_group.back()));
  }
  // chunk j allreduced across the devices j of the groups (reduced onto the destination when it is one device)
  std::vector<UOp> across(static_cast<size_t>(k));
  for (size_t j = 0; j < across.size(); ++j) {
    if (in_group[0].empty(j)) continue;
    DeviceTuple peers;
    std::vector<UOp> parts;
    for (size_t g = 0; g < groups.size(); ++g) {
      peers.push_back(in_group[g].devs[j]);
      parts.push_back(reduced[g][j].value);
    }
    across[j] = mstack(parts).allreduce(op, device.single() ? device : DeviceSpec(peers));
  }
  if (device.single()) return reassemble(in_group[0], across);
  // each group allgathers its chunks into its result; device idx[t] takes its group's result t
  std::vector<UOp> out(devs.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<ReducedChunk> mine(across.size());
    for (size_t j = 0; j < across.size(); ++j)
      if (!in_group[g].empty(j)) mine[j] = {across[j].mselect(static_cast<int64_t>(g)), static_cast<int64_t>(j)};
    UOp whole = allgather_into_result(in_group[g], mine, true);
    const std::vector<int64_t>& idx = groups[g].second;
    for (size_t t = 0; t < idx.size(); ++t) out[static_cast<size_t>(idx[t])] = whole.mselect(static_cast<int64_t>(t));
  }
  return mstack(out);
}

// The hierarchical allreduce of buf onto red's destination, in its form (hierarchical_form); nothing
// without groups. The reduce_scatter form first takes the reroutes of handle_allreduce (16-bit floats
// widened, a destination tuple other than buf's), so it only meets one destination device or buf's tuple.
optional<UOp> handle_allreduce_multirank(const UOp& buf, const UOp& red, const AllreduceSettings& s) {
  // deterministic: the flat fold over the whole tuple (handle_allreduce), never a pre-reduction in groups
  if (!buf.device().tuple() || s.deterministic) return std::nullopt;
  optional<Algorithm> form = hierarchical_form(buf.device().names(), s);
  if (!form) return std::nullopt;
  Groups groups = device_groups(buf.device().names(), s);
  if (*form == Algorithm::hierarchical) return leader_allreduce(buf, red, groups, s);
  Ops op = static_cast<Ops>(red.arg_int());
  const DeviceSpec& device = red.src(1).device();
  if (auto rerouted = reroute_allreduce(buf, op, device, s)) return rerouted;
  return reduce_scatter_allreduce(buf, op, device, groups);
}

// The allreduce of buf onto red's destination with the chosen algorithm (naive, ring or all2all).
optional<UOp> handle_allreduce(UOp buf, const UOp& red, const AllreduceSettings& s, const AllreduceChoices& choices) {
  if (!buf.device().tuple()) return std::nullopt;
  Ops op = static_cast<Ops>(red.arg_int());
  DeviceSpec device = red.src(1).device();
  // allreduce.wire: refused where it cannot apply, before any reroute (docs/compressed-wire.md)
  WireFormat wire = wire_for(device.single() ? Collective::reduce : Collective::allreduce, buf.dtype(), op, s);
  if (auto rerouted = reroute_allreduce(buf, op, device, s)) return rerouted;
  // the choice lower_multi made and reported; an allreduce it did not see (one this lowering made, or
  // one rebuilt on rewritten sources) chooses by the same function
  auto chosen = choices.find(red.node());
  Algorithm algo = chosen != choices.end() ? chosen->second.algorithm : allreduce_algorithm(red, s);
  const DeviceTuple& devs = buf.device().names();
  int64_t ndev = static_cast<int64_t>(devs.size()), numel = prod(buf.shape());
  // assigned into its source: the source's buffer takes the result (every chunk of it is read by that
  // chunk's reduce-scatter alone, which its allgather's stores wait for)
  std::optional<UOp> into;
  if (UOp under = buf; chosen != choices.end() && chosen->second.into_source && device == buf.device()) {
    while (under.op() == Ops::RESHAPE) under = under.src(0);
    if (under.op() == Ops::BUFFER) into = under;
  }
  buf = copy_source(buf);
  if (ndev == 1) return device.single() ? buf.mselect(0).copy_to_device(device) : buf;
  if (numel == 0) return nothing_to_reduce(buf, device);
  // one launch per device (collective.hpp), or MPI's collective on each rank's buffer (mpi)
  if (std::optional<FusedAlgorithm> fused = fused_algorithm(algo)) {
    if (device != buf.device()) throw InternalError("a fused allreduce onto other devices than its source's");
    // stored into a buffer, the source's or a new one that the result's memory takes (as the allgathers'
    // stores into theirs): the item writes the result in place, no copy after it
    UOp out = into ? *into : new_buffer(device, numel, buf.dtype(), &buf.graph());
    UOp value = fused_allreduce(buf.reshape(out.shape()), op, *fused);
    return out.after({out.store(value)}).reshape(buf.shape());
  }
  Allreduce a{buf, op, device, devs, ndev, numel, buf.shape(), buf.dtype(), {}};
  a.wire = wire;
  if (algo == Algorithm::naive) return naive_allreduce(a);
  a.chunks = allreduce_chunks(numel, ndev);
  bool direct = algo == Algorithm::all2all;
  // deterministic: every chunk folded in tuple order on its owner (the direct reduce-scatter), whatever the
  // allgather's movement; the ring's reduce-scatter would fold chunk c from device c on
  std::vector<ReducedChunk> reduced = direct || s.deterministic ? reduce_scatter_all2all(a) : reduce_scatter_ring(a);
  return allgather_into_result(a, reduced, direct, into);
}

// SHRINK pushed into an MSTACK: each device's shrink has _device_num substituted.
optional<UOp> mstack_early_shrink(const UOp& ms, const UOp& shrink) {
  std::vector<UOp> out;
  for (size_t i = 0; i < ms.src().size(); ++i) {
    const UOp& x = ms.src(i);
    UOp applied = at_device(shrink, x.op() == Ops::COPY ? x.src(0) : x, static_cast<int64_t>(i));
    out.push_back(x.op() == Ops::COPY ? applied.copy_to_device(x.device()) : applied.contiguous());
  }
  return mstack(out);
}

}  // namespace

// The tunable runtime.allreduce_in_place (core/params.hpp): rules call it per match.
bool allreduce_in_place() { return runtime_params().allreduce_in_place; }

std::vector<std::pair<int64_t, int64_t>> allreduce_chunks(int64_t numel, int64_t ndev) {
  int64_t factor = 1;
  for (int64_t f : {32, 16, 8, 4, 2})
    if (numel % f == 0) {
      factor = f;
      break;
    }
  int64_t base = (numel / factor) / ndev, left = (numel / factor) % ndev, at = 0;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t i = 0; i < ndev; ++i) {
    int64_t len = (i < left ? base + 1 : base) * factor;
    out.push_back({at, at + len});
    at += len;
  }
  return out;
}

PatternMatcher replace_allreduce(const AllreduceSettings& settings, AllreduceChoices choices) {
  UPat copy_src = UPat::var("x");
  return PatternMatcher({
      // a copy of constants, to the device it is on, from one device to a tuple (BROADCAST), of one
      // device of a tuple (COPY_TO_ONE): settle_copy
      {UPat(Ops::COPY).named("c").src({copy_src, UPat(Ops::DEVICE)}),
       [](const Match& m) {
         const UOp& c = m["c"];
         return settle_copy(m["x"], c.device(), c.arg());
       }},
      // one device of a tuple: of constants, of an MSTACK, before movement ops: settle_mselect
      {UPat(Ops::MSELECT).named("ms").src({UPat::var("x")}),
       [](const Match& m) { return settle_mselect(m["x"], m["ms"].arg_int()); }},
      // hierarchical first: it declines unless the devices form several groups
      {UPat(Ops::ALLREDUCE).named("red").src({UPat::var("buf"), UPat()}),
       [settings](const Match& m) { return handle_allreduce_multirank(m["buf"], m["red"], settings); }},
      {UPat(Ops::ALLREDUCE).named("red").src({UPat::var("buf"), UPat()}),
       [settings, choices](const Match& m) { return handle_allreduce(m["buf"], m["red"], settings, choices); }},
      // move SHRINK before MSTACK
      {UPat(Ops::SHRINK).named("shrink").src({UPat(Ops::MSTACK).named("ms")}),
       [](const Match& m) { return mstack_early_shrink(m["ms"], m["shrink"]); }},
  });
}

}  // namespace ringrt
