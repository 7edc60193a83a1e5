// The memory-bandwidth floor of an allreduce on one GPU (scripts/gpu-check.sh), the GPU counterpart of
// scripts/bench/peers/floor.cpp, measured two ways on GPU 0:
//   - bound: device-to-device copy bandwidth (10 hipMemcpyAsync on one stream between two host clock
//     reads, the last followed by an event the host waits for; best of REPS), counting every byte read
//     and written (2 bytes moved per byte copied). Give BYTES_PER_BUFFER of 256 MiB or more: the host's
//     clock and wait then add well under 1%. From the peak it prints the time no allreduce of N logical
//     devices x S bytes on that one GPU can beat: every input byte read once and every output byte written
//     once, 2*N*S / peak.
//   - fused: ONE kernel that does the whole allreduce of N logical devices x S bytes (float32, sum): it
//     reads the N inputs and writes their sum into each of the N outputs, 2*N*S bytes in one launch, the
//     least an allreduce on one GPU can move and launch. Compiled at run time for the GPU's arch with
//     ringrt's codegen::HiprtcCompiler (hipRTC, NVRTC, or the simulated GPU's compiler), loaded with
//     hipModuleLoadData, launched with hipModuleLaunchKernel: 16-byte loads and stores (a float4-like
//     struct; hipMalloc's buffers are aligned) and a scalar tail, a grid-stride loop over at most
//     kBlocksPerSm blocks of kBlockSize threads per multiprocessor, 32-bit indices, the sum over the N
//     inputs unrolled in the source (one kernel per N). Timed two ways, each as K launches between two
//     events on one stream, the events' elapsed time / K, best of REPS (K from 8 to 200, about 256 MiB
//     moved per batch): `fused` launches the kernel back to back (hipModuleLaunchKernel K times);
//     `fused_graph` launches a graph of one kernel node K times (hipGraphLaunch: the per-call cost of an
//     allreduce replayed as a graph, ringrt's runtime.graphs). Before each size is timed the outputs and
//     16 bytes past them are overwritten with -1, the kernel runs once, and every output element is checked
//     against the host's sum (and the 16 bytes against -1): one wrong value is exit 1.
//
// Usage: ringrt_gpu_floor BYTES_PER_BUFFER REPS NDEV... -- SIZE...
//   (sizes in bytes per device, multiples of 4 of at most 4 GiB; NDEV at most 64)
// Output (CSV on stdout; times in seconds, bandwidths in GB/s; busbw = algbw * 2(n-1)/n, as rccl-tests):
//   bw,memcpy_d2d,1,<GB/s>
//   then for each NDEV, each SIZE, three rows of one shape:
//   floor,bound,<ndev>,<bytes>,<time_s>,<algbw>,<busbw>
//   floor,fused,<ndev>,<bytes>,<time_s>,<algbw>,<busbw>         (back to back launches)
//   floor,fused_graph,<ndev>,<bytes>,<time_s>,<algbw>,<busbw>   (graph launches)
// Exit 2 for bad arguments; 1 for a failed HIP call, a failed compile, no GPU, or a wrong fused result,
// with the reason on stderr.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "codegen/compiler.hpp"
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

#if defined(RINGRT_GPU_NVIDIA)
// The module calls are CUDA driver calls returning CUresult on NVIDIA (hip_platform.hpp): the driver's name.
#define FLOOR_CHECK_MODULE(call)                                                                        \
  do {                                                                                                  \
    const CUresult floor_rc_ = (call);                                                                  \
    if (floor_rc_ != CUDA_SUCCESS) {                                                                    \
      const char* name = ringrt::nv::driver_error_name(floor_rc_);                                      \
      std::fprintf(stderr, "ringrt_gpu_floor: %s failed: %s (CUresult %d)\n", #call, name ? name : "?", \
                   static_cast<int>(floor_rc_));                                                        \
      std::exit(1);                                                                                     \
    }                                                                                                   \
  } while (0)
#else
#define FLOOR_CHECK_MODULE(call) FLOOR_CHECK(call)
#endif

constexpr unsigned kBlockSize = 256;  // threads per block, as the hip backend's launches (hip_launch::kBlockSize)
// Blocks per multiprocessor of the grid-stride loop: 8 x 256 = 2048 threads, the most an H100/H200 SM holds
// (an AMD CDNA CU holds 2560), so every SM is full while each thread still loops over several vectors.
constexpr unsigned kBlocksPerSm = 8;
constexpr long long kMaxDevices = 64;            // 2 pointers each: 1 KiB of kernel arguments at 64
constexpr long long kMaxFusedBytes = 1LL << 32;  // 2^30 floats: an index plus the stride stays below 2^32
constexpr size_t kGuardFloats = 4;               // 16 bytes past each output, checked unwritten
constexpr float kPoison = -1.0f;                 // no sum of the inputs below is negative

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

// One CSV row of an allreduce of n devices x s bytes taking t seconds (see the header comment).
void print_row(const char* kind, long long n, long long s, double t) {
  double algbw = static_cast<double>(s) / t / 1e9;
  std::printf("floor,%s,%lld,%lld,%.9f,%.3f,%.3f\n", kind, n, s, t, algbw,
              algbw * 2.0 * static_cast<double>(n - 1) / static_cast<double>(n));
}

// The fused kernel of n devices, ringrt_floor_fused<n>(in0..in<n-1>, out0..out<n-1>, n4, n, stride):
// vectors [0, n4) of 4 floats, then floats [4*n4, n), each thread from its global index on by `stride`
// (the grid's thread count). Every output gets the inputs' sum.
std::string fused_source(int n) {
  std::string params, loads, sums, stores, scalar = "    const float s =", scalar_stores;
  for (int k = 0; k < n; ++k) {
    std::string i = std::to_string(k);
    params += "const float* __restrict__ in" + i + ", ";
    loads += "    const rt_float4 a" + i + " = reinterpret_cast<const rt_float4*>(in" + i + ")[i];\n";
    scalar += std::string(k ? " +" : "") + " in" + i + "[i]";
  }
  for (const char* c : {"x", "y", "z", "w"}) {
    sums += std::string("    s.") + c + " =";
    for (int k = 0; k < n; ++k) sums += std::string(k ? " +" : "") + " a" + std::to_string(k) + "." + c;
    sums += ";\n";
  }
  for (int k = 0; k < n; ++k) {
    std::string i = std::to_string(k);
    params += "float* __restrict__ out" + i + ", ";
    stores += "    reinterpret_cast<rt_float4*>(out" + i + ")[i] = s;\n";
    scalar_stores += "    out" + i + "[i] = s;\n";
  }
  return "// ringrt_gpu_floor's fused allreduce of " + std::to_string(n) +
         " devices (scripts/bench/gpu/floor.cpp)\n"
         "struct alignas(16) rt_float4 { float x, y, z, w; };\n"
         "extern \"C\" __global__ void ringrt_floor_fused" +
         std::to_string(n) + "(" + params +
         "unsigned n4, unsigned n, unsigned stride) {\n"
         "  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  for (unsigned i = t; i < n4; i += stride) {\n" +
         loads + "    rt_float4 s;\n" + sums + stores +
         "  }\n"
         "  for (unsigned i = 4 * n4 + t; i < n; i += stride) {\n" +
         scalar + ";\n" + scalar_stores + "  }\n}\n";
}

// Input k's float i, and the sum of inputs 0..n-1 at i: small integers, exact in float32 in any order.
float input_value(size_t i, int k) { return static_cast<float>(i % 1021 + static_cast<size_t>(k)); }
float sum_value(size_t i, int n) { return static_cast<float>(n * (i % 1021) + static_cast<size_t>(n * (n - 1) / 2)); }

// The fused kernel of one n, loaded on GPU 0.
struct Fused {
  int n = 0;
  hipModule_t module = nullptr;
  hipFunction_t fn = nullptr;
};

// Loads the fused kernel of n devices, compiled by `compiler` (through ringrt's kernel cache).
Fused load_fused(const ringrt::codegen::HiprtcCompiler& compiler, int n) {
  Fused f;
  f.n = n;
  std::string name = "ringrt_floor_fused" + std::to_string(n);
  std::string code = compiler.compile(fused_source(n), name);
  FLOOR_CHECK_MODULE(hipModuleLoadData(&f.module, code.data()));
  FLOOR_CHECK_MODULE(hipModuleGetFunction(&f.fn, f.module, name.c_str()));
  return f;
}

// What the program allocates once for the largest NDEV and SIZE: the inputs (set to input_value once),
// the outputs (kGuardFloats more each), a host buffer for the checks, one stream, two timing events.
struct Buffers {
  std::vector<float*> ins, outs;
  std::vector<float> host;
  hipStream_t stream = nullptr;
  hipEvent_t start = nullptr, stop = nullptr;
  int sms = 1;  // the GPU's multiprocessors (CUs on AMD)
};

// Checks f's result over its n devices (b's first n inputs and outputs) x s bytes, then times its launches
// both ways, printing each row once timed. Exits 1 on a wrong element or a failed call.
void run_fused(const Fused& f, Buffers& b, long long s, int reps) {
  const int n = f.n;
  const size_t elems = static_cast<size_t>(s) / 4;
  // 16-byte vectors only where every buffer is 16-byte aligned (hipMalloc's are); else floats only.
  bool aligned = true;
  for (int k = 0; k < n; ++k)
    aligned =
        aligned && reinterpret_cast<uintptr_t>(b.ins[k]) % 16 == 0 && reinterpret_cast<uintptr_t>(b.outs[k]) % 16 == 0;
  const auto n4 = static_cast<unsigned>(aligned ? elems / 4 : 0), count = static_cast<unsigned>(elems);
  const size_t items = std::max<size_t>(n4, elems - 4 * size_t{n4});  // threads with work in either loop
  const auto blocks = static_cast<unsigned>(
      std::clamp<size_t>((items + kBlockSize - 1) / kBlockSize, 1, static_cast<size_t>(b.sms) * kBlocksPerSm));
  const unsigned stride = blocks * kBlockSize;
  // the packed arguments at their natural alignment: 2n pointers, then n4, n, stride; size a multiple of 8
  std::vector<char> args(16 * static_cast<size_t>(n) + 16, 0);
  for (int k = 0; k < n; ++k) {
    std::memcpy(args.data() + 8 * k, &b.ins[k], sizeof(float*));
    std::memcpy(args.data() + 8 * (n + k), &b.outs[k], sizeof(float*));
  }
  size_t at = 16 * static_cast<size_t>(n);
  for (unsigned v : {n4, count, stride}) {
    std::memcpy(args.data() + at, &v, sizeof v);
    at += sizeof v;
  }
  size_t size = args.size();
  void* config[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, args.data(), HIP_LAUNCH_PARAM_BUFFER_SIZE, &size,
                    HIP_LAUNCH_PARAM_END};
  auto launch = [&] {
    FLOOR_CHECK_MODULE(hipModuleLaunchKernel(f.fn, blocks, 1, 1, kBlockSize, 1, 1, 0, b.stream, nullptr, config));
  };

  // the check: outputs and their guards poisoned, one launch, every float read back
  std::fill(b.host.begin(), b.host.begin() + static_cast<std::ptrdiff_t>(elems + kGuardFloats), kPoison);
  for (int k = 0; k < n; ++k)
    FLOOR_CHECK(hipMemcpy(b.outs[k], b.host.data(), (elems + kGuardFloats) * 4, hipMemcpyHostToDevice));
  launch();
  FLOOR_CHECK(hipStreamSynchronize(b.stream));
  for (int k = 0; k < n; ++k) {
    FLOOR_CHECK(hipMemcpy(b.host.data(), b.outs[k], (elems + kGuardFloats) * 4, hipMemcpyDeviceToHost));
    for (size_t i = 0; i < elems + kGuardFloats; ++i) {
      float want = i < elems ? sum_value(i, n) : kPoison;
      if (b.host[i] != want) {
        std::fprintf(stderr,
                     "ringrt_gpu_floor: the fused kernel of %d devices x %lld bytes is wrong: output %d float %zu "
                     "is %g, expected %g%s\n",
                     n, s, k, i, static_cast<double>(b.host[i]), static_cast<double>(want),
                     i < elems ? "" : " (past the output: left unwritten)");
        std::exit(1);
      }
    }
  }

  // K launches per timed batch: about 256 MiB moved, at least 8 (large sizes), at most 200 (small)
  const int k_launches = static_cast<int>(std::clamp<long long>((1LL << 28) / (2LL * n * s), 8, 200));
  auto time_batches = [&](auto&& one) {  // seconds per launch: best of reps batches
    one();                               // warm-up (a graph's first launch uploads it)
    double best = 0;
    for (int r = 0; r < reps; ++r) {
      FLOOR_CHECK(hipEventRecord(b.start, b.stream));
      for (int i = 0; i < k_launches; ++i) one();
      FLOOR_CHECK(hipEventRecord(b.stop, b.stream));
      FLOOR_CHECK(hipEventSynchronize(b.stop));
      float ms = 0;
      FLOOR_CHECK(hipEventElapsedTime(&ms, b.start, b.stop));
      double t = static_cast<double>(ms) / 1e3 / k_launches;
      if (r == 0 || t < best) best = t;
    }
    return best;
  };
  print_row("fused", n, s, time_batches(launch));
  // printed before the graph is built: some ROCm releases refuse a module's function in a kernel node
  // (hipErrorInvalidDeviceFunction, ROCm/hip#2450), and that exit 1 still leaves this row
  std::fflush(stdout);

  hipGraph_t graph = nullptr;
  hipGraphExec_t exec = nullptr;
  hipGraphNode_t node = nullptr;
  FLOOR_CHECK(hipGraphCreate(&graph, 0));
  hipKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(f.fn);
  p.gridDim = dim3(blocks, 1, 1);
  p.blockDim = dim3(kBlockSize, 1, 1);
  p.sharedMemBytes = 0;
  p.kernelParams = nullptr;
  p.extra = config;
  FLOOR_CHECK(hipGraphAddKernelNode(&node, graph, nullptr, 0, &p));
  FLOOR_CHECK(hipGraphInstantiateWithFlags(&exec, graph, 0));
  double graph_launch = time_batches([&] { FLOOR_CHECK(hipGraphLaunch(exec, b.stream)); });
  FLOOR_CHECK(hipGraphExecDestroy(exec));
  FLOOR_CHECK(hipGraphDestroy(graph));

  print_row("fused_graph", n, s, graph_launch);
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
    (after_dashes ? sizes : ndevs).push_back(parse_size(argv[i], after_dashes ? kMaxFusedBytes : kMaxDevices));
  }
  if (ndevs.empty() || sizes.empty()) {
    std::fprintf(stderr, "ringrt_gpu_floor: give at least one NDEV and, after --, one SIZE\n");
    return 2;
  }
  for (long long s : sizes) {
    if (s % 4 != 0) {
      std::fprintf(stderr, "ringrt_gpu_floor: size %lld is not a whole number of float32 (a multiple of 4)\n", s);
      return 2;
    }
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
  std::fflush(stdout);
  try {
    hipDeviceProp_t props{};
    FLOOR_CHECK(hipGetDeviceProperties(&props, 0));
    ringrt::codegen::HiprtcCompiler compiler(ringrt::hip_detail::gpu_arch_name(props));
    const int max_n = static_cast<int>(*std::max_element(ndevs.begin(), ndevs.end()));
    const size_t max_elems = static_cast<size_t>(*std::max_element(sizes.begin(), sizes.end())) / 4;
    Buffers b;
    b.sms = std::max(1, props.multiProcessorCount);
    b.host.resize(max_elems + kGuardFloats);
    for (int k = 0; k < max_n; ++k) {
      void *in = nullptr, *out = nullptr;
      FLOOR_CHECK(hipMalloc(&in, max_elems * 4));
      FLOOR_CHECK(hipMalloc(&out, (max_elems + kGuardFloats) * 4));
      for (size_t i = 0; i < max_elems; ++i) b.host[i] = input_value(i, k);
      FLOOR_CHECK(hipMemcpy(in, b.host.data(), max_elems * 4, hipMemcpyHostToDevice));
      b.ins.push_back(static_cast<float*>(in));
      b.outs.push_back(static_cast<float*>(out));
    }
    FLOOR_CHECK(hipStreamCreateWithFlags(&b.stream, hipStreamNonBlocking));
    FLOOR_CHECK(hipEventCreateWithFlags(&b.start, 0));  // 0: hipEventDefault, with timing (not mapped on NVIDIA)
    FLOOR_CHECK(hipEventCreateWithFlags(&b.stop, 0));
    std::map<long long, Fused> kernels;  // by n: one compile each
    for (long long n : ndevs) {
      if (!kernels.count(n)) kernels.emplace(n, load_fused(compiler, static_cast<int>(n)));
      for (long long s : sizes) {
        double t = 2.0 * static_cast<double>(n) * static_cast<double>(s) / (peak * 1e9);
        print_row("bound", n, s, t);
        run_fused(kernels.at(n), b, s, reps);
        std::fflush(stdout);
      }
    }
    for (auto& [n, f] : kernels) FLOOR_CHECK_MODULE(hipModuleUnload(f.module));
    FLOOR_CHECK(hipEventDestroy(b.start));
    FLOOR_CHECK(hipEventDestroy(b.stop));
    FLOOR_CHECK(hipStreamDestroy(b.stream));
    for (int k = 0; k < max_n; ++k) {
      FLOOR_CHECK(hipFree(b.ins[k]));
      FLOOR_CHECK(hipFree(b.outs[k]));
    }
  } catch (const std::exception& e) {  // the compiler's errors (CompileError, ConfigError, IOError)
    std::fprintf(stderr, "ringrt_gpu_floor: %s\n", e.what());
    return 1;
  }
  return 0;
}
