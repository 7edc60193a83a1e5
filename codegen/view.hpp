// Views: index expressions for chains of movement ops (reference: tinygrad shape/view.py and
// shapetracker.py; here every movement op is an index map applied symbolically, root to leaf).
//
// Design. A kernel writes element `gid` of its output, whose multi-index is unravel(gid, shape). To
// read a source through RESHAPE, EXPAND, PERMUTE, FLIP, SHRINK and PAD, the multi-index is pushed
// through each op from the output down to the leaf: reshape ravels and unravels, expand reads index 0
// on a broadcast axis, permute reorders, flip reads n-1-i, shrink adds the begin, pad subtracts the
// before and adds `0 <= i < n` to the valid mask (out of range reads give 0). The maps compose, so a
// movement op above a computed value is handled the same way as one above a buffer. Bounds of PAD and
// SHRINK may depend on the device (c + k*dnum): `dnum` is a symbolic variable of the kernel. The
// canonical Expr form folds the usual chains: a contiguous read becomes `gid`, a shard read
// `gid + 400*dnum`.
#pragma once

#include <optional>
#include <vector>

#include "codegen/symbolic.hpp"
#include "rewrite/uop.hpp"

namespace ringrt::codegen {

// A position in a node's shape: one index per axis, and where it is valid (a pad's in-range mask).
struct ViewIndex {
  std::vector<Expr> idx;
  Mask valid;
};

// The multi-index of flat element `flat` in a row-major `shape` (flat must lie in [0, prod(shape))).
std::vector<Expr> unravel(const Expr& flat, const Shape& shape);
// The row-major flat element of multi-index `idx` in `shape`.
Expr ravel(const std::vector<Expr>& idx, const Shape& shape);

// The kernel's variables: gid in [0, numel-1] (rank 0, printed first) and dnum in [0, dnum_max].
Expr gid_var(int64_t numel);
Expr dnum_var(int64_t dnum_max);
// c + k*dnum.
Expr affine_expr(const Affine& a, const Expr& dnum);

// The index into u.src(0) that movement op `u` reads at position `at` of its output; for PAD the mask
// gains the pad's in-range test. Throws InternalError when u is not a movement op.
ViewIndex push_through(const UOp& u, const ViewIndex& at, const Expr& dnum);

// The read a chain of movement ops makes: `index` into the base node (flat, row-major), valid where
// `valid` holds (the read gives 0 elsewhere).
struct ViewAccess {
  UOp base;
  Expr index;
  Mask valid;
};
// Follows movement ops from u down to the first node that is not one and ravels the index there.
ViewAccess view_access(const UOp& u, ViewIndex at, const Expr& dnum);
// True when u is a BUFFER seen through zero or more movement ops.
bool is_buffer_view(const UOp& u);

}  // namespace ringrt::codegen
