// The names of the public ops (core/reduce_op.hpp).
#include "core/reduce_op.hpp"

#include <array>
#include <ostream>
#include <utility>

namespace ringrt {

namespace {
constexpr std::array<std::pair<ReduceOp, std::string_view>, 4> kReduceNames{
    {{ReduceOp::sum, "sum"}, {ReduceOp::prod, "prod"}, {ReduceOp::max, "max"}, {ReduceOp::min, "min"}}};
constexpr std::array<std::string_view, 14> kBinaryNames{"add",   "sub",         "mul",        "div",        "idiv",
                                                        "mod",   "max",         "min",        "less",       "not_equal",
                                                        "equal", "bitwise_and", "bitwise_or", "bitwise_xor"};
}  // namespace

std::string_view reduce_op_name(ReduceOp op) {
  for (const auto& [o, name] : kReduceNames)
    if (o == op) return name;
  return "?";
}

std::optional<ReduceOp> parse_reduce_op(std::string_view name) {
  for (const auto& [o, n] : kReduceNames)
    if (n == name) return o;
  return std::nullopt;
}

std::string_view binary_op_name(BinaryOp op) {
  auto i = static_cast<size_t>(op);
  return i < kBinaryNames.size() ? kBinaryNames[i] : "?";
}

std::ostream& operator<<(std::ostream& os, ReduceOp op) { return os << reduce_op_name(op); }
std::ostream& operator<<(std::ostream& os, BinaryOp op) { return os << binary_op_name(op); }

}  // namespace ringrt
