// The host oracle the value tests compare against: a dense row-major array of doubles (Arr) and plain
// host loops over it (slice, write, reduce, permute, flip, ...), written independently of ringrt, plus
// the glue to build a Tensor from an Arr and read one back. Every test value is a small integer or an
// exact binary fraction, exact in every dtype used, so a double result is the exact expected value.
// Header only; include after <boost/test/unit_test.hpp>.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "runtime/api/tensor.hpp"

namespace ringrt::test::host {

struct Arr {
  Shape shape;
  std::vector<double> v;
  int64_t numel() const { return static_cast<int64_t>(v.size()); }
};

inline int64_t numel(const Shape& s) {
  int64_t p = 1;
  for (int64_t x : s) p *= x;
  return p;
}

inline std::vector<int64_t> unravel(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t k = s.size(); k-- > 0;) {
    idx[k] = flat % s[k];
    flat /= s[k];
  }
  return idx;
}

inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t f = 0;
  for (size_t k = 0; k < s.size(); ++k) f = f * s[k] + idx[k];
  return f;
}

inline Arr make_arr(const Shape& s, const std::function<double(int64_t)>& f) {
  Arr a{s, {}};
  for (int64_t i = 0; i < numel(s); ++i) a.v.push_back(f(i));
  return a;
}

inline Arr iota(const Shape& s, double start = 0) {
  return make_arr(s, [&](int64_t i) { return start + static_cast<double>(i); });
}

// [begin, end) per axis
using Region = std::vector<std::pair<int64_t, int64_t>>;

inline Region whole(const Shape& s) {
  Region r;
  for (int64_t x : s) r.push_back({0, x});
  return r;
}

// x[region]
inline Arr slice(const Arr& x, const Region& r) {
  Shape s;
  for (const auto& [b, e] : r) s.push_back(e - b);
  return make_arr(s, [&](int64_t f) {
    auto idx = unravel(f, s);
    for (size_t k = 0; k < idx.size(); ++k) idx[k] += r[k].first;
    return x.v[static_cast<size_t>(ravel(idx, x.shape))];
  });
}

// x[begin:end] along axis
inline Arr slice(const Arr& x, int axis, int64_t begin, int64_t end) {
  Region r = whole(x.shape);
  r[static_cast<size_t>(axis)] = {begin, end};
  return slice(x, r);
}

// x with x[region] = value
inline Arr write(Arr x, const Region& r, const Arr& value) {
  for (int64_t f = 0; f < numel(value.shape); ++f) {
    auto idx = unravel(f, value.shape);
    for (size_t k = 0; k < idx.size(); ++k) idx[k] += r[k].first;
    x.v[static_cast<size_t>(ravel(idx, x.shape))] = value.v[static_cast<size_t>(f)];
  }
  return x;
}

inline Arr reshape(Arr x, Shape s) {
  x.shape = std::move(s);
  return x;
}

inline Arr permute(const Arr& x, const std::vector<int>& order) {
  Shape s;
  for (int k : order) s.push_back(x.shape[static_cast<size_t>(k)]);
  return make_arr(s, [&](int64_t f) {
    auto idx = unravel(f, s);
    std::vector<int64_t> src(idx.size());
    for (size_t k = 0; k < order.size(); ++k) src[static_cast<size_t>(order[k])] = idx[k];
    return x.v[static_cast<size_t>(ravel(src, x.shape))];
  });
}

inline Arr flip(const Arr& x, const std::vector<int>& axes) {
  return make_arr(x.shape, [&](int64_t f) {
    auto idx = unravel(f, x.shape);
    for (int k : axes) idx[static_cast<size_t>(k)] = x.shape[static_cast<size_t>(k)] - 1 - idx[static_cast<size_t>(k)];
    return x.v[static_cast<size_t>(ravel(idx, x.shape))];
  });
}

inline Arr map2(const Arr& a, const Arr& b, const std::function<double(double, double)>& f) {
  Arr out = a;
  for (size_t i = 0; i < out.v.size(); ++i) out.v[i] = f(a.v[i], b.v[i]);
  return out;
}

// ---- reductions

enum class Op { sum, max, min, prod };
inline const std::vector<Op> kOps = {Op::sum, Op::max, Op::min, Op::prod};

inline const char* op_str(Op op) {
  switch (op) {
    case Op::sum:
      return "sum";
    case Op::max:
      return "max";
    case Op::min:
      return "min";
    case Op::prod:
      return "prod";
  }
  return "?";
}

inline double combine(Op op, double a, double b) {
  switch (op) {
    case Op::sum:
      return a + b;
    case Op::max:
      return std::max(a, b);
    case Op::min:
      return std::min(a, b);
    case Op::prod:
      return a * b;
  }
  return 0;
}

// Reduce over axes (empty: all), dropping them, like Tensor::sum/max/min/prod.
inline Arr reduce(const Arr& x, Op op, std::vector<int> axes) {
  if (axes.empty())
    for (size_t k = 0; k < x.shape.size(); ++k) axes.push_back(static_cast<int>(k));
  auto reduced = [&](size_t k) { return std::find(axes.begin(), axes.end(), static_cast<int>(k)) != axes.end(); };
  Shape out_shape;
  for (size_t k = 0; k < x.shape.size(); ++k)
    if (!reduced(k)) out_shape.push_back(x.shape[k]);
  Arr out{out_shape, std::vector<double>(static_cast<size_t>(numel(out_shape)), 0.0)};
  std::vector<bool> seen(out.v.size(), false);
  for (int64_t f = 0; f < x.numel(); ++f) {
    auto idx = unravel(f, x.shape);
    std::vector<int64_t> o;
    for (size_t k = 0; k < idx.size(); ++k)
      if (!reduced(k)) o.push_back(idx[k]);
    auto j = static_cast<size_t>(ravel(o, out_shape));
    out.v[j] = seen[j] ? combine(op, out.v[j], x.v[static_cast<size_t>(f)]) : x.v[static_cast<size_t>(f)];
    seen[j] = true;
  }
  return out;
}

// The same reduction on a tensor.
inline Tensor apply(const Tensor& t, Op op, std::vector<int> axes) {
  switch (op) {
    case Op::sum:
      return t.sum(std::move(axes));
    case Op::max:
      return t.max(std::move(axes));
    case Op::min:
      return t.min(std::move(axes));
    case Op::prod:
      return t.prod(std::move(axes));
  }
  return t;
}

// ---- text

// "(2, 3)", "(4,)", "()": as ringrt's error messages print shapes.
inline std::string shape_text(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

inline std::string dname(DType dt) { return std::string(dtype_name(dt)); }

// ---- comparisons

// got within rel of want (relative to max(1, |want|)); NaN matches NaN, an infinity itself.
inline bool close(double got, double want, double rel = 1e-5) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= rel * std::max(1.0, std::fabs(want));
}

inline void check_close(const std::vector<float>& got, const std::vector<double>& want, double rel = 1e-5) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    BOOST_TEST(close(got[i], want[i], rel), "element " << i << ": " << got[i] << " vs " << want[i]);
}

// ---- tensors

// a's values in a host buffer of dtype dt (integers truncated toward zero).
inline HostBuffer to_buffer(const Arr& a, DType dt) {
  HostBuffer b(dt, a.shape);
  for (int64_t i = 0; i < numel(a.shape); ++i) {
    double x = a.v[static_cast<size_t>(i)];
    if (is_float(dt)) {
      b.set(i, x);
    } else {
      b.set_int(i, static_cast<int64_t>(x));
    }
  }
  return b;
}

inline Tensor make_tensor(const Arr& a, DType dt, const std::string& device = "CPU:0") {
  return Tensor::from_host(to_buffer(a, dt), device);
}

inline Arr to_arr(const HostBuffer& b) {
  Arr a{b.shape, {}};
  for (int64_t i = 0; i < b.numel(); ++i) a.v.push_back(b.get(i));
  return a;
}

inline Arr read(const Tensor& t) { return to_arr(t.host()); }

inline void expect_equal(const Arr& got, const Arr& want) {
  BOOST_TEST(got.shape == want.shape, boost::test_tools::per_element());
  if (got.v.size() == want.v.size()) {
    BOOST_TEST(got.v == want.v, boost::test_tools::per_element());
  } else {
    BOOST_ERROR("got " << got.v.size() << " elements, want " << want.v.size());
  }
}

// Runs fn; an unexpected exception becomes a failed check (with what) instead of ending the case, so
// that one failing sample does not hide the others of a loop.
inline void guard(const std::string& what, const std::function<void()>& fn) {
  try {
    BOOST_TEST_CONTEXT(what) { fn(); }
  } catch (const std::exception& e) {
    BOOST_ERROR(what << ": unexpected exception: " << e.what());
  }
}

}  // namespace ringrt::test::host
