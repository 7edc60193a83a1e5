// The GPU runtime compiler of this build's platform (RINGRT_GPU_PLATFORM, cmake/RingrtGpu.cmake), under
// hipRTC's names: hipRTC on AMD; NVRTC on NVIDIA, its names mapped onto hipRTC's (the inverse of ggml's
// ggml-cuda/vendors/hip.h), so codegen/hiprtc_compiler.cpp is one source. Included by that file only.
// The platform's facts the compiler needs (options, targets, the code object's kind) are in namespace
// rtc below; nothing outside codegen/hiprtc_compiler.cpp and runtime/hip/ learns the platform.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#if defined(RINGRT_GPU_SIM)
#include "codegen/sim_rtc.hpp"  // the simulated GPU's compiler, under hipRTC's names
#elif defined(RINGRT_GPU_NVIDIA)
#include <cuda.h>  // CUDA_VERSION
#include <nvrtc.h>

#define hiprtcResult nvrtcResult
#define hiprtcProgram nvrtcProgram
#define HIPRTC_SUCCESS NVRTC_SUCCESS
#define hiprtcCreateProgram nvrtcCreateProgram
#define hiprtcCompileProgram nvrtcCompileProgram
#define hiprtcDestroyProgram nvrtcDestroyProgram
#define hiprtcGetProgramLogSize nvrtcGetProgramLogSize
#define hiprtcGetProgramLog nvrtcGetProgramLog
#define hiprtcGetCodeSize nvrtcGetCUBINSize  // the cubin of the real target sm_XY the options name
#define hiprtcGetCode nvrtcGetCUBIN
#define hiprtcGetErrorString nvrtcGetErrorString
#define hiprtcVersion nvrtcVersion
#else
#include <hip/hip_version.h>
#include <hip/hiprtc.h>
#endif

namespace ringrt::codegen::rtc {

#if defined(RINGRT_GPU_SIM)
inline constexpr std::string_view kCompiler = "simrtc";
inline constexpr std::string_view kSuffix = ".simso";      // the code object: a shared object with a header
inline constexpr std::string_view kSourceSuffix = ".hip";  // the program name in the log
inline constexpr std::string_view kFeatures = "";
inline std::string toolkit_id() { return "sim 1"; }
inline std::string toolkit_release() { return "the simulated GPU runtime"; }
inline std::vector<std::string> options(const std::string& arch) { return {"--offload-arch=" + arch}; }
#elif defined(RINGRT_GPU_NVIDIA)
inline constexpr std::string_view kCompiler = "nvrtc";
inline constexpr std::string_view kSuffix = ".cubin";     // the code object
inline constexpr std::string_view kSourceSuffix = ".cu";  // the program name in the log
inline constexpr std::string_view kFeatures = " (sm_XYa: with sm_XY's arch-specific features)";
// The toolkit as a cache identity names it ("CUDA 13000") and as a person reads it ("CUDA 13.0").
inline std::string toolkit_id() { return "CUDA " + std::to_string(CUDA_VERSION); }
inline std::string toolkit_release() {
  return "CUDA " + std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10);
}
// The interpreter's numerics: no FMA contraction (NVRTC ignores the source's clang pragma; --fmad=false
// is its switch), IEEE round-to-nearest division and square root, subnormals kept (NVRTC's defaults,
// spelled out). C++17, and no warnings for the prelude's helpers a kernel does not call (#177).
inline std::vector<std::string> options(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "--fmad=false", "--prec-div=true",
          "--prec-sqrt=true",           "--ftz=false",  "-std=c++17",
          "--diag-suppress=177"};
}
#else
inline constexpr std::string_view kCompiler = "hiprtc";
inline constexpr std::string_view kSuffix = ".hsaco";
inline constexpr std::string_view kSourceSuffix = ".hip";
inline constexpr std::string_view kFeatures = " with optional :sramecc± / :xnack± features";
inline std::string toolkit_id() { return "HIP " + std::to_string(HIP_VERSION); }
inline std::string toolkit_release() {
  return "ROCm " + std::to_string(HIP_VERSION_MAJOR) + "." + std::to_string(HIP_VERSION_MINOR);
}
inline std::vector<std::string> options(const std::string& arch) {
  return {"--offload-arch=" + arch, "-O3", "-ffp-contract=off"};
}
#endif

}  // namespace ringrt::codegen::rtc
