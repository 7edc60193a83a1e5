// The reference interpreter: evaluates any UOp graph on host memory. It is the oracle of ringrt:
// every rewrite must leave its answer unchanged and every compiled kernel must match it.
//
// Semantics. Values are stored in their dtype, so float16/bfloat16 results round to nearest even at
// every op, as a GPU stores them; float32 math is computed in double and rounded once (exact for
// + - * / sqrt). Integers wrap to their width; IDIV truncates toward zero and x/0, x%0 give 0.
// Reductions run over the reduced elements in row-major order, rounding after every step.
// A node on a device tuple holds one value per device; a DEFINE_VAR _device_num takes the index of
// the device being evaluated; MULTI and every node computed from it are logical (one whole value).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "core/host_buffer.hpp"
#include "rewrite/uop.hpp"

namespace ringrt {

// The data of input BUFFERs, by buffer id: one HostBuffer per device of the buffer (flat, numel
// elements). A buffer it does not know starts zero-filled (scratch buffers).
using BufferLookup = std::function<const std::vector<HostBuffer>*(int64_t buffer_id)>;

class Interpreter {
 public:
  explicit Interpreter(BufferLookup lookup = {});
  // The value of root: one HostBuffer per device for a node on a device tuple (per _device_num for a
  // device-less node that depends on it), else one. Throws ShapeError/InternalError for graphs it
  // cannot evaluate (an op without semantics, a store into a foreign buffer).
  std::vector<HostBuffer> evaluate(const UOp& root);

 private:
  BufferLookup lookup_;
};

// A CONST's value as stored in its dtype (a 0-d HostBuffer): its number, or a named variable's value
// (ScalarArg, converted as a number of that dtype is). Throws InternalError for a program's parameter
// (ScalarArg slot >= 0), whose value only a run supplies (runtime/engine/program_cache.hpp).
HostBuffer const_value(const UOp& c);

// Element-wise helpers shared with code generation tests: apply one ALU op to scalars of dtype.
double alu_float(Ops op, DType dtype, const std::vector<double>& args);
int64_t alu_int(Ops op, DType dtype, const std::vector<int64_t>& args);

}  // namespace ringrt
