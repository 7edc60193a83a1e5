// Allreduce lowering (reference: multi.py handle_allreduce, handle_allreduce_multirank,
// replace_allreduce; allreduce-without-mstack.diff).
//
// Algorithms, for n devices each holding a buffer of numel elements:
// - naive: every device copies every other device's buffer into a per-source scratch buffer (MSELECT
//   stores) and combines them with its own, read in place: n(n-1) copies, one kernel.
// - ring: the buffer is cut into n chunks (see allreduce_chunks). Reduce-scatter: in n-1 steps chunk i
//   travels (i+step) -> (i+step+1), combined on arrival, and ends reduced on device (i-1) mod n.
//   Allgather: each reduced chunk is forwarded around the ring into a scratch buffer by MSELECT stores.
//   2n(n-1) copies, each over a ring edge.
// - all2all: device i pulls chunk i from every other device and reduces it, then pushes the result
//   to all: 2n(n-1) copies, fewer serial steps than ring.
// - hierarchical: with device groups, reduce inside each group onto its leader (leaders first), allreduce
//   across the leaders, broadcast back inside each group.
// Choice (tinygrad's): all2all when ALL2ALL >= 2, or ALL2ALL >= 1 with n > 2 and numel > threshold;
// else ring likewise with RING; else naive. 256000 elements is tinygrad's empirical crossover below
// which ring's extra kernel launches and chunk reassembly lose to naive.
// The reduction uses the op's own combine (ADD, MUL, MAX, MIN); the reassembly of the disjoint chunks
// selects each element from its chunk (never a sum with zeros, which would turn -0.0 into +0.0).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string_view>

#include "rewrite/errors.hpp"
#include "rewrite/rules/multi.hpp"

namespace ringrt {
namespace {

using std::optional;

int group_of(const AllreduceSettings& s, const std::string& dev) {
  auto it = s.groups.find(dev);
  return it == s.groups.end() ? -1 : it->second;
}

// Groups of buf's devices in order of first appearance, each with its leader first.
std::vector<std::pair<int, std::vector<int64_t>>> device_groups(const DeviceTuple& devs, const AllreduceSettings& s) {
  std::vector<std::pair<int, std::vector<int64_t>>> groups;
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

bool is_hierarchical(const DeviceTuple& devs, const AllreduceSettings& s) {
  auto groups = device_groups(devs, s);
  return groups.size() > 1 &&
         std::any_of(groups.begin(), groups.end(), [](const auto& g) { return g.second.size() > 1; });
}

UOp fold(Ops op, const std::vector<UOp>& terms) {
  UOp acc = terms.at(0);
  for (size_t i = 1; i < terms.size(); ++i) acc = acc.alu(op, {terms[i]});
  return acc;
}

optional<UOp> handle_allreduce_multirank(const UOp& buf, const UOp& red, const AllreduceSettings& s) {
  if (!buf.device().tuple() || !is_hierarchical(buf.device().names(), s)) return std::nullopt;
  Ops op = static_cast<Ops>(red.arg_int());
  const DeviceTuple& devs = buf.device().names();
  auto groups = device_groups(devs, s);
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

optional<UOp> handle_allreduce(UOp buf, const UOp& red, const AllreduceSettings& s) {
  if (!buf.device().tuple()) return std::nullopt;
  Ops op = static_cast<Ops>(red.arg_int());
  DeviceSpec device = red.src(1).device();
  const DeviceTuple& devs = buf.device().names();
  int64_t ndev = static_cast<int64_t>(devs.size()), numel = prod(buf.shape());
  Shape shape = buf.shape();
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

  std::string algo = allreduce_algorithm(red, s);
  // contiguous before it is copied, unless it is a buffer already (in place: allreduce_in_place)
  UOp under = buf;
  while (under.op() == Ops::RESHAPE) under = under.src(0);
  if (under.op() != Ops::BUFFER || !allreduce_in_place()) buf = buf.contiguous();

  if (ndev == 1) return device.single() ? buf.mselect(0).copy_to_device(device) : buf;
  if (numel == 0)  // nothing to reduce or move: the empty result, made on the destination
    return broadcast_to(const_uop(dtype, 0, device, &buf.graph()), shape);

  if (algo == "naive") {
    if (device.single()) {
      std::vector<UOp> copies;
      for (int64_t i = 0; i < ndev; ++i) copies.push_back(buf.mselect(i).copy_to_device(device));
      return fold(op, copies);
    }
    // copies gather into per-source scratch buffers by MSELECT stores; a device reads its own shard in place
    UOp dnum = device_num(ndev, &buf.graph());
    std::vector<UOp> terms;
    for (int64_t i = 0; i < ndev; ++i) {
      UOp scratch = new_buffer(device, numel, dtype, &buf.graph());
      std::vector<UOp> stores;
      for (int64_t j = 0; j < ndev; ++j)
        if (j != i)
          stores.push_back(scratch.mselect(j).store(
              buf.mselect(i).reshape({numel}).copy_to_device(DeviceSpec(devs[static_cast<size_t>(j)]))));
      UOp mine = broadcast_to(dnum.eq(const_uop(DType::int32, static_cast<double>(i), &buf.graph())), shape);
      terms.push_back(mine.where(buf, scratch.after(stores).reshape(shape)));
    }
    return fold(op, terms);
  }

  auto chunks = allreduce_chunks(numel, ndev);
  bool all2all = algo == "all2all";
  UOp flat = buf.reshape({numel});
  auto piece = [&](const UOp& x, std::pair<int64_t, int64_t> c) { return x.shrink(spans({c})); };
  auto to = [&](int64_t d) { return DeviceSpec(devs[static_cast<size_t>(d)]); };
  // chunks may be empty (fewer elements than devices): an empty chunk moves nothing and is never built
  auto empty = [&](size_t i) { return chunks[i].first == chunks[i].second; };

  // reduce-scatter: with all2all chunk i is reduced on device i, with ring it ends on device (i-1) mod n
  std::vector<UOp> reduced_chunks(chunks.size());
  std::vector<int64_t> starts(chunks.size());
  for (int64_t i = 0; i < ndev; ++i) {
    auto c = chunks[static_cast<size_t>(i)];
    if (empty(static_cast<size_t>(i))) continue;
    if (all2all) {
      std::vector<UOp> on_i;
      for (int64_t j = 0; j < ndev; ++j) on_i.push_back(piece(flat.mselect(j), c).copy_to_device(to(i)));
      reduced_chunks[static_cast<size_t>(i)] = fold(op, on_i);
      starts[static_cast<size_t>(i)] = i;
    } else {
      UOp chunk = piece(flat, c), reduced = chunk;
      for (int64_t step = 0; step < ndev - 1; ++step) {
        int64_t src = (i + step) % ndev, dest = (i + step + 1) % ndev;
        UOp cp = reduced.device().tuple() ? reduced.copy_to_device(to(dest), src) : reduced.copy_to_device(to(dest));
        reduced = cp.alu(op, {chunk.copy_to_device(to(dest), dest)});
      }
      reduced_chunks[static_cast<size_t>(i)] = reduced;
      starts[static_cast<size_t>(i)] = (i + ndev - 1) % ndev;
    }
  }

  // reassemble: the non-empty chunks side by side, each element selected from the chunk that holds it
  auto reassemble = [&](const std::vector<UOp>& parts) {
    std::vector<UOp> kept;
    for (size_t i = 0; i < parts.size(); ++i)
      if (!empty(i)) kept.push_back(parts[i]);
    return concat_select(kept, 0).reshape(shape);
  };

  // single device output: copy the reduced chunks straight to it
  if (device.single()) {
    std::vector<UOp> parts(chunks.size());
    for (size_t i = 0; i < chunks.size(); ++i)
      if (!empty(i)) parts[i] = reduced_chunks[i].copy_to_device(device);
    return reassemble(parts);
  }

  // allgather: store each chunk into an MSELECT of a scratch buffer, then copy it to the other devices
  std::vector<UOp> gathered(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (empty(i)) continue;
    int64_t start = starts[i], len = chunks[i].second - chunks[i].first;
    UOp scratch = new_buffer(device, len, dtype, &buf.graph());
    UOp state = scratch.after({scratch.mselect(start).store(reduced_chunks[i])});
    if (all2all) {
      std::vector<UOp> stores;
      for (int64_t j = 0; j < ndev; ++j)
        if (j != start) stores.push_back(scratch.mselect(j).store(state.mselect(start).copy_to_device(to(j))));
      state = state.after(stores);
    } else {
      for (int64_t step = 1; step < ndev; ++step) {  // forward the chunk around the ring
        int64_t prev = (start + step - 1) % ndev, dest = (start + step) % ndev;
        state = state.after({scratch.mselect(dest).store(state.mselect(prev).copy_to_device(to(dest)))});
      }
    }
    gathered[i] = state;
  }
  return reassemble(gathered);
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

bool allreduce_in_place() {
  static const bool on = env_switch("RINGRT_ALLREDUCE_IN_PLACE", true);
  return on;
}

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

std::string allreduce_algorithm(const UOp& red, const AllreduceSettings& s) {
  const UOp& buf = red.src(0);
  if (buf.device().tuple() && is_hierarchical(buf.device().names(), s)) return "hierarchical";
  int64_t ndev = static_cast<int64_t>(buf.device().count()), numel = prod(buf.shape());
  bool big = ndev > 2 && numel > s.ring_threshold;
  if (s.all2all >= 2 || (big && s.all2all >= 1)) return "all2all";
  if (s.ring >= 2 || (big && s.ring >= 1)) return "ring";
  return "naive";
}

PatternMatcher replace_allreduce(const AllreduceSettings& settings) {
  UPat copy_src = UPat::var("x");
  return PatternMatcher({
      // a copy of a value made of constants alone is that value made on the destination
      {UPat(Ops::COPY).src({copy_src, UPat(Ops::DEVICE).named("device")}),
       [](const Match& m) { return const_on_device(m["x"], m["device"].device()); }},
      // one device's value of constants on a tuple is the same constants on that device
      {UPat(Ops::MSELECT).named("ms").src({UPat::var("x")}),
       [](const Match& m) {
         const UOp& ms = m["ms"];
         return const_on_device(m["x"], ms.device());
       }},
      // hierarchical first: it declines unless the devices form several groups
      {UPat(Ops::ALLREDUCE).named("red").src({UPat::var("buf"), UPat()}),
       [settings](const Match& m) { return handle_allreduce_multirank(m["buf"], m["red"], settings); }},
      {UPat(Ops::ALLREDUCE).named("red").src({UPat::var("buf"), UPat()}),
       [settings](const Match& m) { return handle_allreduce(m["buf"], m["red"], settings); }},
      // a copy to the device a value already lives on is the value
      {UPat(Ops::COPY).named("c").src({copy_src, UPat(Ops::DEVICE)}),
       [](const Match& m) -> optional<UOp> {
         const UOp &c = m["c"], &x = m["x"];
         if (x.device().single() && c.device() == x.device() && std::holds_alternative<std::monostate>(c.arg()))
           return x;
         return std::nullopt;
       }},
      // BROADCAST: a copy from one device to a tuple is one copy per device, stacked
      {UPat(Ops::COPY).named("c").src({copy_src, UPat(Ops::DEVICE)}),
       [](const Match& m) -> optional<UOp> {
         const UOp &c = m["c"], &x = m["x"];
         if (!c.device().tuple() || !x.device().single()) return std::nullopt;
         std::vector<UOp> out;
         for (const auto& d : c.device().names()) out.push_back(x.copy_to_device(DeviceSpec(d)));
         return mstack(out);
       }},
      // COPY_TO_ONE: from a tuple to one device, copy the chosen shard (default the first)
      {UPat(Ops::COPY).named("c").src({copy_src, UPat(Ops::DEVICE)}),
       [](const Match& m) -> optional<UOp> {
         const UOp &c = m["c"], &x = m["x"];
         if (!x.device().tuple()) return std::nullopt;
         int64_t i = std::holds_alternative<int64_t>(c.arg()) ? c.arg_int() : 0;
         return x.mselect(i).copy_to_device(c.device());
       }},
      // MSELECT on MSTACK is the stacked node
      {UPat(Ops::MSELECT).named("ms").src({UPat(Ops::MSTACK).named("mstack")}),
       [](const Match& m) { return optional<UOp>(m["mstack"].src(static_cast<size_t>(m["ms"].arg_int()))); }},
      // move SHRINK before MSTACK
      {UPat(Ops::SHRINK).named("shrink").src({UPat(Ops::MSTACK).named("ms")}),
       [](const Match& m) { return mstack_early_shrink(m["ms"], m["shrink"]); }},
      // move MSELECT before movement ops, fixing _device_num to the selected device
      {UPat(Ops::MSELECT).named("ms").src({UPat(group::movement()).named("v").src({UPat::var("s")})}),
       [](const Match& m) {
         int64_t i = m["ms"].arg_int();
         return optional<UOp>(at_device(m["v"], m["s"].mselect(i), i));
       }},
  });
}

}  // namespace ringrt
