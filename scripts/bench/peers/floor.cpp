// The memory-bandwidth floor of an in-process allreduce (scripts/bench-peers.sh).
//
// Measures large-buffer memcpy and STREAM-style add (c[i] = a[i] + b[i]) bandwidth with 1 and 2
// threads, counting every byte read and written (memcpy: 2 bytes moved per byte copied; add: 3 per
// element byte, as STREAM counts), best of several repetitions on pre-faulted buffers. From the
// peak it prints the time no in-process allreduce of N devices x S bytes can beat: every input byte
// read once and every output byte written once, 2*N*S / peak.
//
// Usage: floor BYTES_PER_BUFFER REPS NDEV... -- SIZE...   (sizes in bytes per device)
// Output: CSV lines "bw,<kernel>,<threads>,<GB/s>" then the bench-peers rows
// "floor,bound,<ndev>,<bytes>,<time_s>,<algbw>,<busbw>" on stdout.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

float* buffer(size_t n) {
  auto* p = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
  if (!p) {
    std::fprintf(stderr, "floor: out of memory\n");
    std::exit(1);
  }
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>(i % 1000);  // pre-fault
  return p;
}

// Runs fn(begin, end) on `threads` threads over [0, n); returns seconds.
template <class F>
double timed(size_t n, int threads, F fn) {
  auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back([&, t] { fn(n * t / threads, n * (t + 1) / threads); });
  fn(0, n / threads);
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: floor BYTES_PER_BUFFER REPS NDEV... -- SIZE...\n");
    return 2;
  }
  size_t n = std::strtoull(argv[1], nullptr, 10) / sizeof(float);
  int reps = std::atoi(argv[2]);
  std::vector<long> ndevs, sizes;
  bool after = false;
  for (int i = 3; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      after = true;
      continue;
    }
    (after ? sizes : ndevs).push_back(std::atol(argv[i]));
  }
  float *a = buffer(n), *b = buffer(n), *c = buffer(n);
  double peak = 0;
  for (int threads : {1, 2}) {
    double copy = 1e30, add = 1e30;
    for (int r = 0; r < reps; ++r) {
      copy = std::min(copy, timed(n, threads, [&](size_t lo, size_t hi) {
                        std::memcpy(c + lo, a + lo, (hi - lo) * sizeof(float));
                      }));
      add = std::min(add, timed(n, threads, [&](size_t lo, size_t hi) {
                       for (size_t i = lo; i < hi; ++i) c[i] = a[i] + b[i];
                     }));
    }
    double copy_bw = 2.0 * n * sizeof(float) / copy / 1e9, add_bw = 3.0 * n * sizeof(float) / add / 1e9;
    std::printf("bw,memcpy,%d,%.3f\nbw,add,%d,%.3f\n", threads, copy_bw, threads, add_bw);
    peak = std::max({peak, copy_bw, add_bw});
  }
  volatile float sink = c[n / 2];
  (void)sink;
  for (long nd : ndevs)
    for (long s : sizes) {
      double t = 2.0 * nd * s / (peak * 1e9);
      double algbw = s / t / 1e9;
      std::printf("floor,bound,%ld,%ld,%.9f,%.3f,%.3f\n", nd, s, t, algbw, algbw * 2.0 * (nd - 1) / nd);
    }
  return 0;
}
