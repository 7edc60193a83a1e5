#include "runtime/tensor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <unordered_map>

#include "rewrite/errors.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/schedule.hpp"

namespace ringrt {

// ---------------------------------------------------------------------------------------------
// storage: the data of realized buffers, alive while a tensor refers to it

namespace {

struct Storage {
  int64_t id;
  std::vector<HostBuffer> per_device;
};

struct Registry {
  std::mutex mu;
  std::unordered_map<int64_t, std::weak_ptr<Storage>> storages;
  std::vector<std::weak_ptr<Tensor::State>> live;
};
Registry& registry() {
  static Registry r;
  return r;
}

std::shared_ptr<Storage> new_storage(int64_t id, std::vector<HostBuffer> data) {
  auto s = std::make_shared<Storage>(Storage{id, std::move(data)});
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.storages[id] = s;
  return s;
}

const std::vector<HostBuffer>* lookup(int64_t id) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.storages.find(id);
  if (it == r.storages.end()) return nullptr;
  auto s = it->second.lock();
  return s ? &s->per_device : nullptr;  // the caller's tensor keeps s alive
}

bool is_buffer_view(const UOp& u) {
  const UOp& x = u.op() == Ops::MULTI ? u.src(0) : u;
  return x.op() == Ops::BUFFER || (x.op() == Ops::RESHAPE && x.src(0).op() == Ops::BUFFER);
}

UOp buffer_of(UOp u) {
  while (u.op() != Ops::BUFFER) {
    if (u.src().empty()) throw InternalError("no buffer under " + u.to_string());
    u = u.src(0);
  }
  return u;
}

std::set<int64_t> buffers_read(const UOp& u) {
  std::set<int64_t> ids;
  for (const UOp& x : u.graph().toposort({u}))
    if (x.op() == Ops::BUFFER) ids.insert(std::get<BufferArg>(x.arg()).id);
  return ids;
}

}  // namespace

struct Tensor::State {
  UOp uop;
  std::vector<std::shared_ptr<Storage>> storages;  // every buffer the graph reads
  std::shared_ptr<State> view_base;                // set for a shrink of a realized tensor
  std::vector<std::pair<int64_t, int64_t>> view_region;
};

namespace {
std::shared_ptr<Tensor::State> make_state(UOp u, std::vector<std::shared_ptr<Storage>> storages) {
  auto s = std::make_shared<Tensor::State>();
  s->uop = u;
  s->storages = std::move(storages);
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.live.size() > 64) {  // drop dead entries now and then
    r.live.erase(std::remove_if(r.live.begin(), r.live.end(), [](const auto& w) { return w.expired(); }),
                 r.live.end());
  }
  r.live.push_back(s);
  return s;
}
}  // namespace

std::vector<std::string> cpu_devices(int n) {
  if (n < 1) throw DeviceError(fmt::format("cpu_devices: need at least one device, got {}", n));
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(fmt::format("CPU:{}", i));
  return out;
}

std::vector<std::string> hip_devices() { return {}; }

// ---------------------------------------------------------------------------------------------
// construction

Tensor Tensor::from_host(HostBuffer data, std::string device) {
  UOp buf = new_buffer(DeviceSpec(device), data.numel(), data.dtype);
  Shape shape = data.shape;
  data.shape = {data.numel()};
  auto st = new_storage(std::get<BufferArg>(buf.arg()).id, {std::move(data)});
  return Tensor(make_state(buf.reshape(shape), {st}));
}

Tensor Tensor::empty(Shape shape, DType dtype, std::string device) {
  return from_host(HostBuffer(dtype, std::move(shape)), std::move(device));
}

Tensor Tensor::full(Shape shape, double value, DType dtype, std::string device) {
  Arg arg = is_float(dtype) ? Arg(value) : Arg(static_cast<int64_t>(value));
  UOp c = make_uop(Ops::CONST, dtype, {device_uop(DeviceSpec(device))}, arg);
  return Tensor(make_state(broadcast_to(c, shape), {}));
}

Tensor Tensor::constant(double value, DType dtype) { return Tensor(make_state(const_uop(dtype, value), {})); }

Tensor Tensor::arange(int64_t n, DType dtype, std::string device) {
  HostBuffer b(dtype, {n});
  for (int64_t i = 0; i < n; ++i) is_float(dtype) ? b.set(i, static_cast<double>(i)) : b.set_int(i, i);
  return from_host(std::move(b), std::move(device));
}

Tensor Tensor::derive(UOp u) const { return Tensor(make_state(u, s_->storages)); }

// ---------------------------------------------------------------------------------------------
// multi-device

Tensor Tensor::shard(const std::vector<std::string>& devices, std::optional<int> axis) const {
  if (devices.empty()) throw DeviceError("shard: no devices given");
  if (std::set<std::string>(devices.begin(), devices.end()).size() != devices.size())
    throw DeviceError(fmt::format("shard: devices repeat in ({})", fmt::join(devices, ", ")));
  if (uop().device().tuple())
    throw ShapeError(fmt::format("shard: tensor of shape {} is already on ({})", shape_str(shape()),
                                 fmt::join(uop().device().names(), ", ")));
  UOp on_all = uop().copy_to_device(DeviceSpec(DeviceTuple(devices)));
  if (!axis) return derive(on_all);
  int rank = static_cast<int>(shape().size());
  int ax = *axis < 0 ? *axis + rank : *axis;
  if (ax < 0 || ax >= rank)
    throw ShapeError(fmt::format("shard: axis {} out of range for shape {}", *axis, shape_str(shape())));
  int64_t len = shape()[static_cast<size_t>(ax)], n = static_cast<int64_t>(devices.size());
  if (len % n != 0)
    throw ShapeError(fmt::format("shard: axis {} of shape {} has length {}, which does not split evenly over {} devices",
                                 ax, shape_str(shape()), len, n));
  return derive(on_all.shard_local(ax).multi(ax));
}

Tensor Tensor::to(const std::string& device) const {
  if (uop().device().single() && uop().device().name() == device) return *this;
  return derive(uop().copy_to_device(DeviceSpec(device)));
}

// ---------------------------------------------------------------------------------------------
// movement and math

Tensor Tensor::reshape(Shape s) const { return derive(uop().reshape(s)); }
Tensor Tensor::expand(Shape s) const { return derive(uop().expand(s)); }
Tensor Tensor::permute(std::vector<int> order) const {
  return derive(uop().permute(std::vector<int64_t>(order.begin(), order.end())));
}
Tensor Tensor::pad(std::vector<std::pair<int64_t, int64_t>> ba) const { return derive(uop().pad(spans(ba))); }
Tensor Tensor::shrink(std::vector<std::pair<int64_t, int64_t>> be) const {
  Tensor t = derive(uop().shrink(spans(be)));
  if (is_buffer_view(uop())) {
    t.s_->view_base = s_;
    t.s_->view_region = be;
  }
  return t;
}
Tensor Tensor::flip(std::vector<int> axes) const {
  std::vector<int64_t> flags(shape().size(), 0);
  for (int a : axes) {
    int ax = a < 0 ? a + static_cast<int>(flags.size()) : a;
    if (ax < 0 || ax >= static_cast<int>(flags.size()))
      throw ShapeError(fmt::format("FLIP: axis {} out of range for shape {}", a, shape_str(shape())));
    flags[static_cast<size_t>(ax)] = 1;
  }
  return derive(uop().flip(flags));
}

Tensor Tensor::reduce(Ops op, std::vector<int> axes) const {
  int rank = static_cast<int>(shape().size());
  if (axes.empty())
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  for (int& a : axes) {
    if (a < -rank || a >= rank)
      throw ShapeError(fmt::format("REDUCE_AXIS: axis {} out of range for shape {}", a, shape_str(shape())));
    if (a < 0) a += rank;
  }
  UOp r = uop().r(op, axes);
  Shape out;
  for (int i = 0; i < rank; ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) out.push_back(shape()[static_cast<size_t>(i)]);
  return derive(r.reshape(out));
}
Tensor Tensor::sum(std::vector<int> axes) const { return reduce(Ops::ADD, std::move(axes)); }
Tensor Tensor::max(std::vector<int> axes) const { return reduce(Ops::MAX, std::move(axes)); }
Tensor Tensor::min(std::vector<int> axes) const { return reduce(Ops::MIN, std::move(axes)); }
Tensor Tensor::prod(std::vector<int> axes) const { return reduce(Ops::MUL, std::move(axes)); }
Tensor Tensor::cast(DType d) const { return derive(uop().cast(d)); }
Tensor Tensor::contiguous() const { return derive(uop().contiguous()); }

Tensor Tensor::binary(Ops op, const Tensor& o) const {
  // numpy broadcasting: align ranks with leading ones, then expand both to the larger extents
  UOp a = uop(), b = o.uop();
  size_t rank = std::max(a.shape().size(), b.shape().size());
  auto lift = [&](UOp u) {
    Shape s(rank - u.shape().size(), 1);
    s.insert(s.end(), u.shape().begin(), u.shape().end());
    return u.reshape(s);
  };
  a = lift(a);
  b = lift(b);
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = a.shape()[i], y = b.shape()[i];
    if (x != y && x != 1 && y != 1)
      throw ShapeError(fmt::format("{}: shapes {} and {} do not broadcast (axis {})", op_name(op),
                                   shape_str(uop().shape()), shape_str(o.uop().shape()), i));
    out[i] = x == 1 ? y : x;
  }
  DType d = promote(a.dtype(), b.dtype());
  if (op == Ops::FDIV && !is_float(d)) d = DType::float32;
  a = a.cast(d).expand(out);
  b = b.cast(d).expand(out);
  Tensor t = derive(a.alu(op, {b}));
  t.s_->storages.insert(t.s_->storages.end(), o.s_->storages.begin(), o.s_->storages.end());
  return t;
}

namespace {
Tensor scalar_op(const Tensor& a, Ops op, double v) {
  DType d = a.dtype();
  if (!is_float(d) && v != static_cast<double>(static_cast<int64_t>(v))) d = DType::float32;
  return a.binary(op, Tensor::constant(v, d));
}
}  // namespace

Tensor operator+(const Tensor& a, const Tensor& b) { return a.binary(Ops::ADD, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.binary(Ops::SUB, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.binary(Ops::MUL, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return a.binary(Ops::FDIV, b); }
Tensor operator+(const Tensor& a, double b) { return scalar_op(a, Ops::ADD, b); }
Tensor operator-(const Tensor& a, double b) { return scalar_op(a, Ops::SUB, b); }
Tensor operator*(const Tensor& a, double b) { return scalar_op(a, Ops::MUL, b); }
Tensor operator/(const Tensor& a, double b) { return scalar_op(a, Ops::FDIV, b); }
Tensor Tensor::maximum(const Tensor& o) const { return binary(Ops::MAX, o); }
Tensor Tensor::minimum(const Tensor& o) const { return binary(Ops::MIN, o); }

// ---------------------------------------------------------------------------------------------
// realization

const UOp& Tensor::uop() const { return s_->uop; }
Shape Tensor::shape() const { return uop().shape(); }
DType Tensor::dtype() const { return uop().dtype(); }
std::optional<int> Tensor::shard_axis() const { return uop().logical() ? uop().axis() : std::nullopt; }
std::vector<std::string> Tensor::devices() const {
  const DeviceSpec& d = uop().device();
  if (d.tuple()) return d.names();
  if (d.single()) return {d.name()};
  return {};
}

Tensor& Tensor::realize() {
  if (is_buffer_view(uop())) return *this;
  AllreduceSettings settings = current_settings();
  Lowered low = lower_multi({uop()}, settings);
  UOp root = low.roots[0];
  auto keep = s_->storages;  // alive through the evaluation
  std::vector<HostBuffer> values = Interpreter(lookup).evaluate(root);
  for (auto& v : values) v.shape = {v.numel()};

  if (root.op() == Ops::ASSIGN) {
    // write into the destination's buffer; first realize whatever still reads its old contents
    UOp dest = uop().src(0);
    int64_t id = std::get<BufferArg>(buffer_of(dest).arg()).id;
    std::vector<std::shared_ptr<State>> readers;
    {
      auto& r = registry();
      std::lock_guard<std::mutex> lock(r.mu);
      for (auto& w : r.live)
        if (auto s = w.lock(); s && s.get() != s_.get() && !is_buffer_view(s->uop) && buffers_read(s->uop).count(id))
          readers.push_back(s);
    }
    for (auto& s : readers) Tensor(s).realize();
    for (auto& st : s_->storages)
      if (st->id == id) st->per_device = values;
    s_->uop = dest;
    return *this;
  }

  DeviceSpec dev = root.device().none() ? DeviceSpec("CPU:0") : root.device();
  UOp buf = new_buffer(dev, ringrt::prod(root.shape()), root.dtype());
  auto st = new_storage(std::get<BufferArg>(buf.arg()).id, std::move(values));
  UOp view = buf.reshape(root.shape());
  s_->uop = low.axes[0] ? view.multi(low.axes[0]) : view;
  s_->storages = {st};
  return *this;
}

Tensor& Tensor::assign(const Tensor& value) {
  if (value.shape() != shape())
    throw ShapeError(fmt::format("ASSIGN: value of shape {} into a tensor of shape {}", shape_str(value.shape()),
                                 shape_str(shape())));
  if (s_->view_base) {  // a shrink of a realized tensor: write the region, keep the rest
    Tensor base(s_->view_base);
    std::vector<std::pair<int64_t, int64_t>> ba;
    for (size_t i = 0; i < base.shape().size(); ++i)
      ba.push_back({s_->view_region[i].first, base.shape()[i] - s_->view_region[i].second});
    Tensor mask = Tensor::full(shape(), 1, DType::bool_).pad(ba);
    Tensor inside = value.cast(dtype()).pad(ba);
    UOp m = mask.uop(), full = m.where(inside.uop(), base.uop());
    Tensor merged = base.derive(full);
    merged.s_->storages.insert(merged.s_->storages.end(), value.s_->storages.begin(), value.s_->storages.end());
    base.assign(merged);
    base.realize();
    s_->uop = base.uop().shrink(spans(s_->view_region));
    return *this;
  }
  realize();
  Tensor v = value.cast(dtype());
  s_->uop = uop().assign(v.uop());
  s_->storages.insert(s_->storages.end(), v.s_->storages.begin(), v.s_->storages.end());
  return *this;
}

HostBuffer Tensor::host() const {
  Tensor t = *this;
  t.realize();
  std::vector<HostBuffer> v = Interpreter(lookup).evaluate(t.uop());
  HostBuffer out = v.at(0);
  out.shape = shape();
  return out;
}

std::vector<Tensor> Tensor::shards() const {
  Tensor t = *this;
  t.realize();
  UOp local = t.uop().op() == Ops::MULTI ? t.uop().src(0) : t.uop();
  std::vector<HostBuffer> v = Interpreter(lookup).evaluate(local);
  std::vector<std::string> devs = devices();
  std::vector<Tensor> out;
  for (size_t i = 0; i < v.size(); ++i) {
    v[i].shape = local.shape();
    out.push_back(from_host(v[i], devs.at(i)));
  }
  return out;
}

Schedule Tensor::schedule() const {
  Lowered low = lower_multi({uop()}, current_settings());
  Schedule s;
  s.algorithms = low.algorithms;
  ItemPlan plan = plan_schedule(low.roots);
  for (const ScheduleItem& item : plan.items) {
    if (item.kind != ScheduleItem::Kind::copy) continue;
    const UOp& c = item.ast;
    s.copy_items.push_back({c.src(0).device().name(), c.device().name(), ringrt::prod(c.shape()) * itemsize(c.dtype())});
  }
  s.kernel_count = static_cast<int64_t>(plan.kernels());
  s.listing = plan.to_string();
  return s;
}

}  // namespace ringrt
