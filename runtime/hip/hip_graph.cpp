// The hip backend's DeviceGraph (see hip_graph.hpp).
#include "runtime/hip/hip_graph.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/errors.hpp"
#include "runtime/hip/hip_device.hpp"
#include "runtime/hip/hip_memory.hpp"

namespace ringrt::hip_detail {

HipGraph::HipGraph(HipQueue& queue, int gpu, std::string name) : queue_(queue), gpu_(gpu), name_(std::move(name)) {
  DeviceGuard guard(gpu_, name_);
  RINGRT_HIP_CHECK(name_, hipGraphCreate(&graph_, 0));
}

HipGraph::~HipGraph() {
  if (g_hip_gone) return;
  if (exec_) RINGRT_HIP_LOG(name_, hipGraphExecDestroy(exec_));
  if (graph_) RINGRT_HIP_LOG(name_, hipGraphDestroy(graph_));
}

hipKernelNodeParams HipGraph::params(Node& n, size_t& size, void** config) {
  size = n.args.size();
  config[0] = HIP_LAUNCH_PARAM_BUFFER_POINTER;
  config[1] = n.args.data();
  config[2] = HIP_LAUNCH_PARAM_BUFFER_SIZE;
  config[3] = &size;
  config[4] = HIP_LAUNCH_PARAM_END;
  hipKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(n.kernel->fn);
  p.gridDim = dim3(n.kernel->blocks, 1, 1);
  p.blockDim = dim3(hip_launch::kBlockSize, 1, 1);
  p.sharedMemBytes = 0;
  p.kernelParams = nullptr;
  p.extra = config;
  return p;
}

std::optional<size_t> HipGraph::add_kernel(Device& device, const CompiledKernel& kernel, const std::vector<void*>& bufs,
                                           int32_t dnum, const std::vector<size_t>& deps) {
  const auto* hk = dynamic_cast<const HipKernel*>(&kernel);
  if (!hk || hip_gpu_of(device) < 0) return std::nullopt;
  Node n;
  n.kernel = hk;
  n.dnum = dnum;
  n.args = hip_launch::pack_kernel_args(bufs, dnum, hk->k.numel);
  std::vector<hipGraphNode_t> after;
  for (size_t d : deps) after.push_back(nodes_.at(d).handle);
  if (hk->k.numel <= 0) {  // no element: launch() enqueues nothing either, an empty node keeps the order
    RINGRT_HIP_CHECK(name_, hipGraphAddEmptyNode(&n.handle, graph_, after.data(), after.size()));
    n.args.clear();
    nodes_.push_back(std::move(n));
    return nodes_.size() - 1;
  }
  size_t size = 0;
  void* config[5];
  hipKernelNodeParams p = params(n, size, config);
  DeviceGuard guard(hk->module->index, name_);
  RINGRT_HIP_CHECK(name_, hipGraphAddKernelNode(&n.handle, graph_, after.data(), after.size(), &p));
  modules_.push_back(hk->module);
  nodes_.push_back(std::move(n));
  return nodes_.size() - 1;
}

std::optional<size_t> HipGraph::add_copy(Device& to, Device& from, const void* src, void* dst, size_t bytes,
                                         const std::vector<size_t>& deps) {
  int to_gpu = hip_gpu_of(to), from_gpu = hip_gpu_of(from);
  if (to_gpu < 0 || from_gpu < 0 || (to_gpu != from_gpu && !peer_access(to_gpu, from_gpu, to.name())))
    return std::nullopt;  // staged through the host: not a graph's
  Node n;
  n.bytes = bytes;
  std::vector<hipGraphNode_t> after;
  for (size_t d : deps) after.push_back(nodes_.at(d).handle);
  DeviceGuard guard(to_gpu, name_);
  RINGRT_HIP_CHECK(name_, hipGraphAddMemcpyNode1D(&n.handle, graph_, after.data(), after.size(), dst, src, bytes,
                                                  hipMemcpyDeviceToDevice));
  nodes_.push_back(std::move(n));
  return nodes_.size() - 1;
}

void HipGraph::instantiate() {
  DeviceGuard guard(gpu_, name_);
  RINGRT_HIP_CHECK(name_, hipGraphInstantiateWithFlags(&exec_, graph_, 0));
}

void HipGraph::set_kernel(size_t node, const std::vector<void*>& bufs) {
  Node& n = nodes_.at(node);
  if (!n.kernel) throw InternalError(fmt::format("{}: graph node {} is a copy, not a kernel", name_, node));
  if (n.args.empty()) return;  // an empty node: no element
  n.args = hip_launch::pack_kernel_args(bufs, n.dnum, n.kernel->k.numel);
  size_t size = 0;
  void* config[5];
  hipKernelNodeParams p = params(n, size, config);
  DeviceGuard guard(n.kernel->module->index, name_);
  RINGRT_HIP_CHECK(name_, hipGraphExecKernelNodeSetParams(exec_, n.handle, &p));
}

void HipGraph::set_copy(size_t node, const void* src, void* dst) {
  Node& n = nodes_.at(node);
  if (n.kernel) throw InternalError(fmt::format("{}: graph node {} is a kernel, not a copy", name_, node));
  DeviceGuard guard(gpu_, name_);
  RINGRT_HIP_CHECK(name_,
                   hipGraphExecMemcpyNodeSetParams1D(exec_, n.handle, dst, src, n.bytes, hipMemcpyDeviceToDevice));
}

Event HipGraph::launch(const std::vector<Event>& after) {
  if (!exec_) throw InternalError(fmt::format("{}: a graph launched before it was instantiated", name_));
  return queue_.enqueue(fmt::format("graph of {} kernels and copies", nodes_.size()), after, [&](hipStream_t stream) {
    RINGRT_HIP_CHECK(name_, hipGraphLaunch(exec_, stream));
    return Resources{};
  });
}

}  // namespace ringrt::hip_detail
