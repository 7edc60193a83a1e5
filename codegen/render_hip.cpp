// The HIP renderer: grid-stride loops over the output's elements, for hipRTC on AMD and NVRTC on NVIDIA,
// one source for both (see render.hpp; reference: tinygrad renderer/cstyle.py HIPRenderer, CUDARenderer).
// Device math comes from the headers each compiler includes implicitly. Contraction into FMA is off so
// that every op rounds as the interpreter's does: hipRTC (clang) by the pragma below, NVRTC (which
// ignores the pragma) by the --fmad=false option the compiler passes (codegen/hiprtc_compiler.cpp).
//
// Streaming (docs/gpu-path.md "Kernels that stream"): a launch has a grid sized to the GPU, not to n
// (hip_launch::launch_blocks), so each thread loops; indices are 32-bit where Kernel::fits_int32 (64-bit
// division and multiplication take several instructions on GPUs); a kernel that reads its inputs only at
// the output's element (Kernel::reads_at_gid) moves 16 bytes per load and store where every pointer is
// aligned, the lanes computed by the scalar body's statements, so both paths compute the same bits.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "codegen/render.hpp"
#include "codegen/render_common.hpp"
#include "core/errors.hpp"
#include "rewrite/collective.hpp"

namespace ringrt::codegen {

namespace {

const cstyle::Dialect kHip{"static __device__ inline", "exp2",     "log2", "sin", "sqrtf", "sqrt", "__float_as_uint(f)",
                           "__uint_as_float(x)",       "isfinite", "fabs"};

// rt_vec<T, W>: W elements of T aligned to their size (16 bytes at most), which a copy loads or stores
// with one instruction (global_load_dwordx4, ld.global.v4.u32). RT_UNROLL unrolls the lanes' loop fully,
// so the lanes stay in registers (a lane indexed at run time would put the vector in scratch memory).
// NVRTC defines __CUDACC__; the simulated GPU's host compiler may be g++ (runtime/hip/sim/sim_rtc.cpp).
constexpr const char* kVectorPrelude = R"(
template <class T, int W> struct alignas(sizeof(T) * W) rt_vec { T v[W]; };
#if defined(__clang__) || defined(__CUDACC__)
#define RT_UNROLL _Pragma("unroll")
#else
#define RT_UNROLL _Pragma("GCC unroll 16")
#endif
)";

// How one kernel name is rendered: the same for every kernel of that name in one source.
struct Form {
  bool int32 = true;  // 32-bit indices (Kernel::fits_int32 of every kernel of the name)
  int lanes = 1;      // elements per vector of the vector path; 1: none
};

// Elements per 16-byte vector of the widest of the output's and the inputs' dtypes.
int vector_lanes(const Kernel& k) {
  int widest = itemsize(k.dtype);
  for (const KernelInput& in : k.inputs) widest = std::max(widest, itemsize(in.dtype));
  return widest > 0 ? 16 / widest : 1;
}

Form form_of(const Kernel& k) { return {k.fits_int32(), k.reads_at_gid() ? vector_lanes(k) : 1}; }

// The inputs the body loads (the vector path loads each once per vector).
std::vector<size_t> read_inputs(const Kernel& k) {
  std::vector<size_t> out;
  for (size_t i = 0; i < k.inputs.size(); ++i)
    if (k.read_bounds(static_cast<int>(i))) out.push_back(i);
  return out;
}

// The vector loop: every whole vector of W elements at and after `start`, by `stride`, when every
// pointer it touches is aligned to its vector; `first` then skips them for the scalar loop.
std::string vector_loop(const Kernel& k, const Form& f, const char* index, const char* loop) {
  const int w = f.lanes;
  const std::string t = cstyle::c_type(k.dtype);
  auto vec = [&](DType d) { return fmt::format("rt_vec<{}, {}>", cstyle::c_type(d), w); };
  std::vector<std::string> aligned{fmt::format("(unsigned long long)out % {} == 0", w * itemsize(k.dtype))};
  std::vector<size_t> reads = read_inputs(k);
  for (size_t i : reads)
    aligned.push_back(fmt::format("(unsigned long long)in{} % {} == 0", i, w * itemsize(k.inputs[i].dtype)));
  for (int j = 0; j < k.peer_outputs; ++j)
    aligned.push_back(fmt::format("(unsigned long long)peer{} % {} == 0", j, w * itemsize(k.dtype)));
  std::string src = fmt::format("  if ({}) {{\n", fmt::join(aligned, " && "));
  src += fmt::format("    const {0} vectors = ({0})n / {1};\n", loop, w);
  src += fmt::format("    for ({} at = start; at < vectors; at += stride) {{\n", loop);
  src += fmt::format("      const {} base = ({})(at * {});\n", index, index, w);
  // every input's vector first: the loads are independent and in flight together
  for (size_t i : reads)
    src += fmt::format("      const {0} ld{1} = *(const {0}*)(in{1} + base);\n", vec(k.inputs[i].dtype), i);
  src +=
      fmt::format("      {} st;\n      RT_UNROLL\n      for (int lane = 0; lane < {}; ++lane) {{\n", vec(k.dtype), w);
  src += fmt::format("        const {} gid = base + lane;\n        (void)gid;\n", index);
  src += cstyle::render_values(k, kHip, 4, nullptr, {.counter = index, .lanes = true});
  src += fmt::format("        st.v[lane] = v{};\n      }}\n", k.result);
  src += fmt::format("      *({}*)(out + base) = st;\n", vec(k.dtype));
  for (int j = 0; j < k.peer_outputs; ++j) src += fmt::format("      *({}*)(peer{} + base) = st;\n", vec(k.dtype), j);
  src += fmt::format("    }}\n    first = vectors * {};\n  }}\n", w);
  return src;
}

// qualifier: "extern \"C\" __global__" (a kernel), or "static __device__" (a function a fused
// collective's kernel calls over each combine step's range, render_hip_collective).
std::string render_kernel(const Kernel& k, const Form& f, const char* qualifier = "extern \"C\" __global__") {
  const char* index = f.int32 ? "int" : "long long";
  const char* loop = f.int32 ? "unsigned" : "unsigned long long";  // i + stride never wraps: i < n < 2^31
  std::vector<std::string> params{fmt::format("{}* out", cstyle::c_type(k.dtype))};
  for (auto& p : cstyle::input_params(k)) params.push_back(p);
  for (int j = 0; j < k.peer_outputs; ++j) params.push_back(fmt::format("{}* peer{}", cstyle::c_type(k.dtype), j));
  for (auto& p : cstyle::scalar_params(k)) params.push_back(p);  // 8-byte words, as the pointers before them
  params.push_back("int dnum_arg");
  params.push_back("long long n");
  std::string src = fmt::format("\n{} void {}({}) {{\n", qualifier, k.name, fmt::join(params, ", "));
  src += fmt::format("  const {} dnum = dnum_arg;\n  (void)dnum;\n", index);
  src += fmt::format(
      "  const {0} start = ({0})blockIdx.x * blockDim.x + threadIdx.x, stride = ({0})gridDim.x * blockDim.x;\n", loop);
  if (f.lanes > 1) src += fmt::format("  {} first = 0;\n", loop) + vector_loop(k, f, index, loop);
  src += fmt::format("  for ({} i = {}start; i < ({})n; i += stride) {{\n", loop, f.lanes > 1 ? "first + " : "", loop);
  src += fmt::format("    const {0} gid = ({0})i;\n", index);
  src += cstyle::render_body(k, kHip, 2, nullptr, {.counter = index});
  src += "  }\n}\n";
  return src;
}

}  // namespace

int hip_vector_lanes(const Kernel& k) { return form_of(k).lanes; }

namespace {

// render_hip with each kernel's qualifier.
std::string render_hip_as(std::span<const Kernel> kernels, const char* qualifier) {
  std::map<std::string, Form> forms;  // one per name: 64-bit or scalar if any kernel of the name needs it
  for (const Kernel& k : kernels) {
    Form f = form_of(k);
    auto [it, fresh] = forms.emplace(k.name, f);
    if (!fresh) it->second = {it->second.int32 && f.int32, it->second.lanes == f.lanes ? f.lanes : 1};
  }
  std::string src =
      "// generated by ringrt codegen/render_hip.cpp\n#if defined(__clang__)\n#pragma clang fp contract(off)\n#endif\n";
  src += cstyle::prelude(kHip);
  src += kVectorPrelude;
  for (const Kernel* k : cstyle::unique_kernels(kernels)) src += render_kernel(*k, forms.at(k->name), qualifier);
  return src;
}

// A fused collective's kernel (render.hpp render_hip_collective): the step list of rewrite/collective.hpp
// run by every thread, combine steps by the combine kernels rendered as device functions over their
// range, gathers and publishes as grid-stride copies, barriers as rt_coll_barrier: the block's threads
// meet (__syncthreads), then its thread 0 adds one arrival to the word every block of every device
// counts into (system scope: the devices may be other GPUs) and spins until all arrived. The ring's
// waits and signals are the same on a flag per device: a block signals once its threads are done with
// the step (rt_coll_signal), and a wait spins until every block of the peer's launch signalled
// (rt_coll_wait). words: [0] the barrier's arrivals, [1] the give-up mark, [2 + d] device d's flag.
constexpr const char* kCollectivePrelude = R"(
#ifndef RT_COLL_DEFINED
#define RT_COLL_DEFINED
// rewrite/collective.hpp FusedStep; flags: 1 to_scratch, 2 all_outputs, 4 from_input, 8 from_scratch,
// 16 signal, 32 a ring combine; wait0/1: (device + 1) << 40 | count, 0 for none
struct rt_coll_step { long long kind, begin, end, peer, flags, shift, wait0, wait1; };
static __device__ inline unsigned rt_coll_load(unsigned* p) {
#if defined(RT_SIM_GPU)
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#else
  return *(volatile unsigned*)p;
#endif
}
// A clock that runs at a constant rate: nanoseconds on NVIDIA (globaltimer) and on the simulated GPU, the
// wall clock on AMD (s_memrealtime: hipDeviceAttributeWallClockRate kHz). The host gives a wait's limit in
// its ticks (NAME_args::timeout).
static __device__ inline unsigned long long rt_coll_clock() {
#if defined(RT_SIM_GPU)
  return rt_sim_clock_ns();
#elif defined(__CUDA_ARCH__)
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return __builtin_amdgcn_s_memrealtime();
#endif
}
// Ends the kernel with an error the host sees (the launch fails: a DeviceError; on NVIDIA the context is
// lost, as after any trap).
static __device__ inline void rt_coll_trap() {
#if defined(RT_SIM_GPU)
  rt_sim_trap();
#elif defined(__CUDA_ARCH__)
  __trap();
#else
  __builtin_trap();
#endif
}
// Thread 0 spins until *p reaches target (wrapping), then the block goes on. A device that never arrives
// (its launch refused, its queue poisoned, a peer stuck) must neither hang this one nor let it go on with
// what is not there: past `timeout` ticks (runtime.watchdog_s) it marks words[1] and traps.
static __device__ inline void rt_coll_spin(unsigned* words, unsigned* p, unsigned target, unsigned long long timeout) {
  if (threadIdx.x == 0) {
    const unsigned long long start = rt_coll_clock();
    for (unsigned polls = 1; (int)(rt_coll_load(p) - target) < 0; ++polls)
      if (polls % 1024 == 0 && rt_coll_clock() - start > timeout) {
        atomicAdd_system(words + 1, 1u);
        rt_coll_trap();
      }
    __threadfence_system();
  }
  __syncthreads();
}
// Barrier `index` of the collective: every block of the n devices' kernels (grid blocks each) arrives.
static __device__ inline void rt_coll_barrier(unsigned* words, unsigned long long index, unsigned n,
                                              unsigned long long timeout) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    atomicAdd_system(words, 1u);
  }
  rt_coll_spin(words, words, (unsigned)((unsigned long long)n * gridDim.x * (index + 1)), timeout);
}
// This block is done with the step: its device's flag counts it.
static __device__ inline void rt_coll_signal(unsigned* words, long long rank) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    atomicAdd_system(words + 2 + rank, 1u);
  }
}
// Until every block of device (w >> 40) - 1 signalled (w & 2^40-1) times in this call (after signal_base each).
static __device__ inline void rt_coll_wait(unsigned* words, long long w, unsigned long long signal_base,
                                           unsigned long long timeout) {
  if (w == 0) return;
  const long long peer = (w >> 40) - 1;
  const unsigned long long count = (unsigned long long)w & ((1ull << 40) - 1);
  rt_coll_spin(words, words + 2 + peer, (unsigned)(gridDim.x * (signal_base + count)), timeout);
}
#endif
)";

}  // namespace

std::string render_hip(std::span<const Kernel> kernels) { return render_hip_as(kernels, "extern \"C\" __global__"); }

std::string render_hip_collective(const std::string& name, int ndev, DType dtype, std::span<const Kernel> combines) {
  if (ndev < 1) throw InternalError("render_hip_collective: no device");
  const Kernel* plain = nullptr;  // the fold of the n inputs
  const Kernel* peer = nullptr;   // it, storing into every device's output
  const Kernel* ring = nullptr;   // the ring's two operands (the plain one too for two devices)
  // per role the combine of the most elements: the kernel of one element reads element 0 only, and its
  // index form (32 or 64 bits) fits the longest step (the others call it with their own length)
  auto longest = [](const Kernel*& at, const Kernel& k) {
    if (!at || k.numel > at->numel) at = &k;
  };
  for (const Kernel& k : combines) {
    if (k.peer_outputs) longest(peer, k);
    if (!k.peer_outputs && k.inputs.size() == static_cast<size_t>(ndev)) longest(plain, k);
    if (!k.peer_outputs && k.inputs.size() == 2) longest(ring, k);
  }
  const std::string t = cstyle::c_type(dtype);
  std::string src = render_hip_as(combines, "static __device__");
  src += kCollectivePrelude;
  src += fmt::format(
      "\nstruct {0}_args {{ {1}* out[{2}]; {1}* in[{2}]; {1}* scratch[{2}]; unsigned* words; long long base, "
      "signal_base, rank, nsteps, timeout; rt_coll_step steps[{3}]; }};\n",
      name, t, ndev, kFusedMaxSteps);
  src += fmt::format("extern \"C\" __global__ void {0}({0}_args a) {{\n", name);
  src += "  const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n";
  src += "  const long long stride = (long long)gridDim.x * blockDim.x;\n";
  src += "  unsigned long long barrier = a.base;\n";
  src += "  for (long long s = 0; s < a.nsteps; ++s) {\n";
  src += "    const rt_coll_step st = a.steps[s];\n";
  src += fmt::format("    {}* out = a.out[a.rank] + st.begin;\n", t);
  src += "    const long long len = st.end - st.begin;\n";
  src += "    rt_coll_wait(a.words, st.wait0, a.signal_base, a.timeout);\n";
  src += "    rt_coll_wait(a.words, st.wait1, a.signal_base, a.timeout);\n";
  src += "    if (st.kind == 0) {  // combine\n";
  auto call = [&](const Kernel& k, const std::string& dest) {
    std::vector<std::string> args{dest};
    for (int j = 0; j < ndev; ++j) args.push_back(fmt::format("a.in[{}] + st.begin", j));
    for (int j = 1; j <= k.peer_outputs; ++j)
      args.push_back(fmt::format("a.out[(a.rank + {}) % {}] + st.begin", j, ndev));
    args.push_back("(int)a.rank");
    args.push_back("len");
    return fmt::format("{}({});\n", k.name, fmt::join(args, ", "));
  };
  const std::string dest = "(st.flags & 1) ? a.scratch[a.rank] + st.begin : a.out[a.rank] + (st.begin - st.shift)";
  std::string chain = "      ";
  if (peer) src += chain + "if (st.flags & 2) " + call(*peer, "out"), chain = "      else ";
  if (ring)
    src += chain + fmt::format(
                       "if (st.flags & 32) {}(({}), ((st.flags & 4) ? a.in[st.peer] : (st.flags & 8) ? "
                       "a.scratch[st.peer] : a.out[st.peer]) + st.begin, a.in[a.rank] + st.begin, (int)a.rank, len);\n",
                       ring->name, dest),
        chain = "      else ";
  if (plain) src += chain + call(*plain, dest);
  src += "    } else if (st.kind == 1) {  // barrier\n";
  src += fmt::format("      rt_coll_barrier(a.words, barrier++, {}u, a.timeout);\n", ndev);
  src += "    } else {  // gather (from a peer's output), publish (from the scratch)\n";
  src += fmt::format(
      "      const {}* from = (st.kind == 2 ? ((st.flags & 4) ? a.in[st.peer] : a.out[st.peer]) : a.scratch[a.rank]) + "
      "st.begin;\n",
      t);
  src += "      out -= st.shift;\n";
  src += "      for (long long i = start; i < len; i += stride) out[i] = from[i];\n";
  src += "    }\n";
  src += "    if (st.flags & 16) rt_coll_signal(a.words, a.rank);\n";
  src += "  }\n}\n";
  return src;
}

}  // namespace ringrt::codegen
