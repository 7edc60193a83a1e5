// In-tree access behind the public API (not installed): a Tensor's graph and a Schedule's kernel IR,
// for tests, the ringrt program's internals, benchmarks and the engine itself. Users of the installed
// library see only <ringrt/ringrt.hpp>.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <vector>

#include "codegen/kernel.hpp"
#include "rewrite/interpreter.hpp"
#include "rewrite/uop.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/engine/realize.hpp"

namespace ringrt {

namespace detail {
// The kernel IR of a Schedule's kernel items, in kernel_items order (codegen/item_kernel.hpp).
struct KernelIR {
  std::vector<codegen::Kernel> kernels;
};
}  // namespace detail

// The logical UOp graph of t (its value as the Tensor front end built it; a realized tensor's is a
// view of its buffer).
inline UOp uop_of(const Tensor& t) { return TensorAccess::state(t)->uop; }

// The kernel IR the executor compiles for kernel item i of s (an index into s.kernel_items). Throws
// std::out_of_range for a bad i.
inline const codegen::Kernel& kernel_of(const Schedule& s, size_t i) {
  if (!s.ir) throw std::out_of_range("kernel_of: a schedule with no kernels");
  return s.ir->kernels.at(i);
}

}  // namespace ringrt
