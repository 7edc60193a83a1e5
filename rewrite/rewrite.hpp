// The rewrite drivers (reference: tinygrad uop/ops.py graph_rewrite, graph_rewrite_map; MLIR's
// GreedyPatternRewriteDriver for the bounded, iterative shape).
//
// Bottom-up: a node is rewritten after its sources, and each node is rewritten to a fixpoint; a
// replacement that contains new nodes is itself rewritten bottom-up before it is used. The driver is
// iterative (an explicit stack, no recursion on graph depth) and bounded per node.
//
// Two drivers, one result: the serial driver visits nodes in topological order; in the parallel one each
// thread takes the next block of 256 nodes of that order and rewrites it in order, setting aside the
// nodes whose sources another thread has in hand until the rest of the block is done. Rewriting a node
// is a pure function of the node: the very same nodes.
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
  // automatic: the parallel driver from this graph size on: the crossover where the rewrite makes its
  // nodes (ringrt_bench BM_RewriteFresh, 2 threads on a 2-core VM, 2026-12-03, two runs: parallel/serial
  // time 1.14-1.41x at 10k nodes, 1.04-1.34x at 51k, 0.72-0.85x at 102k, 0.76-0.89x at 204k). Where the
  // nodes exist already (BM_Rewrite: hash-consing finds them) it wins from ~2k nodes (0.54-0.56x at
  // 10k, 0.62-0.96x at 51k, 0.65-0.70x at 102k); making nodes on TBB's threads that another thread
  // frees is what costs, in glibc's malloc (a third of a rewrite thread's time); with TBB's allocator
  // preloaded (libtbbmalloc_proxy) the parallel driver wins from 10k nodes there too (0.72-0.83x).
  size_t parallel_min_nodes = 100000;
  // rewrite_graph fills RewriteResult::map (one hash-map entry per input node, ~5% of a rewrite that
  // changes little); graph_rewrite never asks for it.
  bool map = true;
};

using UOpMap = std::unordered_map<UOp, UOp, UOpHash>;

struct RewriteResult {
  UOp root;               // the rewritten root
  UOpMap map;             // every node of the input graph -> its rewrite (empty unless options.map)
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
