// Shapes (public): a tensor's extent per axis, in elements, and the helpers on them. Defined in
// core/shape.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringrt {

using Shape = std::vector<int64_t>;

// The most elements one tensor may have (2^48): larger shapes are a ShapeError, not an overflow.
inline constexpr int64_t kMaxElements = int64_t{1} << 48;
// Elements in shape; throws ShapeError for a negative dimension or more than kMaxElements.
int64_t prod(const Shape& shape);
// double -> int64 truncating toward zero; NaN and values out of range give 0 (never undefined).
int64_t to_int64(double v);
std::string shape_str(const Shape& shape);  // "(4, 400)"

}  // namespace ringrt
