// Checked HIP calls (STYLE.md habit 4; reference: rocm-examples HIP_CHECK, NCCL checks.h). Every HIP
// call in ringrt goes through one of these macros, so a failure leaves a file:line trail:
//
//   RINGRT_HIP_CHECK(device, call)            throws DeviceError
//   RINGRT_HIP_CHECK_AS(ErrorType, device, call)  throws ErrorType (e.g. CompileError for module loads)
//   RINGRT_HIP_LOG(device, call)              logs to stderr and continues (destructors, teardown)
//
// `device` is the name the message starts with ("HIP:0"); the message reads
//   "HIP:0: hipMalloc(&p, rounded) failed at runtime/hip/hip_device.cpp:123: hipErrorOutOfMemory (out of memory)"
// Include only where HIP is built (RINGRT_HAVE_HIP): it includes the HIP runtime API.
#pragma once

#include <hip/hip_runtime_api.h>

#include <string>
#include <string_view>

#include "rewrite/errors.hpp"

namespace ringrt {

// The message of a failed HIP call: device, call text, file:line (relative to the repository root),
// the error's name and hipGetErrorString (once, when ROCm makes the two the same).
std::string hip_error_message(std::string_view device, std::string_view call, hipError_t rc, const char* file,
                              int line);
// Writes "ringrt: <hip_error_message>; continuing" to stderr. Thread-safe; never throws.
void log_hip_error(std::string_view device, std::string_view call, hipError_t rc, const char* file, int line) noexcept;

}  // namespace ringrt

#define RINGRT_HIP_CHECK_AS(ErrorType, device, call)                                                 \
  do {                                                                                               \
    const hipError_t ringrt_rc_ = (call);                                                            \
    if (ringrt_rc_ != hipSuccess)                                                                    \
      throw ErrorType(::ringrt::hip_error_message((device), #call, ringrt_rc_, __FILE__, __LINE__)); \
  } while (0)

#define RINGRT_HIP_CHECK(device, call) RINGRT_HIP_CHECK_AS(::ringrt::DeviceError, device, call)

#define RINGRT_HIP_LOG(device, call)                                                                        \
  do {                                                                                                      \
    const hipError_t ringrt_rc_ = (call);                                                                   \
    if (ringrt_rc_ != hipSuccess) ::ringrt::log_hip_error((device), #call, ringrt_rc_, __FILE__, __LINE__); \
  } while (0)
