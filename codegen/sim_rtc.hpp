// The simulated GPU's runtime compiler under hipRTC's names (codegen/rtc_platform.hpp maps nothing for
// the sim platform: these are the names), and its code objects (see runtime/hip/sim/sim_hip.hpp). Declared
// here, beside the other compilers, because codegen calls it; defined with the simulated GPU, in
// runtime/hip/sim/sim_rtc.cpp.
//
// A program is render_hip's source. hiprtcCompileProgram puts a prelude before it (the HIP built-ins
// the source uses: __global__, blockIdx, threadIdx, blockDim, gridDim, __float_as_uint, ...; the math functions
// from <math.h>) and, after it, two entry points per kernel `NAME` it finds (`extern "C" __global__ void
// NAME(`):
//   NAME__sim_launch(const char* args, unsigned blocks, unsigned threads)  runs the kernel: for each
//       block, each thread, with the arguments unpacked from `args` at their natural alignment;
//   NAME__sim_pack(void** params, char* out)  packs the arguments `params` point to into `out` (when
//       not null) in that layout, and returns its size.
// and builds the whole with the host compiler (codegen::HostCompiler, through its on-disk cache). The
// code object is kCodeMagic, the shared object's size (8 bytes, little-endian) and the shared object.
// The options are ignored but for the target (--offload-arch=sim).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

enum hiprtcResult {
  HIPRTC_SUCCESS = 0,
  HIPRTC_ERROR_INVALID_INPUT = 3,
  HIPRTC_ERROR_INVALID_PROGRAM = 4,
  HIPRTC_ERROR_COMPILATION = 6,
};
struct ihiprtcProgram;
using hiprtcProgram = ihiprtcProgram*;

hiprtcResult hiprtcCreateProgram(hiprtcProgram* prog, const char* source, const char* name, int num_headers,
                                 const char* const* headers, const char* const* include_names);
hiprtcResult hiprtcCompileProgram(hiprtcProgram prog, int num_options, const char* const* options);
hiprtcResult hiprtcDestroyProgram(hiprtcProgram* prog);
hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram prog, size_t* size);
hiprtcResult hiprtcGetProgramLog(hiprtcProgram prog, char* log);
hiprtcResult hiprtcGetCodeSize(hiprtcProgram prog, size_t* size);
hiprtcResult hiprtcGetCode(hiprtcProgram prog, char* code);
const char* hiprtcGetErrorString(hiprtcResult result);
hiprtcResult hiprtcVersion(int* major, int* minor);

namespace ringrt::sim {

// The target every simulated GPU reports (hipDeviceProp_t::gcnArchName) and the compiler accepts.
inline constexpr const char* kSimArch = "sim";
inline constexpr std::string_view kCodeMagic{"RTSIMSO1", 8};
inline constexpr const char* kLaunchSuffix = "__sim_launch";
inline constexpr const char* kPackSuffix = "__sim_pack";
using LaunchFn = void (*)(const char* args, unsigned blocks, unsigned threads);
using PackFn = size_t (*)(void** params, char* out);

// The source hiprtcCompileProgram compiles for render_hip's `source`: the prelude, the source, the entry
// points of each kernel in it.
std::string simulated_source(const std::string& source);
// The shared object inside a code object that starts at `image`; empty when it is none.
std::string_view code_object_library(const void* image);

}  // namespace ringrt::sim
