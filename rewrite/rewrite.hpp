// The rewrite drivers (reference: tinygrad uop/ops.py graph_rewrite, graph_rewrite_map; MLIR's
// GreedyPatternRewriteDriver for the bounded, iterative shape).
//
// Bottom-up: a node is rewritten after its sources, and each node is rewritten to a fixpoint; a
// replacement that contains new nodes is itself rewritten bottom-up before it is used. The driver is
// iterative (an explicit stack, no recursion on graph depth) and bounded per node.
//
// Two drivers, one result: the serial driver visits nodes in topological order; the parallel one
// rewrites each topological wave (nodes whose sources are all finished) under tbb::parallel_for.
// Rewriting a node is a pure function of the node, so both return the very same nodes.
#pragma once

#include <cstddef>
#include <unordered_map>

#include "rewrite/pattern.hpp"

namespace ringrt {

enum class RewriteDriver { serial, parallel, automatic };

struct RewriteOptions {
  RewriteDriver driver = RewriteDriver::automatic;
  int threads = 0;                       // parallel driver: 0 = TBB's default
  size_t max_rewrites_per_node = 10000;  // the bound on one node's fixpoint iteration
  // automatic: the parallel driver from this graph size on. Measured (ringrt_bench BM_Rewrite, 2-core
  // VM): the parallel driver lost at every size up to 204k nodes (1.2x-5x slower), so it is kept for
  // graphs beyond a million nodes; lower it on machines with more cores after measuring.
  size_t parallel_min_nodes = size_t{1} << 20;
};

using UOpMap = std::unordered_map<UOp, UOp, UOpHash>;

struct RewriteResult {
  UOp root;               // the rewritten root
  UOpMap map;             // every node of the input graph -> its rewrite
  bool converged = true;  // false when some node hit max_rewrites_per_node (its last form is kept)
  size_t rewrites = 0;    // callbacks that returned a replacement
};

// Rewrites everything reachable from root. Never throws for non-convergence: see converged.
RewriteResult rewrite_graph(const UOp& root, const PatternMatcher& pm, const RewriteOptions& options = {});
// The rewritten root; throws InternalError when the rewrite did not converge.
UOp graph_rewrite(const UOp& root, const PatternMatcher& pm, const RewriteOptions& options = {});
// Old node -> new node for every node reachable from root; throws InternalError when not converged.
UOpMap graph_rewrite_map(const UOp& root, const PatternMatcher& pm, const RewriteOptions& options = {});

}  // namespace ringrt
