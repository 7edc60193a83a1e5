// A graph's structure with its buffers replaced by parameters: the key under which the program
// cache shares one compiled program between graphs that differ only in which buffers they read and
// write (a training loop's fresh data every step). Reference: tinygrad engine/schedule.py, whose
// schedule cache keys the graph with every BUFFER replaced by a PARAM.
#pragma once

#include <cstdint>
#include <vector>

#include "rewrite/uop.hpp"

namespace ringrt {

// Run-time scalars (docs/architecture.md "Runtime scalars"): a number that enters arithmetic is a
// parameter too, so a training step whose learning rate changes every step keeps one program. A CONST
// is one (is_runtime_scalar) when it is a named variable (Tensor::variable) or a floating-point number
// other than 0, 1 and the non-finite values; integers (indices, counts, masks, bit patterns), 0 and 1
// (identities) and infinities and NaNs (reduction identities, masks) stay structure.
bool is_runtime_scalar(const UOp& c);

// root with every run-time scalar replaced by the parameter the program cache makes it (CONST ScalarArg{name,
// 0, slot}, slots numbered as Canonical numbers them), in root's own graph, buffers unchanged: what a
// listing of the program realize() runs lowers (runtime/api/schedule.cpp), so its kernels are those that run.
UOp with_scalar_parameters(const UOp& root);

class Canonical {
 public:
  // The structure of everything reachable from roots (in toposort order), BUFFER i of its first
  // appearance recorded as parameter i (its numel kept) and its id in buffers(), run-time scalar j of
  // its first appearance recorded as CONST ScalarArg{name, 0, j} and its value in scalars().
  explicit Canonical(const std::vector<UOp>& roots);

  // Equal structure: the same ops, dtypes, args (buffers as parameters) and sources, node for node.
  bool same_structure(const Canonical& o) const;
  uint64_t hash() const { return hash_; }
  // The buffer id behind each parameter, in parameter order.
  const std::vector<int64_t>& buffers() const { return buffers_; }
  // The value of each run-time scalar, in slot order: its stored bytes in the CONST's dtype,
  // zero-extended to a word (codegen::KernelScalar; ExecOptions::scalars).
  const std::vector<uint64_t>& scalars() const { return scalars_; }
  size_t size() const { return nodes_.size(); }

  // The graph rebuilt in `into`, a fresh graph: parameter i becomes a BUFFER with id i (into's first
  // buffer ids, so ids the rules allocate later never collide), run-time scalar j a CONST ScalarArg
  // with slot j. Returns the roots, in order.
  std::vector<UOp> instantiate(UOpGraph& into) const;

 private:
  struct Record {
    Ops op;
    DType dtype;
    Arg arg;  // a BUFFER's id replaced by its parameter index
    std::vector<uint32_t> src;
  };
  std::vector<Record> nodes_;
  std::vector<uint32_t> roots_;
  std::vector<int64_t> buffers_;
  std::vector<uint64_t> scalars_;
  uint64_t hash_ = 0;
};

}  // namespace ringrt
