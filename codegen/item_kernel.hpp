// From a kernel item of the schedule to the kernel IR that is compiled for it: the one place that
// does this, shared by the executor (which compiles and launches it) and Schedule (which emits its
// source), so what `ringrt schedule --emit-source` writes is what realize() runs.
#pragma once

#include <cstddef>
#include <vector>

#include "codegen/kernel.hpp"
#include "rewrite/plan/schedule.hpp"

namespace ringrt {

struct ItemKernel {
  codegen::Kernel kernel;           // the IR; its name is derived from its structure ("E_<hash>", "r_<hash>")
  std::vector<size_t> input_reads;  // kernel input i reads item.reads[input_reads[i]]
};

// The ast of a kernel item (shape: the item's output shape) with each realized value it reads
// (item.reads[k], shape S_k) replaced by a placeholder BUFFER of id -1-k, prod(S_k) elements, on the
// value's device(s), reshaped to S_k. Evaluating it with the interpreter, buffer -1-k bound to
// item.reads[k]'s data, gives what the item's kernel computes. Throws InternalError for a copy item.
// Reference: tinygrad engine/schedule.py (a ScheduleItem's ast reads its bufs by index, not by
// identity, so equal computations on other buffers share one kernel).
UOp item_ast(const ScheduleItem& item);

// codegen::lower_kernel(item_ast(item)) and where each kernel input comes from. Throws InternalError
// for a copy item or for an op the kernel IR cannot express (see lower_kernel).
ItemKernel lower_item(const ScheduleItem& item);

// The kernel of a fused collective item's combine steps (rewrite/collective.hpp): numel elements of
// out = ((in_0 op in_1) op in_2) ... op in_{n-1}, element by element, the n inputs (kernel input j is
// in_j) the blocks of the item's source on its n devices, op and dtype the COLLECTIVE's: the fold the
// interpreter's ALLREDUCE makes. With `operands` (2 .. n) the fold of that many inputs instead (the
// ring's combine, ((peer's) op (own)): 2). Throws InternalError for another item.
codegen::Kernel collective_combine_kernel(const ScheduleItem& item, int64_t numel, int64_t operands = -1);

}  // namespace ringrt
