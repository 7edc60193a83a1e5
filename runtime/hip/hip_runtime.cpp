// The hip backend's free functions: checked HIP calls (hip_check.hpp), launch geometry and kernel
// arguments, and device enumeration (hip_device.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/params_internal.hpp"
#include "runtime/hip/hip_check.hpp"
#include "runtime/hip/hip_device.hpp"
#include "runtime/hip/hip_support.hpp"

namespace ringrt {

// ---------------------------------------------------------------------------------------------
// checked calls (hip_check.hpp)

namespace {

// `file` relative to the repository root, which is where this file's own path ends in
// "runtime/hip/hip_device.cpp"; unchanged when it lies elsewhere.
std::string_view short_file(std::string_view file) {
  constexpr std::string_view self = __FILE__, tail = "runtime/hip/hip_device.cpp";
  constexpr std::string_view root =
      self.ends_with(tail) ? self.substr(0, self.size() - tail.size()) : std::string_view{};
  if (!root.empty() && file.starts_with(root)) return file.substr(root.size());
  return file;
}

// The message of a failed call whose error is called `name` and described by `text` (null: unknown).
std::string failure_message(std::string_view device, std::string_view call, const char* name, const char* text,
                            const char* file, int line) {
  auto or_unknown = [](const char* s) { return std::string_view(s ? s : "unknown HIP error"); };
  // ROCm 5.2's hipGetErrorString often returns the name itself: say it once then.
  std::string_view n = or_unknown(name), t = or_unknown(text);
  std::string error = t == n ? std::string(n) : fmt::format("{} ({})", n, t);
  return fmt::format("{}: {} failed at {}:{}: {}", device, call, short_file(file), line, error);
}

template <class Rc>
void log_failure(std::string_view device, std::string_view call, Rc rc, const char* file, int line) noexcept {
  try {
    std::string msg = "ringrt: " + hip_error_message(device, call, rc, file, line) + "; continuing\n";
    std::fputs(msg.c_str(), stderr);
  } catch (...) {
    std::fputs("ringrt: a HIP call failed during teardown (and formatting its message failed too)\n", stderr);
  }
}

}  // namespace

std::string hip_error_message(std::string_view device, std::string_view call, hipError_t rc, const char* file,
                              int line) {
  return failure_message(device, call, hipGetErrorName(rc), hipGetErrorString(rc), file, line);
}

void log_hip_error(std::string_view device, std::string_view call, hipError_t rc, const char* file, int line) noexcept {
  log_failure(device, call, rc, file, line);
}

#ifdef RINGRT_GPU_NVIDIA
std::string hip_error_message(std::string_view device, std::string_view call, CUresult rc, const char* file, int line) {
  const char *name = nv::driver_error_name(rc), *text = nv::driver_error_string(rc);
  if (!name && rc == nv::kNoEntryPoint) {  // no driver: what the module call wrappers return
    name = "CUDA_ERROR_NOT_INITIALIZED";
    text = "the CUDA runtime provides no driver entry point (no or too old NVIDIA driver)";
  }
  return failure_message(device, call, name, text, file, line);
}

void log_hip_error(std::string_view device, std::string_view call, CUresult rc, const char* file, int line) noexcept {
  log_failure(device, call, rc, file, line);
}
#endif

// ---------------------------------------------------------------------------------------------
// launch geometry and arguments

namespace hip_launch {

int64_t launch_blocks(int64_t numel, int lanes, int multiprocessors) {
  if (numel <= 0) return 0;
  int64_t items = (numel + std::max(lanes, 1) - 1) / std::max(lanes, 1);
  int64_t full = int64_t{std::max(multiprocessors, 1)} * kBlocksPerMultiprocessor;
  return std::min((items + kBlockSize - 1) / kBlockSize, full);
}

std::vector<std::byte> pack_kernel_args(const std::vector<void*>& bufs, int32_t dnum, int64_t n) {
  auto align8 = [](size_t x) { return (x + 7) / 8 * 8; };
  size_t dnum_at = bufs.size() * sizeof(void*);
  size_t n_at = align8(dnum_at + sizeof(int32_t));
  std::vector<std::byte> args(align8(n_at + sizeof(long long)), std::byte{0});
  for (size_t i = 0; i < bufs.size(); ++i) std::memcpy(args.data() + i * sizeof(void*), &bufs[i], sizeof(void*));
  std::memcpy(args.data() + dnum_at, &dnum, sizeof(dnum));
  long long nn = n;
  std::memcpy(args.data() + n_at, &nn, sizeof(nn));
  return args;
}

size_t cache_block_size(size_t bytes) {
  constexpr size_t kSmall = size_t{1} << 20;
  if (bytes < kSmall) return (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  size_t step = std::bit_floor(bytes) / 8;
  return (bytes + step - 1) / step * step;
}

size_t device_cache_cap(size_t gpu_bytes, int devices_on_gpu) {
  return gpu_bytes / 4 / static_cast<size_t>(std::max(devices_on_gpu, 1));
}

const char* gate_wait_source() {
  return R"(
extern "C" __global__ void rt_gate_wait(const volatile unsigned int* word, unsigned int value) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    while ((int)(*word - value) < 0) {
    }
}
)";
}

std::string poisoned_message(const std::string& device, const std::string& what, const std::string& first_error) {
  return fmt::format(
      "{}: {} not run: the device is unusable after an earlier GPU error (the errors of a faulted GPU are "
      "sticky): {}",
      device, what, first_error);
}

std::string shut_down_message(const std::string& device, const std::string& what) {
  return fmt::format("{}: {} not run: the device was shut down first", device, what);
}

}  // namespace hip_launch

// ---------------------------------------------------------------------------------------------
// device enumeration

int hip_physical_gpu(int logical, int gpus) { return logical < 0 || gpus < 1 ? -1 : logical % gpus; }

namespace hip_detail {

const HipTopology& hip_topology() {
  // A static initialized by a lambda: if the lambda throws, the next call tries again.
  static const HipTopology topology = [] {
    HipTopology t;
    hipError_t rc = hipGetDeviceCount(&t.gpus);
    if (hip_detail::no_gpu_error(rc)) {
      (void)hipGetLastError();  // leave no sticky error behind for later callers
      return HipTopology{};
    }
    if (rc != hipSuccess)
      throw DeviceError(hip_error_message("HIP", "hipGetDeviceCount(&count)", rc, __FILE__, __LINE__));
    int logical = current_runtime_params().hip_logical;  // read once: the names are fixed from here on
    int n = t.gpus > 0 && logical > 0 ? logical : t.gpus;
    for (int i = 0; i < n; ++i) t.names.push_back(fmt::format("HIP:{}", i));
    return t;
  }();
  return topology;
}

}  // namespace hip_detail

std::vector<std::string> hip_device_names() { return hip_detail::hip_topology().names; }

// ---------------------------------------------------------------------------------------------
// exit-time teardown (hip_support.hpp register_live)

namespace hip_detail {
namespace {

struct LiveDevices {
  std::mutex mu;
  std::map<const void*, std::function<void()>> shutdown;  // per live device
  bool handler = false;                                   // shut_down_at_exit is registered
};
LiveDevices& live_devices() {
  static auto* live = new LiveDevices;  // never destroyed: the exit handler uses it
  return *live;
}

void shut_down_at_exit() {
  std::vector<std::function<void()>> shutdowns;
  {
    auto& live = live_devices();
    std::lock_guard<std::mutex> lock(live.mu);
    for (auto& [device, fn] : live.shutdown) shutdowns.push_back(fn);
  }
  for (auto& fn : shutdowns) fn();
  g_hip_gone = true;
}

}  // namespace

void register_live(const void* device, std::function<void()> shutdown) {
  auto& live = live_devices();
  std::lock_guard<std::mutex> lock(live.mu);
  live.shutdown[device] = std::move(shutdown);
  if (!live.handler) live.handler = std::atexit(shut_down_at_exit) == 0;
}

void unregister_live(const void* device) {
  auto& live = live_devices();
  std::lock_guard<std::mutex> lock(live.mu);
  live.shutdown.erase(device);
}

DeviceOwner::~DeviceOwner() {
  unregister_live(d_);
  if (shutdown_()) delete d_;  // else abandoned work still uses it: it leaks
}

}  // namespace hip_detail

}  // namespace ringrt
