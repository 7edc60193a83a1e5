// Checked HIP calls (no HIP status is ignored; reference: rocm-examples HIP_CHECK, NCCL checks.h). Every HIP
// call in ringrt goes through one of these macros, so a failure leaves a file:line trail:
//
//   RINGRT_HIP_CHECK(device, call)            throws DeviceError
//   RINGRT_HIP_CHECK_AS(ErrorType, device, call)  throws ErrorType (e.g. CompileError for module loads)
//   RINGRT_HIP_LOG(device, call)              logs to stderr and continues (destructors, teardown)
//
// `device` is the name the message starts with ("HIP:0"); the message reads
//   "HIP:0: hipMalloc(&p, rounded) failed at runtime/hip/hip_device.cpp:123: hipErrorOutOfMemory (out of memory)"
// On NVIDIA (RINGRT_GPU_NVIDIA, hip_platform.hpp) a call returns cudaError_t, or CUresult for the
// module calls; the macros take both, and the message names the call as written ("hipMalloc(...)")
// and the error as the platform names it. Include only where HIP is built (RINGRT_HAVE_HIP): it
// includes the platform's runtime API.
#pragma once

#include <string>
#include <string_view>

#include "core/errors.hpp"
#include "runtime/hip/hip_platform.hpp"

namespace ringrt {

// Whether a call succeeded.
inline bool hip_ok(hipError_t rc) noexcept { return rc == hipSuccess; }
// The message of a failed HIP call: device, call text, file:line (relative to the repository root),
// the error's name and hipGetErrorString (once, when ROCm makes the two the same).
std::string hip_error_message(std::string_view device, std::string_view call, hipError_t rc, const char* file,
                              int line);
// Writes "ringrt: <hip_error_message>; continuing" to stderr. Thread-safe; never throws.
void log_hip_error(std::string_view device, std::string_view call, hipError_t rc, const char* file, int line) noexcept;

#ifdef RINGRT_GPU_NVIDIA
// The same for the CUDA driver calls behind hipModule* (names from cuGetErrorName/cuGetErrorString).
inline bool hip_ok(CUresult rc) noexcept { return rc == CUDA_SUCCESS; }
std::string hip_error_message(std::string_view device, std::string_view call, CUresult rc, const char* file, int line);
void log_hip_error(std::string_view device, std::string_view call, CUresult rc, const char* file, int line) noexcept;
#endif

}  // namespace ringrt

// `text` is the call as written: each public macro stringifies its own argument, before the platform
// header's macros rename the calls in it.
#define RINGRT_HIP_CHECK_TEXT_AS_(ErrorType, device, call, text)                                    \
  do {                                                                                              \
    const auto ringrt_rc_ = (call);                                                                 \
    if (!::ringrt::hip_ok(ringrt_rc_))                                                              \
      throw ErrorType(::ringrt::hip_error_message((device), text, ringrt_rc_, __FILE__, __LINE__)); \
  } while (0)

#define RINGRT_HIP_CHECK_AS(ErrorType, device, call) RINGRT_HIP_CHECK_TEXT_AS_(ErrorType, device, call, #call)

#define RINGRT_HIP_CHECK(device, call) RINGRT_HIP_CHECK_TEXT_AS_(::ringrt::DeviceError, device, call, #call)

#define RINGRT_HIP_LOG(device, call)                                                                             \
  do {                                                                                                           \
    const auto ringrt_rc_ = (call);                                                                              \
    if (!::ringrt::hip_ok(ringrt_rc_)) ::ringrt::log_hip_error((device), #call, ringrt_rc_, __FILE__, __LINE__); \
  } while (0)
