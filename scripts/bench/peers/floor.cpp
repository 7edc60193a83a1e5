// The memory-bandwidth floor of an in-process allreduce (scripts/bench-peers.sh), cache-aware.
//
// An in-process allreduce of N devices x S bytes reads every input byte once and writes every output
// byte once at best: 2*N*S bytes moved over a working set of N*S input + N*S output bytes (the
// footprint, F = 2*N*S). The floor is 2*N*S / B(F), B(F) the best bandwidth this machine reaches on a
// working set of F bytes: at 256 KiB per device F is 1-2 MiB and fits in cache, where bandwidth is
// several times DRAM's, so a floor taken from DRAM bandwidth there would be a bound no program could
// be held to: the floor at each size is taken from the bandwidth measured at that footprint.
//
// B(F): memcpy (src and dst of F/2 bytes each), STREAM-style add (c[i] = a[i] + b[i], three arrays of
// F/3 bytes) and a reduce's own pattern, sum4 (four arrays of F/4 bytes; element i of each becomes the
// sum of the four: an in-place allreduce's chunk with its peer writes, four read and four write
// streams), with 1 and 2 threads (each thread its contiguous share), counting every byte read and
// written (memcpy: 2 bytes per byte copied; add: 3 per element byte, as STREAM counts; sum4: 8). Each
// timing repeats the pass over the same buffers enough times to move >= 256 MiB (so a cache-sized
// working set stays warm and the thread start-up is amortized); best of REPS timings on pre-faulted
// buffers. B(F) is the largest of the six: on the AMD EPYC VM of 2026-12-03 sum4 moved 43 GB/s at DRAM
// sizes where memcpy and add reached 24-35, so a floor from those two alone was one the allreduce beat. The DRAM
// figures (BYTES_PER_BUFFER per array) are printed too, with the old bound 2*N*S / DRAM peak as system "floor-dram",
// for comparison.
//
// Usage: floor BYTES_PER_BUFFER REPS NDEV... -- SIZE...   (sizes in bytes per device)
// Output (CSV, stdout): "bw,<kernel>,<threads>,<GB/s>" (DRAM, BYTES_PER_BUFFER per array);
// "bwat,<footprint bytes>,<kernel>,<threads>,<GB/s>" per footprint; then the bench-peers rows
// "floor,bound,<ndev>,<bytes>,<time_s>,<algbw>,<busbw>" (cache-aware), "floor-in-place,bound,..." (the
// same bytes over the bandwidth at the in-place footprint, N*S: the bound of an allreduce into its input)
// and "floor-dram,bound,<ndev>,<bytes>,..." (DRAM peak).
#if defined(__SSE__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

float* buffer(size_t n) {
  size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p) {
    std::fprintf(stderr, "floor: out of memory\n");
    std::exit(1);
  }
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>(i % 1000);  // pre-fault
  return p;
}

// Runs fn(begin, end) `passes` times on each of `threads` threads, thread t over its share of [0, n);
// returns seconds per pass.
template <class F>
double timed(size_t n, int threads, int passes, F fn) {
  auto share = [&](int t) {
    for (int p = 0; p < passes; ++p) fn(n * t / threads, n * (t + 1) / threads);
  };
  auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(share, t);
  share(0);
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(Clock::now() - t0).count() / passes;
}

struct Bandwidth {
  double copy[2], add[2], sum4[2], sum4s[2];  // GB/s with 1 and 2 threads
  double peak() const { return std::max({copy[0], copy[1], add[0], add[1], sum4[0], sum4[1], sum4s[0], sum4s[1]}); }
};

// Out-of-place sum4 with streaming stores: element i of out[0..3] becomes the sum of element i of
// in[0..3], each whole 64-byte line stored past the cache (x86 _mm_stream_ps; the ragged ends plain),
// as ringrt's out-of-place reduce with peer writes does past runtime.stream_bytes. Elsewhere plain stores.
void sum4_streamed(float* const* in, float* const* out, size_t lo, size_t hi) {
  auto plain = [&](size_t at) {
    for (int k = 0; k < 4; ++k) out[k][at] = in[0][at] + in[1][at] + in[2][at] + in[3][at];
  };
  size_t i = lo;
#if defined(__SSE__)
  auto line_start = [&](size_t at) { return (reinterpret_cast<uintptr_t>(out[0] + at) & 63) == 0; };
  for (; i < hi && !line_start(i); ++i) plain(i);
  for (; i + 16 <= hi; i += 16) {  // each output's line written whole, one after another (write-combining)
    __m128 v[4];
    for (size_t j = 0; j < 4; ++j)
      v[j] = _mm_add_ps(_mm_add_ps(_mm_loadu_ps(in[0] + i + 4 * j), _mm_loadu_ps(in[1] + i + 4 * j)),
                        _mm_add_ps(_mm_loadu_ps(in[2] + i + 4 * j), _mm_loadu_ps(in[3] + i + 4 * j)));
    for (int k = 0; k < 4; ++k)
      for (size_t j = 0; j < 4; ++j) _mm_stream_ps(out[k] + i + 4 * j, v[j]);
  }
  _mm_sfence();
#endif
  for (; i < hi; ++i) plain(i);
}

// memcpy and add bandwidth on a working set of `footprint` bytes (see the top of the file).
Bandwidth measure(size_t footprint, int reps) {
  size_t nc = std::max<size_t>(footprint / 2 / sizeof(float), 16),
         na = std::max<size_t>(footprint / 3 / sizeof(float), 16);
  int passes = static_cast<int>(std::max<size_t>(1, (size_t{256} << 20) / std::max<size_t>(footprint, 1)));
  Bandwidth bw{};
  {
    float *a = buffer(nc), *c = buffer(nc);
    for (int threads : {1, 2}) {
      double best = 1e30;
      for (int r = 0; r < reps; ++r)
        best = std::min(best, timed(nc, threads, passes, [&](size_t lo, size_t hi) {
                          std::memcpy(c + lo, a + lo, (hi - lo) * sizeof(float));
                        }));
      bw.copy[threads - 1] = 2.0 * nc * sizeof(float) / best / 1e9;
    }
    volatile float sink = c[nc / 2];
    (void)sink;
    std::free(a), std::free(c);
  }
  float *a = buffer(na), *b = buffer(na), *c = buffer(na);
  for (int threads : {1, 2}) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r)
      best = std::min(best, timed(na, threads, passes, [&](size_t lo, size_t hi) {
                        for (size_t i = lo; i < hi; ++i) c[i] = a[i] + b[i];
                      }));
    bw.add[threads - 1] = 3.0 * na * sizeof(float) / best / 1e9;
  }
  volatile float sink = c[na / 2];
  (void)sink;
  std::free(a), std::free(b), std::free(c);
  bw.sum4[0] = bw.sum4[1] = 0;
  size_t ns = std::max<size_t>(footprint / 4 / sizeof(float), 16);
  float* s4[4] = {buffer(ns), buffer(ns), buffer(ns), buffer(ns)};
  for (int threads : {1, 2}) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r)
      best = std::min(best, timed(ns, threads, passes, [&](size_t lo, size_t hi) {
                        float *p0 = s4[0], *p1 = s4[1], *p2 = s4[2], *p3 = s4[3];
#pragma GCC ivdep
                        for (size_t i = lo; i < hi; ++i) {
                          float v = p0[i] + p1[i] + p2[i] + p3[i];
                          p0[i] = v, p1[i] = v, p2[i] = v, p3[i] = v;
                        }
                      }));
    bw.sum4[threads - 1] = 8.0 * ns * sizeof(float) / best / 1e9;
  }
  sink = s4[0][ns / 2];
  for (float* p : s4) std::free(p);
  // streamed: eight arrays of F/8 (four read, four written), 8 bytes moved per element of each
  size_t n8 = std::max<size_t>(footprint / 8 / sizeof(float), 16);
  float* in[4] = {buffer(n8), buffer(n8), buffer(n8), buffer(n8)};
  float* out[4] = {buffer(n8), buffer(n8), buffer(n8), buffer(n8)};
  for (int threads : {1, 2}) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r)
      best = std::min(best, timed(n8, threads, passes, [&](size_t lo, size_t hi) { sum4_streamed(in, out, lo, hi); }));
    bw.sum4s[threads - 1] = 8.0 * n8 * sizeof(float) / best / 1e9;
  }
  sink = out[0][n8 / 2];
  for (int k = 0; k < 4; ++k) std::free(in[k]), std::free(out[k]);
  return bw;
}

void print_floor(const char* system, long nd, long s, double peak) {
  double t = 2.0 * nd * s / (peak * 1e9);
  double algbw = s / t / 1e9;
  std::printf("%s,bound,%ld,%ld,%.9f,%.3f,%.3f\n", system, nd, s, t, algbw, algbw * 2.0 * (nd - 1) / nd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: floor BYTES_PER_BUFFER REPS NDEV... -- SIZE...\n");
    return 2;
  }
  size_t dram_bytes = std::strtoull(argv[1], nullptr, 10);
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
  // DRAM: three arrays of BYTES_PER_BUFFER for add, two for memcpy (the footprint of the old floor)
  Bandwidth dram = measure(3 * dram_bytes, reps);
  for (int t : {1, 2})
    std::printf("bw,memcpy,%d,%.3f\nbw,add,%d,%.3f\nbw,sum4,%d,%.3f\nbw,sum4s,%d,%.3f\n", t, dram.copy[t - 1], t,
                dram.add[t - 1], t, dram.sum4[t - 1], t, dram.sum4s[t - 1]);
  std::map<size_t, Bandwidth> at;  // footprint -> bandwidth
  auto bandwidth_at = [&](size_t footprint) -> const Bandwidth& {
    if (!at.count(footprint)) {
      Bandwidth bw = at[footprint] = measure(footprint, reps);
      for (int t : {1, 2})
        std::printf("bwat,%zu,memcpy,%d,%.3f\nbwat,%zu,add,%d,%.3f\nbwat,%zu,sum4,%d,%.3f\nbwat,%zu,sum4s,%d,%.3f\n",
                    footprint, t, bw.copy[t - 1], footprint, t, bw.add[t - 1], footprint, t, bw.sum4[t - 1], footprint,
                    t, bw.sum4s[t - 1]);
    }
    return at[footprint];
  };
  // cache-aware: never below the DRAM peak (a large footprint measured noisily low must not loosen the
  // bound). floor: out of place, N*S input + N*S output bytes; floor-in-place: the result in the input's
  // own memory (Tensor::allreduce_in_place), N*S bytes, which fits a cache the other may not.
  for (const char* form : {"floor", "floor-in-place"})
    for (long nd : ndevs)
      for (long s : sizes) {
        size_t footprint = (std::string(form) == "floor" ? 2 : 1) * static_cast<size_t>(nd) * static_cast<size_t>(s);
        print_floor(form, nd, s, std::max(bandwidth_at(footprint).peak(), dram.peak()));
      }
  for (long nd : ndevs)
    for (long s : sizes) print_floor("floor-dram", nd, s, dram.peak());
  return 0;
}
