// The collectives besides allreduce as the tests call them and as the host computes them, shared by the
// lowering tests (test/rewrite/rules/test_collectives.cpp), the GPU tests (test/gpu/test_hip_collectives.cpp)
// and the collectives kernel matrix (test/support/collectives_matrix.hpp). The host's answers are plain
// loops over each device's local values (NCCL's definitions of ReduceScatter, AllGather, AlltoAll,
// Broadcast, Reduce), independent of ringrt's lowering.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "rewrite/host_buffer.hpp"
#include "runtime/api/tensor.hpp"

namespace ringrt::test {

// The collective `kind` ("reduce_scatter", "allgather", "alltoall", "broadcast", "reduce") of x, a tensor
// sharded on a device tuple: reduce op `op` (reduce_scatter along `axis`, reduce_to), root index `root`
// (broadcast to x's devices, reduce_to). Lazy, as the Tensor methods are.
inline Tensor apply_collective(const std::string& kind, const Tensor& x, Ops op, int root, int axis = 0) {
  if (kind == "reduce_scatter") return x.reduce_scatter(op, axis);
  if (kind == "allgather") return x.allgather();
  if (kind == "alltoall") return x.alltoall();
  if (kind == "broadcast") return x.broadcast(root, x.devices());
  return x.reduce_to(root, op);
}

// The algorithm the schedule names for kind with algo ("naive", "ring", "all2all") forced: reduce's is
// the allreduce's; alltoall is always direct (all2all); the others are ring or direct.
inline std::string expected_algorithm(const std::string& kind, const std::string& algo) {
  if (kind == "reduce") return algo;
  return algo == "ring" && kind != "alltoall" ? "ring" : "all2all";
}

// ndev local values of `shape`: small integers in [-4, 4] (exact in every dtype, and so is every sum of 8
// of them), different per device and per seed.
inline std::vector<HostBuffer> collective_locals(int ndev, const Shape& shape, DType dtype, int seed) {
  std::vector<HostBuffer> out;
  for (int d = 0; d < ndev; ++d) {
    HostBuffer b(dtype, shape);
    for (int64_t i = 0; i < b.numel(); ++i) b.set(i, static_cast<double>((i * 7 + d * 5 + seed * 3) % 9 - 4));
    out.push_back(b);
  }
  return out;
}

// Element e (flat) of the reduction with op (ADD or MAX) over the devices' local values.
inline double host_reduced(const std::vector<HostBuffer>& in, Ops op, int64_t e) {
  double acc = in[0].get(e);
  for (size_t d = 1; d < in.size(); ++d) acc = op == Ops::ADD ? acc + in[d].get(e) : std::max(acc, in[d].get(e));
  return acc;
}

// The host's answer to apply_collective(kind, x, op, root) with axis 0, x sharded on axis 0 with locals
// `in` (one per device, numel elements each): the flat values of each device of the result, one buffer
// (reduce: the root's only). reduce_scatter: device j's chunk j of the reduction (numel / n elements);
// allgather: every device's values in device order; alltoall: slot i of device j is device i's chunk j;
// broadcast: the root's values.
inline std::vector<std::vector<double>> host_collective(const std::string& kind, const std::vector<HostBuffer>& in,
                                                        Ops op, int root) {
  int64_t n = static_cast<int64_t>(in.size()), numel = in[0].numel();
  std::vector<std::vector<double>> out;
  auto value = [&](int64_t d, int64_t e) { return in[static_cast<size_t>(d)].get(e); };
  if (kind == "reduce") {
    out.emplace_back();
    for (int64_t e = 0; e < numel; ++e) out.back().push_back(host_reduced(in, op, e));
    return out;
  }
  for (int64_t j = 0; j < n; ++j) {
    std::vector<double> v;
    if (kind == "reduce_scatter")
      for (int64_t e = j * numel / n; e < (j + 1) * numel / n; ++e) v.push_back(host_reduced(in, op, e));
    if (kind == "allgather")
      for (int64_t d = 0; d < n; ++d)
        for (int64_t e = 0; e < numel; ++e) v.push_back(value(d, e));
    if (kind == "alltoall")
      for (int64_t i = 0; i < n; ++i)
        for (int64_t e = j * numel / n; e < (j + 1) * numel / n; ++e) v.push_back(value(i, e));
    if (kind == "broadcast")
      for (int64_t e = 0; e < numel; ++e) v.push_back(value(root, e));
    out.push_back(v);
  }
  return out;
}

}  // namespace ringrt::test
