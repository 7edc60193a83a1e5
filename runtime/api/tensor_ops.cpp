// The Tensor ops users reach for beyond the core (tensor.hpp "more ops"): where, unary math, bitcast,
// mean, dot/matmul, cat/stack, empty_like/full_like, resharding, seeded random numbers.
//
// Everything is composed from the IR the core already lowers, as tinygrad composes it (reference:
// tinygrad tensor.py): exp and log through EXP2 and LOG2, abs through CMPLT and WHERE, mean as a sum and
// a division, dot as reshape + transpose + broadcast multiply + sum, cat as pads selected by masks. The
// multi rules (rewrite/rules/multi.cpp) then decide what a sharded operand costs: a sum over the shard
// axis is a local sum plus an allreduce, so a matmul contracting over the shard axis is a local matmul
// plus one allreduce, with no rule of its own.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <set>

#include "core/errors.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/api/internal.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/device/device.hpp"
#include "runtime/engine/collect.hpp"

namespace ringrt {

namespace {

int norm_axis(const char* op, int axis, size_t rank, const Shape& shape) {
  int r = static_cast<int>(rank);
  if (axis < -r || axis >= r)
    throw ShapeError(fmt::format("{}: axis {} out of range for shape {}", op, axis, shape_str(shape)));
  return axis < 0 ? axis + r : axis;
}

// Shape u as rank dimensions, with leading ones (numpy broadcasting).
UOp lift(const UOp& u, size_t rank) {
  Shape s(rank - u.shape().size(), 1);
  s.insert(s.end(), u.shape().begin(), u.shape().end());
  return u.reshape(s);
}

// The numpy broadcast of shapes; ShapeError naming op and the axis that does not broadcast.
Shape broadcast_shape(const char* op, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      size_t a = rank - s.size() + i;
      int64_t x = s[i];
      if (x == out[a] || x == 1) continue;
      if (out[a] != 1) {
        std::vector<std::string> all;
        for (const Shape& t : shapes) all.push_back(shape_str(t));
        throw ShapeError(fmt::format("{}: shapes {} do not broadcast (axis {})", op, fmt::join(all, " and "), a));
      }
      out[a] = x;
    }
  }
  return out;
}

// tinygrad dtype.py sum_acc_dtype: what a sum accumulates in.
DType sum_acc_dtype(DType d) {
  if (is_unsigned(d) && d != DType::bool_) return promote(d, DType::uint32);
  if (!is_float(d)) return promote(d, DType::int32);
  return promote(d, DType::float32);
}

// tinygrad least_upper_float: floats stay, everything else computes in float32.
DType float_dtype(DType d) { return is_float(d) ? d : DType::float32; }

// The dtype of a scalar combined with a tensor of dtype d (tensor.cpp scalar_op's rule).
DType scalar_dtype(DType d, double v) {
  bool whole = v == std::floor(v) && std::fabs(v) < 0x1p63;  // (and representable: no out-of-range cast)
  return !is_float(d) && !whole ? DType::float32 : d;
}

// A constant of value on the devices of like (none, one, or the tuple), broadcast to shape.
UOp const_on(const UOp& like, DType dtype, double value, const Shape& shape) {
  return broadcast_to(const_uop(dtype, value, like.device(), &like.graph()), shape);
}

// ---- threefry2x32-20 (Random123, Salmon et al. 2011), the counter-based generator tinygrad uses

std::pair<uint32_t, uint32_t> threefry2x32(uint64_t counter, uint64_t key) {
  static constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  uint32_t ks[3] = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32), 0x1BD11BDAu};
  ks[2] ^= ks[0] ^ ks[1];
  uint32_t x0 = static_cast<uint32_t>(counter) + ks[0], x1 = static_cast<uint32_t>(counter >> 32) + ks[1];
  for (int r = 0; r < 20; ++r) {
    x0 += x1;
    x1 = (x1 << kRot[r % 8]) | (x1 >> (32 - kRot[r % 8]));
    x1 ^= x0;
    if (r % 4 == 3) {  // key injection after every fourth round
      uint32_t s = static_cast<uint32_t>(r / 4 + 1);
      x0 += ks[s % 3];
      x1 += ks[(s + 1) % 3] + s;
    }
  }
  return {x0, x1};
}

// Uniform [0, 1) for element i, exact in dtype (see Tensor::rand).
double uniform_at(uint64_t i, uint64_t seed, DType dtype) {
  auto [x0, x1] = threefry2x32(i, seed);
  switch (dtype) {
    case DType::float64:
      return std::ldexp(static_cast<double>((static_cast<uint64_t>(x0) << 21) | (x1 >> 11)), -53);
    case DType::float16:
      return std::ldexp(static_cast<double>(x0 >> 21), -11);
    case DType::bfloat16:
      return std::ldexp(static_cast<double>(x0 >> 24), -8);
    default:
      return std::ldexp(static_cast<double>(x0 >> 8), -24);
  }
}

// Standard normal for element i: Box-Muller on the block's two words, u1 in (0, 1], u2 in [0, 1).
double normal_at(uint64_t i, uint64_t seed) {
  auto [x0, x1] = threefry2x32(i, seed);
  double u1 = std::ldexp(static_cast<double>(x0) + 1.0, -32), u2 = std::ldexp(static_cast<double>(x1), -32);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

void check_random_dtype(const char* op, DType dtype) {
  check_dtype(dtype, op);
  if (!is_float(dtype))
    throw ShapeError(
        fmt::format("{}: dtype {} is not a float dtype (float32, float16, bfloat16, float64)", op, dtype_name(dtype)));
}

// The local (per-device) shape of shape split on axis over n devices; ShapeError when uneven.
Shape local_shape(const char* op, const Shape& shape, std::optional<int> axis, size_t n) {
  Shape local = shape;
  if (!axis) return local;
  int64_t len = shape[static_cast<size_t>(*axis)], nd = static_cast<int64_t>(n);
  if (len % nd != 0)
    throw ShapeError(fmt::format("{}: axis {} of shape {} has length {}, which does not split evenly over {} devices",
                                 op, *axis, shape_str(shape), len, nd));
  local[static_cast<size_t>(*axis)] = len / nd;
  return local;
}

// Host data of each device's shard: value(i) for the element at logical row-major index i.
template <class F>
std::vector<HostBuffer> shard_data(const Shape& shape, std::optional<int> axis, size_t n, DType dtype, F value) {
  Shape local = local_shape("rand", shape, axis, n);
  int64_t outer = 1, inner = 1, len = axis ? local[static_cast<size_t>(*axis)] : 0;
  if (axis) {
    for (int a = 0; a < *axis; ++a) outer *= shape[static_cast<size_t>(a)];
    for (size_t a = static_cast<size_t>(*axis) + 1; a < shape.size(); ++a) inner *= shape[a];
  }
  std::vector<HostBuffer> out;
  for (size_t d = 0; d < (axis ? n : 1); ++d) {
    HostBuffer b(dtype, local);
    if (!axis) {
      for (int64_t i = 0; i < b.numel(); ++i) b.set(i, value(static_cast<uint64_t>(i)));
    } else {  // local element (o, j, k) is logical (o, d * len + j, k)
      int64_t full = len * static_cast<int64_t>(n), li = 0;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < len; ++j)
          for (int64_t k = 0; k < inner; ++k, ++li)
            b.set(li, value(static_cast<uint64_t>((o * full + static_cast<int64_t>(d) * len + j) * inner + k)));
    }
    out.push_back(std::move(b));
  }
  return out;
}

void check_devices(const char* op, const std::vector<std::string>& devices) {
  if (devices.empty()) throw DeviceError(fmt::format("{}: no devices given", op));
  for (const auto& d : devices) ringrt::device(d);  // DeviceError naming an unknown device
  if (std::set<std::string>(devices.begin(), devices.end()).size() != devices.size())
    throw DeviceError(fmt::format("{}: devices repeat in ({})", op, fmt::join(devices, ", ")));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// construction

Tensor Tensor::from_shards(std::vector<HostBuffer> data, const std::vector<std::string>& devices,
                           std::optional<int> axis) {
  GraphUse use;
  check_devices("from_shards", devices);
  if (data.size() != devices.size())
    throw ShapeError(fmt::format("from_shards: {} shards for {} devices", data.size(), devices.size()));
  const HostBuffer& first = data[0];
  check_dtype(first.dtype, "from_shards");
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i].dtype != first.dtype || data[i].shape != first.shape)
      throw ShapeError(fmt::format("from_shards: shard {} is {} {}, shard 0 is {} {}", i, dtype_name(data[i].dtype),
                                   shape_str(data[i].shape), dtype_name(first.dtype), shape_str(first.shape)));
    if (static_cast<int64_t>(data[i].bytes.size()) != ringrt::prod(data[i].shape) * itemsize(data[i].dtype))
      throw ShapeError(fmt::format("from_shards: shard {} has {} bytes for shape {} of {}", i, data[i].bytes.size(),
                                   shape_str(data[i].shape), dtype_name(data[i].dtype)));
    if (!axis && data[i].bytes != first.bytes)
      throw ShapeError(fmt::format("from_shards: replicated (axis none) but shard {} differs from shard 0", i));
  }
  Shape local = first.shape;
  std::optional<int> ax;
  if (axis) ax = norm_axis("from_shards", *axis, local.size(), local);
  return alloc_multi(local, first.dtype, devices, ax, std::move(data));
}

Tensor Tensor::rand(Shape shape, uint64_t seed, DType dtype, std::string device) {
  GraphUse use;
  check_random_dtype("rand", dtype);
  ringrt::prod(shape);  // ShapeError for bad shapes
  auto data = shard_data(shape, std::nullopt, 1, dtype, [&](uint64_t i) { return uniform_at(i, seed, dtype); });
  return from_host(std::move(data[0]), std::move(device));
}

Tensor Tensor::rand(Shape shape, uint64_t seed, const std::vector<std::string>& devices, std::optional<int> axis,
                    DType dtype) {
  GraphUse use;
  check_random_dtype("rand", dtype);
  check_devices("rand", devices);
  ringrt::prod(shape);
  std::optional<int> ax;
  if (axis) ax = norm_axis("rand", *axis, shape.size(), shape);
  Shape local = local_shape("rand", shape, ax, devices.size());
  auto data = shard_data(shape, ax, devices.size(), dtype, [&](uint64_t i) { return uniform_at(i, seed, dtype); });
  if (!ax) data.resize(devices.size(), data[0]);
  return alloc_multi(local, dtype, devices, ax, std::move(data));
}

Tensor Tensor::randn(Shape shape, uint64_t seed, DType dtype, std::string device) {
  GraphUse use;
  check_random_dtype("randn", dtype);
  ringrt::prod(shape);
  auto data = shard_data(shape, std::nullopt, 1, dtype, [&](uint64_t i) { return normal_at(i, seed); });
  return from_host(std::move(data[0]), std::move(device));
}

Tensor Tensor::empty_like() const {
  GraphUse use;
  const DeviceSpec& dev = uop().device();
  if (dev.none()) return full_like(0.0);  // a device-less constant has no memory to allocate
  if (dev.single()) return empty(shape(), dtype(), dev.name());
  Shape local = local_shape("empty_like", shape(), shard_axis(), dev.count());
  return alloc_multi(local, dtype(), dev.names(), shard_axis(), {});
}

Tensor Tensor::placeholder(Shape shape, DType dtype, const std::vector<std::string>& devices, std::optional<int> axis) {
  GraphUse use;
  check_dtype(dtype, "placeholder");
  if (devices.empty()) throw DeviceError("placeholder: no devices given");
  for (const auto& d : devices) ringrt::device(d);  // DeviceError naming an unknown device
  if (std::set<std::string>(devices.begin(), devices.end()).size() != devices.size())
    throw DeviceError(fmt::format("placeholder: devices repeat in ({})", fmt::join(devices, ", ")));
  int rank = static_cast<int>(shape.size());
  if (axis && (*axis < -rank || *axis >= rank))
    throw ShapeError(fmt::format("placeholder: axis {} out of range for shape {}", *axis, shape_str(shape)));
  if (axis && *axis < 0) *axis += rank;
  ringrt::prod(shape);  // ShapeError for negative or huge shapes
  Shape local = local_shape("placeholder", shape, axis, devices.size());
  // as alloc_multi lays out a realized input, without its storage
  UOp view = new_buffer(DeviceSpec(DeviceTuple(devices)), ringrt::prod(local), dtype).reshape(local);
  Tensor t(make_state(axis ? view.multi(*axis) : view, {}));
  t.s_->placeholder = true;
  return t;
}

// ---------------------------------------------------------------------------------------------
// arithmetic with a number: the number is a device-less CONST of the tensor's dtype (float32 for a
// fraction with an integer tensor), which the program cache passes as a kernel argument
// (rewrite/canonical.hpp is_runtime_scalar)

namespace {
DType scalar_dtype(const Tensor& a, double v) {
  DType d = a.dtype();
  bool whole = v == std::floor(v) && std::fabs(v) < 0x1p63;  // (and representable: no out-of-range cast)
  return !is_float(d) && !whole ? DType::float32 : d;
}
}  // namespace

Tensor operator+(const Tensor& a, double b) {
  GraphUse use;
  return a.binary(BinaryOp::add, Tensor::constant(b, scalar_dtype(a, b)));
}
Tensor operator-(const Tensor& a, double b) {
  GraphUse use;
  return a.binary(BinaryOp::sub, Tensor::constant(b, scalar_dtype(a, b)));
}
Tensor operator*(const Tensor& a, double b) {
  GraphUse use;
  return a.binary(BinaryOp::mul, Tensor::constant(b, scalar_dtype(a, b)));
}
Tensor operator/(const Tensor& a, double b) {
  GraphUse use;
  return a.binary(BinaryOp::div, Tensor::constant(b, scalar_dtype(a, b)));
}
Tensor operator+(double a, const Tensor& b) {
  GraphUse use;
  return Tensor::constant(a, scalar_dtype(b, a)).binary(BinaryOp::add, b);
}
Tensor operator-(double a, const Tensor& b) {
  GraphUse use;
  return Tensor::constant(a, scalar_dtype(b, a)).binary(BinaryOp::sub, b);
}
Tensor operator*(double a, const Tensor& b) {
  GraphUse use;
  return Tensor::constant(a, scalar_dtype(b, a)).binary(BinaryOp::mul, b);
}
Tensor operator/(double a, const Tensor& b) {
  GraphUse use;
  return Tensor::constant(a, scalar_dtype(b, a)).binary(BinaryOp::div, b);
}

Tensor Tensor::variable(const std::string& name, double value, DType dtype) {
  GraphUse use;
  check_dtype(dtype, "variable");
  bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                    std::all_of(name.begin(), name.end(),
                                [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  if (!identifier) throw ConfigError(fmt::format("Tensor::variable: name '{}' is not a C identifier", name));
  // int_max + 1 is a power of two, exact in a double (int_max itself is not for int64)
  if (!is_float(dtype) && !(value == std::floor(value) && value >= static_cast<double>(int_min(dtype)) &&
                            value < static_cast<double>(int_max(dtype)) + 1.0))
    throw ConfigError(fmt::format("Tensor::variable {}: {} is not a value of {}", name, value, dtype_name(dtype)));
  return Tensor(make_state(make_uop(Ops::CONST, dtype, {}, ScalarArg{name, value, -1}), {}));
}

Tensor Tensor::full_like(double value) const {
  GraphUse use;
  const DeviceSpec& dev = uop().device();
  if (!dev.tuple() || !shard_axis()) return derive(const_on(uop(), dtype(), value, shape()));
  Shape local = local_shape("full_like", shape(), shard_axis(), dev.count());
  return derive(const_on(uop(), dtype(), value, local).multi(shard_axis()));
}

// ---------------------------------------------------------------------------------------------
// resharding (Tensor::shard of a tensor on a device tuple)

Tensor Tensor::reshard(const std::vector<std::string>& devices, std::optional<int> axis) const {
  GraphUse use;
  std::optional<int> ax;
  if (axis) {
    ax = norm_axis("shard", *axis, shape().size(), shape());
    local_shape("shard", shape(), ax, devices.size());  // ShapeError when uneven, before any work
  }
  if (devices != this->devices()) return to(devices[0]).shard(devices, ax);  // gather, then shard
  if (ax == shard_axis()) return *this;
  Tensor t = *this;
  // a lazy sharded value that is not a plain MULTI: realized, for its per-device values; a lazy replicated
  // one (x.sum({0}) of a sharded x) stays lazy: each device reads its own part of it, which the lowering
  // turns into a reduce-scatter (rewrite/rules/collectives.cpp)
  if (t.uop().op() != Ops::MULTI && t.uop().logical() && t.shard_axis()) t.realize();
  const UOp& u = t.uop();
  std::optional<int> from = t.shard_axis();
  // replicated: as it is; sharded: zero-pad each shard into place and sum them onto every device
  UOp full = from ? u.src(0).unshard_local(*from).allreduce(Ops::ADD, DeviceSpec(DeviceTuple(devices))) : u;
  return t.derive(ax ? full.shard_local(*ax).multi(ax) : full);
}

// ---------------------------------------------------------------------------------------------
// elementwise

Tensor Tensor::where(const Tensor& x, const Tensor& y) const {
  GraphUse use;
  Shape out = broadcast_shape("WHERE", {shape(), x.shape(), y.shape()});
  DType d = promote(x.dtype(), y.dtype());
  UOp c = lift(uop(), out.size()).cast(DType::bool_).expand(out);
  UOp a = lift(x.uop(), out.size()).cast(d).expand(out), b = lift(y.uop(), out.size()).cast(d).expand(out);
  return derive(c.where(a, b), {x, y});
}
Tensor Tensor::where(const Tensor& x, double y) const {
  GraphUse use;
  return where(x, constant(y, scalar_dtype(x.dtype(), y)));
}
Tensor Tensor::where(double x, const Tensor& y) const {
  GraphUse use;
  return where(constant(x, scalar_dtype(y.dtype(), x)), y);
}

Tensor Tensor::neg() const {
  GraphUse use;
  if (dtype() == DType::bool_) return derive(uop().alu(Ops::CMPNE, {uop().const_like(1)}));  // logical not
  return derive(uop().alu(Ops::NEG));
}

Tensor Tensor::abs() const {
  GraphUse use;
  if (is_unsigned(dtype())) return *this;  // uint8, uint32, bool
  UOp x = uop();
  return derive(x.alu(Ops::CMPLT, {x.const_like(0)}).where(x.alu(Ops::NEG), x));
}

namespace {
UOp as_float(const UOp& u) { return u.cast(float_dtype(u.dtype())); }
}  // namespace

Tensor Tensor::exp2() const {
  GraphUse use;
  return derive(as_float(uop()).alu(Ops::EXP2));
}
Tensor Tensor::log2() const {
  GraphUse use;
  return derive(as_float(uop()).alu(Ops::LOG2));
}
Tensor Tensor::sqrt() const {
  GraphUse use;
  return derive(as_float(uop()).alu(Ops::SQRT));
}
Tensor Tensor::reciprocal() const {
  GraphUse use;
  return derive(as_float(uop()).alu(Ops::RECIP));
}
Tensor Tensor::sin() const {
  GraphUse use;
  return derive(as_float(uop()).alu(Ops::SIN));
}
Tensor Tensor::exp() const {
  GraphUse use;
  UOp x = as_float(uop());
  return derive((x * x.const_like(1.0 / std::numbers::ln2)).alu(Ops::EXP2));
}
Tensor Tensor::log() const {
  GraphUse use;
  UOp x = as_float(uop());
  return derive(x.alu(Ops::LOG2) * x.const_like(std::numbers::ln2));
}

Tensor Tensor::bitcast(DType to) const {
  GraphUse use;
  check_dtype(to, "bitcast");
  if (to == dtype()) return *this;
  if (itemsize(to) != itemsize(dtype()) || to == DType::bool_ || dtype() == DType::bool_)
    throw ShapeError(
        fmt::format("BITCAST: from {} ({} bytes) to {} ({} bytes), shape {}: ringrt bitcasts between "
                    "non-bool types of one item size only",
                    dtype_name(dtype()), itemsize(dtype()), dtype_name(to), itemsize(to), shape_str(shape())));
  return derive(uop().bitcast(to));
}

// ---------------------------------------------------------------------------------------------
// reductions and contractions

Tensor Tensor::mean(std::vector<int> axes) const {
  GraphUse use;
  size_t rank = shape().size();
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int>(i));
  std::set<int> reduced;
  for (int a : axes) reduced.insert(norm_axis("mean", a, rank, shape()));
  int64_t count = 1;
  for (int a : reduced) count *= shape()[static_cast<size_t>(a)];
  DType out = is_float(dtype()) ? dtype() : DType::float32;
  Tensor s = cast(sum_acc_dtype(dtype())).sum(std::move(axes));
  return (s / static_cast<double>(count)).cast(out);
}

Tensor Tensor::dot(const Tensor& w) const {
  GraphUse use;
  const Shape &xs = shape(), &ws = w.shape();
  size_t dx = xs.size(), dw = ws.size();
  if (dx == 0 || dw == 0)
    throw ShapeError(
        fmt::format("dot: both tensors need at least one axis, got shapes {} and {}", shape_str(xs), shape_str(ws)));
  size_t wk = dw - std::min<size_t>(dw, 2);  // w's contracted axis
  if (xs.back() != ws[wk])
    throw ShapeError(fmt::format("dot: cannot contract axis {} of {} (length {}) with axis {} of {} (length {})",
                                 dx - 1, shape_str(xs), xs.back(), wk, shape_str(ws), ws[wk]));
  size_t ones = std::min<size_t>({dx - 1, dw - 1, 1});
  Shape x2(xs.begin(), xs.end() - 1), w2(ws.begin(), ws.begin() + static_cast<std::ptrdiff_t>(wk));
  x2.insert(x2.end(), ones, 1);
  x2.push_back(xs.back());
  w2.insert(w2.end(), ones, 1);
  w2.insert(w2.end(), ws.begin() + static_cast<std::ptrdiff_t>(wk), ws.end());
  // move w's contracted axis last: it meets x's last axis
  std::vector<int> order(w2.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::swap(order[w2.size() - std::min<size_t>(dw, 2)], order.back());
  Tensor terms = reshape(x2) * w.reshape(w2).permute(order);
  return terms.cast(sum_acc_dtype(terms.dtype())).sum({-1}).cast(promote(dtype(), w.dtype()));
}

// ---------------------------------------------------------------------------------------------
// concatenation

Tensor Tensor::cat(const std::vector<Tensor>& tensors, int dim) {
  GraphUse use;
  if (tensors.empty()) throw ShapeError("cat: no tensors");
  const Shape& s0 = tensors[0].shape();
  int d = norm_axis("cat", dim, s0.size(), s0);
  DType dtype = tensors[0].dtype();
  for (size_t i = 1; i < tensors.size(); ++i)
    if (tensors[i].devices() != tensors[0].devices())
      throw DeviceError(
          fmt::format("cat: tensor {} (shape {}) is on {}, tensor 0 (shape {}) on {}; move them to "
                      "the same devices first",
                      i, shape_str(tensors[i].shape()), tensors[i].uop().device().to_string(), shape_str(s0),
                      tensors[0].uop().device().to_string()));
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    const Shape& s = t.shape();
    bool same = s.size() == s0.size();
    for (size_t a = 0; same && a < s.size(); ++a) same = static_cast<int>(a) == d || s[a] == s0[a];
    if (!same)
      throw ShapeError(
          fmt::format("cat: tensor {} has shape {}, tensor 0 has shape {} (they may differ on axis {} only)", i,
                      shape_str(s), shape_str(s0), d));
    if (t.shard_axis() == d)
      throw ShapeError(
          fmt::format("cat: axis {} is the shard axis of tensor {} (shape {}, sharded over {} devices); "
                      "concatenate along another axis or reshard it first",
                      d, i, shape_str(s), t.devices().size()));
    dtype = promote(dtype, t.dtype());
    total += s[static_cast<size_t>(d)];
  }
  if (tensors.size() == 1) return tensors[0];
  if (total == 0) return tensors[0].cast(dtype);
  // each piece padded into place and selected by a mask there (multi.hpp concat_select)
  std::vector<UOp> parts;
  for (const Tensor& t : tensors) parts.push_back(t.cast(dtype).uop());
  return tensors[0].derive(concat_select(parts, d), tensors);
}

Tensor Tensor::stack(const std::vector<Tensor>& tensors, int dim) {
  GraphUse use;
  if (tensors.empty()) throw ShapeError("stack: no tensors");
  const Shape& s0 = tensors[0].shape();
  int rank = static_cast<int>(s0.size());
  if (dim < -rank - 1 || dim > rank)
    throw ShapeError(fmt::format("stack: dim {} out of range for {} axes of shape {}", dim, rank + 1, shape_str(s0)));
  size_t d = static_cast<size_t>(dim < 0 ? dim + rank + 1 : dim);
  std::vector<Tensor> pieces;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].shape() != s0)
      throw ShapeError(fmt::format("stack: tensor {} has shape {}, tensor 0 has shape {}", i,
                                   shape_str(tensors[i].shape()), shape_str(s0)));
    Shape s = s0;
    s.insert(s.begin() + static_cast<std::ptrdiff_t>(d), 1);
    pieces.push_back(tensors[i].reshape(s));
  }
  return cat(pieces, static_cast<int>(d));
}

}  // namespace ringrt
