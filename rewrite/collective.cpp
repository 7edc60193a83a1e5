#include "rewrite/collective.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "rewrite/errors.hpp"
#include "rewrite/rules/multi.hpp"

namespace ringrt {

std::string_view fused_collective_name(FusedCollective c) {
  return c == FusedCollective::allreduce        ? "allreduce"
         : c == FusedCollective::reduce_scatter ? "reduce_scatter"
                                                : "allgather";
}

std::string_view fused_name(FusedAlgorithm a) { return a == FusedAlgorithm::oneshot ? "oneshot" : "twoshot"; }

std::optional<FusedAlgorithm> fused_algorithm(std::string_view name) {
  if (name == "oneshot") return FusedAlgorithm::oneshot;
  if (name == "twoshot") return FusedAlgorithm::twoshot;
  return std::nullopt;
}

CollectiveArg collective_arg(const UOp& u) {
  if (u.op() != Ops::COLLECTIVE || !std::holds_alternative<std::vector<int64_t>>(u.arg()) || u.arg_ints().size() != 3)
    throw InternalError("collective_arg: not a COLLECTIVE node: " + u.to_string());
  const std::vector<int64_t>& a = u.arg_ints();
  return {static_cast<Ops>(a[0]), static_cast<FusedAlgorithm>(a[1]), static_cast<FusedCollective>(a[2])};
}

UOp fused_allreduce(const UOp& buf, Ops op, FusedAlgorithm algorithm) {
  return buf.graph().make(Ops::COLLECTIVE, buf.dtype(), {buf, device_uop(buf.device(), &buf.graph())},
                          std::vector<int64_t>{static_cast<int64_t>(op), static_cast<int64_t>(algorithm), 0});
}

UOp fused_allgather(const UOp& buf, FusedAlgorithm algorithm) {
  return buf.graph().make(Ops::COLLECTIVE, buf.dtype(), {buf, device_uop(buf.device(), &buf.graph())},
                          std::vector<int64_t>{static_cast<int64_t>(Ops::ADD), static_cast<int64_t>(algorithm), 2});
}

UOp fused_reduce_scatter(const UOp& buf, Ops op, FusedAlgorithm algorithm) {
  return buf.graph().make(Ops::COLLECTIVE, buf.dtype(), {buf, device_uop(buf.device(), &buf.graph())},
                          std::vector<int64_t>{static_cast<int64_t>(op), static_cast<int64_t>(algorithm), 1});
}

std::vector<HostBuffer> collective_values(
    const UOp& u, const std::vector<HostBuffer>& in, size_t width,
    const std::function<HostBuffer(Ops, const HostBuffer&, const HostBuffer&)>& combine) {
  if (u.op() != Ops::ALLREDUCE && u.op() != Ops::COLLECTIVE)
    throw InternalError("collective_values: not a collective: " + u.to_string());
  CollectiveArg a = u.op() == Ops::COLLECTIVE ? collective_arg(u)
                                              : CollectiveArg{static_cast<Ops>(u.arg_int()), FusedAlgorithm::oneshot};
  if (a.collective == FusedCollective::allgather) {  // the devices' values one after another, on each
    HostBuffer all(u.dtype(), u.shape());
    size_t at = 0;
    for (const HostBuffer& part : in) {
      std::memcpy(all.bytes.data() + at, part.bytes.data(), part.bytes.size());
      at += part.bytes.size();
    }
    return std::vector<HostBuffer>(width, all);
  }
  HostBuffer acc = in.at(0);
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

std::vector<FusedStep> fused_steps(FusedAlgorithm a, int64_t ndev, int64_t numel, int64_t d, bool in_place, bool push,
                                   FusedCollective c) {
  using K = FusedStep::Kind;
  std::vector<FusedStep> out;
  auto add = [&](FusedStep s) {
    if (s.kind == K::barrier || s.begin < s.end) out.push_back(s);
  };
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

int fused_barriers(FusedAlgorithm a, bool in_place, bool push, FusedCollective c) {
  std::vector<FusedStep> steps = fused_steps(a, 2, 2, 0, in_place, push, c);  // the same count on every device
  return static_cast<int>(
      std::count_if(steps.begin(), steps.end(), [](const FusedStep& s) { return s.kind == FusedStep::Kind::barrier; }));
}

bool fused_needs_scratch(FusedAlgorithm a, bool in_place, FusedCollective c) {
  return c == FusedCollective::allreduce && a == FusedAlgorithm::oneshot && in_place;
}

}  // namespace ringrt
