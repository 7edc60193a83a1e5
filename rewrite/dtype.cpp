#include "rewrite/dtype.hpp"

#include <fmt/format.h>

#include <array>
#include <ostream>

#include "rewrite/errors.hpp"

namespace ringrt {
namespace {

struct DTypeInfo {
  std::string_view name;
  int itemsize;
  bool is_float, is_unsigned;
  int rank;  // position in the promotion lattice; equal ranks meet one rank up
};

constexpr std::array<DTypeInfo, 10> kInfo{{
    {"float32", 4, true, false, 5},
    {"float16", 2, true, false, 4},
    {"bfloat16", 2, true, false, 4},
    {"float64", 8, true, false, 6},
    {"int32", 4, false, false, 2},
    {"int64", 8, false, false, 3},
    {"int8", 1, false, false, 1},
    {"uint8", 1, false, true, 1},
    {"bool", 1, false, true, 0},
    {"void", 0, false, false, -1},
}};

const DTypeInfo& info(DType d) { return kInfo[static_cast<size_t>(d)]; }

}  // namespace

std::string_view dtype_name(DType dtype) { return info(dtype).name; }
int itemsize(DType dtype) { return info(dtype).itemsize; }
bool is_float(DType dtype) { return info(dtype).is_float; }
bool is_unsigned(DType dtype) { return info(dtype).is_unsigned; }

DType promote(DType a, DType b) {
  if (a == b) return a;
  int ra = info(a).rank, rb = info(b).rank;
  if (ra < 0 || rb < 0) throw InternalError("cannot promote void");
  if (ra != rb) return ra > rb ? a : b;
  return ra == 1 ? DType::int32 : DType::float32;  // int8+uint8, float16+bfloat16
}

DType parse_dtype(std::string_view name) {
  for (size_t i = 0; i + 1 < kInfo.size(); ++i)
    if (kInfo[i].name == name) return static_cast<DType>(i);
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {{"float", DType::float32}, {"half", DType::float16},
                                       {"bf16", DType::bfloat16}, {"double", DType::float64},
                                       {"int", DType::int32},     {"long", DType::int64},
                                       {"char", DType::int8},     {"uchar", DType::uint8}};
  for (const auto& a : kAliases)
    if (a.name == name) return a.dtype;
  throw ConfigError("unknown dtype '" + std::string(name) +
                    "' (expected float32, float16, bfloat16, float64, int32, int64, int8, uint8 or bool)");
}

void check_dtype(DType dtype, std::string_view where, bool allow_void) {
  auto i = static_cast<size_t>(dtype);
  if (i >= kInfo.size() || (dtype == DType::void_ && !allow_void))
    throw ShapeError(fmt::format("{}: {} is not an element type", where,
                                 i < kInfo.size() ? std::string(kInfo[i].name) : "dtype " + std::to_string(i)));
}

std::ostream& operator<<(std::ostream& os, DType dtype) { return os << dtype_name(dtype); }

}  // namespace ringrt
