// Shape inference: the shape, device and shard axis of every node, one rule per op family.
// Reference: tinygrad uop/ops.py (UOp.shape, UOp.device, UOp.axis).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "core/errors.hpp"
#include "rewrite/node.hpp"

namespace ringrt {
namespace {

using detail::Node;

[[noreturn]] void shape_error(Ops op, const std::vector<UOp>& src, const std::string& why,
                              std::optional<int> axis = std::nullopt) {
  std::vector<std::string> shapes;
  for (const auto& s : src)
    if (s.op() != Ops::DEVICE) shapes.push_back(shape_str(s.shape()));
  throw ShapeError(fmt::format("{}: {} (input shapes {}{})", op_name(op), why, fmt::join(shapes, ", "),
                               axis ? fmt::format(", axis {}", *axis) : ""));
}

void check_nsrc(Ops op, const std::vector<UOp>& src, size_t n) {
  if (src.size() != n) shape_error(op, src, fmt::format("expects {} sources, got {}", n, src.size()));
}

DeviceSpec common_device(Ops op, const std::vector<UOp>& src) {
  DeviceSpec dev;
  for (const auto& s : src) {
    if (s.device().none()) continue;
    if (dev.none()) {
      dev = s.device();
    } else if (!(dev == s.device())) {
      shape_error(op, src,
                  fmt::format("operands live on different devices {} and {}", dev.to_string(), s.device().to_string()));
    }
  }
  return dev;
}

int norm_axis(Ops op, const std::vector<UOp>& src, int64_t axis, size_t rank) {
  if (axis < -static_cast<int64_t>(rank) || axis >= static_cast<int64_t>(rank))
    shape_error(op, src, fmt::format("axis {} out of range for rank {}", axis, rank), static_cast<int>(axis));
  return static_cast<int>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
}

// Shape rules, one per op family (reference: ops.py _shape, _device, axis). Each fills the shape,
// device and shard axis of a node about to be created and throws ShapeError for anything impossible.

// Throws unless every source from `from` on has the shape of source `from`.
void check_same_shapes(const Node& n, size_t from) {
  for (size_t i = from + 1; i < n.src.size(); ++i)
    if (n.src[i].shape() != n.src[from].shape()) shape_error(n.op, n.src, "operand shapes differ");
}

// Takes shape, device and shard axis from the first source.
void take_first_source(Node& n) {
  if (n.src.empty()) shape_error(n.op, n.src, "expects a source");
  n.shape = n.src[0].shape();
  n.device = n.src[0].device();
  n.axis = n.src[0].axis();
}

// Throws unless the operands' dtypes suit the ALU op and agree, and n's dtype is the result's.
void check_alu_dtypes(const Node& n) {
  const auto& src = n.src;
  Ops op = n.op;
  size_t first = op == Ops::WHERE ? 1 : 0;
  if (op == Ops::WHERE && src[0].dtype() != DType::bool_) shape_error(op, src, "condition must be bool");
  for (size_t i = first + 1; i < src.size(); ++i)
    if (src[i].dtype() != src[first].dtype())
      shape_error(
          op, src,
          fmt::format("operand dtypes differ: {} and {}", dtype_name(src[first].dtype()), dtype_name(src[i].dtype())));
  DType want_dtype = group::compare().contains(op) ? DType::bool_ : src[first].dtype();
  if (n.dtype != want_dtype) shape_error(op, src, fmt::format("result dtype must be {}", dtype_name(want_dtype)));
}

// ALU ops: operands of one shape, device and dtype (integer-only and float-only ops checked).
void infer_alu(Node& n) {
  const auto& src = n.src;
  Ops op = n.op;
  // ops that only make sense for one kind of operand
  static const OpSet int_only{Ops::IDIV, Ops::MOD, Ops::AND, Ops::OR, Ops::XOR};
  static const OpSet float_only{Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT, Ops::RECIP, Ops::FDIV};
  if (!src.empty() && int_only.contains(op) && is_float(src.back().dtype()))
    shape_error(op, src, fmt::format("needs integer operands, got {}", dtype_name(src.back().dtype())));
  if (!src.empty() && float_only.contains(op) && !is_float(src.back().dtype()))
    shape_error(op, src, fmt::format("needs float operands, got {}", dtype_name(src.back().dtype())));
  size_t want = group::unary().contains(op) ? 1 : group::binary().contains(op) ? 2 : 3;
  check_nsrc(op, src, want);
  check_same_shapes(n, 0);
  n.shape = src[0].shape();
  n.device = common_device(op, src);
  check_alu_dtypes(n);
  // all sharded sources share an axis; the last one wins (reference: UOp.axis)
  for (const auto& s : src)
    if (s.axis()) n.axis = s.axis();
}

// Leaves and roots: SINK, DEVICE, CONST, DEFINE_VAR, BUFFER.
void infer_leaf(Node& n) {
  const auto& src = n.src;
  Ops op = n.op;
  switch (op) {
    case Ops::SINK:
      n.shape = {};
      return;
    case Ops::DEVICE:
      if (std::holds_alternative<std::string>(n.arg)) {
        n.device = DeviceSpec(std::get<std::string>(n.arg));
      } else if (std::holds_alternative<DeviceTuple>(n.arg) && !std::get<DeviceTuple>(n.arg).empty()) {
        n.device = DeviceSpec(std::get<DeviceTuple>(n.arg));
      } else {
        shape_error(op, src, "arg must be a device name or a non-empty tuple of names");
      }
      return;
    case Ops::CONST:  // an optional DEVICE source places the constant
      if (src.size() > 1 || (src.size() == 1 && src[0].op() != Ops::DEVICE))
        shape_error(op, src, "expects no source or one DEVICE");
      if (!src.empty()) n.device = src[0].device();
      if (!std::holds_alternative<int64_t>(n.arg) && !std::holds_alternative<double>(n.arg) &&
          !std::holds_alternative<ScalarArg>(n.arg))
        shape_error(op, src, "arg must be a number or a run-time scalar");
      return;
    case Ops::DEFINE_VAR:
      check_nsrc(op, src, 0);
      if (!std::holds_alternative<VarArg>(n.arg)) shape_error(op, src, "arg must be a variable");
      return;
    default: {  // BUFFER
      check_nsrc(op, src, 1);
      if (src[0].op() != Ops::DEVICE) shape_error(op, src, "source must be a DEVICE");
      if (!std::holds_alternative<BufferArg>(n.arg)) shape_error(op, src, "arg must be a buffer arg");
      int64_t numel = std::get<BufferArg>(n.arg).numel;
      if (numel < 0) shape_error(op, src, fmt::format("negative size {}", numel));
      n.shape = {numel};
      n.device = src[0].device();
      return;
    }
  }
}

// Ops with their first source's shape and devices: CONTIGUOUS, DETACH, CAST, BITCAST, AFTER, CALL,
// ASSIGN; and STORE (no shape, the destination's devices).
void infer_passthrough(Node& n) {
  const auto& src = n.src;
  Ops op = n.op;
  switch (op) {
    case Ops::BITCAST:
      check_nsrc(op, src, 1);
      take_first_source(n);
      if (itemsize(n.dtype) != itemsize(src[0].dtype()))
        shape_error(op, src,
                    fmt::format("bitcast between {} and {} changes the item size", dtype_name(src[0].dtype()),
                                dtype_name(n.dtype)));
      return;
    case Ops::STORE:
      check_nsrc(op, src, 2);
      if (src[0].shape() != src[1].shape()) shape_error(op, src, "destination and value shapes differ");
      n.device = src[0].device();
      return;
    case Ops::AFTER:
      take_first_source(n);
      return;
    case Ops::CALL:  // a call of a custom kernel named by arg: shape and devices of its first argument
      if (!std::holds_alternative<std::string>(n.arg)) shape_error(op, src, "arg must be the kernel's name");
      take_first_source(n);
      return;
    case Ops::ASSIGN:
      check_nsrc(op, src, 2);
      if (src[0].shape() != src[1].shape()) shape_error(op, src, "destination and value shapes differ");
      take_first_source(n);
      return;
    default:  // CONTIGUOUS, DETACH, CAST
      check_nsrc(op, src, 1);
      take_first_source(n);
      return;
  }
}

// COPY and ALLREDUCE: the value of the first source, moved to (or reduced onto) the DEVICE source.
void infer_transfer(Node& n) {
  const auto& src = n.src;
  Ops op = n.op;
  check_nsrc(op, src, 2);
  if (src[1].op() != Ops::DEVICE) shape_error(op, src, "second source must be a DEVICE");
  if (op == Ops::ALLREDUCE &&
      (!std::holds_alternative<int64_t>(n.arg) || !is_reduce_op(static_cast<Ops>(std::get<int64_t>(n.arg)))))
    shape_error(op, src, "arg must be ADD, MUL, MAX or MIN");
  n.shape = src[0].shape();
  n.device = src[1].device();
  if (n.device.tuple()) n.axis = src[0].axis();  // a copy to one device holds the whole value
  if (op == Ops::COPY && std::holds_alternative<int64_t>(n.arg)) {
    int64_t i = std::get<int64_t>(n.arg);
    if (!src[0].device().tuple() || i < 0 || i >= static_cast<int64_t>(src[0].device().count()))
      shape_error(op, src, fmt::format("source index {} is not a device of {}", i, src[0].device().to_string()));
  }
}

// COLLECTIVE (rewrite/collective.hpp): buf on a device tuple reduced onto that same tuple, arg
// {reduce op, algorithm (FusedAlgorithm: oneshot, twoshot, ring_fused, mpi), allreduce or reduce_scatter (flat
// chunk d on device d), allgather or broadcast (with its root)}.
void infer_collective(Node& n) {
  const auto& src = n.src;
  check_nsrc(Ops::COLLECTIVE, src, 2);
  if (src[1].op() != Ops::DEVICE) shape_error(n.op, src, "second source must be a DEVICE");
  if (!src[0].device().tuple() || src[1].device() != src[0].device())
    shape_error(n.op, src, "reduces a value on a device tuple onto that tuple");
  const auto* arg = std::get_if<std::vector<int64_t>>(&n.arg);
  if (!arg || (arg->size() != 3 && arg->size() != 4) || !is_reduce_op(static_cast<Ops>((*arg)[0])) || (*arg)[1] < 0 ||
      (*arg)[1] > 3 || (*arg)[2] < 0 || (*arg)[2] > 3 || ((*arg)[2] == 3) != (arg->size() == 4) ||
      (arg->size() == 4 && ((*arg)[3] < 0 || (*arg)[3] >= static_cast<int64_t>(src[0].device().count()))))
    shape_error(n.op, src,
                "arg must be {ADD|MUL|MAX|MIN, oneshot|twoshot|ring_fused|mpi, allreduce|reduce_scatter|allgather} or "
                "{ADD, oneshot|twoshot|ring_fused|mpi, broadcast, a root in the tuple}");
  n.shape = src[0].shape();
  n.device = src[0].device();
  if ((*arg)[2] == 1) {  // reduce_scatter: device d holds chunk d of the flat value
    auto ndev = static_cast<int64_t>(src[0].device().count());
    int64_t numel = prod(src[0].shape());
    if (numel % ndev != 0)
      shape_error(n.op, src, fmt::format("a reduce_scatter of {} elements over {} devices", numel, ndev));
    n.shape = {numel / ndev};
  }
  if ((*arg)[2] == 2) n.shape = {prod(src[0].shape()) * static_cast<int64_t>(src[0].device().count())};  // allgather
}

// MULTI, MSELECT, MSTACK: between one value per device of a tuple and the tuple's value.
void infer_multi(Node& n) {
  const auto& src = n.src;
  Ops op = n.op;
  if (op == Ops::MSTACK) {
    if (src.empty()) shape_error(op, src, "expects at least one source");
    check_same_shapes(n, 0);
    DeviceTuple names;
    for (const auto& s : src) {
      if (!s.device().single()) shape_error(op, src, "every source must live on one device");
      names.push_back(s.device().name());
    }
    n.shape = src[0].shape();
    n.device = DeviceSpec(names);
    return;
  }
  check_nsrc(op, src, 1);
  if (op == Ops::MSELECT) {
    if (!src[0].device().tuple()) shape_error(op, src, "source must live on a device tuple");
    int64_t i = std::holds_alternative<int64_t>(n.arg) ? std::get<int64_t>(n.arg) : -1;
    if (i < 0 || i >= static_cast<int64_t>(src[0].device().count()))
      shape_error(op, src, fmt::format("index {} is not a device of {}", i, src[0].device().to_string()));
    n.shape = src[0].shape();
    n.device = DeviceSpec(src[0].device().names()[static_cast<size_t>(i)]);
    return;
  }
  n.device = src[0].device();  // MULTI
  n.shape = src[0].shape();
  if (!n.device.tuple()) shape_error(op, src, "source must live on a device tuple");
  if (std::holds_alternative<int64_t>(n.arg)) {
    int ax = norm_axis(op, src, std::get<int64_t>(n.arg), n.shape.size());
    n.shape[ax] *= static_cast<int64_t>(n.device.count());
    n.axis = ax;
  }
}

// REDUCE_AXIS: the reduced axes become 1; a reduction over the shard axis leaves the value unsharded.
void infer_reduce(Node& n) {
  const auto& src = n.src;
  Ops op = n.op;
  check_nsrc(op, src, 1);
  if (!std::holds_alternative<ReduceArg>(n.arg)) shape_error(op, src, "arg must be (op, axes)");
  const auto& ra = std::get<ReduceArg>(n.arg);
  if (!is_reduce_op(ra.op)) shape_error(op, src, fmt::format("{} is not a reduce op", op_name(ra.op)));
  take_first_source(n);
  for (int a : ra.axes) {
    if (a < 0 || a >= static_cast<int>(n.shape.size()))
      shape_error(op, src, fmt::format("axis {} out of range for rank {}", a, n.shape.size()), a);
    n.shape[static_cast<size_t>(a)] = 1;
  }
  if (n.axis && std::find(ra.axes.begin(), ra.axes.end(), *n.axis) != ra.axes.end()) n.axis.reset();
}

// Throws unless every dimension of `to` is non-negative.
void check_dims(const Node& n, const Shape& to) {
  for (int64_t s : to)
    if (s < 0) shape_error(n.op, n.src, fmt::format("negative dimension in {}", shape_str(to)));
}

// RESHAPE: same element count; the shard axis must survive as one axis.
void infer_reshape(Node& n, const Shape& in, std::optional<int> sa) {
  const auto& src = n.src;
  Ops op = n.op;
  const auto& to = std::get<std::vector<int64_t>>(n.arg);
  check_dims(n, to);
  if (prod(to) != prod(in))
    shape_error(op, src, fmt::format("cannot reshape {} to {}: element counts differ", shape_str(in), shape_str(to)));
  n.shape = to;
  if (!sa) return;
  // the new axis is the last one whose prefix product equals the old prefix (reference: UOp.axis)
  int64_t before = prod(Shape(in.begin(), in.begin() + *sa));
  int64_t acc = 1;
  std::optional<int> found;
  for (size_t i = 0; i <= to.size(); ++i) {
    if (acc == before && i < to.size()) found = static_cast<int>(i);
    if (i < to.size()) acc *= to[i];
  }
  if (!found)
    shape_error(op, src,
                fmt::format("reshape {} -> {} would move elements between shards", shape_str(in), shape_str(to)), sa);
  n.axis = found;
}

// EXPAND: same rank; only axes of size 1 grow.
void infer_expand(Node& n, const Shape& in, std::optional<int> sa) {
  const auto& src = n.src;
  Ops op = n.op;
  size_t rank = in.size();
  const auto& to = std::get<std::vector<int64_t>>(n.arg);
  check_dims(n, to);
  if (to.size() != rank) shape_error(op, src, fmt::format("cannot expand to {}: rank differs", shape_str(to)));
  for (size_t i = 0; i < rank; ++i)
    if (to[i] != in[i] && in[i] != 1)
      shape_error(op, src, fmt::format("cannot expand to {}: axis {} is not 1", shape_str(to), i), static_cast<int>(i));
  n.shape = to;
  n.axis = sa;
}

// PERMUTE: arg is a permutation of the axes; the shard axis moves with its axis.
void infer_permute(Node& n, const Shape& in, std::optional<int> sa) {
  size_t rank = in.size();
  const auto& order = std::get<std::vector<int64_t>>(n.arg);
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  bool ok = sorted.size() == rank;
  for (size_t i = 0; ok && i < rank; ++i) ok = sorted[i] == static_cast<int64_t>(i);
  if (!ok) shape_error(n.op, n.src, fmt::format("{} is not a permutation of {} axes", shape_str(order), rank));
  for (size_t i = 0; i < rank; ++i) n.shape.push_back(in[static_cast<size_t>(order[i])]);
  if (sa) n.axis = static_cast<int>(std::find(order.begin(), order.end(), *sa) - order.begin());
}

// PAD and SHRINK: a (begin, end) pair per axis, in range on the first and last device, with a result
// size that does not depend on the device.
void infer_pad_shrink(Node& n, const Shape& in, std::optional<int> sa) {
  const auto& src = n.src;
  Ops op = n.op;
  size_t rank = in.size();
  const auto& sp = std::get<Spans>(n.arg);
  if (sp.size() != rank) shape_error(op, src, fmt::format("expects {} (begin, end) pairs, got {}", rank, sp.size()));
  int64_t last = std::max<int64_t>(1, static_cast<int64_t>(n.device.count())) - 1;
  for (size_t i = 0; i < rank; ++i) {
    const auto& [a, b] = sp[i];
    for (int64_t d : {int64_t{0}, last}) {
      int64_t lo = a.at(d), hi = b.at(d);
      bool bad = op == Ops::PAD ? (lo < 0 || hi < 0) : (lo < 0 || hi < lo || hi > in[i]);
      if (bad)
        shape_error(
            op, src,
            fmt::format("{} ({}, {}) is out of range for size {}", op == Ops::PAD ? "padding" : "range", lo, hi, in[i]),
            static_cast<int>(i));
    }
    if (op == Ops::PAD ? a.k + b.k != 0 : a.k != b.k)
      shape_error(op, src, "the result size must not depend on the device", static_cast<int>(i));
    int64_t size = 0;
    if (op == Ops::SHRINK) {
      size = b.c - a.c;
    } else if (__builtin_add_overflow(in[i], a.c, &size) || __builtin_add_overflow(size, b.c, &size)) {
      shape_error(op, src, "padded size overflows", static_cast<int>(i));
    }
    n.shape.push_back(size);
  }
  n.axis = sa;
}

// Movement ops (and anything else, which has no rule): one source, its devices.
void infer_movement(Node& n) {
  const auto& src = n.src;
  const Shape& in = src.empty() ? Shape{} : src[0].shape();
  check_nsrc(n.op, src, 1);
  n.device = src[0].device();
  std::optional<int> sa = src[0].axis();
  switch (n.op) {
    case Ops::RESHAPE:
      return infer_reshape(n, in, sa);
    case Ops::EXPAND:
      return infer_expand(n, in, sa);
    case Ops::PERMUTE:
      return infer_permute(n, in, sa);
    case Ops::FLIP: {
      const auto& flags = std::get<std::vector<int64_t>>(n.arg);
      if (flags.size() != in.size())
        shape_error(n.op, src, fmt::format("expects {} flags, got {}", in.size(), flags.size()));
      n.shape = in;
      n.axis = sa;
      return;
    }
    case Ops::PAD:
    case Ops::SHRINK:
      return infer_pad_shrink(n, in, sa);
    default:
      throw InternalError(fmt::format("no shape rule for {}", op_name(n.op)));
  }
}

// Shape, device, shard axis and logical flag of a node about to be created: the logical flag here,
// the rest by the rule of the node's op family. Throws ShapeError for anything impossible.
}  // namespace

void infer(Node& n) {
  for (const auto& s : n.src) n.logical = n.logical || s.node()->logical;
  if (n.op == Ops::MULTI) n.logical = true;
  if (group::alu().contains(n.op)) return infer_alu(n);
  switch (n.op) {
    case Ops::SINK:
    case Ops::DEVICE:
    case Ops::CONST:
    case Ops::DEFINE_VAR:
    case Ops::BUFFER:
      return infer_leaf(n);
    case Ops::CONTIGUOUS:
    case Ops::DETACH:
    case Ops::CAST:
    case Ops::BITCAST:
    case Ops::STORE:
    case Ops::AFTER:
    case Ops::CALL:
    case Ops::ASSIGN:
      return infer_passthrough(n);
    case Ops::COPY:
    case Ops::ALLREDUCE:
      return infer_transfer(n);
    case Ops::COLLECTIVE:
      return infer_collective(n);
    case Ops::MULTI:
    case Ops::MSELECT:
    case Ops::MSTACK:
      return infer_multi(n);
    case Ops::REDUCE_AXIS:
      return infer_reduce(n);
    default:
      return infer_movement(n);
  }
}

}  // namespace ringrt
