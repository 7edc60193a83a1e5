// The node behind a UOp handle, and the shape inference run when a node is made (internal to rewrite/:
// uop.cpp owns the graph, infer.cpp the per-op rules).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "rewrite/uop.hpp"

namespace ringrt {

namespace detail {
struct Node {
  Ops op;
  DType dtype;
  Arg arg;
  std::vector<UOp> src;  // mirrors the vertex's out-edges, for O(1) access
  Shape shape;
  DeviceSpec device;
  std::optional<int> axis;
  bool logical = false;
  uint64_t hash = 0;
  int64_t id = 0;
  UOpGraph* graph = nullptr;
  void* vertex = nullptr;  // the Boost.Graph vertex descriptor (listS: a stable pointer)
};

uint64_t mix(uint64_t h, uint64_t v);  // the hash-consing table's combiner
uint64_t hash_arg(const Arg& arg);     // structural: the bits of the value
// Args are equal when their bits are: NaN equals NaN, 0.0 and -0.0 differ (as the hash says).
bool same_arg(const Arg& a, const Arg& b);
}  // namespace detail

// Fills n.shape, n.device, n.axis and n.logical from n.op, n.dtype, n.arg and n.src, one rule per op
// family. Throws ShapeError naming the op, the input shapes and the axis for an impossible node.
void infer(detail::Node& n);

}  // namespace ringrt
