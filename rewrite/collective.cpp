#include "rewrite/collective.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/errors.hpp"
#include "rewrite/rules/multi.hpp"

namespace ringrt {

Algorithm algorithm_of(FusedAlgorithm a) {
  return a == FusedAlgorithm::oneshot   ? Algorithm::oneshot
         : a == FusedAlgorithm::twoshot ? Algorithm::twoshot
         : a == FusedAlgorithm::ring    ? Algorithm::ring_fused
                                        : Algorithm::mpi;
}

std::optional<FusedAlgorithm> fused_algorithm(Algorithm a) {
  for (FusedAlgorithm f : {FusedAlgorithm::oneshot, FusedAlgorithm::twoshot, FusedAlgorithm::ring, FusedAlgorithm::mpi})
    if (algorithm_of(f) == a) return f;
  return std::nullopt;
}

Collective collective_of(FusedCollective c) {
  return c == FusedCollective::allreduce        ? Collective::allreduce
         : c == FusedCollective::reduce_scatter ? Collective::reduce_scatter
         : c == FusedCollective::allgather      ? Collective::allgather
                                                : Collective::broadcast;
}

std::optional<FusedCollective> fused_collective(Collective c) {
  for (FusedCollective f : {FusedCollective::allreduce, FusedCollective::reduce_scatter, FusedCollective::allgather,
                            FusedCollective::broadcast})
    if (collective_of(f) == c) return f;
  return std::nullopt;
}

std::string_view fused_collective_name(FusedCollective c) { return collective_name(collective_of(c)); }

std::string_view fused_name(FusedAlgorithm a) { return algorithm_name(algorithm_of(a)); }

CollectiveArg collective_arg(const UOp& u) {
  if (u.op() != Ops::COLLECTIVE || !std::holds_alternative<std::vector<int64_t>>(u.arg()) ||
      (u.arg_ints().size() != 3 && u.arg_ints().size() != 4))
    throw InternalError("collective_arg: not a COLLECTIVE node: " + u.to_string());
  const std::vector<int64_t>& a = u.arg_ints();
  return {static_cast<Ops>(a[0]), static_cast<FusedAlgorithm>(a[1]), static_cast<FusedCollective>(a[2]),
          a.size() > 3 ? a[3] : 0};
}

UOp fused_allreduce(const UOp& buf, Ops op, FusedAlgorithm algorithm) {
  return buf.graph().make(Ops::COLLECTIVE, buf.dtype(), {buf, device_uop(buf.device(), &buf.graph())},
                          std::vector<int64_t>{static_cast<int64_t>(op), static_cast<int64_t>(algorithm), 0});
}

UOp fused_allgather(const UOp& buf, FusedAlgorithm algorithm) {
  return buf.graph().make(Ops::COLLECTIVE, buf.dtype(), {buf, device_uop(buf.device(), &buf.graph())},
                          std::vector<int64_t>{static_cast<int64_t>(Ops::ADD), static_cast<int64_t>(algorithm), 2});
}

UOp fused_broadcast(const UOp& buf, int64_t root, FusedAlgorithm algorithm) {
  return buf.graph().make(
      Ops::COLLECTIVE, buf.dtype(), {buf, device_uop(buf.device(), &buf.graph())},
      std::vector<int64_t>{static_cast<int64_t>(Ops::ADD), static_cast<int64_t>(algorithm), 3, root});
}

UOp fused_reduce_scatter(const UOp& buf, Ops op, FusedAlgorithm algorithm) {
  return buf.graph().make(Ops::COLLECTIVE, buf.dtype(), {buf, device_uop(buf.device(), &buf.graph())},
                          std::vector<int64_t>{static_cast<int64_t>(op), static_cast<int64_t>(algorithm), 1});
}

namespace {

// The chunks ring_fused moves for collective c of numel elements per device on n devices: the allreduce's
// (allreduce_chunks, as the lowered ring), a reduce_scatter's n equal ones, an allgather's n inputs.
std::vector<std::pair<int64_t, int64_t>> ring_chunks(FusedCollective c, int64_t numel, int64_t n) {
  if (c == FusedCollective::allreduce) return allreduce_chunks(numel, n);
  if (c == FusedCollective::reduce_scatter) return equal_chunks(numel, n);
  return equal_chunks(n * numel, n);
}

// Elements [begin, end) of b.
HostBuffer slice(const HostBuffer& b, int64_t begin, int64_t end) {
  HostBuffer out(b.dtype, Shape{end - begin});
  size_t item = itemsize(b.dtype);
  std::memcpy(out.bytes.data(), b.bytes.data() + static_cast<size_t>(begin) * item, out.bytes.size());
  return out;
}

// ring_fused's fold (allreduce.cpp reduce_scatter_ring): chunk c of the flat values folded round the
// ring from device c + first, (x_{c+first} op x_{c+first+1}) op ..., first 0 for an allreduce (its
// allreduce_chunks) and 1 for a reduce_scatter (n equal chunks).
HostBuffer ring_fold(const CollectiveArg& a, const std::vector<HostBuffer>& in,
                     const std::function<HostBuffer(Ops, const HostBuffer&, const HostBuffer&)>& combine) {
  auto n = static_cast<int64_t>(in.size());
  int64_t numel = static_cast<int64_t>(in.at(0).bytes.size() / itemsize(in[0].dtype));
  bool rs = a.collective == FusedCollective::reduce_scatter;
  std::vector<std::pair<int64_t, int64_t>> chunks = ring_chunks(a.collective, numel, n);
  HostBuffer out = in[0];
  size_t item = itemsize(out.dtype);
  for (int64_t c = 0; c < n; ++c) {
    auto [b, e] = chunks[static_cast<size_t>(c)];
    if (b == e) continue;
    int64_t first = (c + (rs ? 1 : 0)) % n;
    HostBuffer acc = slice(in[static_cast<size_t>(first)], b, e);
    for (int64_t k = 1; k < n; ++k) acc = combine(a.op, acc, slice(in[static_cast<size_t>((first + k) % n)], b, e));
    std::memcpy(out.bytes.data() + static_cast<size_t>(b) * item, acc.bytes.data(), acc.bytes.size());
  }
  return out;
}

}  // namespace

std::vector<HostBuffer> collective_values(
    const UOp& u, const std::vector<HostBuffer>& in, size_t width,
    const std::function<HostBuffer(Ops, const HostBuffer&, const HostBuffer&)>& combine) {
  if (u.op() != Ops::ALLREDUCE && u.op() != Ops::COLLECTIVE)
    throw InternalError("collective_values: not a collective: " + u.to_string());
  CollectiveArg a = u.op() == Ops::COLLECTIVE ? collective_arg(u)
                                              : CollectiveArg{static_cast<Ops>(u.arg_int()), FusedAlgorithm::oneshot};
  if (a.collective == FusedCollective::broadcast)
    return std::vector<HostBuffer>(width, in.at(static_cast<size_t>(a.root)));
  if (a.collective == FusedCollective::allgather) {  // the devices' values one after another, on each
    HostBuffer all(u.dtype(), u.shape());
    size_t at = 0;
    for (const HostBuffer& part : in) {
      std::memcpy(all.bytes.data() + at, part.bytes.data(), part.bytes.size());
      at += part.bytes.size();
    }
    return std::vector<HostBuffer>(width, all);
  }
  HostBuffer acc = a.algorithm == FusedAlgorithm::ring ? ring_fold(a, in, combine) : in.at(0);
  if (a.algorithm != FusedAlgorithm::ring)
    for (size_t j = 1; j < in.size(); ++j) acc = combine(a.op, acc, in[j]);
  if (a.collective == FusedCollective::allreduce) return std::vector<HostBuffer>(width, acc);
  std::vector<HostBuffer> out;
  for (size_t d = 0; d < width; ++d) {  // reduce_scatter: device d, chunk d of the flat fold
    HostBuffer chunk(u.dtype(), u.shape());
    std::memcpy(chunk.bytes.data(), acc.bytes.data() + d * chunk.bytes.size(), chunk.bytes.size());
    out.push_back(std::move(chunk));
  }
  return out;
}

namespace {

// [b, e) cut into `slices` near-equal parts: part j.
std::pair<int64_t, int64_t> slice_of(std::pair<int64_t, int64_t> range, int64_t slices, int64_t j) {
  auto [b, e] = range;
  return {b + (e - b) * j / slices, b + (e - b) * (j + 1) / slices};
}

// ring_fused's steps on device d (rewrite/collective.hpp): each chunk's slices travel round the ring as
// the lowered ring's do (allreduce.cpp reduce_scatter_ring, allgather_chunk), every step a slice taken
// from the previous device once it signalled it, the step numbered u = step * slices + j signalling once.
// Reduce-scatter step s (0 .. n-2): chunk (d - s - 1 - first) of the previous device's input (s = 0) or of
// what it combined at step s - 1 (its output; a reduce_scatter's scratch, whose last step stores into
// the output at chunk d), op this device's input. Allgather step t (0 .. n-2): chunk (d - t) of the
// previous device's output into this one's, once the next device has taken its step t of the
// reduce-scatter (it read that chunk of this output, or of the input in place). An allgather's first
// step copies its own input into its place.
std::vector<FusedStep> ring_steps(int64_t n, int64_t numel, int64_t d, FusedCollective c, int64_t slices) {
  using K = FusedStep::Kind;
  const int64_t prev = (d + n - 1) % n, next = (d + 1) % n;
  auto mod = [n](int64_t x) { return ((x % n) + n) % n; };
  std::vector<std::pair<int64_t, int64_t>> chunks = ring_chunks(c, numel, n);
  auto part = [&](int64_t chunk, int64_t j) { return slice_of(chunks[static_cast<size_t>(chunk)], slices, j); };
  std::vector<FusedStep> out;
  int64_t units = 0;                      // the steps so far, each of `slices` slices
  if (c != FusedCollective::allgather) {  // the reduce-scatter
    const int64_t first = c == FusedCollective::reduce_scatter ? 1 : 0;
    for (int64_t s = 0; s + 1 < n; ++s, ++units)
      for (int64_t j = 0; j < slices; ++j) {
        auto [b, e] = part(mod(d - s - 1 - first), j);
        FusedStep st{K::combine, b, e, prev};
        st.from_input = s == 0;
        st.from_scratch = s > 0 && first == 1;
        st.to_scratch = first == 1 && s + 2 < n;
        if (first == 1 && !st.to_scratch) st.out_shift = chunks[static_cast<size_t>(d)].first;  // chunk d: the output
        if (s > 0) st.waits[0] = {prev, (s - 1) * slices + j + 1};
        st.signal = true;
        out.push_back(st);
      }
  } else {  // an allgather's own input into its place
    for (int64_t j = 0; j < slices; ++j) {
      auto [b, e] = part(d, j);
      FusedStep st{K::gather, b - d * numel, e - d * numel, d};
      st.out_shift = -d * numel;
      st.from_input = true;
      st.signal = true;
      out.push_back(st);
    }
    units = 1;
  }
  if (c != FusedCollective::reduce_scatter) {  // the allgather, from the previous device's output
    const int64_t last = units;                // the step after which the previous device holds its first chunk
    for (int64_t t = 0; t + 1 < n; ++t)
      for (int64_t j = 0; j < slices; ++j) {
        int64_t chunk = c == FusedCollective::allgather ? mod(d - t - 1) : mod(d - t);
        auto [b, e] = part(chunk, j);
        FusedStep st{K::gather, b, e, prev};
        st.waits[0] = {prev, (last - 1 + t) * slices + j + 1};
        // an allreduce overwrites what the next device reads at its reduce-scatter step t
        if (c == FusedCollective::allreduce) st.waits[1] = {next, t * slices + j + 1};
        st.signal = true;
        out.push_back(st);
      }
  }
  out.push_back({K::barrier});  // no device reads this one's memory any more
  return out;
}

// A broadcast's steps on device d: oneshot and twoshot copy the root's input whole; ring_fused forwards
// `slices` slices down the chain root, root+1, ...: the root copies its own input, slice by slice, and device
// d at position k = d - root (mod n) takes slice j from the previous device's output once it has it. Before
// its slices device k has k empty steps that only start phases: where the steps run phase by phase (the cpu
// backend's inline path, the default of Device::launch_collective) its slice j then comes after the previous
// device's slice j.
std::vector<FusedStep> broadcast_steps(FusedAlgorithm a, int64_t n, int64_t numel, int64_t d, int64_t root,
                                       int64_t slices) {
  using K = FusedStep::Kind;
  std::vector<FusedStep> out;
  const int64_t k = ((d - root) % n + n) % n, prev = (d + n - 1) % n;
  if (a != FusedAlgorithm::ring || n < 2) {
    FusedStep copy{K::gather, 0, numel, root};
    copy.from_input = true;
    if (numel > 0) out.push_back(copy);
    out.push_back({K::barrier});  // no device reads the root's input any more
    return out;
  }
  for (int64_t s = 0; s < k; ++s) {  // (phases only: a wait that has passed)
    FusedStep spacer{K::gather, 0, 0, prev};
    spacer.waits[0] = {prev, 0};
    out.push_back(spacer);
  }
  for (int64_t j = 0; j < slices; ++j) {
    auto [b, e] = slice_of({0, numel}, slices, j);
    FusedStep st{K::gather, b, e, k == 0 ? d : prev};
    st.from_input = k == 0;
    if (k > 0) st.waits[0] = {prev, j + 1};
    st.signal = true;
    out.push_back(st);
  }
  out.push_back({K::barrier});  // no device reads another's memory any more
  return out;
}

}  // namespace

std::vector<FusedStep> fused_steps(FusedAlgorithm a, int64_t ndev, int64_t numel, int64_t d, bool in_place, bool push,
                                   FusedCollective c, int64_t slices, int64_t root) {
  using K = FusedStep::Kind;
  std::vector<FusedStep> out;
  auto add = [&](FusedStep s) {
    if (s.kind == K::barrier || s.begin < s.end) out.push_back(s);
  };
  if (a == FusedAlgorithm::mpi) return out;  // MPI's collective: no launch on the devices
  if (c == FusedCollective::broadcast) return broadcast_steps(a, ndev, numel, d, root, slices);
  if (a == FusedAlgorithm::ring && ndev > 1) return ring_steps(ndev, numel, d, c, slices);
  if (c == FusedCollective::allgather) {  // every device's input into its range, this device's own first
    for (int64_t k = 0; k < ndev; ++k) {
      int64_t peer = (d + k) % ndev;
      FusedStep gather{K::gather, 0, numel, peer};
      gather.out_shift = -peer * numel;
      gather.from_input = true;
      add(gather);
    }
    add({K::barrier});  // no device reads this one's input any more
    return out;
  }
  if (c == FusedCollective::reduce_scatter) {  // chunk d of every input into this device's output
    int64_t len = numel / ndev;
    FusedStep combine{K::combine, d * len, (d + 1) * len};
    combine.out_shift = d * len;
    add(combine);
    add({K::barrier});  // no device reads this one's input any more
    return out;
  }
  if (a == FusedAlgorithm::oneshot) {
    add({K::combine, 0, numel, -1, in_place});
    add({K::barrier});  // no device reads this one's input any more
    if (in_place) add({K::publish, 0, numel});
    return out;
  }
  std::vector<std::pair<int64_t, int64_t>> chunks = allreduce_chunks(numel, ndev);
  auto [b, e] = chunks.at(static_cast<size_t>(d));
  add({K::combine, b, e, -1, false, push});
  add({K::barrier});
  if (push) return out;
  for (int64_t k = 1; k < ndev; ++k) {  // from the next device on: the n devices read n different peers at once
    int64_t peer = (d + k) % ndev;
    add({K::gather, chunks[static_cast<size_t>(peer)].first, chunks[static_cast<size_t>(peer)].second, peer});
  }
  add({K::barrier});  // no device reads this one's output any more
  return out;
}

int64_t fused_barriers(const std::vector<FusedStep>& steps) {
  return std::count_if(steps.begin(), steps.end(),
                       [](const FusedStep& s) { return s.kind == FusedStep::Kind::barrier; });
}

int64_t fused_signals(const std::vector<FusedStep>& steps) {
  return std::count_if(steps.begin(), steps.end(), [](const FusedStep& s) { return s.signal; });
}

int64_t ring_slices(int64_t ndev, int64_t chunk_bytes) {
  // a device's steps: 2 (n-1) per slice at most, and the barrier
  int64_t most = std::max<int64_t>(1, (kFusedMaxSteps - 1) / std::max<int64_t>(1, 2 * (ndev - 1)));
  return std::clamp<int64_t>((chunk_bytes + kRingSliceBytes - 1) / kRingSliceBytes, 1, most);
}

bool fused_needs_scratch(FusedAlgorithm a, bool in_place, FusedCollective c) {
  return (c == FusedCollective::allreduce && a == FusedAlgorithm::oneshot && in_place) ||
         (c == FusedCollective::reduce_scatter && a == FusedAlgorithm::ring);
}

}  // namespace ringrt
