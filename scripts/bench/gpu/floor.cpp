// The memory-bandwidth floor of an allreduce on one GPU (scripts/gpu-check.sh), the GPU counterpart of
// scripts/bench/peers/floor.cpp: device-to-device copy bandwidth on GPU 0 (10 hipMemcpyAsync on one
// stream between two host clock reads, the last followed by an event the host waits for; best of REPS),
// counting every byte read and written (2 bytes moved per byte copied). Give BYTES_PER_BUFFER of 256 MiB
// or more: the host's clock and wait then add well under 1%. From the peak it prints the time no allreduce of N logical
// devices x S bytes on that one GPU can beat: every input byte read once and every output byte written once, 2*N*S /
// peak.
//
// Usage: ringrt_gpu_floor BYTES_PER_BUFFER REPS NDEV... -- SIZE...   (sizes in bytes per device)
// Output: "bw,memcpy_d2d,1,<GB/s>" then rows "floor,bound,<ndev>,<bytes>,<time_s>,<algbw>,<busbw>"
// (GB/s; busbw = algbw * 2(n-1)/n, as rccl-tests) on stdout. Exit 2 for bad arguments, 1 for a failed
// HIP call or no GPU, with the call on stderr.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/hip/hip_platform.hpp"

namespace {

[[noreturn]] void fail(const char* call, hipError_t rc) {
  std::string name = hipGetErrorName(rc), text = hipGetErrorString(rc);  // ROCm 5.2 often gives the name twice
  std::fprintf(stderr, "ringrt_gpu_floor: %s failed: %s\n", call,
               (name == text ? name : name + " (" + text + ")").c_str());
  std::exit(1);
}

#define FLOOR_CHECK(call)                                \
  do {                                                   \
    const hipError_t floor_rc_ = (call);                 \
    if (floor_rc_ != hipSuccess) fail(#call, floor_rc_); \
  } while (0)

// A positive integer of at most `max`; exit 2 otherwise (overflow included).
long long parse_size(const char* text, long long max = (1LL << 50)) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (!end || end == text || *end != '\0' || errno == ERANGE || v <= 0 || v > max) {
    std::fprintf(stderr, "ringrt_gpu_floor: '%s' is not an integer in [1, %lld]\n", text, max);
    std::exit(2);
  }
  return v;
}

// Best device-to-device copy bandwidth on the current GPU, in GB/s of bytes read plus written.
double d2d_peak(size_t bytes, int reps) {
  void *src = nullptr, *dst = nullptr;
  FLOOR_CHECK(hipMalloc(&src, bytes));
  FLOOR_CHECK(hipMalloc(&dst, bytes));
  hipStream_t stream = nullptr;
  FLOOR_CHECK(hipStreamCreateWithFlags(&stream, hipStreamNonBlocking));
  hipEvent_t done = nullptr;
  FLOOR_CHECK(hipEventCreateWithFlags(&done, hipEventDisableTiming));
  auto copies = [&](int n) {
    for (int i = 0; i < n; ++i) FLOOR_CHECK(hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, stream));
    FLOOR_CHECK(hipEventRecord(done, stream));
    FLOOR_CHECK(hipEventSynchronize(done));
  };
  copies(1);  // warm-up
  constexpr int kInner = 10;
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    copies(kInner);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, 2.0 * kInner * static_cast<double>(bytes) / s / 1e9);
  }
  FLOOR_CHECK(hipEventDestroy(done));
  FLOOR_CHECK(hipStreamDestroy(stream));
  FLOOR_CHECK(hipFree(src));
  FLOOR_CHECK(hipFree(dst));
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: ringrt_gpu_floor BYTES_PER_BUFFER REPS NDEV... -- SIZE...\n");
    return 2;
  }
  size_t bytes = static_cast<size_t>(parse_size(argv[1]));
  int reps = static_cast<int>(parse_size(argv[2], 1000));
  std::vector<long long> ndevs, sizes;
  bool after_dashes = false;
  for (int i = 3; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      after_dashes = true;
      continue;
    }
    (after_dashes ? sizes : ndevs).push_back(parse_size(argv[i]));
  }
  if (ndevs.empty() || sizes.empty()) {
    std::fprintf(stderr, "ringrt_gpu_floor: give at least one NDEV and, after --, one SIZE\n");
    return 2;
  }
  int count = 0;
  FLOOR_CHECK(hipGetDeviceCount(&count));
  if (count < 1) {
    std::fprintf(stderr, "ringrt_gpu_floor: no GPU\n");
    return 1;
  }
  FLOOR_CHECK(hipSetDevice(0));
  double peak = d2d_peak(bytes, reps);
  std::printf("bw,memcpy_d2d,1,%.1f\n", peak);
  for (long long n : ndevs) {
    for (long long s : sizes) {
      double t = 2.0 * static_cast<double>(n) * static_cast<double>(s) / (peak * 1e9);
      double algbw = static_cast<double>(s) / t / 1e9;
      std::printf("floor,bound,%lld,%lld,%.9f,%.3f,%.3f\n", n, s, t, algbw,
                  algbw * 2.0 * static_cast<double>(n - 1) / static_cast<double>(n));
    }
  }
  return 0;
}
