#include "runtime/api/tensor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <sstream>

#include "core/errors.hpp"
#include "rewrite/lower/lower.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/api/internal.hpp"
#include "runtime/device/device.hpp"
#include "runtime/engine/collect.hpp"
#include "runtime/engine/program_cache.hpp"
#include "runtime/engine/realize.hpp"

namespace ringrt {

// ---------------------------------------------------------------------------------------------
// construction

Tensor Tensor::from_host(HostBuffer data, std::string device) {
  GraphUse use;
  check_dtype(data.dtype, "from_host");
  if (static_cast<int64_t>(data.bytes.size()) != ringrt::prod(data.shape) * itemsize(data.dtype))
    throw ShapeError(fmt::format("from_host: {} bytes for shape {} of {}", data.bytes.size(), shape_str(data.shape),
                                 dtype_name(data.dtype)));
  ringrt::device(device);  // a DeviceError for an unknown device, before anything is built
  UOp buf = new_buffer(DeviceSpec(device), data.numel(), data.dtype);
  Shape shape = data.shape;
  data.shape = {data.numel()};
  auto st = new_storage(buf, {std::move(data)});
  return Tensor(make_state(buf.reshape(shape), {st}));
}

Tensor Tensor::empty(Shape shape, DType dtype, std::string device) {
  GraphUse use;
  check_dtype(dtype, "empty");
  UOp buf = new_buffer(DeviceSpec(device), ringrt::prod(shape), dtype);  // ShapeError for bad shapes
  ringrt::device(device);
  auto st = new_storage(buf, {});  // uninitialized device memory; DeviceError when it does not fit
  return Tensor(make_state(buf.reshape(shape), {st}));
}

Tensor Tensor::full(Shape shape, double value, DType dtype, std::string device) {
  GraphUse use;
  check_dtype(dtype, "full");
  ringrt::prod(shape);  // ShapeError for negative or huge shapes
  ringrt::device(device);
  return Tensor(make_state(broadcast_to(const_uop(dtype, value, DeviceSpec(device)), shape), {}));
}

Tensor Tensor::constant(double value, DType dtype) {
  GraphUse use;
  return Tensor(make_state(const_uop(dtype, value), {}));
}

Tensor Tensor::arange(int64_t n, DType dtype, std::string device) {
  GraphUse use;
  check_dtype(dtype, "arange");
  ringrt::prod({n});
  HostBuffer b(dtype, {n});
  for (int64_t i = 0; i < n; ++i) is_float(dtype) ? b.set(i, static_cast<double>(i)) : b.set_int(i, i);
  return from_host(std::move(b), std::move(device));
}

Tensor Tensor::derive(UOp u) const {
  GraphUse use;
  Tensor t(make_state(u, s_->storages));
  t.s_->placeholder = s_->placeholder;  // built on a placeholder: planning only
  return t;
}

Tensor Tensor::derive(UOp u, const std::vector<Tensor>& also) const {
  GraphUse use;
  Tensor t = derive(u);
  for (const Tensor& o : also) {
    hold(*t.s_, o.s_->storages);
    t.s_->placeholder = t.s_->placeholder || o.s_->placeholder;
  }
  return t;
}

Tensor Tensor::alloc_multi(const Shape& local, DType dtype, const std::vector<std::string>& devices,
                           std::optional<int> axis, std::vector<HostBuffer> data) {
  GraphUse use;
  UOp buf = new_buffer(DeviceSpec(DeviceTuple(devices)), ringrt::prod(local), dtype);
  for (auto& d : data) d.shape = {d.numel()};
  auto st = new_storage(buf, data);  // empty data: uninitialized; DeviceError when it does not fit
  UOp view = buf.reshape(local);
  return Tensor(make_state(axis ? view.multi(*axis) : view, {st}));
}

// ---------------------------------------------------------------------------------------------
// multi-device

Tensor Tensor::shard(const std::vector<std::string>& devices, std::optional<int> axis) const {
  GraphUse use;
  if (devices.empty()) throw DeviceError("shard: no devices given");
  for (const auto& d : devices) ringrt::device(d);  // DeviceError naming an unknown device
  if (std::set<std::string>(devices.begin(), devices.end()).size() != devices.size())
    throw DeviceError(fmt::format("shard: devices repeat in ({})", fmt::join(devices, ", ")));
  if (uop().device().tuple()) return reshard(devices, axis);  // tensor_ops.cpp
  UOp on_all = uop().copy_to_device(DeviceSpec(DeviceTuple(devices)));
  if (!axis) return derive(on_all);
  int rank = static_cast<int>(shape().size());
  int ax = *axis < 0 ? *axis + rank : *axis;
  if (ax < 0 || ax >= rank)
    throw ShapeError(fmt::format("shard: axis {} out of range for shape {}", *axis, shape_str(shape())));
  int64_t len = shape()[static_cast<size_t>(ax)], n = static_cast<int64_t>(devices.size());
  if (len % n != 0)
    throw ShapeError(
        fmt::format("shard: axis {} of shape {} has length {}, which does not split evenly over {} devices", ax,
                    shape_str(shape()), len, n));
  return derive(on_all.shard_local(ax).multi(ax));
}

Tensor Tensor::to(const std::string& device) const {
  GraphUse use;
  ringrt::device(device);
  if (uop().device().single() && uop().device().name() == device) return *this;
  return derive(uop().copy_to_device(DeviceSpec(device)));
}

// ---------------------------------------------------------------------------------------------
// movement and math

Tensor Tensor::reshape(Shape s) const {
  GraphUse use;
  return derive(uop().reshape(s));
}
Tensor Tensor::expand(Shape s) const {
  GraphUse use;
  return derive(uop().expand(s));
}
Tensor Tensor::permute(std::vector<int> order) const {
  GraphUse use;
  std::vector<int64_t> o;
  for (int a : order) o.push_back(a < 0 ? a + static_cast<int64_t>(shape().size()) : a);
  return derive(uop().permute(o));
}
Tensor Tensor::pad(std::vector<std::pair<int64_t, int64_t>> ba) const {
  GraphUse use;
  return derive(uop().pad(spans(ba)));
}
Tensor Tensor::shrink(std::vector<std::pair<int64_t, int64_t>> be) const {
  GraphUse use;
  Tensor t = derive(uop().shrink(spans(be)));
  if (s_->view_base) {  // a shrink of a view is a view of its base: the regions compose
    t.s_->view_base = s_->view_base;
    for (size_t i = 0; i < be.size(); ++i) {
      int64_t begin = s_->view_region.at(i).first;
      t.s_->view_region.push_back({begin + be[i].first, begin + be[i].second});
    }
  } else {
    t.s_->view_base = s_;
    t.s_->view_region = be;
  }
  return t;
}
Tensor Tensor::flip(std::vector<int> axes) const {
  GraphUse use;
  std::vector<int64_t> flags(shape().size(), 0);
  for (int a : axes) {
    int ax = a < 0 ? a + static_cast<int>(flags.size()) : a;
    if (ax < 0 || ax >= static_cast<int>(flags.size()))
      throw ShapeError(fmt::format("FLIP: axis {} out of range for shape {}", a, shape_str(shape())));
    flags[static_cast<size_t>(ax)] = 1;
  }
  return derive(uop().flip(flags));
}

Ops checked_ir_op(const char* what, ReduceOp op) {
  if (static_cast<unsigned>(op) > static_cast<unsigned>(ReduceOp::min))
    throw ShapeError(fmt::format("{}: {} is not a ReduceOp (sum, prod, max, min)", what, static_cast<int>(op)));
  return ir_op(op);
}

Ops checked_ir_op(const char* what, BinaryOp op) {
  if (static_cast<unsigned>(op) > static_cast<unsigned>(BinaryOp::bitwise_xor))
    throw ShapeError(fmt::format("{}: {} is not a BinaryOp (add .. bitwise_xor)", what, static_cast<int>(op)));
  return ir_op(op);
}

Tensor Tensor::reduce(ReduceOp rop, std::vector<int> axes) const {
  GraphUse use;
  Ops op = checked_ir_op("REDUCE_AXIS", rop);
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
Tensor Tensor::sum(std::vector<int> axes) const {
  GraphUse use;
  if (dtype() == DType::bool_) return cast(DType::int32).sum(std::move(axes));  // a count, as tinygrad's
  return reduce(ReduceOp::sum, std::move(axes));
}
Tensor Tensor::max(std::vector<int> axes) const {
  GraphUse use;
  return reduce(ReduceOp::max, std::move(axes));
}
Tensor Tensor::min(std::vector<int> axes) const {
  GraphUse use;
  return reduce(ReduceOp::min, std::move(axes));
}
Tensor Tensor::prod(std::vector<int> axes) const {
  GraphUse use;
  return reduce(ReduceOp::prod, std::move(axes));
}
Tensor Tensor::cast(DType d) const {
  GraphUse use;
  check_dtype(d, "cast");
  return derive(uop().cast(d));
}
Tensor Tensor::contiguous() const {
  GraphUse use;
  return derive(uop().contiguous());
}

Tensor Tensor::binary(BinaryOp bop, const Tensor& o) const {
  GraphUse use;
  Ops op = checked_ir_op("binary", bop);
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
  hold(*t.s_, o.s_->storages);
  return t;
}

Tensor operator+(const Tensor& a, const Tensor& b) {
  GraphUse use;
  return a.binary(BinaryOp::add, b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  GraphUse use;
  return a.binary(BinaryOp::sub, b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  GraphUse use;
  return a.binary(BinaryOp::mul, b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  GraphUse use;
  return a.binary(BinaryOp::div, b);
}
Tensor Tensor::maximum(const Tensor& o) const {
  GraphUse use;
  return binary(BinaryOp::max, o);
}
Tensor Tensor::minimum(const Tensor& o) const {
  GraphUse use;
  return binary(BinaryOp::min, o);
}

// ---------------------------------------------------------------------------------------------
// realization

const UOp& Tensor::uop() const { return s_->uop; }
Shape Tensor::shape() const {
  GraphUse use;
  return uop().shape();
}
DType Tensor::dtype() const {
  GraphUse use;
  return uop().dtype();
}
std::optional<int> Tensor::shard_axis() const {
  GraphUse use;
  return uop().logical() ? uop().axis() : std::nullopt;
}
std::vector<std::string> Tensor::devices() const {
  GraphUse use;
  const DeviceSpec& d = uop().device();
  if (d.tuple()) return d.names();
  if (d.single()) return {d.name()};
  return {};
}

Tensor& Tensor::realize() {
  realize_all({*this});
  return *this;
}

void Tensor::realize_all(const std::vector<Tensor>& tensors) {
  std::vector<StatePtr> todo;
  for (const Tensor& t : tensors)
    if (std::find(todo.begin(), todo.end(), t.s_) == todo.end()) todo.push_back(t.s_);
  realize_states(todo, true);  // its GraphUse collects at the end when the graph has grown
}

const Tensor& Tensor::synchronize() const {
  std::vector<std::shared_ptr<DeviceStorage>> storages;
  {
    std::lock_guard<std::recursive_mutex> lock(realize_mutex());
    storages = s_->storages;
  }
  for (const auto& st : storages)
    if (st) st->wait_pending();
  return *this;
}

size_t Tensor::programs_built() { return program_cache_stats().misses; }

EngineStats Tensor::engine_stats() {
  collect_garbage(true);
  ProgramCacheStats p = program_cache_stats();
  EngineCounts c = engine_counts();
  size_t in_flight = in_flight_count();
  EngineStats s;
  s.programs_built = p.misses;
  s.program_cache_hits = p.hits;
  s.program_cache_evictions = p.evictions;
  s.programs_cached = p.size;
  s.program_cache_capacity = p.capacity;
  s.graph_nodes = UOpGraph::global().alive();
  s.storages = c.storages;
  s.tensors = c.states;
  s.assignments = c.assignments;
  s.in_flight = in_flight;
  return s;
}

Tensor& Tensor::assign(const Tensor& value) {
  GraphUse use;
  if (value.shape() != shape())
    throw ShapeError(fmt::format("ASSIGN: value of shape {} into a tensor of shape {}", shape_str(value.shape()),
                                 shape_str(shape())));
  if (value.devices() != devices())
    throw DeviceError(fmt::format("ASSIGN: value on {} into a tensor on {}", value.uop().device().to_string(),
                                  uop().device().to_string()));
  auto axis_str = [](std::optional<int> a) { return a ? std::to_string(*a) : std::string("none"); };
  // into a view of a sharded tensor a replicated value works too: each device keeps its part
  bool replicated_into_view = s_->view_base && shard_axis() && !value.uop().logical() && value.uop().device().tuple();
  // one logical value on every device (a lazy allreduce's result, w - lr * g.sum({0})) into a tensor held
  // per device: each device stores its copy of the value (rewrite/rules/multi.cpp assign_multi)
  bool logical_into_replicated =
      !value.shard_axis() && !shard_axis() && value.uop().logical() && !uop().logical() && uop().device().tuple();
  // both replicated, but one a value per device (which may differ between devices) and the other one
  // logical value for every device: the axes print alike, so say what differs
  if (!replicated_into_view && !logical_into_replicated && value.shard_axis() == shard_axis() &&
      value.uop().logical() != uop().logical())
    throw ShapeError(fmt::format(
        "ASSIGN: value {} into a tensor {} (both sharded on axis {}, shape {}); realize() the value first, which "
        "stores it per device",
        value.uop().logical() ? "replicated as one logical value (e.g. a lazy allreduce's result)" : "held per device",
        uop().logical() ? "replicated as one logical value" : "held per device", axis_str(shard_axis()),
        shape_str(shape())));
  if (!replicated_into_view && !logical_into_replicated &&
      (value.shard_axis() != shard_axis() || value.uop().logical() != uop().logical()))
    throw ShapeError(fmt::format("ASSIGN: value sharded on axis {} into a tensor sharded on axis {} (shape {}); {}",
                                 axis_str(value.shard_axis()), axis_str(shard_axis()), shape_str(shape()),
                                 value.uop().logical() && !value.shard_axis()
                                     ? "realize() the value first (a lazy allreduce's result is one logical value)"
                                     : "reshard the value first"));
  if (s_->view_base) return assign_view(value);
  if (!s_->borrowed && !is_buffer_view(uop()) && group::movement().contains(uop().op()))
    throw ShapeError(
        fmt::format("ASSIGN: the tensor (shape {}) is a lazy {} view with no memory of its own (e.g. from full "
                    "or expand); realize a contiguous() copy of it first, or assign into a shrink of it",
                    shape_str(shape()), op_name(uop().op())));
  own(s_);  // a borrowed value gets its own memory first: the write never reaches the lender
  Tensor v = value.cast(dtype());
  {  // a value read this tensor's assignment that own() just ran: it reads the destination (a chain stays shallow)
    std::lock_guard<std::recursive_mutex> lock(realize_mutex());
    if (UOp settled = with_run_assigns_settled(v.uop()); settled.node() != v.uop().node()) v = v.derive(settled);
  }
  static std::atomic<int64_t> calls{0};  // each call its own ASSIGN: X.assign(X + 1) runs every time
  check_has_memory(*v.s_, "assign");
  {  // another thread's before_write reads every live state (realize.cpp live_states) under this lock
    std::lock_guard<std::recursive_mutex> lock(realize_mutex());
    s_->uop = uop().assign(v.uop(), calls++);
    hold(*s_, v.s_->storages);
  }
  return *this;
}

// A shrink (of a shrink ...) of a tensor: the base, realized first, is assigned a select between the
// value (padded into the region) and its own elements, so every device holding part of the region
// writes that part and every other element keeps its value. Reference: tinygrad assigns into a shrink
// of a buffer with a store through the view; here the write is one in-place kernel over the base.
Tensor& Tensor::assign_view(const Tensor& value) {
  GraphUse use;
  Tensor base(s_->view_base);
  own(base.s_);
  const auto& region = s_->view_region;
  std::vector<std::pair<int64_t, int64_t>> ba;
  for (size_t i = 0; i < region.size(); ++i) ba.push_back({region[i].first, base.shape()[i] - region[i].second});
  Tensor v = value.cast(dtype());
  if (std::optional<int> axis = base.shard_axis()) {
    auto ax = static_cast<size_t>(*axis);
    std::vector<std::string> devs = base.devices();
    int64_t len = base.shape()[ax], ndev = static_cast<int64_t>(devs.size()), local = len / ndev;
    auto [begin, end] = region[ax];
    if (begin != 0 || end != len) {
      if (begin % local != 0 || end % local != 0)
        throw ShapeError(fmt::format(
            "ASSIGN: writing into shrink ({}, {}) on the sharded axis {} of shape {}: not whole shards of {} "
            "(over {} devices)",
            begin, end, ax, shape_str(base.shape()), local, ndev));
      // the region lies on some devices only: each needs its part of the value, so a value sharded
      // over all of them is gathered and replicated first
      if (v.uop().logical()) v = v.to(devs[0]).shard(devs, std::nullopt);
    }
  }
  UOp mask = broadcast_to(const_uop(DType::bool_, 1, base.uop().device()), shape()).pad(spans(ba));
  Tensor merged = base.derive(mask.where(v.uop().pad(spans(ba)), base.uop()));
  hold(*merged.s_, v.s_->storages);
  base.assign(merged);
  std::lock_guard<std::recursive_mutex> lock(realize_mutex());  // as in assign: other threads read this state
  // holding the assignment, this view is no reader of the old contents the write must wait for
  s_->uop = base.uop().shrink(spans(region));
  base.realize();
  s_->uop = base.uop().shrink(spans(region));
  s_->storages = base.s_->storages;
  s_->borrowed = false;
  return *this;
}

HostBuffer Tensor::host() const {
  Tensor t = *this;
  t.realize();
  GraphUse use;
  HostBuffer out = interpret_buffers(t.uop()).at(0);  // a realized tensor: only gathers its buffers
  out.shape = shape();
  return out;
}

std::vector<HostBuffer> Tensor::interpret_shards() const {
  GraphUse use;
  check_has_memory(*s_, "interpret_shards");
  auto keep = s_->storages;
  UOp local = uop();
  if (!is_buffer_view(local)) local = lower_multi({uop()}, current_settings()).roots[0];
  if (local.op() == Ops::MULTI) local = local.src(0);
  std::vector<HostBuffer> out = interpret_buffers(local);
  for (auto& v : out) v.shape = local.shape();
  return out;
}

HostBuffer Tensor::interpret() const {
  GraphUse use;
  check_has_memory(*s_, "interpret");
  auto keep = s_->storages;
  HostBuffer out = interpret_buffers(uop()).at(0);
  out.shape = shape();
  return out;
}

std::vector<Tensor> Tensor::shards() const {
  std::vector<Tensor> out;
  for (auto& [name, shard] : device_values(/*local_only=*/false)) out.push_back(std::move(shard));
  return out;
}

std::vector<std::pair<std::string, Tensor>> Tensor::local_shards() const { return device_values(/*local_only=*/true); }

std::vector<std::pair<std::string, HostBuffer>> Tensor::local_host_shards() const {
  return host_values(/*local_only=*/true);
}

void Tensor::read_local_shards(int64_t chunk_elements, const ShardChunkFn& fn) const {
  if (chunk_elements < 1)
    throw ShapeError(fmt::format("read_local_shards: chunk_elements {} (at least 1 element)", chunk_elements));
  Tensor t = *this;
  t.realize();
  std::vector<std::string> devs = devices();
  std::shared_ptr<DeviceStorage> storage;  // the realized buffer whose blocks are the shards, if it is one
  {
    GraphUse use;
    UOp local = t.uop().op() == Ops::MULTI ? t.uop().src(0) : t.uop();
    if (is_buffer_view(t.uop())) storage = find_storage(buffer_id_of(local));
    bool shards_are_blocks = storage && storage->numel() == ringrt::prod(local.shape()) &&
                             storage->blocks().size() == devs.size() && storage->dtype() == local.dtype();
    for (size_t d = 0; shards_are_blocks && d < devs.size(); ++d)
      shards_are_blocks = storage->blocks()[d].device->name() == devs[d];
    if (!shards_are_blocks) storage = nullptr;
  }
  // Each local shard's size and how to read a range of it: from its device's block, or, for any other
  // value, from the host copy the interpreter made of the whole.
  std::vector<std::pair<std::string, HostBuffer>> whole;
  if (!storage) whole = host_values(/*local_only=*/true);
  struct Shard {
    std::string device;
    int64_t numel;
    size_t block;             // storage: the device's block
    const HostBuffer* value;  // else: its whole value
  };
  std::vector<Shard> local;
  for (size_t d = 0; storage && d < devs.size(); ++d)
    if (is_local_device(devs[d])) local.push_back({devs[d], storage->numel(), d, nullptr});
  for (const auto& [dev, value] : whole) local.push_back({dev, value.numel(), 0, &value});
  int64_t n = 0;
  for (const Shard& sh : local) n = std::max(n, sh.numel);
  HostBuffer chunk(dtype(), {0});
  for (int64_t first = 0; first < n; first += chunk_elements) {
    for (const Shard& sh : local) {
      int64_t m = std::min(chunk_elements, sh.numel - first);
      if (m <= 0) continue;
      if (chunk.numel() != m) chunk = HostBuffer(dtype(), {m});  // the last chunk only is shorter
      if (sh.value)
        std::memcpy(chunk.bytes.data(), sh.value->bytes.data() + first * itemsize(dtype()), chunk.bytes.size());
      else
        storage->read(sh.block, first, chunk);
      fn(sh.device, first, chunk);
    }
  }
}

// Realizes, then reads each device's value (another rank's, when skipped, read as zeros and dropped).
std::vector<std::pair<std::string, HostBuffer>> Tensor::host_values(bool local_only) const {
  Tensor t = *this;
  t.realize();
  GraphUse use;
  UOp local = t.uop().op() == Ops::MULTI ? t.uop().src(0) : t.uop();
  std::vector<HostBuffer> v = interpret_buffers(local, /*remote_as_zeros=*/local_only);
  std::vector<std::string> devs = devices();
  std::vector<std::pair<std::string, HostBuffer>> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (local_only && !is_local_device(devs.at(i))) continue;
    v[i].shape = local.shape();
    out.emplace_back(devs.at(i), std::move(v[i]));
  }
  return out;
}

std::vector<std::pair<std::string, Tensor>> Tensor::device_values(bool local_only) const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& [dev, value] : host_values(local_only)) out.emplace_back(dev, from_host(value, dev));
  return out;
}

Schedule Tensor::schedule() const {
  GraphUse use;
  return schedule_of(uop(), s_->borrowed);
}

std::vector<std::string> Tensor::algorithms() const {
  GraphUse use;
  return algorithm_names(lower_multi({uop()}, current_settings()).algorithms);
}

std::string Tensor::to_dot(const AllreduceSettings& settings) const {
  GraphUse use;
  Lowered low = lower_multi({uop()}, settings);
  std::ostringstream out;
  uop().graph().write_dot(out, low.roots);
  return out.str();
}

}  // namespace ringrt
