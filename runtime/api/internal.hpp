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

// In-tree access to a Tensor's state (Tensor's friend); the installed API never exposes it.
struct TensorAccess {
  static const StatePtr& state(const Tensor& t) { return t.s_; }
  static Tensor wrap(StatePtr s) { return Tensor(std::move(s)); }
};

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
  if (!s.ir_) throw std::out_of_range("kernel_of: a schedule with no kernels");
  return s.ir_->kernels.at(i);
}

// The IR op of a public op (rewrite/ops.hpp ir_op), checked: ShapeError "WHAT: N is not a ReduceOp (sum, prod,
// max, min)" (or BinaryOp) for a value outside the enum, such as one cast from an int (runtime/api/tensor.cpp).
Ops checked_ir_op(const char* what, ReduceOp op);
Ops checked_ir_op(const char* what, BinaryOp op);

// What realize() would run for root (nothing for a view of a buffer, borrowed or to be): its listing,
// items and algorithms, and the kernel IR of its kernel items (runtime/api/schedule.cpp). Throws what
// lowering throws (ShapeError, ConfigError).
Schedule schedule_of(const UOp& root, bool borrowed);

}  // namespace ringrt
