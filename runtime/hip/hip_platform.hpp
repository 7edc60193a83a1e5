// The GPU platform of the hip backend, and the one place in ringrt that knows it (internal to
// runtime/hip/). runtime/hip is written against the HIP runtime API; this header supplies it:
//
//   - AMD (default): the HIP runtime itself, <hip/hip_runtime_api.h>.
//   - NVIDIA (RINGRT_GPU_NVIDIA defined): the CUDA runtime, <cuda_runtime_api.h>, under the HIP names
//     runtime/hip uses (types as aliases, constants and runtime calls as macros, in the way of
//     ggml-cuda/vendors/hip.h in the other direction). The module calls (hipModule*) are CUDA *driver*
//     calls returning CUresult; ringrt does not link libcuda (a machine without the NVIDIA driver
//     could not even start the program), so they go through entry points the CUDA runtime hands out
//     (cudaGetDriverEntryPointByVersion), looked up once at first use. <cuda.h> gives their types
//     and constants only.
//
//   - sim (RINGRT_GPU_SIM defined): a simulated GPU runtime on host threads under the HIP names
//     (runtime/hip/sim/sim_hip.hpp), so that runtime/hip/ runs and is tested without a GPU.
//
// Environment: on NVIDIA the CUDA runtime reads CUDA_VISIBLE_DEVICES where HIP reads
// HIP_VISIBLE_DEVICES; runtime/hip reads neither itself. Device names are "HIP:i" on both platforms.
// Include only where HIP is built (RINGRT_HAVE_HIP); include hip_check.hpp rather than this directly.
#pragma once

#include <cstdint>
#include <string>

#if defined(RINGRT_GPU_SIM)

#include "runtime/hip/sim/sim_hip.hpp"

namespace ringrt::hip_detail {

// The compile target of a simulated GPU: "sim" (codegen/sim_rtc.hpp).
inline std::string gpu_arch_name(const hipDeviceProp_t& props) { return props.gcnArchName; }

// True for a device-count error that means "no GPU here" (RINGRT_SIM_GPUS=0).
inline bool no_gpu_error(hipError_t rc) { return rc == hipErrorNoDevice || rc == hipErrorInsufficientDriver; }

}  // namespace ringrt::hip_detail

#elif !defined(RINGRT_GPU_NVIDIA)

#include <hip/hip_runtime_api.h>

namespace ringrt::hip_detail {

// The compile target of a device for the GPU compiler: its gcnArchName, e.g. "gfx90a:sramecc+:xnack-".
inline std::string gpu_arch_name(const hipDeviceProp_t& props) { return props.gcnArchName; }

// True for a device-count error that means "no GPU here" rather than a fault.
inline bool no_gpu_error(hipError_t rc) { return rc == hipErrorNoDevice || rc == hipErrorInsufficientDriver; }

}  // namespace ringrt::hip_detail

#else  // RINGRT_GPU_NVIDIA

#include <cuda.h>  // driver API types and constants only: nothing of libcuda is linked
#include <cuda_runtime_api.h>

// ---- types
using hipError_t = cudaError_t;
using hipStream_t = cudaStream_t;
using hipEvent_t = cudaEvent_t;
using hipDeviceProp_t = cudaDeviceProp;
using hipModule_t = CUmodule;
using hipFunction_t = CUfunction;
using hipGraph_t = cudaGraph_t;
using hipGraphExec_t = cudaGraphExec_t;
using hipGraphNode_t = cudaGraphNode_t;
// HIP's kernel-node parameters (the function is a module's CUfunction): graph_add_kernel_node below.
struct hipKernelNodeParams {
  dim3 blockDim;
  void** extra = nullptr;
  void* func = nullptr;
  dim3 gridDim;
  void** kernelParams = nullptr;
  unsigned int sharedMemBytes = 0;
};

// ---- constants
#define hipSuccess cudaSuccess
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipErrorNotReady cudaErrorNotReady
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorInvalidDevice cudaErrorInvalidDevice
#define hipErrorInsufficientDriver cudaErrorInsufficientDriver
#define hipErrorPeerAccessAlreadyEnabled cudaErrorPeerAccessAlreadyEnabled
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipEventDisableTiming cudaEventDisableTiming
#define hipEventBlockingSync cudaEventBlockingSync
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipHostMallocDefault cudaHostAllocDefault
#define hipHostMallocMapped cudaHostAllocMapped
#define hipHostMallocPortable cudaHostAllocPortable
#define hipStreamWaitValueGte CU_STREAM_WAIT_VALUE_GEQ  // (int32_t)(*addr - value) >= 0, as HIP's
#define HIP_LAUNCH_PARAM_BUFFER_POINTER CU_LAUNCH_PARAM_BUFFER_POINTER
#define HIP_LAUNCH_PARAM_BUFFER_SIZE CU_LAUNCH_PARAM_BUFFER_SIZE
#define HIP_LAUNCH_PARAM_END CU_LAUNCH_PARAM_END

// ---- runtime calls (same arguments, same order)
#define hipGetErrorName cudaGetErrorName
#define hipGetErrorString cudaGetErrorString
#define hipGetLastError cudaGetLastError
#define hipGetDeviceCount cudaGetDeviceCount
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipGetDevice cudaGetDevice
#define hipSetDevice cudaSetDevice
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define hipDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#define hipDeviceDisablePeerAccess cudaDeviceDisablePeerAccess
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipHostMalloc cudaHostAlloc  // (void** p, size_t bytes, unsigned flags)
#define hipHostFree cudaFreeHost
#define hipMemcpy cudaMemcpy
#define hipMemset cudaMemset
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemcpyPeerAsync cudaMemcpyPeerAsync
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventQuery cudaEventQuery
#define hipEventDestroy cudaEventDestroy
#define hipEventElapsedTime cudaEventElapsedTime
#define hipHostGetDevicePointer cudaHostGetDevicePointer
#define hipLaunchHostFunc cudaLaunchHostFunc
#define hipGraphCreate cudaGraphCreate
#define hipGraphDestroy cudaGraphDestroy
#define hipGraphAddMemcpyNode1D cudaGraphAddMemcpyNode1D
#define hipGraphAddEmptyNode cudaGraphAddEmptyNode
#define hipGraphExecMemcpyNodeSetParams1D cudaGraphExecMemcpyNodeSetParams1D
#define hipGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define hipGraphLaunch cudaGraphLaunch
#define hipGraphExecDestroy cudaGraphExecDestroy

// ---- module calls: the CUDA driver API through the runtime's entry points
#define hipModuleLoadData ::ringrt::nv::module_load_data
#define hipModuleGetFunction ::ringrt::nv::module_get_function
#define hipModuleLaunchKernel ::ringrt::nv::launch_kernel
#define hipModuleUnload ::ringrt::nv::module_unload
// ---- stream memory operations: driver calls, returned as the runtime's errors
#define hipStreamWaitValue32 ::ringrt::nv::stream_wait_value32
#define hipStreamWriteValue32 ::ringrt::nv::stream_write_value32
// ---- kernel nodes of a module's function: driver calls (the runtime's take runtime functions)
#define hipGraphAddKernelNode ::ringrt::nv::graph_add_kernel_node
#define hipGraphExecKernelNodeSetParams ::ringrt::nv::graph_exec_kernel_node_set_params

namespace ringrt::nv {

// The driver function `name` of the type of Fn (e.g. decltype(&cuModuleLoadData)), as the driver's
// CUDA 12.0 ABI has it; null when the runtime or the driver cannot provide it (no driver, too old).
// The result of the lookup is left in no error state of the runtime. Thread-safe.
template <class Fn>
Fn driver_entry(const char* name) noexcept {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status) != cudaSuccess ||
      status != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

// The driver calls bind to the calling thread's current context, which the runtime creates lazily:
// cudaSetDevice of the current device makes that device's primary context current (CUDA >= 12).
inline void bind_primary_context() noexcept {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) (void)cudaGetLastError();
}

// What a module call returns when its driver entry point is unavailable.
inline constexpr CUresult kNoEntryPoint = CUDA_ERROR_NOT_INITIALIZED;

inline CUresult module_load_data(CUmodule* module, const void* image) noexcept {
  static const auto fn = driver_entry<decltype(&cuModuleLoadData)>("cuModuleLoadData");
  if (!fn) return kNoEntryPoint;
  bind_primary_context();
  return fn(module, image);
}

inline CUresult module_get_function(CUfunction* function, CUmodule module, const char* name) noexcept {
  static const auto fn = driver_entry<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
  return fn ? fn(function, module, name) : kNoEntryPoint;
}

inline CUresult module_unload(CUmodule module) noexcept {
  static const auto fn = driver_entry<decltype(&cuModuleUnload)>("cuModuleUnload");
  if (!fn) return kNoEntryPoint;
  bind_primary_context();
  return fn(module);
}

// hipModuleLaunchKernel's arguments: grid and block sizes, dynamic shared memory (bytes), the stream,
// and the kernel arguments either one pointer each (params) or packed (extra, HIP_LAUNCH_PARAM_*).
inline CUresult launch_kernel(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                              unsigned block_y, unsigned block_z, unsigned shared_bytes, cudaStream_t stream,
                              void** params, void** extra) noexcept {
  static const auto fn = driver_entry<decltype(&cuLaunchKernel)>("cuLaunchKernel");
  if (!fn) return kNoEntryPoint;
  return fn(function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes, stream, params, extra);
}

// A driver result as the runtime's error: success, or cudaErrorNotSupported (the caller falls back), the
// driver's own error logged by the caller's fallback message.
inline cudaError_t as_runtime_error(CUresult rc) noexcept {
  return rc == CUDA_SUCCESS ? cudaSuccess : cudaErrorNotSupported;
}

// hipStreamWaitValue32 (HIP's mask argument must be all ones: CUDA has none): the stream waits until the
// 32-bit word at `ptr` (device-accessible: device memory, or mapped pinned host memory through its
// device pointer) compares with `value` as `flags` says.
inline cudaError_t stream_wait_value32(cudaStream_t stream, void* ptr, uint32_t value, unsigned flags,
                                       uint32_t mask = 0xffffffffu) noexcept {
  static const auto fn = driver_entry<decltype(&cuStreamWaitValue32)>("cuStreamWaitValue32");
  if (!fn || mask != 0xffffffffu) return cudaErrorNotSupported;
  return as_runtime_error(fn(stream, reinterpret_cast<CUdeviceptr>(ptr), value, flags));
}
inline cudaError_t stream_write_value32(cudaStream_t stream, void* ptr, uint32_t value, unsigned flags) noexcept {
  static const auto fn = driver_entry<decltype(&cuStreamWriteValue32)>("cuStreamWriteValue32");
  if (!fn) return cudaErrorNotSupported;
  return as_runtime_error(fn(stream, reinterpret_cast<CUdeviceptr>(ptr), value, flags));
}

// hipKernelNodeParams as the driver's CUDA_KERNEL_NODE_PARAMS (the current context's).
inline CUDA_KERNEL_NODE_PARAMS driver_kernel_params(const hipKernelNodeParams& p) noexcept {
  CUDA_KERNEL_NODE_PARAMS k{};
  k.func = static_cast<CUfunction>(p.func);
  k.gridDimX = p.gridDim.x, k.gridDimY = p.gridDim.y, k.gridDimZ = p.gridDim.z;
  k.blockDimX = p.blockDim.x, k.blockDimY = p.blockDim.y, k.blockDimZ = p.blockDim.z;
  k.sharedMemBytes = p.sharedMemBytes;
  k.kernelParams = p.kernelParams;
  k.extra = p.extra;
  return k;
}
inline cudaError_t graph_add_kernel_node(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                         size_t ndeps, const hipKernelNodeParams* params) noexcept {
  static const auto fn = driver_entry<decltype(&cuGraphAddKernelNode)>("cuGraphAddKernelNode");
  if (!fn || !params) return cudaErrorNotSupported;
  CUDA_KERNEL_NODE_PARAMS k = driver_kernel_params(*params);
  return as_runtime_error(fn(node, graph, deps, ndeps, &k));
}
inline cudaError_t graph_exec_kernel_node_set_params(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                     const hipKernelNodeParams* params) noexcept {
  static const auto fn = driver_entry<decltype(&cuGraphExecKernelNodeSetParams)>("cuGraphExecKernelNodeSetParams");
  if (!fn || !params) return cudaErrorNotSupported;
  CUDA_KERNEL_NODE_PARAMS k = driver_kernel_params(*params);
  return as_runtime_error(fn(exec, node, &k));
}

// cuGetErrorName / cuGetErrorString of rc; null when unknown or when the driver is unavailable.
inline const char* driver_error_name(CUresult rc) noexcept {
  static const auto fn = driver_entry<decltype(&cuGetErrorName)>("cuGetErrorName");
  const char* s = nullptr;
  if (!fn || fn(rc, &s) != CUDA_SUCCESS) return nullptr;
  return s;
}
inline const char* driver_error_string(CUresult rc) noexcept {
  static const auto fn = driver_entry<decltype(&cuGetErrorString)>("cuGetErrorString");
  const char* s = nullptr;
  if (!fn || fn(rc, &s) != CUDA_SUCCESS) return nullptr;
  return s;
}

}  // namespace ringrt::nv

namespace ringrt::hip_detail {

// The compile target of a device for the GPU compiler: "sm_<major><minor>" of its compute capability,
// e.g. "sm_90" (CUDA has no gcnArchName).
inline std::string gpu_arch_name(const hipDeviceProp_t& props) {
  return "sm_" + std::to_string(props.major) + std::to_string(props.minor);
}

// True for a device-count error that means "no GPU here" rather than a fault: no device, no driver or
// one too old, or the toolkit's stub libcuda.so found where the driver should be (CI containers).
inline bool no_gpu_error(hipError_t rc) {
  return rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver || rc == cudaErrorStubLibrary;
}

}  // namespace ringrt::hip_detail

#endif  // RINGRT_GPU_SIM, RINGRT_GPU_NVIDIA
