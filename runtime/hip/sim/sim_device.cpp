// The simulated GPU runtime's devices (properties, peer access, errors) and modules (code objects of
// sim_rtc.cpp, kernels launched on streams); see sim_hip.hpp.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "runtime/hip/sim/sim_internal.hpp"

using namespace ringrt::sim;
using namespace ringrt::sim::detail;

// ---------------------------------------------------------------------------------------------
// errors and devices

const char* hipGetErrorName(hipError_t error) {
  switch (error) {
    case hipSuccess:
      return "hipSuccess";
    case hipErrorInvalidValue:
      return "hipErrorInvalidValue";
    case hipErrorOutOfMemory:
      return "hipErrorOutOfMemory";
    case hipErrorNotInitialized:
      return "hipErrorNotInitialized";
    case hipErrorInsufficientDriver:
      return "hipErrorInsufficientDriver";
    case hipErrorInvalidDeviceFunction:
      return "hipErrorInvalidDeviceFunction";
    case hipErrorNoDevice:
      return "hipErrorNoDevice";
    case hipErrorInvalidDevice:
      return "hipErrorInvalidDevice";
    case hipErrorInvalidImage:
      return "hipErrorInvalidImage";
    case hipErrorInvalidHandle:
      return "hipErrorInvalidHandle";
    case hipErrorNotFound:
      return "hipErrorNotFound";
    case hipErrorNotReady:
      return "hipErrorNotReady";
    case hipErrorIllegalAddress:
      return "hipErrorIllegalAddress";
    case hipErrorLaunchFailure:
      return "hipErrorLaunchFailure";
    case hipErrorPeerAccessAlreadyEnabled:
      return "hipErrorPeerAccessAlreadyEnabled";
    case hipErrorPeerAccessNotEnabled:
      return "hipErrorPeerAccessNotEnabled";
    case hipErrorNotSupported:
      return "hipErrorNotSupported";
    case hipErrorStreamCaptureUnsupported:
      return "hipErrorStreamCaptureUnsupported";
  }
  return "hipErrorUnknown";
}

const char* hipGetErrorString(hipError_t error) {
  switch (error) {
    case hipSuccess:
      return "no error";
    case hipErrorOutOfMemory:
      return "out of memory (simulated GPU)";
    case hipErrorNoDevice:
      return "no simulated GPU (RINGRT_SIM_GPUS=0)";
    case hipErrorInvalidDevice:
      return "invalid device ordinal";
    case hipErrorNotReady:
      return "device not ready";
    case hipErrorIllegalAddress:
      return "an illegal memory access was encountered (simulated fault)";
    case hipErrorLaunchFailure:
      return "unspecified launch failure (a simulated kernel trapped)";
    default:
      return hipGetErrorName(error);
  }
}

hipError_t hipGetLastError() { return take_last_error(); }

hipError_t hipGetDeviceCount(int* count) {
  if (!count) return fail(hipErrorInvalidValue);
  *count = config().gpus;
  return config().gpus == 0 ? fail(hipErrorNoDevice) : hipSuccess;
}

hipError_t hipGetDeviceProperties(hipDeviceProp_t* props, int device) {
  if (!props) return fail(hipErrorInvalidValue);
  if (!valid_gpu(device)) return no_gpu();
  *props = hipDeviceProp_t{};
  std::snprintf(props->name, sizeof(props->name), "ringrt simulated GPU %d", device);
  std::snprintf(props->gcnArchName, sizeof(props->gcnArchName), "%s", kSimArch);
  props->totalGlobalMem = config().gpu_bytes;
  props->multiProcessorCount = 4;
  props->major = 1;
  return hipSuccess;
}

hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attribute, int device) {
  if (!value) return fail(hipErrorInvalidValue);
  if (!valid_gpu(device)) return no_gpu();
  switch (attribute) {
    case hipDeviceAttributeMultiprocessorCount:
      *value = 4;
      return hipSuccess;
    case hipDeviceAttributeCanUseStreamWaitValue:
      *value = 1;
      return hipSuccess;
  }
  return fail(hipErrorInvalidValue);
}

hipError_t hipGetDevice(int* device) {
  if (!device) return fail(hipErrorInvalidValue);
  if (config().gpus == 0) return no_gpu();
  *device = current_gpu();
  return hipSuccess;
}

hipError_t hipSetDevice(int device) {
  if (!valid_gpu(device)) return no_gpu();
  set_current_gpu(device);
  return hipSuccess;
}

hipError_t hipDeviceCanAccessPeer(int* can, int device, int peer) {
  if (!can) return fail(hipErrorInvalidValue);
  if (!valid_gpu(device) || !valid_gpu(peer)) return no_gpu();
  *can = config().peer && device != peer;
  return hipSuccess;
}

hipError_t hipDeviceEnablePeerAccess(int peer, unsigned flags) {
  if (flags != 0) return fail(hipErrorInvalidValue);
  if (!valid_gpu(peer) || peer == current_gpu() || !valid_gpu(current_gpu())) return fail(hipErrorInvalidDevice);
  if (!config().peer) return fail(hipErrorNotSupported);
  Gpu& g = *runtime().gpus[static_cast<size_t>(current_gpu())];
  std::lock_guard<std::mutex> lock(g.mu);
  return g.peers_enabled.insert(peer).second ? hipSuccess : fail(hipErrorPeerAccessAlreadyEnabled);
}

hipError_t hipDeviceDisablePeerAccess(int peer) {
  if (!valid_gpu(current_gpu())) return no_gpu();
  Gpu& g = *runtime().gpus[static_cast<size_t>(current_gpu())];
  std::lock_guard<std::mutex> lock(g.mu);
  return g.peers_enabled.erase(peer) ? hipSuccess : fail(hipErrorPeerAccessNotEnabled);
}

// ---------------------------------------------------------------------------------------------
// modules and kernels

struct ihipModule_t {
  std::shared_ptr<ringrt::codegen::HostLibrary> library;
};

hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  if (!module || !image) return fail(hipErrorInvalidValue);
  std::string_view so = code_object_library(image);
  if (so.empty()) return fail(hipErrorInvalidImage);
  try {
    auto m = std::make_unique<ihipModule_t>();
    m->library = std::make_shared<ringrt::codegen::HostLibrary>(so, "simulated GPU code object");
    *module = m.release();
    return hipSuccess;
  } catch (...) {
    return fail(hipErrorInvalidImage);
  }
}

hipError_t hipModuleUnload(hipModule_t module) {
  if (!module) return fail(hipErrorInvalidHandle);
  delete module;  // functions looked up in it keep its library
  return hipSuccess;
}

hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* name) {
  if (!function || !module || !name) return fail(hipErrorInvalidValue);
  // HostLibrary hands symbols out as cpu kernels; these have the signatures of sim_rtc.hpp
  auto launch =
      reinterpret_cast<LaunchFn>(reinterpret_cast<void*>(module->library->find(std::string(name) + kLaunchSuffix)));
  auto pack = reinterpret_cast<PackFn>(reinterpret_cast<void*>(module->library->find(std::string(name) + kPackSuffix)));
  if (!launch || !pack) return fail(hipErrorNotFound);
  *function = new ihipModuleSymbol_t{name, module->library, launch, pack};  // lives as long as the process
  return hipSuccess;
}

std::vector<char> ringrt::sim::detail::launch_args(hipFunction_t f, void** params, void** extra) {
  if (extra) {
    const char* buffer = nullptr;
    size_t size = 0;
    for (size_t i = 0; extra[i] != HIP_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_POINTER) buffer = static_cast<const char*>(extra[i + 1]);
      if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_SIZE) size = *static_cast<const size_t*>(extra[i + 1]);
    }
    return buffer ? std::vector<char>(buffer, buffer + size) : std::vector<char>{};
  }
  std::vector<char> args(f->pack(params, nullptr));
  f->pack(params, args.data());
  return args;
}

std::function<void()> ringrt::sim::detail::kernel_op(hipFunction_t f, unsigned blocks, unsigned threads,
                                                     std::vector<char> args, int gpu) {
  return [f, blocks, threads, args = std::move(args), gpu] {
    if (faulted(gpu)) return;
    const char* fault = std::getenv("RINGRT_SIM_FAULT_KERNEL");  // read at each launch: a test sets it late
    if (fault && f->name == fault) {
      set_fault(gpu, hipErrorIllegalAddress);
      return;
    }
    try {
      f->launch(args.data(), blocks, threads);
    } catch (...) {  // the kernel trapped (rt_sim_trap): the launch fails, as on a GPU
      set_fault(gpu, hipErrorLaunchFailure);
      return;
    }
    ++cells().kernels;
  };
}

hipError_t hipModuleLaunchKernel(hipFunction_t function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                 unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                                 hipStream_t stream, void** params, void** extra) {
  if (!function || (!params && !extra)) return fail(hipErrorInvalidValue);
  if (grid_y != 1 || grid_z != 1 || block_y != 1 || block_z != 1 || shared_bytes != 0 || block_x == 0)
    return fail(hipErrorNotSupported);
  std::vector<char> args = launch_args(function, params, extra);
  if (extra && args.empty()) return fail(hipErrorInvalidValue);
  int gpu = stream ? stream->gpu : current_gpu();
  enqueue(stream, kernel_op(function, grid_x, block_x, std::move(args), gpu));
  return hipSuccess;
}
