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

#include "rewrite/uop.hpp"

namespace ringrt {

// A dense row-major array of one dtype on the host.
struct HostBuffer {
  DType dtype = DType::float32;
  Shape shape;
  std::vector<std::byte> bytes;

  HostBuffer() = default;
  HostBuffer(DType dtype, Shape shape);  // zero-filled
  int64_t numel() const { return prod(shape); }
  double get(int64_t i) const;       // any dtype, as double
  int64_t get_int(int64_t i) const;  // integer and bool dtypes, exactly
  void set(int64_t i, double v);     // rounds (floats) or truncates and wraps (integers)
  void set_int(int64_t i, int64_t v);
  template <class T>
  static HostBuffer from_vector(const std::vector<T>& data, DType dtype, Shape shape);
  template <class T>
  std::vector<T> to_vector() const;
  bool operator==(const HostBuffer& o) const { return dtype == o.dtype && shape == o.shape && bytes == o.bytes; }
};

template <class T>
HostBuffer HostBuffer::from_vector(const std::vector<T>& data, DType dtype, Shape shape) {
  HostBuffer b(dtype, std::move(shape));
  for (int64_t i = 0; i < b.numel() && i < static_cast<int64_t>(data.size()); ++i) {
    if constexpr (std::is_integral_v<T>) {
      is_float(dtype) ? b.set(i, static_cast<double>(data[static_cast<size_t>(i)]))
                      : b.set_int(i, static_cast<int64_t>(data[static_cast<size_t>(i)]));
    } else {
      b.set(i, static_cast<double>(data[static_cast<size_t>(i)]));
    }
  }
  return b;
}

template <class T>
std::vector<T> HostBuffer::to_vector() const {
  std::vector<T> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) {
    if constexpr (std::is_integral_v<T>) {
      out[static_cast<size_t>(i)] = is_float(dtype) ? static_cast<T>(to_int64(get(i))) : static_cast<T>(get_int(i));
    } else {
      out[static_cast<size_t>(i)] = static_cast<T>(get(i));
    }
  }
  return out;
}

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

// Element-wise helpers shared with code generation tests: apply one ALU op to scalars of dtype.
double alu_float(Ops op, DType dtype, const std::vector<double>& args);
int64_t alu_int(Ops op, DType dtype, const std::vector<int64_t>& args);

}  // namespace ringrt
