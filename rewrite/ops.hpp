// The op vocabulary of the IR and its groups (reference: tinygrad uop/ops.py Ops, GroupOp).
#pragma once

#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string_view>

#include "core/reduce_op.hpp"

namespace ringrt {

// clang-format off
#define RINGRT_OPS(X)                                                                                     \
  /* graph structure and memory */                                                                        \
  X(SINK) X(DEVICE) X(BUFFER) X(CONST) X(DEFINE_VAR) X(CONTIGUOUS) X(DETACH) X(COPY) X(STORE) X(AFTER)    \
  X(ASSIGN) X(CALL)                                                                                       \
  /* multi-device */                                                                                      \
  X(MULTI) X(MSELECT) X(MSTACK) X(ALLREDUCE) X(COLLECTIVE)                                                \
  /* movement (views) */                                                                                  \
  X(RESHAPE) X(EXPAND) X(PAD) X(SHRINK) X(PERMUTE) X(FLIP)                                                \
  /* reduction */                                                                                         \
  X(REDUCE_AXIS)                                                                                          \
  /* type changes */                                                                                      \
  X(CAST) X(BITCAST)                                                                                      \
  /* unary ALU */                                                                                         \
  X(NEG) X(EXP2) X(LOG2) X(SIN) X(SQRT) X(RECIP)                                                          \
  /* binary ALU */                                                                                        \
  X(ADD) X(SUB) X(MUL) X(FDIV) X(IDIV) X(MOD) X(MAX) X(MIN) X(CMPLT) X(CMPNE) X(CMPEQ) X(AND) X(OR) X(XOR) \
  /* ternary ALU */                                                                                       \
  X(WHERE)
// clang-format on

enum class Ops : uint8_t {
#define RINGRT_OP_ENUM(name) name,
  RINGRT_OPS(RINGRT_OP_ENUM)
#undef RINGRT_OP_ENUM
      COUNT_
};

constexpr size_t kNumOps = static_cast<size_t>(Ops::COUNT_);
std::string_view op_name(Ops op);                    // "ADD", "REDUCE_AXIS", ...
std::ostream& operator<<(std::ostream& os, Ops op);  // the name

// A set of ops, for pattern matching and groups.
class OpSet {
 public:
  constexpr OpSet() = default;
  OpSet(std::initializer_list<Ops> ops) {
    for (Ops op : ops) bits_.set(static_cast<size_t>(op));
  }
  bool contains(Ops op) const { return bits_.test(static_cast<size_t>(op)); }
  bool empty() const { return bits_.none(); }
  OpSet operator|(const OpSet& o) const { return OpSet(bits_ | o.bits_); }
  OpSet operator-(const OpSet& o) const { return OpSet(bits_ & ~o.bits_); }
  template <class F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < kNumOps; ++i)
      if (bits_.test(i)) f(static_cast<Ops>(i));
  }
  static OpSet all() { return OpSet(std::bitset<kNumOps>().set()); }

 private:
  explicit OpSet(std::bitset<kNumOps> b) : bits_(b) {}
  std::bitset<kNumOps> bits_;
};

namespace group {
const OpSet& unary();     // NEG EXP2 LOG2 SIN SQRT RECIP
const OpSet& binary();    // ADD .. XOR
const OpSet& ternary();   // WHERE
const OpSet& alu();       // unary | binary | ternary
const OpSet& movement();  // RESHAPE EXPAND PAD SHRINK PERMUTE FLIP
const OpSet& compare();   // CMPLT CMPNE CMPEQ: results are bool
}  // namespace group

// The ops a reduction may combine with: ADD (sum), MUL (prod), MAX, MIN.
bool is_reduce_op(Ops op);
// The IR op of a public op (core/reduce_op.hpp): sum ADD, prod MUL, max MAX, min MIN; BinaryOp's in order
// ADD SUB MUL FDIV IDIV MOD MAX MIN CMPLT CMPNE CMPEQ AND OR XOR.
Ops ir_op(ReduceOp op);
Ops ir_op(BinaryOp op);
// The public op of a reducing IR op (ADD, MUL, MAX, MIN). Throws InternalError for another op.
ReduceOp reduce_op_of(Ops op);
// The identity of a reduce op (0, 1, -inf, +inf); integer code clamps the infinities to the type range.
double reduce_identity(Ops op);

}  // namespace ringrt
