// The test matrix of the collectives besides allreduce (runtime/api/tensor_collectives.cpp, lowered by
// rewrite/rules/collectives.cpp), next to the allreduce matrix (test/support/allreduce_matrix.hpp) and
// collected by its add_point_kernels: reduce_scatter, allgather, broadcast, reduce (reduce_to), alltoall x
// naive/ring/all2all x ndev {2, 3, 5, 8} x float32/float16/bfloat16/int32 x sum/max (reduce_scatter and
// reduce; the others move values and take no op) x two local shapes per collective: allgather, broadcast
// and reduce 3 elements (odd, fewer than 5 or 8 devices) and 257; reduce_scatter and alltoall, whose local
// length must split into ndev chunks, 3 ndev (chunks of 3: odd, fewer than 5 or 8) and a two-axis shape
// (reduce_scatter of (3, ndev) along axis 1, alltoall of (ndev, 3): rows of 3). Each point is the
// collective of a placeholder (a realized input's graph, nothing allocated) sharded on axis 0 of cpu
// devices; broadcast's and reduce's root is device ndev / 2. Two sizes, not the allreduce matrix's six:
// each distinct kernel costs ~0.02 s of hipRTC and as much of NVRTC, and sizes multiply the kernels (a
// third size, ndev or 1 elements, added ~40% more). Used by the GPU compiler tests
// (test/hiprtc/test_matrix_hiprtc.cpp).
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "test/support/allreduce_matrix.hpp"
#include "testing/collectives.hpp"

namespace ringrt::test {

inline const std::vector<std::string> kCollectiveKinds{"reduce_scatter", "allgather", "broadcast", "reduce",
                                                       "alltoall"};
inline const std::vector<int> kCollectiveDevices{2, 3, 5, 8};
inline const std::vector<std::string> kCollectiveAlgorithms{"naive", "ring", "all2all"};

// A local shape (each device's value) and the axis a reduce_scatter scatters along.
struct CollectiveShape {
  Shape local;
  int axis = 0;
};

// The local shapes of kind's points on ndev devices.
inline std::vector<CollectiveShape> collective_shapes(const std::string& kind, int ndev) {
  int64_t n = ndev;
  if (kind == "reduce_scatter") return {{{3 * n}}, {{3, n}, 1}};
  if (kind == "alltoall") return {{{3 * n}}, {{n, 3}}};
  return {{{3}}, {{257}}};
}

// The ops of kind's points: sum and max where the collective reduces, else the one (unused) ADD.
inline std::vector<ReduceOp> collective_ops(const std::string& kind) {
  if (kind == "reduce_scatter" || kind == "reduce") return testing::kOps;
  return {ReduceOp::sum};
}

// The distinct kernels of the whole collectives matrix that the allreduce matrix (all_matrix_kernels)
// does not have, deduplicated by `render`'s source, with the count of kernel items of the collectives
// matrix: so a test that checks both matrices checks every distinct kernel once (a reduce to one root is
// mostly the allreduce's kernels). Built once per process and Render type, on first use (collecting the
// allreduce matrix too, if not yet); split it with kernels_part.
template <class Render>
const MatrixKernels& all_collective_kernels(Render render) {
  static const MatrixKernels all = [&] {
    MatrixKernels m;
    std::map<std::string, size_t> seen;
    for (const MatrixKernel& k : all_matrix_kernels(render).kernels) seen.emplace(render(k.kernel), 0);
    for (const std::string& kind : kCollectiveKinds)
      for (int ndev : kCollectiveDevices)
        for (const std::string& algo : kCollectiveAlgorithms) {
          AllreduceSettings settings = matrix_settings(algo, ndev);
          for (DType dtype : testing::kDTypes)
            for (const CollectiveShape& cs : collective_shapes(kind, ndev))
              for (ReduceOp op : collective_ops(kind)) {
                Shape logical = cs.local;
                logical[0] *= ndev;
                Tensor x = Tensor::placeholder(logical, dtype, cpu_devices(ndev), 0);
                Tensor r = testing::apply_collective(kind, x, op, ndev / 2, cs.axis);
                add_point_kernels(uop_of(r), settings,
                                  fmt::format("{} ndev {} {} {} {} local {} axis {}", kind, ndev, algo,
                                              dtype_name(dtype), reduce_op_name(op), shape_str(cs.local), cs.axis),
                                  render, m.kernels, seen, &m.items);
              }
        }
    return m;
  }();
  return all;
}

}  // namespace ringrt::test
