// A simulated GPU runtime under the HIP names: the third platform of the hip backend
// (RINGRT_GPU_PLATFORM sim, runtime/hip/hip_platform.hpp), so that runtime/hip/ itself, with its
// streams, events, GPU-side waits, graphs and memory caches, runs and is tested on a machine without a
// GPU. It is a test platform: CI builds it as the library ringrt_simgpu and runs the gpu tests on it
// (label simgpu); nothing of it is installed.
//
// What it simulates, and how (runtime/hip/sim/sim_runtime.cpp):
//   - GPUs: RINGRT_SIM_GPUS of them (default 1; 0 behaves as a machine with no GPU), each with
//     RINGRT_SIM_GPU_MIB MiB of memory (default 2048) counted per hipMalloc; peer access between
//     them unless RINGRT_SIM_PEER=0 (then the backend stages peer copies through the host).
//   - A stream is a thread that runs its operations (kernels, copies, event records, waits) one at a
//     time in the order they were enqueued; the calls that enqueue return at once. Streams of one or of
//     several GPUs run concurrently, so orderings the backend forgets to express show as races (and
//     ThreadSanitizer sees them in the tsan preset).
//   - Events: a record completes when its stream reaches it; hipStreamWaitEvent waits for the record
//     most recent at the time of the call, as on CUDA and HIP. hipEventElapsedTime reads host times.
//   - Kernels: render_hip's source compiled by the host compiler (sim_rtc.cpp), launched block by
//     block, thread by thread, on the stream's thread, with the launch's grid (gridDim), as on a GPU.
//   - Graphs: explicit nodes (kernel, 1-D copy, empty, event record), instantiated and launched into a
//     stream as one operation that runs the nodes in an order that honours their dependencies; the
//     executable graph's kernel and copy parameters can be set between launches.
//   - hipStreamWaitValue32 / hipStreamWriteValue32 on host-mapped or device memory
//     (RINGRT_SIM_WAIT_VALUE=0: hipStreamWaitValue32 is not supported, as on some platforms).
//   - A fault: RINGRT_SIM_FAULT_KERNEL=NAME (read at each launch) makes a launch of kernel NAME fault its GPU, as an
//     illegal address would (the kernel does not run, the error is sticky: that GPU's later
//     operations do not run and its events report hipErrorIllegalAddress), so poisoning is testable.
// Not simulated: timing (nothing is faster or slower than the host makes it), shared memory, more
// than one dimension of grid or block, streams of the legacy NULL stream (the NULL stream runs each
// operation synchronously in the caller), stream capture (hipErrorStreamCaptureUnsupported).
//
// The declarations mirror <hip/hip_runtime_api.h> (same names, arguments and meanings) for the subset
// ringrt uses. Include through runtime/hip/hip_platform.hpp only.
#pragma once

#include <cstddef>
#include <cstdint>

enum hipError_t {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorNotInitialized = 3,
  hipErrorInsufficientDriver = 35,
  hipErrorInvalidDeviceFunction = 98,
  hipErrorNoDevice = 100,
  hipErrorInvalidDevice = 101,
  hipErrorInvalidImage = 200,
  hipErrorInvalidHandle = 400,
  hipErrorNotFound = 500,
  hipErrorNotReady = 600,
  hipErrorIllegalAddress = 700,
  hipErrorLaunchFailure = 719,
  hipErrorPeerAccessAlreadyEnabled = 704,
  hipErrorPeerAccessNotEnabled = 705,
  hipErrorNotSupported = 801,
  hipErrorStreamCaptureUnsupported = 900,
};

enum hipMemcpyKind {
  hipMemcpyHostToHost = 0,
  hipMemcpyHostToDevice = 1,
  hipMemcpyDeviceToHost = 2,
  hipMemcpyDeviceToDevice = 3,
  hipMemcpyDefault = 4,
};

enum hipDeviceAttribute_t {
  hipDeviceAttributeMultiprocessorCount = 1,
  hipDeviceAttributeCanUseStreamWaitValue = 2,
};

struct ihipStream_t;
struct ihipEvent_t;
struct ihipModule_t;
struct ihipModuleSymbol_t;
struct ihipGraph;
struct hipGraphNode;
struct hipGraphExec;
using hipStream_t = ihipStream_t*;
using hipEvent_t = ihipEvent_t*;
using hipModule_t = ihipModule_t*;
using hipFunction_t = ihipModuleSymbol_t*;
using hipGraph_t = ihipGraph*;
using hipGraphNode_t = hipGraphNode*;
using hipGraphExec_t = hipGraphExec*;
using hipHostFn_t = void (*)(void* user_data);

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

struct hipKernelNodeParams {
  dim3 blockDim;
  void** extra = nullptr;
  void* func = nullptr;  // a hipFunction_t
  dim3 gridDim;
  void** kernelParams = nullptr;
  unsigned int sharedMemBytes = 0;
};

struct hipDeviceProp_t {
  char name[256];
  size_t totalGlobalMem;
  int multiProcessorCount;
  int major, minor;
  char gcnArchName[256];
};

inline constexpr unsigned hipStreamDefault = 0, hipStreamNonBlocking = 1;
inline constexpr unsigned hipEventDefault = 0, hipEventBlockingSync = 1, hipEventDisableTiming = 2;
inline constexpr unsigned hipHostMallocDefault = 0, hipHostMallocPortable = 1, hipHostMallocMapped = 2;
inline constexpr unsigned hipStreamWaitValueGte = 0, hipStreamWaitValueEq = 1, hipStreamWaitValueAnd = 2,
                          hipStreamWaitValueNor = 3;
#define HIP_LAUNCH_PARAM_BUFFER_POINTER (reinterpret_cast<void*>(1))
#define HIP_LAUNCH_PARAM_BUFFER_SIZE (reinterpret_cast<void*>(2))
#define HIP_LAUNCH_PARAM_END (reinterpret_cast<void*>(3))

// ---- errors and devices
const char* hipGetErrorName(hipError_t error);
const char* hipGetErrorString(hipError_t error);
hipError_t hipGetLastError();
hipError_t hipGetDeviceCount(int* count);
hipError_t hipGetDeviceProperties(hipDeviceProp_t* props, int device);
hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attribute, int device);
hipError_t hipGetDevice(int* device);
hipError_t hipSetDevice(int device);
hipError_t hipDeviceSynchronize();
hipError_t hipDeviceCanAccessPeer(int* can, int device, int peer);
hipError_t hipDeviceEnablePeerAccess(int peer, unsigned flags);
hipError_t hipDeviceDisablePeerAccess(int peer);

// ---- memory
hipError_t hipMalloc(void** ptr, size_t bytes);
hipError_t hipFree(void* ptr);
hipError_t hipHostMalloc(void** ptr, size_t bytes, unsigned flags);
hipError_t hipHostFree(void* ptr);
hipError_t hipHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned flags);
hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind);
hipError_t hipMemset(void* dst, int value, size_t bytes);
hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind kind, hipStream_t stream);
hipError_t hipMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                              hipStream_t stream);

// ---- streams and events
hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned flags);
hipError_t hipStreamDestroy(hipStream_t stream);
hipError_t hipStreamSynchronize(hipStream_t stream);
hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned flags);
hipError_t hipStreamWaitValue32(hipStream_t stream, void* ptr, uint32_t value, unsigned flags,
                                uint32_t mask = 0xffffffffu);
hipError_t hipStreamWriteValue32(hipStream_t stream, void* ptr, uint32_t value, unsigned flags);
hipError_t hipLaunchHostFunc(hipStream_t stream, hipHostFn_t fn, void* user_data);
hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned flags);
hipError_t hipEventDestroy(hipEvent_t event);
hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream);
hipError_t hipEventSynchronize(hipEvent_t event);
hipError_t hipEventQuery(hipEvent_t event);
hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop);

// ---- modules: a code object of codegen/sim_rtc.hpp (a shared object with a header)
hipError_t hipModuleLoadData(hipModule_t* module, const void* image);
hipError_t hipModuleUnload(hipModule_t module);
hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* name);
hipError_t hipModuleLaunchKernel(hipFunction_t function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                 unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                                 hipStream_t stream, void** params, void** extra);

// ---- graphs
hipError_t hipGraphCreate(hipGraph_t* graph, unsigned flags);
hipError_t hipGraphDestroy(hipGraph_t graph);
hipError_t hipGraphAddKernelNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps, size_t ndeps,
                                 const hipKernelNodeParams* params);
hipError_t hipGraphAddMemcpyNode1D(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps, size_t ndeps,
                                   void* dst, const void* src, size_t bytes, hipMemcpyKind kind);
hipError_t hipGraphAddEmptyNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps, size_t ndeps);
hipError_t hipGraphAddEventRecordNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps, size_t ndeps,
                                      hipEvent_t event);
hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t* exec, hipGraph_t graph, unsigned long long flags);
hipError_t hipGraphExecDestroy(hipGraphExec_t exec);
hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream);
hipError_t hipGraphExecKernelNodeSetParams(hipGraphExec_t exec, hipGraphNode_t node, const hipKernelNodeParams* params);
hipError_t hipGraphExecMemcpyNodeSetParams1D(hipGraphExec_t exec, hipGraphNode_t node, void* dst, const void* src,
                                             size_t bytes, hipMemcpyKind kind);

namespace ringrt::sim {
// Counters of the simulated runtime since the process began, for tests: the operations its streams ran
// (kernels, copies, graph launches, event records, waits for an event or a value) and the calls that
// block or poll the host (hipEventSynchronize, hipStreamSynchronize and hipDeviceSynchronize,
// hipEventQuery).
struct Counters {
  uint64_t kernels = 0, copies = 0, graph_launches = 0, event_records = 0, event_waits = 0, value_waits = 0;
  uint64_t synchronizes = 0, queries = 0;
};
Counters counters();
}  // namespace ringrt::sim
