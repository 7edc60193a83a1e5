// Renderers: kernel IR -> source text (reference: tinygrad renderer/cstyle.py, ClangRenderer and
// HIPRenderer from one CStyleLanguage). Both renderers share codegen/render_common.cpp, which turns
// every statement into C; they differ only in the function signature, the index source and a few
// function names, so the CPU and HIP kernels compute the same bits by construction.
#pragma once

#include <span>
#include <string>

#include "codegen/kernel.hpp"

namespace ringrt::codegen {

// One C++17 translation unit holding every kernel (a name that repeats is emitted once: equal names
// mean equal structure). Each kernel is
//   extern "C" void NAME(void** bufs, int32_t dnum, int64_t begin, int64_t end)
// bufs[0] is the output (Kernel::dtype, numel elements), bufs[1 + i] is Kernel::inputs[i]; the call
// computes elements gid in [begin, end) (so a runtime may split [0, numel) across tasks). Plain C++
// with no includes beyond <cstdint>; compile with -O3 -ffp-contract=off (HostCompiler's flags).
// Where the compiler has streaming (non-temporal) stores (clang; g++ on x86), each kernel also has
//   extern "C" void NAME_stream(void** bufs, int32_t dnum, int64_t begin, int64_t end)
// computing the same elements with the same bits, every whole 64-byte line of the output and of the
// peer outputs stored past the cache: for an output too large to be read again from cache, it saves
// the read of each line a store would first make (read-for-ownership). It returns after an sfence.
std::string render_cpp(std::span<const Kernel> kernels);
inline std::string render_cpp(const Kernel& k) { return render_cpp(std::span<const Kernel>(&k, 1)); }

// One HIP translation unit for hipRTC and NVRTC holding every kernel, each
//   extern "C" __global__ void NAME(T* out, const U0* in0, ..., int dnum, long long n)
// computing elements [0, n) for any grid: thread t of the grid's s computes gid = t, t + s, t + 2s, ...
// (a grid-stride loop; hip_launch::launch_blocks sizes the grid to the GPU). Indices are 32-bit when
// Kernel::fits_int32, else 64-bit (one form per name: 64-bit if any kernel of the name needs it). A
// kernel that reads its inputs only at gid (Kernel::reads_at_gid) first computes whole vectors of
// hip_vector_lanes(k) elements, 16 bytes of its widest dtype, with one load per input and one store
// per output, when every pointer is aligned to its vector; the scalar loop takes the rest (all of it
// when a pointer is not aligned). Types are plain C types (float, double, unsigned short for
// float16/bfloat16, int, long long, short, signed char, unsigned int for uint32, unsigned char for
// uint8/bool); no headers are included (hipRTC and NVRTC provide the device math functions).
std::string render_hip(std::span<const Kernel> kernels);
inline std::string render_hip(const Kernel& k) { return render_hip(std::span<const Kernel>(&k, 1)); }
// A fused collective's kernel on ndev devices (rewrite/collective.hpp; docs/fused-collectives.md), for
// hipRTC and NVRTC:
//   extern "C" __global__ void NAME(NAME_args a)
//   struct NAME_args { T* out[ndev]; T* in[ndev]; T* scratch[ndev]; unsigned* words;
//                      long long base, signal_base, rank, nsteps, timeout; rt_coll_step steps[kFusedMaxSteps]; };
//   rt_coll_step { long long kind, begin, end, peer, flags, shift, wait0, wait1; }
// every field 8 bytes (the host packs them in this order). It runs device `rank`'s step list: kind 0
// combine (flags 1: into the scratch; 2: into every output, the combine with n-1 peer outputs; 32: the
// ring's, peer's op own, peer's from its input (4), scratch (8) or output), 1 barrier, 2 gather from
// device `peer`'s output (flags 4: its input), 3 publish from the scratch; shift: a combine's or gather's
// output element of element i is i - shift (a reduce_scatter's chunk, an allgather's place); wait0/1:
// before the step, until device (w >> 40) - 1 signalled (w & (2^40 - 1)) times in this call; flags 16:
// after it, signal. `combines` are the collective_combine_kernel IRs (codegen/item_kernel.hpp) its
// combine steps call: the plain one, the one with peer outputs and/or the ring's two-operand one,
// rendered as device functions over each step's range (none for an allgather; of several kernels of one
// role, different lengths, the longest, called with each step's length); T is dtype's C type. A wait or
// barrier that does not pass within `timeout` ticks of the device's constant clock (ns on NVIDIA; the
// wall clock on AMD) marks words[1] and traps: the launch fails.
// words (device memory): [0] the barrier's arrivals, [1] the give-up mark, [2 + d] device d's flag.
// Barrier k waits for ndev * gridDim.x * (base + k + 1) arrivals and a wait for k signals for
// gridDim.x * (signal_base + k) (wrapping): every launch of one call needs the same grid, and all of them
// at once on the GPUs.
std::string render_hip_collective(const std::string& name, int ndev, DType dtype, std::span<const Kernel> combines);

// Elements each iteration of render_hip(k)'s loop covers where its pointers are aligned: the vector
// path's lanes, or 1 without it (a launch needs ceil(n / lanes) threads to give each one iteration).
int hip_vector_lanes(const Kernel& k);

}  // namespace ringrt::codegen
