// HostBuffer's element access (core/host_buffer.hpp): each dtype's bytes read and written as double or int64.
#include "core/host_buffer.hpp"

#include <cstring>

#include "core/errors.hpp"
#include "core/wire_format.hpp"

namespace ringrt {

HostBuffer::HostBuffer(DType d, Shape s)
    : dtype(d), shape(std::move(s)), bytes(static_cast<size_t>(prod(shape) * itemsize(d))) {}

namespace {
template <class T>
T load(const std::vector<std::byte>& b, int64_t i) {
  T v;
  std::memcpy(&v, b.data() + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}
template <class T>
void put(std::vector<std::byte>& b, int64_t i, T v) {
  std::memcpy(b.data() + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}
}  // namespace

double HostBuffer::get(int64_t i) const {
  switch (dtype) {
    case DType::float32:
      return load<float>(bytes, i);
    case DType::float16:
      return half_to_float(load<uint16_t>(bytes, i));
    case DType::bfloat16:
      return bfloat16_to_float(load<uint16_t>(bytes, i));
    case DType::float64:
      return load<double>(bytes, i);
    case DType::fp8e4m3:
      return decode_element(WireFormat::fp8_e4m3, load<uint8_t>(bytes, i));
    case DType::fp8e5m2:
      return decode_element(WireFormat::fp8_e5m2, load<uint8_t>(bytes, i));
    default:
      return static_cast<double>(get_int(i));
  }
}

int64_t HostBuffer::get_int(int64_t i) const {
  switch (dtype) {
    case DType::int32:
      return load<int32_t>(bytes, i);
    case DType::int64:
      return load<int64_t>(bytes, i);
    case DType::int8:
      return load<int8_t>(bytes, i);
    case DType::uint8:
      return load<uint8_t>(bytes, i);
    case DType::int16:
      return load<int16_t>(bytes, i);
    case DType::uint32:
      return load<uint32_t>(bytes, i);
    case DType::bool_:
      return load<uint8_t>(bytes, i) != 0;
    case DType::void_:
      throw InternalError("HostBuffer of void");
    default:
      return to_int64(get(i));
  }
}

void HostBuffer::set(int64_t i, double v) {
  switch (dtype) {
    case DType::float32:
      return put<float>(bytes, i, static_cast<float>(v));
    case DType::float16:
      return put<uint16_t>(bytes, i, float_to_half(static_cast<float>(v)));
    case DType::bfloat16:
      return put<uint16_t>(bytes, i, float_to_bfloat16(static_cast<float>(v)));
    case DType::float64:
      return put<double>(bytes, i, v);
    case DType::fp8e4m3:  // from the float32 value, as a kernel's CAST of a float32 does
      return put<uint8_t>(bytes, i, static_cast<uint8_t>(encode_element(WireFormat::fp8_e4m3, static_cast<float>(v))));
    case DType::fp8e5m2:
      return put<uint8_t>(bytes, i, static_cast<uint8_t>(encode_element(WireFormat::fp8_e5m2, static_cast<float>(v))));
    case DType::bool_:
      return set_int(i, v != 0.0);
    case DType::void_:
      throw InternalError("HostBuffer of void");
    default:
      // float -> int truncates toward zero; out-of-range and NaN give 0 rather than undefined behaviour
      return set_int(i, to_int64(v));
  }
}

void HostBuffer::set_int(int64_t i, int64_t v) {
  switch (dtype) {
    case DType::int32:
      return put<int32_t>(bytes, i, static_cast<int32_t>(static_cast<uint32_t>(v)));
    case DType::int64:
      return put<int64_t>(bytes, i, v);
    case DType::int8:
      return put<int8_t>(bytes, i, static_cast<int8_t>(static_cast<uint8_t>(v)));
    case DType::uint8:
      return put<uint8_t>(bytes, i, static_cast<uint8_t>(v));
    case DType::int16:
      return put<int16_t>(bytes, i, static_cast<int16_t>(static_cast<uint16_t>(v)));
    case DType::uint32:
      return put<uint32_t>(bytes, i, static_cast<uint32_t>(v));
    case DType::bool_:
      return put<uint8_t>(bytes, i, v != 0);
    case DType::void_:
      throw InternalError("HostBuffer of void");
    default:
      return set(i, static_cast<double>(v));
  }
}

}  // namespace ringrt
