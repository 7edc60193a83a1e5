#include "core/dtype.hpp"

#include <fmt/format.h>

#include <array>
#include <ostream>

#include "core/errors.hpp"

namespace ringrt {
namespace {

struct DTypeInfo {
  std::string_view name;
  int itemsize;
  bool is_float, is_unsigned;
  int priority;  // tinygrad's DType.priority order: the least upper bound is the lowest common ancestor
};

// In enum order.
constexpr std::array<DTypeInfo, 14> kInfo{{
    {"float32", 4, true, false, 9},
    {"float16", 2, true, false, 7},
    {"bfloat16", 2, true, false, 8},
    {"float64", 8, true, false, 10},
    {"int32", 4, false, false, 4},
    {"int64", 8, false, false, 6},
    {"int8", 1, false, false, 1},
    {"uint8", 1, false, true, 2},
    {"bool", 1, false, true, 0},
    {"void", 0, false, false, -1},
    {"int16", 2, false, false, 3},
    {"uint32", 4, false, true, 5},
    {"fp8e4m3", 1, true, false, 6},  // below float32, above no public type
    {"fp8e5m2", 1, true, false, 6},
}};

// The types each type promotes to, itself included (the upward closure of tinygrad's promo_lattice
// restricted to ringrt's types).
uint32_t ancestors(DType d) {
  auto bit = [](std::initializer_list<DType> ds) {
    uint32_t m = 0;
    for (DType x : ds) m |= 1u << static_cast<unsigned>(x);
    return m;
  };
  const uint32_t floats = bit({DType::float16, DType::bfloat16, DType::float32, DType::float64});
  switch (d) {
    case DType::bool_:
      return bit({DType::bool_, DType::int8, DType::uint8, DType::int16, DType::int32, DType::uint32, DType::int64}) |
             floats;
    case DType::int8:
      return bit({DType::int8, DType::int16, DType::int32, DType::int64}) | floats;
    case DType::uint8:
      return bit({DType::uint8, DType::int16, DType::int32, DType::uint32, DType::int64}) | floats;
    case DType::int16:
      return bit({DType::int16, DType::int32, DType::int64}) | floats;
    case DType::int32:
      return bit({DType::int32, DType::int64}) | floats;
    case DType::uint32:
      return bit({DType::uint32, DType::int64}) | floats;
    case DType::int64:
      return bit({DType::int64}) | floats;
    case DType::float16:
      return bit({DType::float16, DType::float32, DType::float64});
    case DType::bfloat16:
      return bit({DType::bfloat16, DType::float32, DType::float64});
    case DType::float32:
      return bit({DType::float32, DType::float64});
    case DType::float64:
      return bit({DType::float64});
    case DType::fp8e4m3:
    case DType::fp8e5m2:
      return bit({d}) | bit({DType::float32, DType::float64});
    default:
      throw InternalError("cannot promote void");
  }
}

const DTypeInfo& info(DType d) { return kInfo[static_cast<size_t>(d)]; }

}  // namespace

std::string_view dtype_name(DType dtype) { return info(dtype).name; }
int itemsize(DType dtype) { return info(dtype).itemsize; }
bool is_float(DType dtype) { return info(dtype).is_float; }
bool is_unsigned(DType dtype) { return info(dtype).is_unsigned; }
bool is_internal(DType dtype) { return dtype == DType::void_ || dtype == DType::fp8e4m3 || dtype == DType::fp8e5m2; }

DType promote(DType a, DType b) {
  if (a == b) return a;
  uint32_t common = ancestors(a) & ancestors(b);
  DType best = DType::float64;  // every non-void type promotes to float64
  for (size_t i = 0; i < kInfo.size(); ++i)
    if ((common >> i & 1u) && kInfo[i].priority < info(best).priority) best = static_cast<DType>(i);
  return best;
}

int64_t int_min(DType dtype) {
  switch (dtype) {
    case DType::int8:
      return INT8_MIN;
    case DType::int16:
      return INT16_MIN;
    case DType::int32:
      return INT32_MIN;
    case DType::int64:
      return INT64_MIN;
    case DType::uint8:
    case DType::uint32:
    case DType::bool_:
      return 0;
    default:
      throw InternalError(fmt::format("int_min of {}", dtype_name(dtype)));
  }
}

int64_t int_max(DType dtype) {
  switch (dtype) {
    case DType::int8:
      return INT8_MAX;
    case DType::int16:
      return INT16_MAX;
    case DType::int32:
      return INT32_MAX;
    case DType::int64:
      return INT64_MAX;
    case DType::uint8:
      return UINT8_MAX;
    case DType::uint32:
      return UINT32_MAX;
    case DType::bool_:
      return 1;
    default:
      throw InternalError(fmt::format("int_max of {}", dtype_name(dtype)));
  }
}

DType parse_dtype(std::string_view name) {
  for (size_t i = 0; i < kInfo.size(); ++i)
    if (kInfo[i].name == name && !is_internal(static_cast<DType>(i))) return static_cast<DType>(i);
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {{"float", DType::float32},  {"half", DType::float16}, {"bf16", DType::bfloat16},
                                       {"double", DType::float64}, {"int", DType::int32},    {"long", DType::int64},
                                       {"char", DType::int8},      {"uchar", DType::uint8},  {"short", DType::int16},
                                       {"uint", DType::uint32}};
  for (const auto& a : kAliases)
    if (a.name == name) return a.dtype;
  throw ConfigError(
      "unknown dtype '" + std::string(name) +
      "' (expected float32, float16, bfloat16, float64, int32, int64, int16, int8, uint32, uint8 or bool)");
}

void check_dtype(DType dtype, std::string_view where, bool ir) {
  auto i = static_cast<size_t>(dtype);
  if (i >= kInfo.size() || (!ir && is_internal(dtype)))
    throw ShapeError(fmt::format("{}: {} is not an element type{}", where,
                                 i < kInfo.size() ? std::string(kInfo[i].name) : "dtype " + std::to_string(i),
                                 i < kInfo.size() && dtype != DType::void_
                                     ? " (it is internal: the compressed wire's element code, allreduce.wire)"
                                     : ""));
}

std::ostream& operator<<(std::ostream& os, DType dtype) { return os << dtype_name(dtype); }

}  // namespace ringrt
