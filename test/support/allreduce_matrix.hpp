// The multi-device allreduce test matrix, shared by the lowering tests (test/rewrite/rules/
// test_allreduce.cpp) and the code generation tests (test/codegen/test_matrix_kernels.cpp,
// test/hiprtc/test_matrix_hiprtc.cpp): the testing library's axes (testing/datasets.hpp), ndev {1, 2, 3, 4, 5,
// 8} x naive/ring/all2all/oneshot/twoshot/ring_fused/hierarchical x float32/float16/bfloat16/int32 x sum/max x numel
// {1, 3, 32 ndev, 32 ndev + 5, 100, 257}, an allreduce being x.sum({0}) or x.max({0}) of a realized (ndev, numel)
// tensor sharded on axis 0. Its kernels, collected here, use the internal IR.
#pragma once

#include <fmt/format.h>

#include <cctype>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/item_kernel.hpp"
#include "codegen/render.hpp"
#include "rewrite/lower/lower.hpp"
#include "rewrite/plan/schedule.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/api/internal.hpp"
#include "runtime/engine/realize.hpp"
#include "testing/datasets.hpp"

namespace ringrt::test {

// The default settings with algo (naive, ring, all2all, oneshot, twoshot, ring_fused) forced
// (testing::algorithm_settings).
inline AllreduceSettings forced_settings(const std::string& algo) { return testing::algorithm_settings(algo, {}); }

// The settings that force algo on ndev cpu devices; "hierarchical" makes two groups, the first half
// of the devices and the rest.
inline AllreduceSettings matrix_settings(const std::string& algo, int ndev) {
  return testing::algorithm_settings(algo, cpu_devices(ndev));
}

// The allreduce of one matrix point, x.sum({0}) (op ADD) or x.max({0}) (op MAX) of a realized
// (ndev, numel) tensor sharded on axis 0, as the Tensor front end builds it (runtime/api/tensor.cpp shard
// and reduce): a MULTI (axis 0) over a BUFFER of numel elements on the device tuple reshaped to
// (1, numel), a REDUCE_AXIS over axis 0 and a reshape to (numel). Built straight from UOps: realizing x
// would first compile and run its shard kernels, which the kernel tests do not need.
inline UOp matrix_allreduce(int ndev, DType dtype, ReduceOp op, int64_t numel) {
  auto devs = cpu_devices(ndev);
  UOp x = new_buffer(DeviceSpec(DeviceTuple(devs)), numel, dtype).reshape({1, numel}).multi(0);
  return x.r(ir_op(op), {0}).reshape({numel});
}

// One kernel of the matrix's schedules: its IR (codegen/item_kernel.hpp lower_item), the ast it was
// lowered from (placeholder buffer -1-k reads the item's realized value k) and those values.
struct MatrixKernel {
  codegen::Kernel kernel;
  UOp ast;
  std::vector<UOp> reads;
  std::string label;  // the first matrix point and item that produced it
  // Keeps ast and reads alive: nodes of the global graph that no tensor reaches are collected at the end
  // of the next Tensor call (runtime/engine/collect.hpp), such as a later point's (the collectives matrix
  // builds its points with the Tensor API). A state holding a SINK of them is a root of the collection.
  StatePtr keep;
};

// The kernels of one matrix point, the multi-device graph `root` lowered with `settings` and planned as
// realize() plans it, appended to `out` when their source (`render(kernel)`, e.g. codegen::render_hip)
// is not in `by_source` yet (and added there); items_seen counts the kernel items. Shared by every matrix
// (this file's allreduce, test/support/collectives_matrix.hpp's collectives).
template <class Render>
void add_point_kernels(const UOp& root, const AllreduceSettings& settings, const std::string& point, Render render,
                       std::vector<MatrixKernel>& out, std::map<std::string, size_t>& by_source,
                       size_t* items_seen = nullptr) {
  ItemPlan plan = plan_schedule(lower_multi({root}, settings).roots);
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const ScheduleItem& item = plan.items[i];
    if (item.kind != ScheduleItem::Kind::kernel) continue;
    if (items_seen) ++*items_seen;
    ItemKernel ik = lower_item(item);
    if (!by_source.emplace(render(ik.kernel), out.size()).second) continue;
    std::vector<UOp> held{item_ast(item)};
    held.insert(held.end(), item.reads.begin(), item.reads.end());
    out.push_back({std::move(ik.kernel), item_ast(item), item.reads,
                   fmt::format("{}, item {} on {}", point, i, item.device.to_string()),
                   make_state(make_uop(Ops::SINK, DType::void_, held), {})});
  }
}

// The distinct kernels (by `render(kernel)`) of every matrix point with ndev devices and an algorithm of
// algos, in the order first met; items_seen counts the kernel items; a source already in `seen` is
// skipped (and every new one added).
template <class Render>
std::vector<MatrixKernel> matrix_kernels(int ndev, const std::vector<std::string>& algos, Render render,
                                         size_t* items_seen = nullptr, std::map<std::string, size_t>* seen = nullptr) {
  std::vector<MatrixKernel> out;
  std::map<std::string, size_t> local;
  std::map<std::string, size_t>& by_source = seen ? *seen : local;
  for (const std::string& algo : algos) {
    AllreduceSettings settings = matrix_settings(algo, ndev);
    for (DType dtype : testing::kDTypes)
      for (int64_t numel : testing::counts_for(ndev))
        for (ReduceOp op : testing::kOps)
          add_point_kernels(
              matrix_allreduce(ndev, dtype, op, numel), settings,
              fmt::format("ndev {} {} {} {} numel {}", ndev, algo, dtype_name(dtype), reduce_op_name(op), numel),
              render, out, by_source, items_seen);
  }
  return out;
}

// The distinct kernels of the whole matrix (every ndev, every algorithm), deduplicated by `render`'s
// source, with the count of kernel items they came from. Built once per process and Render type (a
// test's lambda), on first use: a test program that checks the matrix in several cases collects it once.
struct MatrixKernels {
  std::vector<MatrixKernel> kernels;
  size_t items = 0;
};
template <class Render>
const MatrixKernels& all_matrix_kernels(Render render) {
  static const MatrixKernels all = [&] {
    MatrixKernels m;
    std::map<std::string, size_t> seen;
    for (int ndev : testing::kDeviceCounts) {
      std::vector<MatrixKernel> more = matrix_kernels(ndev, testing::kAlgorithms, render, &m.items, &seen);
      std::move(more.begin(), more.end(), std::back_inserter(m.kernels));
    }
    return m;
  }();
  return all;
}

// The least number of distinct kernels the allreduce matrix may have: it has about 300 forms (below); a
// matrix that shrank below this (a generator that lost its devices, dtypes or algorithms) fails the tests that
// walk it instead of checking nothing.
inline constexpr size_t kMinMatrixKernels = 100;

// [begin, end) of part `part` of `parts` of n things: contiguous, sizes differing by at most 1.
inline std::pair<size_t, size_t> part_bounds(size_t n, size_t part, size_t parts) {
  return {n * part / parts, n * (part + 1) / parts};
}

// Part `part` of `parts` (part_bounds) of a matrix's kernels; so a test can split a matrix into several
// cases. items_seen / distinct: the whole matrix's kernel items and distinct kernels.
inline std::vector<MatrixKernel> kernels_part(const MatrixKernels& all, size_t part, size_t parts,
                                              size_t* items_seen = nullptr, size_t* distinct = nullptr) {
  if (items_seen) *items_seen = all.items;
  if (distinct) *distinct = all.kernels.size();
  auto [begin, end] = part_bounds(all.kernels.size(), part, parts);
  return {all.kernels.begin() + static_cast<std::ptrdiff_t>(begin),
          all.kernels.begin() + static_cast<std::ptrdiff_t>(end)};
}

// The form of a rendered kernel: `source` with the kernel's `name` (a hash of its ast) and every decimal
// number (a run of digits not inside an identifier: int32_t and in1 stay) replaced by one placeholder, so
// kernels that differ only in their constants (sizes, offsets, chunk bounds) share a form: the matrix's
// 1,064 C++ kernels have ~300 forms. Whether a compiler accepts a kernel, and what its optimizer makes of
// the loops, depends on the form; the values of the constants are checked against the interpreter by
// every kernel that runs.
inline std::string kernel_form(const std::string& source, const std::string& name) {
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  auto in_identifier = [&](char c) { return is_digit(c) || c == '_' || std::isalpha(static_cast<unsigned char>(c)); };
  std::string form;
  form.reserve(source.size());
  for (size_t i = 0; i < source.size();) {
    if (!name.empty() && source.compare(i, name.size(), name) == 0) {
      form += "@K";
      i += name.size();
    } else if (is_digit(source[i]) && (i == 0 || !in_identifier(source[i - 1]))) {
      form += '#';
      while (i < source.size() && is_digit(source[i])) ++i;
    } else {
      form += source[i++];
    }
  }
  return form;
}

// For each kernel of `all`, in order, whether it is the first of its form (kernel_form of render(kernel)).
template <class Render>
std::vector<bool> first_of_each_form(const MatrixKernels& all, Render render) {
  std::set<std::string> forms;
  std::vector<bool> first;
  for (const MatrixKernel& k : all.kernels)
    first.push_back(forms.insert(kernel_form(render(k.kernel), k.kernel.name)).second);
  return first;
}

// Part `part` of `parts` of all_matrix_kernels(render) (kernels_part).
template <class Render>
std::vector<MatrixKernel> matrix_kernels_part(size_t part, size_t parts, Render render, size_t* items_seen = nullptr,
                                              size_t* distinct = nullptr) {
  return kernels_part(all_matrix_kernels(render), part, parts, items_seen, distinct);
}

}  // namespace ringrt::test
