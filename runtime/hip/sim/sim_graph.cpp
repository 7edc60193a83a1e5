// The simulated GPU runtime's graphs (see sim_hip.hpp): nodes are added with their dependencies, so the
// order they were added in honours every edge; an instantiated graph copies the nodes, and a launch
// snapshots them (a later hipGraphExec*SetParams changes the next launch only, as on CUDA and HIP) and
// runs them in that order as one operation of the stream.
#include <algorithm>
#include <memory>
#include <unordered_map>
#include <vector>

#include "runtime/hip/sim/sim_internal.hpp"

using namespace ringrt::sim::detail;

namespace {

struct Node {
  enum class Kind { kernel, copy, empty, event_record } kind = Kind::empty;
  // kernel
  hipFunction_t function = nullptr;
  unsigned blocks = 0, threads = 0;
  std::vector<char> args;
  // copy
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  // event record
  hipEvent_t event = nullptr;
};

}  // namespace

struct hipGraphNode {
  Node node;
  size_t index = 0;  // in its graph's order of addition
};

struct ihipGraph {
  std::vector<std::unique_ptr<hipGraphNode>> nodes;
  int gpu = 0;  // where hipGraphCreate was called: the GPU its copies and records count as
};

struct hipGraphExec {
  std::vector<Node> nodes;  // the graph's, in order
  int gpu = 0;
  std::unordered_map<const hipGraphNode*, size_t> index;  // the graph's nodes (handles, not read)
};

namespace {

hipError_t add(hipGraphNode_t* out, hipGraph_t graph, const hipGraphNode_t* deps, size_t ndeps, Node node) {
  if (!out || !graph || (ndeps && !deps)) return fail(hipErrorInvalidValue);
  for (size_t i = 0; i < ndeps; ++i) {
    const hipGraphNode_t d = deps[i];
    if (!d || d->index >= graph->nodes.size() || graph->nodes[d->index].get() != d) return fail(hipErrorInvalidValue);
  }
  auto n = std::make_unique<hipGraphNode>();
  n->node = std::move(node);
  n->index = graph->nodes.size();
  *out = n.get();
  graph->nodes.push_back(std::move(n));
  return hipSuccess;
}

// The kernel node of `p`, or an error: one dimension, no shared memory, a function and its arguments.
hipError_t kernel_node(const hipKernelNodeParams* p, Node& out) {
  if (!p || !p->func) return fail(hipErrorInvalidValue);
  if (p->gridDim.y != 1 || p->gridDim.z != 1 || p->blockDim.y != 1 || p->blockDim.z != 1 || p->sharedMemBytes != 0 ||
      p->blockDim.x == 0)
    return fail(hipErrorNotSupported);
  auto f = static_cast<hipFunction_t>(p->func);
  if (!p->kernelParams && !p->extra) return fail(hipErrorInvalidValue);
  out.kind = Node::Kind::kernel;
  out.function = f;
  out.blocks = p->gridDim.x;
  out.threads = p->blockDim.x;
  out.args = launch_args(f, p->kernelParams, p->extra);
  return out.args.empty() && p->extra ? fail(hipErrorInvalidValue) : hipSuccess;
}

// The node of `exec` that `node` of its graph became, or null.
Node* exec_node(hipGraphExec_t exec, hipGraphNode_t node) {
  if (!exec) return nullptr;
  auto it = exec->index.find(node);
  return it == exec->index.end() ? nullptr : &exec->nodes[it->second];
}

}  // namespace

hipError_t hipGraphCreate(hipGraph_t* graph, unsigned flags) {
  if (!graph || flags != 0) return fail(hipErrorInvalidValue);
  *graph = new ihipGraph;
  (*graph)->gpu = current_gpu();
  return hipSuccess;
}

hipError_t hipGraphDestroy(hipGraph_t graph) {
  if (!graph) return fail(hipErrorInvalidHandle);
  delete graph;
  return hipSuccess;
}

hipError_t hipGraphAddKernelNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps, size_t ndeps,
                                 const hipKernelNodeParams* params) {
  Node n;
  if (hipError_t rc = kernel_node(params, n); rc != hipSuccess) return rc;
  return add(node, graph, deps, ndeps, std::move(n));
}

hipError_t hipGraphAddMemcpyNode1D(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps, size_t ndeps,
                                   void* dst, const void* src, size_t bytes, hipMemcpyKind kind) {
  (void)kind;
  if (bytes && (!dst || !src)) return fail(hipErrorInvalidValue);
  Node n;
  n.kind = Node::Kind::copy;
  n.dst = dst;
  n.src = src;
  n.bytes = bytes;
  return add(node, graph, deps, ndeps, std::move(n));
}

hipError_t hipGraphAddEmptyNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps, size_t ndeps) {
  return add(node, graph, deps, ndeps, Node{});
}

hipError_t hipGraphAddEventRecordNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps, size_t ndeps,
                                      hipEvent_t event) {
  if (!event) return fail(hipErrorInvalidHandle);
  Node n;
  n.kind = Node::Kind::event_record;
  n.event = event;
  return add(node, graph, deps, ndeps, std::move(n));
}

hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t* exec, hipGraph_t graph, unsigned long long flags) {
  if (!exec || !graph || flags != 0) return fail(hipErrorInvalidValue);
  auto e = std::make_unique<hipGraphExec>();
  for (const auto& n : graph->nodes) {
    e->index[n.get()] = e->nodes.size();
    e->nodes.push_back(n->node);
  }
  e->gpu = graph->gpu;
  *exec = e.release();
  return hipSuccess;
}

hipError_t hipGraphExecDestroy(hipGraphExec_t exec) {
  if (!exec) return fail(hipErrorInvalidHandle);
  delete exec;
  return hipSuccess;
}

hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream) {
  if (!exec) return fail(hipErrorInvalidHandle);
  int gpu = stream ? stream->gpu : current_gpu();
  // Each node's operation, made now: the parameters as they are at launch, event records counted now.
  std::vector<std::function<void()>> ops;
  for (const Node& n : exec->nodes) {
    switch (n.kind) {
      case Node::Kind::kernel:
        ops.push_back(kernel_op(n.function, n.blocks, n.threads, n.args, gpu));
        break;
      case Node::Kind::copy:
        ops.push_back(copy_op(n.dst, n.src, n.bytes, gpu));
        break;
      case Node::Kind::event_record:
        ops.push_back(complete_record(n.event, next_record(n.event, gpu)));
        break;
      case Node::Kind::empty:
        break;
    }
  }
  count_graph_launch();
  enqueue(stream, [ops = std::move(ops)] {
    for (const auto& op : ops) op();
  });
  return hipSuccess;
}

hipError_t hipGraphExecKernelNodeSetParams(hipGraphExec_t exec, hipGraphNode_t node,
                                           const hipKernelNodeParams* params) {
  Node* n = exec_node(exec, node);
  if (!n || n->kind != Node::Kind::kernel) return fail(hipErrorInvalidValue);
  Node updated;
  if (hipError_t rc = kernel_node(params, updated); rc != hipSuccess) return rc;
  *n = std::move(updated);
  return hipSuccess;
}

hipError_t hipGraphExecMemcpyNodeSetParams1D(hipGraphExec_t exec, hipGraphNode_t node, void* dst, const void* src,
                                             size_t bytes, hipMemcpyKind kind) {
  (void)kind;
  Node* n = exec_node(exec, node);
  if (!n || n->kind != Node::Kind::copy || (bytes && (!dst || !src))) return fail(hipErrorInvalidValue);
  n->dst = dst;
  n->src = src;
  n->bytes = bytes;
  return hipSuccess;
}
