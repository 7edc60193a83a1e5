// The references and rules of runtime/api/reference.hpp. The host's loops poll for a stop
// (runtime/api/host_loop.hpp), so that a SIGINT during the check of a 64 MiB result stops `ringrt run` within
// milliseconds.
#include "runtime/api/reference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "core/algorithm.hpp"
#include "runtime/api/host_loop.hpp"

namespace ringrt {
namespace {

// The largest magnitude up to which every integer is exact in dt: 2^(significand bits + 1).
double integer_limit(DType dt) {
  switch (dt) {
    case DType::float64:
      return std::ldexp(1.0, 53);
    case DType::float16:
      return std::ldexp(1.0, 11);
    case DType::bfloat16:
      return std::ldexp(1.0, 8);
    default:
      return std::ldexp(1.0, 24);
  }
}

double combine(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::max:
      return std::max(a, b);
    case ReduceOp::min:
      return std::min(a, b);
    case ReduceOp::prod:
      return a * b;
    default:
      return a + b;
  }
}

bool integral(double v) { return std::isfinite(v) && std::floor(v) == v; }
bool power_of_two_or_zero(double v) {
  int exponent = 0;
  return v == 0 || (std::isfinite(v) && std::fabs(std::frexp(v, &exponent)) == 0.5);
}

// One element of an integer reduction, wrapped at 64 bits (the dtype wraps it further when stored).
int64_t integer_reduction(ReduceOp op, int64_t ndev, int64_t i, const StoredValue& value) {
  int64_t acc = static_cast<int64_t>(value(0, i));
  for (int64_t d = 1; d < ndev; ++d) {
    int64_t v = static_cast<int64_t>(value(d, i));
    acc = op == ReduceOp::max    ? std::max(acc, v)
          : op == ReduceOp::min  ? std::min(acc, v)
          : op == ReduceOp::prod ? static_cast<int64_t>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v))
                                 : static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
  }
  return acc;
}

}  // namespace

double epsilon(DType dt) {
  if (!is_float(dt)) return 0.0;
  switch (dt) {
    case DType::float64:
      return std::ldexp(1.0, -52);
    case DType::float16:
      return std::ldexp(1.0, -10);
    case DType::bfloat16:
      return std::ldexp(1.0, -7);
    default:
      return std::ldexp(1.0, -23);
  }
}

Reference reference_of(DType dt, int64_t ndev, int64_t first, int64_t count, ReduceOp op, const StoredValue& value) {
  if (static_cast<unsigned>(op) > static_cast<unsigned>(ReduceOp::min))
    throw std::invalid_argument(
        fmt::format("reference_of: {} is not a ReduceOp (sum, prod, max, min)", static_cast<int>(op)));
  bool is_int = !is_float(dt);
  // max, min and a single term never round; a sum or product may, unless its terms say otherwise (below)
  bool may_round = !is_int && ndev > 1 && op != ReduceOp::max && op != ReduceOp::min;
  double limit = integer_limit(dt), bound = static_cast<double>(ndev) * epsilon(dt);
  stop_if_interrupted(0, "computing the reference");  // before the arrays are made
  Reference r{HostBuffer(dt, {count}), {}, {}};
  if (may_round) r.tolerance.resize(static_cast<size_t>(count));
  if (!is_int) r.value.resize(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    stop_if_interrupted(k, "computing the reference");
    int64_t i = first + k;
    if (is_int) {
      r.exact.set_int(k, integer_reduction(op, ndev, i, value));
      continue;
    }
    double acc = value(0, i), mag = std::fabs(acc), nonzero = acc != 0 ? std::fabs(acc) : 1.0;
    bool integers = integral(acc), powers = power_of_two_or_zero(acc);
    for (int64_t d = 1; d < ndev; ++d) {
      double v = value(d, i);
      acc = combine(op, acc, v);
      mag = op == ReduceOp::prod ? mag * std::fabs(v) : mag + std::fabs(v);
      if (v != 0) nonzero *= std::fabs(v);
      integers = integers && integral(v);
      powers = powers && power_of_two_or_zero(v);
    }
    r.value[static_cast<size_t>(k)] = acc;
    r.exact.set(k, acc);
    if (!may_round) continue;
    // integer terms whose partial sums (products) all fit the significand are exact in any order
    bool exact = integers && (op == ReduceOp::prod ? powers || nonzero <= limit : mag <= limit);
    r.tolerance[static_cast<size_t>(k)] = exact ? 0.0 : bound * mag;
  }
  return r;
}

Reference collective_reference(std::string_view k, DType dt, ReduceOp op, int64_t n, int64_t root, int64_t count,
                               int64_t j, int64_t first, int64_t len, const StoredValue& v) {
  int64_t c = n > 0 ? count / n : 0;
  std::optional<Collective> kind = parse_collective(k);
  if (!kind) throw std::invalid_argument(fmt::format("collective_reference: no collective '{}'", k));
  switch (*kind) {
    case Collective::reduce_scatter:
      return reference_of(dt, n, first, len, op, [&](int64_t d, int64_t i) { return v(d, j * c + i); });
    case Collective::allgather:
      return reference_of(dt, 1, first, len, op, [&](int64_t, int64_t e) { return v(e / c, e % c); });
    case Collective::alltoall:
      return reference_of(dt, 1, first, len, op, [&](int64_t, int64_t e) { return v(e / c, j * c + e % c); });
    case Collective::broadcast:
      return reference_of(dt, 1, first, len, op, [&](int64_t, int64_t e) { return v(root, e); });
    case Collective::allreduce:
    case Collective::reduce:
      return reference_of(dt, n, first, len, op, v);
  }
  throw std::invalid_argument(fmt::format("collective_reference: no collective '{}'", k));
}

Reference exact_reference(HostBuffer expected, bool bitwise) {
  Reference r{std::move(expected), {}, {}};
  r.bitwise = bitwise;
  return r;
}

Comparison compare(const Reference& ref, const HostBuffer& got) {
  Comparison c;
  int64_t n = ref.exact.numel();
  c.compared = n;
  if (got.numel() != n || got.dtype != ref.exact.dtype) {
    c.wrong = n;
    c.shape_problem = fmt::format("got {} {} elements, expected {} {}", got.numel(), dtype_name(got.dtype), n,
                                  dtype_name(ref.exact.dtype));
    return c;
  }
  bool is_int = !is_float(got.dtype), tolerant = !ref.tolerance.empty();
  size_t size = static_cast<size_t>(itemsize(got.dtype));
  for (int64_t i = 0; i < n; ++i) {
    stop_if_interrupted(i, "checking a result");
    bool ok;
    double g = 0, e = 0, tol = 0;
    if (is_int) {
      ok = got.get_int(i) == ref.exact.get_int(i);
      if (!ok) g = static_cast<double>(got.get_int(i)), e = static_cast<double>(ref.exact.get_int(i));
    } else {
      g = got.get(i), e = ref.exact.get(i);
      if (std::isnan(g) || std::isnan(e)) {
        ok = std::isnan(g) && std::isnan(e);
      } else if (ref.bitwise) {
        size_t at = static_cast<size_t>(i) * size;
        ok = std::memcmp(got.bytes.data() + at, ref.exact.bytes.data() + at, size) == 0;
      } else if (!tolerant || std::isinf(e)) {
        ok = g == e;
      } else {
        e = ref.value[static_cast<size_t>(i)], tol = ref.tolerance[static_cast<size_t>(i)];
        ok = std::fabs(g - e) <= tol;
      }
    }
    if (ok) continue;
    if (c.wrong++ == 0) c.first = Mismatch{i, g, e, tol};
  }
  return c;
}

int64_t count_wrong(const Reference& ref, const HostBuffer& got) { return compare(ref, got).wrong; }

}  // namespace ringrt
