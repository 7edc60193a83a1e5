// The simulated GPU's runtime compiler (see sim_rtc.hpp).
#include "codegen/sim_rtc.hpp"

#include <fmt/format.h>

#include <cstring>
#include <exception>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "codegen/compiler.hpp"

namespace ringrt::sim {

namespace {

// The HIP built-ins render_hip's kernels use, and the launcher templates the entry points call. Kernels
// of different streams run at once on their streams' threads: the thread and block indices are
// thread_local.
constexpr const char* kPrelude = R"(// simulated GPU prelude (runtime/hip/sim/sim_rtc.cpp)
#include <math.h>
#include <stddef.h>
#include <time.h>
#include <tuple>
#define __global__
#define __device__
struct rt_sim_dim3 { unsigned x, y, z; };
static thread_local rt_sim_dim3 blockIdx, threadIdx, blockDim, gridDim;
// a fused collective's kernel (codegen/render_hip.cpp render_hip_collective) runs here as one thread per
// device (HipDevice::launch_collective): its block barrier is nothing, its devices' barrier host atomics
#define RT_SIM_GPU 1
static inline void __syncthreads() {}
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline unsigned atomicAdd_system(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned long long rt_sim_clock_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}
// a trap: the launch fails (kernel_op in runtime/hip/sim/sim_device.cpp catches it)
struct rt_sim_trapped {};
[[noreturn]] static inline void rt_sim_trap() { throw rt_sim_trapped{}; }
static inline unsigned __float_as_uint(float f) { return __builtin_bit_cast(unsigned, f); }
static inline float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
template <class T> static inline void rt_sim_take(T& v, const char* args, size_t& at) {
  at = (at + alignof(T) - 1) / alignof(T) * alignof(T);
  __builtin_memcpy(&v, args + at, sizeof(T));
  at += sizeof(T);
}
template <class T> static inline void rt_sim_put(const void* param, char* out, size_t& at) {
  at = (at + alignof(T) - 1) / alignof(T) * alignof(T);
  if (out) __builtin_memcpy(out + at, param, sizeof(T));
  at += sizeof(T);
}
template <class... A> static void rt_sim_launch(void (*f)(A...), const char* args, unsigned blocks, unsigned threads) {
  std::tuple<A...> a;
  size_t at = 0;
  std::apply([&](A&... v) { (rt_sim_take(v, args, at), ...); }, a);
  blockDim = {threads, 1, 1};
  gridDim = {blocks, 1, 1};
  for (unsigned b = 0; b < blocks; ++b) {
    blockIdx = {b, 0, 0};
    for (unsigned t = 0; t < threads; ++t) {
      threadIdx = {t, 0, 0};
      std::apply(f, a);
    }
  }
}
template <class... A> static size_t rt_sim_pack(void (*)(A...), void** params, char* out) {
  size_t at = 0, i = 0;
  (rt_sim_put<A>(params[i++], out, at), ...);
  return (at + 7) / 8 * 8;
}
)";

struct Program {
  std::string source, name, log, code;
};

}  // namespace

std::string simulated_source(const std::string& source) {
  std::string out = kPrelude;
  out += source;
  out += "\n// entry points (codegen/sim_rtc.hpp)\n";
  static const std::regex kernel(R"re(extern "C" __global__ void (\w+)\()re");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), kernel); it != std::sregex_iterator(); ++it) {
    std::string name = (*it)[1];
    out += fmt::format(
        "extern \"C\" void {0}{1}(const char* args, unsigned blocks, unsigned threads) {{ rt_sim_launch({0}, args, "
        "blocks, threads); }}\n"
        "extern \"C\" size_t {0}{2}(void** params, char* out) {{ return rt_sim_pack({0}, params, out); }}\n",
        name, kLaunchSuffix, kPackSuffix);
  }
  return out;
}

std::string_view code_object_library(const void* image) {
  const char* p = static_cast<const char*>(image);
  if (std::memcmp(p, kCodeMagic.data(), kCodeMagic.size()) != 0) return {};
  uint64_t size = 0;
  for (int i = 7; i >= 0; --i) size = size << 8 | static_cast<unsigned char>(p[kCodeMagic.size() + i]);
  return {p + kCodeMagic.size() + 8, size};
}

}  // namespace ringrt::sim

using ringrt::sim::Program;

struct ihiprtcProgram : Program {};

hiprtcResult hiprtcCreateProgram(hiprtcProgram* prog, const char* source, const char* name, int num_headers,
                                 const char* const* headers, const char* const* include_names) {
  (void)headers;
  (void)include_names;
  if (!prog || !source || num_headers != 0) return HIPRTC_ERROR_INVALID_INPUT;
  *prog = new ihiprtcProgram;
  (*prog)->source = source;
  (*prog)->name = name ? name : "kernel";
  return HIPRTC_SUCCESS;
}

hiprtcResult hiprtcCompileProgram(hiprtcProgram prog, int num_options, const char* const* options) {
  if (!prog) return HIPRTC_ERROR_INVALID_PROGRAM;
  bool target = false;
  for (int i = 0; i < num_options; ++i)
    target = target || std::string_view(options[i]) == std::string("--offload-arch=") + ringrt::sim::kSimArch;
  if (!target) {
    prog->log = "the simulated GPU's compiler needs --offload-arch=sim";
    return HIPRTC_ERROR_COMPILATION;
  }
  try {
    std::string so = ringrt::codegen::HostCompiler().compile(ringrt::sim::simulated_source(prog->source), prog->name);
    prog->code.assign(ringrt::sim::kCodeMagic);
    for (int i = 0; i < 8; ++i) prog->code += static_cast<char>((static_cast<uint64_t>(so.size()) >> (8 * i)) & 0xff);
    prog->code += so;
    return HIPRTC_SUCCESS;
  } catch (const std::exception& e) {
    prog->log = e.what();
    return HIPRTC_ERROR_COMPILATION;
  }
}

hiprtcResult hiprtcDestroyProgram(hiprtcProgram* prog) {
  if (!prog) return HIPRTC_ERROR_INVALID_PROGRAM;
  delete *prog;
  *prog = nullptr;
  return HIPRTC_SUCCESS;
}

hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram prog, size_t* size) {
  if (!prog || !size) return HIPRTC_ERROR_INVALID_INPUT;
  *size = prog->log.size() + 1;
  return HIPRTC_SUCCESS;
}

hiprtcResult hiprtcGetProgramLog(hiprtcProgram prog, char* log) {
  if (!prog || !log) return HIPRTC_ERROR_INVALID_INPUT;
  std::memcpy(log, prog->log.c_str(), prog->log.size() + 1);
  return HIPRTC_SUCCESS;
}

hiprtcResult hiprtcGetCodeSize(hiprtcProgram prog, size_t* size) {
  if (!prog || !size) return HIPRTC_ERROR_INVALID_INPUT;
  *size = prog->code.size();
  return HIPRTC_SUCCESS;
}

hiprtcResult hiprtcGetCode(hiprtcProgram prog, char* code) {
  if (!prog || !code) return HIPRTC_ERROR_INVALID_INPUT;
  std::memcpy(code, prog->code.data(), prog->code.size());
  return HIPRTC_SUCCESS;
}

const char* hiprtcGetErrorString(hiprtcResult result) {
  switch (result) {
    case HIPRTC_SUCCESS:
      return "HIPRTC_SUCCESS";
    case HIPRTC_ERROR_INVALID_INPUT:
      return "HIPRTC_ERROR_INVALID_INPUT";
    case HIPRTC_ERROR_INVALID_PROGRAM:
      return "HIPRTC_ERROR_INVALID_PROGRAM";
    case HIPRTC_ERROR_COMPILATION:
      return "HIPRTC_ERROR_COMPILATION";
  }
  return "HIPRTC_ERROR_UNKNOWN";
}

hiprtcResult hiprtcVersion(int* major, int* minor) {
  if (!major || !minor) return HIPRTC_ERROR_INVALID_INPUT;
  *major = 1;
  *minor = 0;
  return HIPRTC_SUCCESS;
}
