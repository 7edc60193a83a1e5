// The hip backend's DeviceGraph (runtime/device/device.hpp; internal to runtime/hip/): a hipGraph (a CUDA
// graph on NVIDIA) of kernel nodes (a module's function with its packed arguments, one thread per
// element as launch() runs it) and 1-D device-to-device copy nodes, instantiated once and launched on
// one device's queue (HipQueue::enqueue) as one piece of GPU work: its Event completes when every node
// has run. Devices of this backend only, and copies the GPU does itself (the same GPU, or one with peer
// access); anything else is refused (nullopt), and the executor runs that program item by item.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/device/device.hpp"
#include "runtime/hip/hip_queue.hpp"
#include "runtime/hip/hip_support.hpp"

namespace ringrt::hip_detail {

class HipGraph final : public DeviceGraph {
 public:
  // A graph launched on `queue`, the queue of HIP device `name` on GPU `gpu`. Throws DeviceError.
  HipGraph(HipQueue& queue, int gpu, std::string name);
  ~HipGraph() override;  // the exec and the graph; after the exit handler, they leak (g_hip_gone)
  HipGraph(const HipGraph&) = delete;
  HipGraph& operator=(const HipGraph&) = delete;

  std::optional<size_t> add_kernel(Device& device, const CompiledKernel& kernel, const std::vector<void*>& bufs,
                                   int32_t dnum, const std::vector<size_t>& deps) override;
  std::optional<size_t> add_copy(Device& to, Device& from, const void* src, void* dst, size_t bytes,
                                 const std::vector<size_t>& deps) override;
  void instantiate() override;
  void set_kernel(size_t node, const std::vector<void*>& bufs) override;
  void set_copy(size_t node, const void* src, void* dst) override;
  Event launch(const std::vector<Event>& after) override;
  size_t nodes() const override { return nodes_.size(); }

 private:
  struct Node {
    hipGraphNode_t handle = nullptr;
    const HipKernel* kernel = nullptr;  // a kernel node's; null for a copy
    int32_t dnum = 0;
    std::vector<std::byte> args;  // the packed arguments (kept: the node's `extra` points here)
    size_t bytes = 0;             // a copy node's
  };
  hipKernelNodeParams params(Node& n, size_t& size, void** config);

  HipQueue& queue_;
  const int gpu_;
  const std::string name_;
  hipGraph_t graph_ = nullptr;
  hipGraphExec_t exec_ = nullptr;
  std::vector<Node> nodes_;
  std::vector<std::shared_ptr<Module>> modules_;  // the kernels' modules stay loaded with the graph
};

}  // namespace ringrt::hip_detail
