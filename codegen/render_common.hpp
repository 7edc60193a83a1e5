// Internal to codegen/: the C statement renderer both target renderers share (render.hpp).
#pragma once

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
};

// The storage type of a dtype: float, double, unsigned short (float16, bfloat16), int, long long,
// signed char, unsigned char (uint8, bool).
std::string c_type(DType dtype);
// Helper functions the bodies call (16-bit float conversions, integer division, NaN-aware max, ...),
// each `d.fn`-qualified.
std::string prelude(const Dialect& d);
// The statements of k's body at indentation `depth`, reading inputs in0.., the variables gid and
// dnum (long long), and ending with `out[gid] = v<result>;`.
std::string render_body(const Kernel& k, const Dialect& d, int depth);
// The kernels to emit, each name once (equal names from lower_kernel mean equal structure). Throws
// ConfigError when two kernels share a name but differ.
std::vector<const Kernel*> unique_kernels(std::span<const Kernel> kernels);
// "const T* in0" ... parameter list fragments for the inputs: one entry per input.
std::vector<std::string> input_params(const Kernel& k);

}  // namespace ringrt::codegen::cstyle
