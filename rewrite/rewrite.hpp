// The rewrite drivers (reference: tinygrad uop/ops.py graph_rewrite, graph_rewrite_map; MLIR's
// GreedyPatternRewriteDriver for the bounded, iterative shape).
//
// Bottom-up: a node is rewritten after its sources, and each node is rewritten to a fixpoint; a
// replacement that contains new nodes is itself rewritten bottom-up before it is used. The driver is
// iterative (an explicit stack, no recursion on graph depth) and bounded per node.
//
// Two drivers, one result: the serial driver visits nodes in topological order; in the parallel one each
// thread takes the next block of 256 nodes of that order and rewrites it in order, waiting for sources
// another thread has in hand. Rewriting a node is a pure function of the node: the very same nodes.
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
  // automatic: the parallel driver from this graph size on. Measured (ringrt_bench BM_Rewrite, 2 threads
  // on a 2-core VM shared with other jobs, load 3-4, three runs each): parallel/serial wall time 0.8-1.1x
  // at 51k nodes, 0.86-1.17x at 102k, 1.01-1.35x at 204k; lower it on machines with idle cores.
  size_t parallel_min_nodes = 150000;
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
