// HostBuffer (public): a dense row-major array of one dtype in host memory, the currency of the
// Tensor API's host transfers and of the reference interpreter. Defined in rewrite/interpreter.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ringrt/core/dtype.hpp>
#include <ringrt/core/shape.hpp>
#include <type_traits>
#include <utility>
#include <vector>

namespace ringrt {

// The dtype whose elements are stored exactly as T's (float: float32, int16_t: int16, ...), so that a
// vector of T and a buffer of that dtype copy byte for byte; DType::void_ for any other T (bool: a
// std::vector<bool> packs bits).
template <class T>
constexpr DType native_dtype() {
  return std::is_same_v<T, float>      ? DType::float32
         : std::is_same_v<T, double>   ? DType::float64
         : std::is_same_v<T, int64_t>  ? DType::int64
         : std::is_same_v<T, int32_t>  ? DType::int32
         : std::is_same_v<T, int16_t>  ? DType::int16
         : std::is_same_v<T, int8_t>   ? DType::int8
         : std::is_same_v<T, uint32_t> ? DType::uint32
         : std::is_same_v<T, uint8_t>  ? DType::uint8
                                       : DType::void_;
}

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
  const int64_t n = std::min(b.numel(), static_cast<int64_t>(data.size()));
  if constexpr (native_dtype<T>() != DType::void_) {
    if (native_dtype<T>() == dtype) {  // the same representation: a copy
      std::memcpy(b.bytes.data(), data.data(), static_cast<size_t>(n) * sizeof(T));
      return b;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
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
  const int64_t n = numel();
  std::vector<T> out(static_cast<size_t>(n));
  if constexpr (native_dtype<T>() != DType::void_) {
    if (native_dtype<T>() == dtype) {  // the same representation: a copy
      std::memcpy(out.data(), bytes.data(), static_cast<size_t>(n) * sizeof(T));
      return out;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_integral_v<T>) {
      out[static_cast<size_t>(i)] = is_float(dtype) ? static_cast<T>(to_int64(get(i))) : static_cast<T>(get_int(i));
    } else {
      out[static_cast<size_t>(i)] = static_cast<T>(get(i));
    }
  }
  return out;
}

}  // namespace ringrt
