#include "rewrite/interpreter.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "core/errors.hpp"
#include "rewrite/collective.hpp"

namespace ringrt {

// ---------------------------------------------------------------------------------------------
// scalar ALU

double alu_float(Ops op, DType, const std::vector<double>& a) {
  switch (op) {
    case Ops::NEG:
      return -a[0];
    case Ops::EXP2:
      return std::exp2(a[0]);
    case Ops::LOG2:
      return std::log2(a[0]);
    case Ops::SIN:
      return std::sin(a[0]);
    case Ops::SQRT:
      return std::sqrt(a[0]);
    case Ops::RECIP:
      return 1.0 / a[0];
    case Ops::ADD:
      return a[0] + a[1];
    case Ops::SUB:
      return a[0] - a[1];
    case Ops::MUL:
      return a[0] * a[1];
    case Ops::FDIV:
      return a[0] / a[1];
    case Ops::MAX:
      return std::isnan(a[0]) || a[0] > a[1] ? a[0] : a[1];
    case Ops::MIN:
      return std::isnan(a[0]) || a[0] < a[1] ? a[0] : a[1];
    case Ops::CMPLT:
      return a[0] < a[1];
    case Ops::CMPNE:
      return a[0] != a[1];
    case Ops::CMPEQ:
      return a[0] == a[1];
    case Ops::WHERE:
      return a[0] != 0.0 ? a[1] : a[2];
    default:
      throw InternalError(fmt::format("no float semantics for {}", op_name(op)));
  }
}

int64_t alu_int(Ops op, DType, const std::vector<int64_t>& a) {
  auto wrap = [](uint64_t v) { return static_cast<int64_t>(v); };  // two's complement arithmetic
  switch (op) {
    case Ops::NEG:
      return wrap(0ull - static_cast<uint64_t>(a[0]));
    case Ops::ADD:
      return wrap(static_cast<uint64_t>(a[0]) + static_cast<uint64_t>(a[1]));
    case Ops::SUB:
      return wrap(static_cast<uint64_t>(a[0]) - static_cast<uint64_t>(a[1]));
    case Ops::MUL:
      return wrap(static_cast<uint64_t>(a[0]) * static_cast<uint64_t>(a[1]));
    case Ops::IDIV:
      return a[1] == 0 || (a[1] == -1 && a[0] == INT64_MIN) ? 0 : a[0] / a[1];
    case Ops::MOD:
      return a[1] == 0 || a[1] == -1 ? 0 : a[0] % a[1];
    case Ops::MAX:
      return std::max(a[0], a[1]);
    case Ops::MIN:
      return std::min(a[0], a[1]);
    case Ops::CMPLT:
      return a[0] < a[1];
    case Ops::CMPNE:
      return a[0] != a[1];
    case Ops::CMPEQ:
      return a[0] == a[1];
    case Ops::AND:
      return a[0] & a[1];
    case Ops::OR:
      return a[0] | a[1];
    case Ops::XOR:
      return a[0] ^ a[1];
    case Ops::WHERE:
      return a[0] != 0 ? a[1] : a[2];
    default:
      throw InternalError(fmt::format("no integer semantics for {}", op_name(op)));
  }
}

// ---------------------------------------------------------------------------------------------
// the interpreter

namespace {

using Value = std::vector<HostBuffer>;

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// out[i] = in[index(i)] or zero where index returns -1; idx is the output's multi-index.
template <class F>
HostBuffer gather(const HostBuffer& in, const Shape& out_shape, F index) {
  HostBuffer out(in.dtype, out_shape);
  std::vector<int64_t> idx(out_shape.size(), 0);
  int64_t n = out.numel(), w = itemsize(in.dtype);
  for (int64_t i = 0; i < n; ++i) {
    int64_t j = index(idx);
    if (j >= 0) std::memcpy(out.bytes.data() + i * w, in.bytes.data() + j * w, static_cast<size_t>(w));
    for (size_t a = idx.size(); a-- > 0;) {  // next multi-index, row-major
      if (++idx[a] < out_shape[a]) break;
      idx[a] = 0;
    }
  }
  return out;
}

HostBuffer movement(const UOp& u, const HostBuffer& in, int64_t dnum) {
  const Shape& is = in.shape;
  auto st = strides_of(is);
  switch (u.op()) {
    case Ops::RESHAPE: {
      HostBuffer out = in;
      out.shape = u.shape();
      return out;
    }
    case Ops::EXPAND:
      return gather(in, u.shape(), [&](const std::vector<int64_t>& idx) {
        int64_t j = 0;
        for (size_t a = 0; a < idx.size(); ++a) j += (is[a] == 1 ? 0 : idx[a]) * st[a];
        return j;
      });
    case Ops::PERMUTE: {
      const auto& order = u.arg_ints();
      return gather(in, u.shape(), [&](const std::vector<int64_t>& idx) {
        int64_t j = 0;
        for (size_t a = 0; a < idx.size(); ++a) j += idx[a] * st[static_cast<size_t>(order[a])];
        return j;
      });
    }
    case Ops::FLIP: {
      const auto& flags = u.arg_ints();
      return gather(in, u.shape(), [&](const std::vector<int64_t>& idx) {
        int64_t j = 0;
        for (size_t a = 0; a < idx.size(); ++a) j += (flags[a] ? is[a] - 1 - idx[a] : idx[a]) * st[a];
        return j;
      });
    }
    case Ops::SHRINK: {
      const auto& sp = u.arg_spans();
      return gather(in, u.shape(), [&](const std::vector<int64_t>& idx) {
        int64_t j = 0;
        for (size_t a = 0; a < idx.size(); ++a) j += (idx[a] + sp[a].first.at(dnum)) * st[a];
        return j;
      });
    }
    case Ops::PAD: {
      const auto& sp = u.arg_spans();
      return gather(in, u.shape(), [&](const std::vector<int64_t>& idx) -> int64_t {
        int64_t j = 0;
        for (size_t a = 0; a < idx.size(); ++a) {
          int64_t k = idx[a] - sp[a].first.at(dnum);
          if (k < 0 || k >= is[a]) return -1;
          j += k * st[a];
        }
        return j;
      });
    }
    default:
      throw InternalError("not a movement op");
  }
}

HostBuffer reduce(const UOp& u, const HostBuffer& in) {
  const ReduceArg& ra = u.arg_reduce();
  HostBuffer out(in.dtype, u.shape());
  auto st = strides_of(in.shape);
  std::vector<int64_t> red_shape;  // the reduced axes' extents, in axis order
  std::vector<int64_t> red_strides;
  for (int a : ra.axes) {
    red_shape.push_back(in.shape[static_cast<size_t>(a)]);
    red_strides.push_back(st[static_cast<size_t>(a)]);
  }
  int64_t inner = prod(red_shape);
  bool fl = is_float(in.dtype);
  std::vector<int64_t> oidx(u.shape().size(), 0);
  auto ost = strides_of(in.shape);
  for (int64_t o = 0; o < out.numel(); ++o) {
    int64_t base = 0;
    for (size_t a = 0; a < oidx.size(); ++a) base += oidx[a] * ost[a];
    HostBuffer acc(in.dtype, {1});
    if (fl) {
      acc.set(0, reduce_identity(ra.op));
    } else {
      int64_t lo = int_min(in.dtype), hi = int_max(in.dtype);
      acc.set_int(0, ra.op == Ops::MAX ? lo : ra.op == Ops::MIN ? hi : ra.op == Ops::MUL ? 1 : 0);
    }
    std::vector<int64_t> ridx(red_shape.size(), 0);
    for (int64_t r = 0; r < inner; ++r) {
      int64_t j = base;
      for (size_t k = 0; k < ridx.size(); ++k) j += ridx[k] * red_strides[k];
      if (fl) {
        acc.set(0, alu_float(ra.op, in.dtype, {acc.get(0), in.get(j)}));
      } else {
        acc.set_int(0, alu_int(ra.op, in.dtype, {acc.get_int(0), in.get_int(j)}));
      }
      for (size_t k = ridx.size(); k-- > 0;) {
        if (++ridx[k] < red_shape[k]) break;
        ridx[k] = 0;
      }
    }
    std::memcpy(out.bytes.data() + o * itemsize(in.dtype), acc.bytes.data(), static_cast<size_t>(itemsize(in.dtype)));
    for (size_t a = oidx.size(); a-- > 0;) {
      if (++oidx[a] < u.shape()[a]) break;
      oidx[a] = 0;
    }
  }
  return out;
}

HostBuffer elementwise(const UOp& u, const std::vector<const HostBuffer*>& in) {
  HostBuffer out(u.dtype(), u.shape());
  DType operand = in.back()->dtype;
  bool fl = is_float(operand);
  std::vector<double> fa(in.size());
  std::vector<int64_t> ia(in.size());
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (fl) {
      for (size_t k = 0; k < in.size(); ++k) fa[k] = in[k]->get(i);
      out.set(i, alu_float(u.op(), operand, fa));
    } else {
      for (size_t k = 0; k < in.size(); ++k) ia[k] = in[k]->get_int(i);
      out.set_int(i, alu_int(u.op(), operand, ia));
    }
  }
  return out;
}

HostBuffer cast(const HostBuffer& in, DType to, bool bit) {
  HostBuffer out(to, in.shape);
  if (bit) {
    out.bytes = in.bytes;
    return out;
  }
  for (int64_t i = 0; i < in.numel(); ++i) {
    if (is_float(in.dtype) || is_float(to)) {
      out.set(i, in.get(i));
    } else {
      out.set_int(i, in.get_int(i));
    }
  }
  return out;
}

// Concatenate shards (all of one shape) along axis. Each shard is `outer` runs of `run` contiguous bytes
// (one per index of the axes before `axis`); the output interleaves them: run o of shard k at o * shards + k.
HostBuffer concat(const Value& shards, int axis) {
  const Shape& ps = shards.at(0).shape;
  for (const HostBuffer& b : shards)
    if (b.shape != ps) throw InternalError("concat: shards of shapes " + shape_str(ps) + " and " + shape_str(b.shape));
  Shape s = ps;
  s[static_cast<size_t>(axis)] *= static_cast<int64_t>(shards.size());
  HostBuffer out(shards[0].dtype, s);
  const int64_t outer = prod(Shape(ps.begin(), ps.begin() + axis));
  const auto run = static_cast<size_t>(prod(Shape(ps.begin() + axis, ps.end())) * itemsize(out.dtype));
  std::byte* to = out.bytes.data();
  for (int64_t o = 0; o < outer; ++o)
    for (const HostBuffer& b : shards) {
      if (run > 0) std::memcpy(to, b.bytes.data() + static_cast<size_t>(o) * run, run);
      to += run;
    }
  return out;
}

// a op b, element by element (the combine step of a reduction).
HostBuffer combine(Ops op, const HostBuffer& a, const HostBuffer& b) {
  HostBuffer out(a.dtype, a.shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (is_float(a.dtype)) {
      out.set(i, alu_float(op, a.dtype, {a.get(i), b.get(i)}));
    } else {
      out.set_int(i, alu_int(op, a.dtype, {a.get_int(i), b.get_int(i)}));
    }
  }
  return out;
}

// A STORE of v into target on device dnum: all of `to`, or, for a target that is a SHRINK (a store
// into a range of a buffer), the elements of `to` (shaped as its source) that it selects.
void store_into(HostBuffer& to, const UOp& target, const HostBuffer& v, int64_t dnum) {
  if (target.op() != Ops::SHRINK) {
    to.bytes = v.bytes;
    return;
  }
  const Spans& sp = target.arg_spans();
  const Shape& out = target.shape();
  std::vector<int64_t> st = strides_of(to.shape), idx(out.size(), 0);
  size_t bytes = static_cast<size_t>(itemsize(to.dtype));
  for (int64_t k = 0; k < prod(out); ++k) {
    int64_t j = 0;
    for (size_t a = 0; a < idx.size(); ++a) j += (idx[a] + sp[a].first.at(dnum)) * st[a];
    std::memcpy(&to.bytes[static_cast<size_t>(j) * bytes], &v.bytes[static_cast<size_t>(k) * bytes], bytes);
    for (size_t a = idx.size(); a-- > 0 && ++idx[a] == out[a];) idx[a] = 0;  // the next index, row-major
  }
}

// The underlying buffer of a store target or AFTER chain.
UOp base_of(UOp u) {
  while (u.op() == Ops::AFTER || u.op() == Ops::MSELECT || u.op() == Ops::RESHAPE) u = u.src(0);
  return u;
}

// One evaluation: the value of every node evaluated so far, each computed from its sources' values.
class Evaluator {
 public:
  explicit Evaluator(const BufferLookup& lookup) : lookup_(lookup) {}

  // Evaluates u, whose sources are evaluated already, and keeps its value.
  void evaluate(const UOp& u) { vals_[u.node()] = value(u); }
  const Value& at(const UOp& u) const { return vals_.at(u.node()); }

 private:
  // The number of per-device values u has: one when logical or on one device, else one per device.
  size_t width_of(const UOp& u) const {
    if (u.logical()) return 1;
    if (u.device().tuple()) return u.device().count();
    if (u.device().single()) return 1;
    size_t w = 1;
    for (const auto& s : u.src()) w = std::max(w, at(s).size());
    return w;
  }

  // Source k's value on device d (its only value when it has one).
  const HostBuffer& in(const UOp& u, size_t k, size_t d) const {
    const Value& v = at(u.src(k));
    if (v.empty()) throw InternalError(fmt::format("{}: source {} has no value", op_name(u.op()), k));
    return v[v.size() == 1 ? 0 : d];
  }

  // The values fn(0) .. fn(w-1).
  template <class F>
  static Value each(size_t w, F fn) {
    Value out;
    for (size_t d = 0; d < w; ++d) out.push_back(fn(d));
    return out;
  }

  // The value of u by the semantics of its op.
  Value value(const UOp& u) const {
    size_t w = u.op() == Ops::DEFINE_VAR ? static_cast<size_t>(std::get<VarArg>(u.arg()).max + 1) : width_of(u);
    switch (u.op()) {
      case Ops::DEVICE:
      case Ops::SINK:
      case Ops::STORE:
        return {};
      case Ops::CONST:
      case Ops::DEFINE_VAR:
      case Ops::BUFFER:
        return leaf(u, w);
      case Ops::CONTIGUOUS:
      case Ops::DETACH:
        return each(w, [&](size_t d) { return in(u, 0, d); });
      case Ops::CAST:
      case Ops::BITCAST:
        return each(w, [&](size_t d) { return cast(in(u, 0, d), u.dtype(), u.op() == Ops::BITCAST); });
      case Ops::REDUCE_AXIS:
        return each(w, [&](size_t d) { return reduce(u, in(u, 0, d)); });
      case Ops::MULTI:
      case Ops::MSELECT:
      case Ops::MSTACK:
      case Ops::COPY:
      case Ops::ALLREDUCE:
      case Ops::COLLECTIVE:
        return across_devices(u, w);
      case Ops::AFTER:
        return after(u, w);
      case Ops::ASSIGN:
        return each(w, [&](size_t d) { return in(u, 1, d); });
      case Ops::CALL:
        throw CompileError(
            fmt::format("CALL of custom kernel '{}': ringrt has no implementation of custom kernels; "
                        "the multi-device rules carry CALLs through for a backend that supplies them",
                        std::get<std::string>(u.arg())));
      default:
        return computed(u, w);
    }
  }

  // CONST (on a device tuple: the same value on every device), DEFINE_VAR (the device's number),
  // BUFFER (the looked-up data, else zeros).
  Value leaf(const UOp& u, size_t w) const {
    Value out;
    if (u.op() == Ops::CONST) {
      out.assign(w, const_value(u));
    } else if (u.op() == Ops::DEFINE_VAR) {
      for (size_t d = 0; d < w; ++d) {
        out.emplace_back(u.dtype(), Shape{});
        out.back().set_int(0, static_cast<int64_t>(d));
      }
    } else {
      const auto& ba = std::get<BufferArg>(u.arg());
      const Value* data = lookup_ ? lookup_(ba.id) : nullptr;
      for (size_t d = 0; d < w; ++d) {
        if (data && d < data->size()) {
          out.push_back((*data)[d]);
          out.back().shape = u.shape();
        } else {
          out.emplace_back(u.dtype(), u.shape());
        }
      }
    }
    return out;
  }

  // MULTI, MSELECT, MSTACK, COPY, ALLREDUCE, COLLECTIVE: values moved between the devices of a tuple.
  Value across_devices(const UOp& u, size_t w) const {
    const Value& v = at(u.src(0));
    switch (u.op()) {
      case Ops::MULTI:
        return {u.axis() ? concat(v, *u.axis()) : v.at(0)};
      case Ops::MSELECT:
        return {v.at(static_cast<size_t>(u.arg_int()))};
      case Ops::MSTACK:
        return each(u.src().size(), [&](size_t d) { return in(u, d, 0); });
      case Ops::COPY: {
        // tuple -> anything: one shard (the arg's, else shard 0); one -> tuple: broadcast
        const UOp& s = u.src(0);
        bool pick =
            !s.logical() && s.device().tuple() && (std::holds_alternative<int64_t>(u.arg()) || !u.device().tuple());
        size_t k = std::holds_alternative<int64_t>(u.arg()) ? static_cast<size_t>(u.arg_int()) : 0;
        return each(w, [&](size_t d) { return pick ? v.at(k) : v[v.size() == 1 ? 0 : d]; });
      }
      default:  // ALLREDUCE, COLLECTIVE: the devices' values folded in tuple order (rewrite/collective.hpp)
        return collective_values(u, v, w, combine);
    }
  }

  // AFTER: its first source's value with the stores it orders applied.
  Value after(const UOp& u, size_t w) const {
    Value out = each(w, [&](size_t d) { return in(u, 0, d); });
    UOp base = base_of(u.src(0));
    for (size_t k = 1; k < u.src().size(); ++k) {
      const UOp& st = u.src(k);
      if (st.op() != Ops::STORE) continue;
      const UOp& target = st.src(0);
      const UOp& dest = target.op() == Ops::SHRINK ? target.src(0) : target;  // a store into a range of dest
      if (base_of(dest) != base) throw InternalError("AFTER: a store into another buffer than the one it orders");
      const Value& val = at(st.src(1));
      if (dest.op() == Ops::MSELECT) {
        int64_t j = dest.arg_int();
        store_into(out.at(static_cast<size_t>(j)), target, val.at(0), j);
      } else {
        for (size_t d = 0; d < w; ++d)
          store_into(out[d], target, val[val.size() == 1 ? 0 : d], static_cast<int64_t>(d));
      }
    }
    return out;
  }

  // Movement and ALU ops, per device; any other op has no semantics here.
  Value computed(const UOp& u, size_t w) const {
    if (group::movement().contains(u.op()))
      return each(w, [&](size_t d) { return movement(u, in(u, 0, d), static_cast<int64_t>(d)); });
    if (!group::alu().contains(u.op()))
      throw InternalError(fmt::format("the interpreter has no semantics for {}", op_name(u.op())));
    return each(w, [&](size_t d) {
      std::vector<const HostBuffer*> args;
      for (size_t k = 0; k < u.src().size(); ++k) args.push_back(&in(u, k, d));
      return elementwise(u, args);
    });
  }

  const BufferLookup& lookup_;
  std::unordered_map<const detail::Node*, Value> vals_;
};

}  // namespace

Interpreter::Interpreter(BufferLookup lookup) : lookup_(std::move(lookup)) {}

std::vector<HostBuffer> Interpreter::evaluate(const UOp& root) {
  Evaluator ev(lookup_);
  for (const UOp& u : root.graph().toposort({root})) ev.evaluate(u);
  return ev.at(root);
}

HostBuffer const_value(const UOp& c) {
  HostBuffer b(c.dtype(), {});
  if (const auto* s = std::get_if<ScalarArg>(&c.arg())) {
    if (s->slot >= 0)
      throw InternalError(fmt::format("CONST: program parameter ${} has no value outside a run", s->slot));
    is_float(c.dtype()) ? b.set(0, s->value) : b.set_int(0, static_cast<int64_t>(s->value));
  } else {
    std::holds_alternative<double>(c.arg()) ? b.set(0, c.arg_float()) : b.set_int(0, c.arg_int());
  }
  return b;
}

}  // namespace ringrt
