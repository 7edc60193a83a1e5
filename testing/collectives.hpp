// The collectives as a test calls them, their inputs, and the host's answer to each: what the checks of
// testing/checks.hpp compare a result with. The answers come from runtime/api/reference.hpp, the references
// `ringrt run` checks by (NCCL's definitions of AllReduce, ReduceScatter, AllGather, AlltoAll, Broadcast and
// Reduce, as plain host loops), independent of ringrt's lowering. Part of <ringrt/testing.hpp>.
#pragma once

#include <cstdint>
#include <ringrt/core/host_buffer.hpp>
#include <ringrt/runtime/api/reference.hpp>
#include <ringrt/runtime/api/tensor.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace ringrt::testing {

// The collectives besides allreduce (Tensor::reduce_scatter, allgather, alltoall, broadcast, reduce_to).
inline const std::vector<std::string> kCollectives{"reduce_scatter", "allgather", "alltoall", "broadcast", "reduce"};

// The collective `kind` (one of kCollectives, or "allreduce": reduce over axis 0) of x, a tensor sharded on a
// device tuple: reduce op `op` (ADD, MUL, MAX, MIN; reduce_scatter along `axis`), root index `root` (broadcast
// to x's devices, reduce_to). Lazy, as the Tensor methods are; throws what they throw.
inline Tensor apply_collective(const std::string& kind, const Tensor& x, ReduceOp op, int root, int axis = 0) {
  if (kind == "allreduce") return x.reduce(op, {0});
  if (kind == "reduce_scatter") return x.reduce_scatter(op, axis);
  if (kind == "allgather") return x.allgather();
  if (kind == "alltoall") return x.alltoall();
  if (kind == "broadcast") return x.broadcast(root, x.devices());
  return x.reduce_to(root, op);
}

// The algorithm a schedule names for `kind` with `algo` ("naive", "ring", "all2all") forced: reduce's is the
// allreduce's; alltoall is always direct (all2all); the others are ring or direct.
inline std::string expected_algorithm(const std::string& kind, const std::string& algo) {
  if (kind == "reduce" || kind == "allreduce") return algo;
  return algo == "ring" && kind != "alltoall" ? "ring" : "all2all";
}

// ndev local values of `shape` in dtype: small integers in [-4, 4], exact in every dtype (and so is every sum of
// up to 64 of them in bfloat16), different per device and per seed. Device d's value is element d.
inline std::vector<HostBuffer> collective_locals(int ndev, const Shape& shape, DType dtype, int seed) {
  std::vector<HostBuffer> out;
  for (int d = 0; d < ndev; ++d) {
    HostBuffer b(dtype, shape);
    for (int64_t i = 0; i < b.numel(); ++i) b.set(i, static_cast<double>((i * 7 + d * 5 + seed * 3) % 9 - 4));
    out.push_back(b);
  }
  return out;
}

// The devices' local values as the references read them: device d's element i of in[d] (exact for integers).
// `in` must outlive the result.
inline StoredValue stored_values(const std::vector<HostBuffer>& in) {
  return [&in](int64_t d, int64_t i) {
    const HostBuffer& b = in[static_cast<size_t>(d)];
    return is_float(b.dtype) ? b.get(i) : static_cast<double>(b.get_int(i));
  };
}

// The expected result of apply_collective(kind, x, op, root) with axis 0, x sharded on axis 0 with locals `in`
// (one per device, each of numel elements, one dtype; allreduce: each of one row, shape (1, ...), as x.reduce(op,
// {0}) reduces the rows), each of the result's flat elements: allreduce the reduction over the devices;
// reduce_scatter device j's chunk j of it (numel / n elements); allgather every device's values in device order;
// alltoall slot i of device j is device i's chunk j; broadcast the root's values; reduce the reduction, on the
// root. One Reference per device of the result in device order (reduce_scatter, alltoall), or one for every
// device where they are the same (allreduce, allgather, broadcast, reduce). Floats within the bound of
// runtime/api/reference.hpp where the reduction may round. Throws std::invalid_argument for another kind, no
// locals, locals of different shapes or dtypes, allreduce locals of more than one row, or (broadcast, reduce) a
// root that is not a device index (0 to n - 1).
inline std::vector<Reference> collective_expected(const std::string& kind, const std::vector<HostBuffer>& in,
                                                  ReduceOp op, int root) {
  if (in.empty()) throw std::invalid_argument("collective_expected(" + kind + "): no devices' values");
  if (kind == "allreduce" && (in[0].shape.empty() || in[0].shape[0] != 1))
    throw std::invalid_argument(
        "collective_expected(allreduce): each device's value must be one row, shape (1, ...), "
        "as x.reduce(op, {0}) reduces every row");
  int64_t n = static_cast<int64_t>(in.size()), numel = in[0].numel();
  for (const HostBuffer& b : in)
    if (b.shape != in[0].shape || b.dtype != in[0].dtype)
      throw std::invalid_argument("collective_expected(" + kind +
                                  "): every device's locals must have one shape and one dtype");
  if ((kind == "broadcast" || kind == "reduce") && (root < 0 || root >= n))
    throw std::invalid_argument("collective_expected(" + kind + "): root " + std::to_string(root) +
                                " is not a device index: there are " + std::to_string(n) + " devices (0 to " +
                                std::to_string(n - 1) + ")");
  int64_t count = kind == "allgather" ? n * numel : numel;  // rccl-tests' count: the gathered buffer
  int64_t each = kind == "reduce_scatter" ? numel / n : count;
  bool same = kind != "reduce_scatter" && kind != "alltoall";
  std::vector<Reference> out;
  for (int64_t j = 0; j < (same ? 1 : n); ++j)
    out.push_back(collective_reference(kind, in[0].dtype, op, n, root, count, kind == "reduce" ? root : j, 0, each,
                                       stored_values(in)));
  return out;
}

// Element e (flat) of the reduction with op over the devices' local values, in double.
inline double host_reduced(const std::vector<HostBuffer>& in, ReduceOp op, int64_t e) {
  Reference r = reference_of(in[0].dtype, static_cast<int64_t>(in.size()), e, 1, op, stored_values(in));
  return r.value.empty() ? static_cast<double>(r.exact.get_int(0)) : r.value[0];
}

}  // namespace ringrt::testing
