// Internal to codegen/: the C statement renderer both target renderers share (render.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codegen/kernel.hpp"

namespace ringrt::codegen::cstyle {

// What differs between the C++ and the HIP dialects inside a kernel body.
struct Dialect {
  const char* fn;    // qualifiers of the prelude's helpers: "static inline", "static __device__ inline"
  const char* exp2;  // double -> double math functions
  const char* log2;
  const char* sin;
  const char* sqrtf;  // float -> float, correctly rounded
  const char* sqrt;   // double -> double
  // The prelude's primitives: a float's bits and back (float f / unsigned x), double isfinite and fabs.
  // g++ has builtins for all four; NVRTC lacks __builtin_fabs, so the GPU dialect uses the device
  // functions HIP and CUDA both define (__float_as_uint, __uint_as_float, isfinite, fabs).
  const char* float_bits;  // an expression of `f`
  const char* bits_float;  // an expression of `x`
  const char* isfinite;
  const char* fabs;
};

// The storage type of a dtype: float, double, unsigned short (float16, bfloat16), int, long long,
// short, signed char, unsigned int (uint32), unsigned char (uint8, bool).
std::string c_type(DType dtype);
// Helper functions the bodies call (16-bit float conversions, integer division, NaN-aware max, ...),
// each `d.fn`-qualified.
std::string prelude(const Dialect& d);
// A range of global ids, inclusive: [first, last]; last == kLastGid: up to the launch's end.
struct GidRange {
  int64_t first;
  int64_t last;
};
inline constexpr int64_t kLastGid = INT64_MAX;
// How a body reads its indices: the type of its reduce counters (the HIP renderer's 32-bit indices:
// "int", Kernel::fits_int32), and lanes: every load of input i reads `ld<i>.v[lane]`, the element
// gid of a vector the caller loaded (the HIP vector path; Kernel::reads_at_gid).
struct IndexForm {
  const char* counter = "long long";
  bool lanes = false;
};
// The statements of k's body at indentation `depth`, reading inputs in0.., the variables gid and
// dnum (integers), and ending with `out[gid] = v<result>;` (and `peer<j>[gid] = v<result>;` for each
// peer output). With a range, the body is the one for gid in that range only: masks on gid alone are
// resolved (Mask::on_range), so a padded read that is off over the range is not emitted and one that
// is on over it reads unconditionally.
std::string render_body(const Kernel& k, const Dialect& d, int depth, const GidRange* range = nullptr,
                        const IndexForm& form = {});
// render_body without the stores: the statements that leave the element's value in v<k.result>.
std::string render_values(const Kernel& k, const Dialect& d, int depth, const GidRange* range = nullptr,
                          const IndexForm& form = {});
// Loop splitting: the ranges of [0, k.numel) between the points where some mask on gid alone
// changes (the chunks an allreduce reassembles with PAD + ADD: one range per chunk), so each range's
// loop reads its inputs unmasked and contiguous. From 0; the last range ends at kLastGid. Empty when
// there are no such points or more than max_ranges ranges (one loop then, masks as they are).
std::vector<GidRange> gid_ranges(const Kernel& k, size_t max_ranges);
// The kernels to emit, each name once (equal names from lower_kernel mean equal Kernel::code(); the
// sizes may differ). Throws ConfigError when two kernels share a name but not their code.
std::vector<const Kernel*> unique_kernels(std::span<const Kernel> kernels);
// "const T* in0" ... parameter list fragments for the inputs: one entry per input.
std::vector<std::string> input_params(const Kernel& k);
// "unsigned long long sc0" ...: one entry per run-time scalar (Kernel::scalars), its argument word.
std::vector<std::string> scalar_params(const Kernel& k);

}  // namespace ringrt::codegen::cstyle
