#include "rewrite/ops.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>
#include <ostream>

#include "core/errors.hpp"

namespace ringrt {

std::string_view op_name(Ops op) {
  static constexpr std::array<std::string_view, kNumOps> kNames{
#define RINGRT_OP_NAME(name) #name,
      RINGRT_OPS(RINGRT_OP_NAME)
#undef RINGRT_OP_NAME
  };
  return kNames[static_cast<size_t>(op)];
}

std::ostream& operator<<(std::ostream& os, Ops op) { return os << op_name(op); }

namespace group {
const OpSet& unary() {
  static const OpSet s{Ops::NEG, Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT, Ops::RECIP};
  return s;
}
const OpSet& binary() {
  static const OpSet s{Ops::ADD, Ops::SUB,   Ops::MUL,   Ops::FDIV,  Ops::IDIV, Ops::MOD, Ops::MAX,
                       Ops::MIN, Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ, Ops::AND,  Ops::OR,  Ops::XOR};
  return s;
}
const OpSet& ternary() {
  static const OpSet s{Ops::WHERE};
  return s;
}
const OpSet& alu() {
  static const OpSet s = unary() | binary() | ternary();
  return s;
}
const OpSet& movement() {
  static const OpSet s{Ops::RESHAPE, Ops::EXPAND, Ops::PAD, Ops::SHRINK, Ops::PERMUTE, Ops::FLIP};
  return s;
}
const OpSet& compare() {
  static const OpSet s{Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ};
  return s;
}
}  // namespace group

bool is_reduce_op(Ops op) { return op == Ops::ADD || op == Ops::MUL || op == Ops::MAX || op == Ops::MIN; }

double reduce_identity(Ops op) {
  switch (op) {
    case Ops::MUL:
      return 1.0;
    case Ops::MAX:
      return -std::numeric_limits<double>::infinity();
    case Ops::MIN:
      return std::numeric_limits<double>::infinity();
    default:
      return 0.0;
  }
}

Ops ir_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return Ops::ADD;
    case ReduceOp::prod:
      return Ops::MUL;
    case ReduceOp::max:
      return Ops::MAX;
    case ReduceOp::min:
      return Ops::MIN;
  }
  throw InternalError(fmt::format("ir_op: ReduceOp {}", static_cast<int>(op)));
}

Ops ir_op(BinaryOp op) {
  static constexpr Ops kIr[] = {Ops::ADD, Ops::SUB,   Ops::MUL,   Ops::FDIV,  Ops::IDIV, Ops::MOD, Ops::MAX,
                                Ops::MIN, Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ, Ops::AND,  Ops::OR,  Ops::XOR};
  auto i = static_cast<size_t>(op);
  if (i >= std::size(kIr)) throw InternalError(fmt::format("ir_op: BinaryOp {}", i));
  return kIr[i];
}

ReduceOp reduce_op_of(Ops op) {
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min})
    if (ir_op(r) == op) return r;
  throw InternalError(fmt::format("reduce_op_of: {} is not a reduce op", op_name(op)));
}

}  // namespace ringrt
