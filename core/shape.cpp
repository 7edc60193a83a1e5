// The shape helpers (core/shape.hpp).
#include "core/shape.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "core/errors.hpp"

namespace ringrt {

int64_t prod(const Shape& shape) {
  int64_t out = 1;
  for (int64_t s : shape) {
    if (s < 0) throw ShapeError(fmt::format("shape {} has a negative dimension", shape_str(shape)));
    if (__builtin_mul_overflow(out, s, &out) || out > kMaxElements)
      throw ShapeError(fmt::format("shape {} has more than 2^48 elements", shape_str(shape)));
  }
  return out;
}

int64_t to_int64(double v) { return std::isfinite(v) && std::fabs(v) < 9.2e18 ? static_cast<int64_t>(v) : 0; }

std::string shape_str(const Shape& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

}  // namespace ringrt
