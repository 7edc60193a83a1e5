// The operations of the public API (public value types): ReduceOp for reductions and collectives, BinaryOp for
// elementwise arithmetic between tensors. The IR has its own, wider op set (rewrite/ops.hpp, which maps these
// onto it); users never see it.
#pragma once

#include <iosfwd>
#include <optional>
#include <string_view>

namespace ringrt {

// How a reduction (Tensor::reduce, sum, max) or a reducing collective (allreduce, reduce_scatter, reduce_to)
// combines values. Reference: tinygrad's Ops.ADD, Ops.MUL, Ops.MAX and its min (as -max(-x)).
enum class ReduceOp { sum, prod, max, min };

// Elementwise arithmetic of two tensors (Tensor::binary; the operators + - * / and maximum, minimum are
// spelled with it). less, not_equal and equal give bool; bitwise_* take bool and integer dtypes.
enum class BinaryOp {
  add,
  sub,
  mul,
  div,
  idiv,
  mod,
  max,
  min,
  less,
  not_equal,
  equal,
  bitwise_and,
  bitwise_or,
  bitwise_xor
};

// "sum", "prod", "max", "min": the names of the YAML key `op`, the report's redop column and messages.
std::string_view reduce_op_name(ReduceOp op);
// The op named `name` (exactly one of reduce_op_name's words); nothing for any other text.
std::optional<ReduceOp> parse_reduce_op(std::string_view name);
// "add", "sub", ..., "bitwise_xor": the enumerator's own name.
std::string_view binary_op_name(BinaryOp op);
// Writes the name (Boost.Test's data cases print their samples so).
std::ostream& operator<<(std::ostream& os, ReduceOp op);
std::ostream& operator<<(std::ostream& os, BinaryOp op);

}  // namespace ringrt
