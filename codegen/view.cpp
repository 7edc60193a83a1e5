// The index map of each movement op (see view.hpp); mirrors rewrite/interpreter.cpp `movement`.
#include "codegen/view.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

namespace ringrt::codegen {

std::vector<Expr> unravel(const Expr& flat, const Shape& shape) {
  std::vector<Expr> idx(shape.size());
  if (prod(shape) == 0) return idx;  // an empty shape has no elements to index
  int64_t stride = 1;
  for (size_t a = shape.size(); a-- > 0;) {
    if (shape[a] != 1) idx[a] = a == 0 ? flat.floordiv(stride) : flat.floordiv(stride).mod(shape[a]);
    stride *= shape[a];
  }
  return idx;
}

Expr ravel(const std::vector<Expr>& idx, const Shape& shape) {
  Expr flat;
  int64_t stride = 1;
  for (size_t a = shape.size(); a-- > 0;) {
    flat = flat + idx[a] * stride;
    stride *= shape[a];
  }
  return flat;
}

Expr gid_var(int64_t numel) { return Expr::var("gid", 0, std::max<int64_t>(0, numel - 1), 0); }
Expr dnum_var(int64_t dnum_max) { return Expr::var("dnum", 0, dnum_max, 100); }
Expr affine_expr(const Affine& a, const Expr& dnum) { return dnum * a.k + a.c; }

ViewIndex push_through(const UOp& u, const ViewIndex& at, const Expr& dnum) {
  const Shape& in = u.src(0).shape();
  const Shape& out = u.shape();
  ViewIndex r{std::vector<Expr>(in.size()), at.valid};
  switch (u.op()) {
    case Ops::RESHAPE:  // ravel in the output shape, unravel in the source shape
      r.idx = in == out ? at.idx : unravel(ravel(at.idx, out), in);
      return r;
    case Ops::EXPAND:  // a broadcast axis reads element 0
      for (size_t a = 0; a < in.size(); ++a) r.idx[a] = in[a] == 1 ? Expr() : at.idx[a];
      return r;
    case Ops::PERMUTE: {  // output axis a is source axis order[a]
      const auto& order = u.arg_ints();
      for (size_t a = 0; a < order.size(); ++a) r.idx[static_cast<size_t>(order[a])] = at.idx[a];
      return r;
    }
    case Ops::FLIP: {
      const auto& flags = u.arg_ints();
      for (size_t a = 0; a < in.size(); ++a) r.idx[a] = flags[a] ? Expr::constant(in[a] - 1) - at.idx[a] : at.idx[a];
      return r;
    }
    case Ops::SHRINK: {
      const Spans& sp = u.arg_spans();
      for (size_t a = 0; a < in.size(); ++a) r.idx[a] = at.idx[a] + affine_expr(sp[a].first, dnum);
      return r;
    }
    case Ops::PAD: {  // reads outside [0, in) give 0
      const Spans& sp = u.arg_spans();
      for (size_t a = 0; a < in.size(); ++a) {
        r.idx[a] = at.idx[a] - affine_expr(sp[a].first, dnum);
        r.valid.require_range(r.idx[a], Expr(), Expr::constant(in[a]));
      }
      return r;
    }
    default:
      throw InternalError(fmt::format("push_through: {} is not a movement op", op_name(u.op())));
  }
}

ViewAccess view_access(const UOp& u, ViewIndex at, const Expr& dnum) {
  UOp cur = u;
  while (group::movement().contains(cur.op())) {
    at = push_through(cur, at, dnum);
    cur = cur.src(0);
  }
  return {cur, ravel(at.idx, cur.shape()), at.valid};
}

bool is_buffer_view(const UOp& u) {
  UOp cur = u;
  while (group::movement().contains(cur.op())) cur = cur.src(0);
  return cur.op() == Ops::BUFFER;
}

}  // namespace ringrt::codegen
