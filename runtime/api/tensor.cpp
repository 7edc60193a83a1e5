#include "runtime/api/tensor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "codegen/view.hpp"
#include "rewrite/errors.hpp"
#include "rewrite/lower/lower.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/device/device.hpp"
#include "runtime/engine/executor.hpp"
#ifdef RINGRT_HAVE_HIP
#endif
#include "codegen/item_kernel.hpp"
#include "rewrite/plan/schedule.hpp"

namespace ringrt {

// ---------------------------------------------------------------------------------------------
// storage: the data of realized buffers, alive while a tensor refers to it

namespace {

using Storage = DeviceStorage;

struct Registry {
  std::mutex mu;
  std::unordered_map<int64_t, std::weak_ptr<Storage>> storages;
  std::vector<std::weak_ptr<Tensor::State>> live;
};
Registry& registry() {
  static Registry r;
  return r;
}

void register_storage(const std::shared_ptr<Storage>& s) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.storages[s->id()] = s;
}

// Device memory for BUFFER buf, filled from host data (one HostBuffer per device, or one for all).
std::shared_ptr<Storage> new_storage(const UOp& buf, const std::vector<HostBuffer>& data) {
  auto s = std::make_shared<Storage>(std::get<BufferArg>(buf.arg()).id, buf.device(), buf.dtype(), prod(buf.shape()));
  if (!data.empty()) s->from_host(data);
  register_storage(s);
  return s;
}

std::shared_ptr<Storage> find_storage(int64_t id) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.storages.find(id);
  return it == r.storages.end() ? nullptr : it->second.lock();
}

// The reference interpreter reading tensor buffers from device memory.
std::vector<HostBuffer> interpret(const UOp& u) {
  std::unordered_map<int64_t, std::vector<HostBuffer>> host;
  Interpreter in([&](int64_t id) -> const std::vector<HostBuffer>* {
    auto it = host.find(id);
    if (it == host.end()) {
      auto st = find_storage(id);
      if (!st) return nullptr;
      it = host.emplace(id, st->to_host()).first;
    }
    return &it->second;
  });
  return in.evaluate(u);
}

// Compiled programs by (lowered root, settings): running the same computation again does no
// rewriting, scheduling or compiling.
struct ProgramCache {
  struct Entry {
    AllreduceSettings settings;
    Lowered lowered;
    std::shared_ptr<Program> program;
  };
  std::mutex mu;
  std::unordered_map<const detail::Node*, std::vector<Entry>> entries;
  size_t builds = 0;
};
ProgramCache& program_cache() {
  static ProgramCache c;
  return c;
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

// root as a view of a buffer when it is a CONTIGUOUS of movement ops over a realized BUFFER (through
// a MULTI) whose elements, on every device, are one contiguous range of the buffer at the same offset
// (a reshape; a shrink on the outermost axes that are not 1; a shrink of each shard on an axis other
// than the sharded one, when the axes before it have local size 1; chains of these): the buffer, a 1-D
// SHRINK to that range (none for the whole buffer) and a RESHAPE to the local shape, under a MULTI on
// the root's shard axis. Otherwise nothing. Shapes in elements; throws what lower_multi throws for
// the movement ops (a ShapeError for a shrink on the sharded axis that is not one shard or the whole).
// Reference: tinygrad's BUFFER_VIEW (a CONTIGUOUS of a view that is a contiguous range of a buffer is
// that range of the buffer, no kernel); whether it aliases the buffer: see Tensor::State::borrowed.
std::optional<UOp> as_buffer_view(const UOp& root, const AllreduceSettings& settings) {
  if (root.op() != Ops::CONTIGUOUS) return std::nullopt;
  UOp under = root.src(0);
  while (group::movement().contains(under.op()) || under.op() == Ops::MULTI) under = under.src(0);
  if (under.op() != Ops::BUFFER) return std::nullopt;
  Lowered low = lower_multi({root}, settings);
  const UOp& local = low.roots.at(0);
  if (local.op() != Ops::CONTIGUOUS) return std::nullopt;
  const UOp& chain = local.src(0);
  int64_t numel = prod(chain.shape());
  int64_t ndev = std::max<int64_t>(1, static_cast<int64_t>(chain.device().count()));
  codegen::Expr gid = codegen::gid_var(numel);
  codegen::ViewAccess access =
      codegen::view_access(chain, {codegen::unravel(gid, chain.shape()), {}}, codegen::dnum_var(ndev - 1));
  if (access.base.op() != Ops::BUFFER || !access.valid.always()) return std::nullopt;
  int64_t offset = 0;
  if (numel > 0) {  // element gid of the view is element offset + gid of the buffer, on every device
    std::optional<int64_t> off = (access.index - gid).as_constant();
    if (!off && numel == 1 && access.index.min() == access.index.max()) off = access.index.min();
    if (!off) return std::nullopt;
    offset = *off;
  }
  UOp view = access.base;
  if (offset != 0 || numel != prod(view.shape())) view = view.shrink(spans({{offset, offset + numel}}));
  view = view.reshape(local.shape());
  return low.axes.at(0) ? view.multi(low.axes[0]) : view;
}

}  // namespace

struct Tensor::State {
  UOp uop;
  std::vector<std::shared_ptr<Storage>> storages;  // every buffer the graph reads
  // For a shrink (of a shrink ...) of a tensor: that tensor and the region of it, in its coordinates;
  // assign() writes through the view into it.
  std::shared_ptr<State> view_base;
  std::vector<std::pair<int64_t, int64_t>> view_region;
  // Realized without memory of its own: uop is a contiguous range of another tensor's buffer (a
  // contiguous() of a view, see as_buffer_view). A value all the same: it gets its own copy before
  // that buffer is written (Realizer::run_assign) or before it is written itself (assign).
  bool borrowed = false;
};

namespace {
std::shared_ptr<Tensor::State> make_state(UOp u, std::vector<std::shared_ptr<Storage>> storages) {
  auto s = std::make_shared<Tensor::State>();
  s->uop = u;
  s->storages = std::move(storages);
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.live.size() > 64) {  // drop dead entries now and then
    r.live.erase(std::remove_if(r.live.begin(), r.live.end(), [](const auto& w) { return w.expired(); }), r.live.end());
  }
  r.live.push_back(s);
  return s;
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// construction

Tensor Tensor::from_host(HostBuffer data, std::string device) {
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
  check_dtype(dtype, "empty");
  UOp buf = new_buffer(DeviceSpec(device), ringrt::prod(shape), dtype);  // ShapeError for bad shapes
  ringrt::device(device);
  auto st = new_storage(buf, {});  // uninitialized device memory; DeviceError when it does not fit
  return Tensor(make_state(buf.reshape(shape), {st}));
}

Tensor Tensor::full(Shape shape, double value, DType dtype, std::string device) {
  check_dtype(dtype, "full");
  ringrt::prod(shape);  // ShapeError for negative or huge shapes
  ringrt::device(device);
  return Tensor(make_state(broadcast_to(const_uop(dtype, value, DeviceSpec(device)), shape), {}));
}

Tensor Tensor::constant(double value, DType dtype) { return Tensor(make_state(const_uop(dtype, value), {})); }

Tensor Tensor::arange(int64_t n, DType dtype, std::string device) {
  check_dtype(dtype, "arange");
  ringrt::prod({n});
  HostBuffer b(dtype, {n});
  for (int64_t i = 0; i < n; ++i) is_float(dtype) ? b.set(i, static_cast<double>(i)) : b.set_int(i, i);
  return from_host(std::move(b), std::move(device));
}

Tensor Tensor::derive(UOp u) const { return Tensor(make_state(u, s_->storages)); }

Tensor Tensor::derive(UOp u, const std::vector<Tensor>& also) const {
  Tensor t = derive(u);
  for (const Tensor& o : also)
    t.s_->storages.insert(t.s_->storages.end(), o.s_->storages.begin(), o.s_->storages.end());
  return t;
}

Tensor Tensor::alloc_multi(const Shape& local, DType dtype, const std::vector<std::string>& devices,
                           std::optional<int> axis, std::vector<HostBuffer> data) {
  UOp buf = new_buffer(DeviceSpec(DeviceTuple(devices)), ringrt::prod(local), dtype);
  for (auto& d : data) d.shape = {d.numel()};
  auto st = new_storage(buf, data);  // empty data: uninitialized; DeviceError when it does not fit
  UOp view = buf.reshape(local);
  return Tensor(make_state(axis ? view.multi(*axis) : view, {st}));
}

// ---------------------------------------------------------------------------------------------
// multi-device

Tensor Tensor::shard(const std::vector<std::string>& devices, std::optional<int> axis) const {
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
  ringrt::device(device);
  if (uop().device().single() && uop().device().name() == device) return *this;
  return derive(uop().copy_to_device(DeviceSpec(device)));
}

// ---------------------------------------------------------------------------------------------
// movement and math

Tensor Tensor::reshape(Shape s) const { return derive(uop().reshape(s)); }
Tensor Tensor::expand(Shape s) const { return derive(uop().expand(s)); }
Tensor Tensor::permute(std::vector<int> order) const {
  std::vector<int64_t> o;
  for (int a : order) o.push_back(a < 0 ? a + static_cast<int64_t>(shape().size()) : a);
  return derive(uop().permute(o));
}
Tensor Tensor::pad(std::vector<std::pair<int64_t, int64_t>> ba) const { return derive(uop().pad(spans(ba))); }
Tensor Tensor::shrink(std::vector<std::pair<int64_t, int64_t>> be) const {
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
  if (static_cast<size_t>(op) >= kNumOps || !is_reduce_op(op))
    throw ShapeError(fmt::format("REDUCE_AXIS: {} is not a reduce op (ADD, MUL, MAX, MIN)", static_cast<int>(op)));
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
  if (dtype() == DType::bool_) return cast(DType::int32).sum(std::move(axes));  // a count, as tinygrad's
  return reduce(Ops::ADD, std::move(axes));
}
Tensor Tensor::max(std::vector<int> axes) const { return reduce(Ops::MAX, std::move(axes)); }
Tensor Tensor::min(std::vector<int> axes) const { return reduce(Ops::MIN, std::move(axes)); }
Tensor Tensor::prod(std::vector<int> axes) const { return reduce(Ops::MUL, std::move(axes)); }
Tensor Tensor::cast(DType d) const {
  check_dtype(d, "cast");
  return derive(uop().cast(d));
}
Tensor Tensor::contiguous() const { return derive(uop().contiguous()); }

Tensor Tensor::binary(Ops op, const Tensor& o) const {
  if (static_cast<size_t>(op) >= kNumOps || !group::binary().contains(op))
    throw ShapeError(fmt::format("binary: {} is not a binary op", static_cast<size_t>(op) < kNumOps
                                                                      ? std::string(op_name(op))
                                                                      : std::to_string(static_cast<int>(op))));
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

namespace {
// The compiled program realizing roots with these settings, built once.
std::pair<std::shared_ptr<Program>, Lowered> program_for(const std::vector<UOp>& roots,
                                                         const AllreduceSettings& settings) {
  UOp key = roots.size() == 1 ? roots[0] : sink(roots);
  auto& cache = program_cache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    for (const auto& e : cache.entries[key.node()])
      if (e.settings == settings) return {e.program, e.lowered};
  }
  Lowered low = lower_multi(roots, settings);
  auto program = std::make_shared<Program>(plan_schedule(low.roots), low.roots);
  std::lock_guard<std::mutex> lock(cache.mu);
  cache.entries[key.node()].push_back({settings, low, program});
  ++cache.builds;
  return {program, low};
}
}  // namespace

Tensor& Tensor::realize() {
  realize_all({*this});
  return *this;
}

namespace {

// Assignments that have run: ASSIGN node -> the destination view it wrote. A graph built on a
// tensor before that tensor was realized still holds its ASSIGN; it reads the destination instead of
// running the assignment again.
struct AssignLog {
  std::mutex mu;
  std::unordered_map<const detail::Node*, UOp> dest;
};
AssignLog& assign_log() {
  static AssignLog log;
  return log;
}

int64_t buffer_id_of(const UOp& view) { return std::get<BufferArg>(buffer_of(view).arg()).id; }

bool contains(const UOp& graph, const UOp& node) {
  for (const UOp& u : graph.graph().toposort({graph}))
    if (u == node) return true;
  return false;
}

// The views of buffer id that root reads outside the assignment a (the old contents).
std::vector<UOp> reads_outside(const UOp& root, const UOp& a, int64_t id) {
  std::vector<UOp> found, stack{root};
  std::unordered_set<const detail::Node*> seen;
  while (!stack.empty()) {
    UOp u = stack.back();
    stack.pop_back();
    if (u == a || !seen.insert(u.node()).second) continue;
    if (is_buffer_view(u) && buffer_id_of(u) == id) {
      found.push_back(u);
      continue;
    }
    for (const UOp& s : u.src()) stack.push_back(s);
  }
  return found;
}

}  // namespace

// Realizing tensors and assignments (Tensor's friend).
struct Realizer {
  using StatePtr = std::shared_ptr<Tensor::State>;
  // Realizes the states with one program. `views`: a contiguous() of a contiguous range of a realized
  // buffer becomes that range (borrowed, no kernel); false: every state gets memory of its own.
  static void realize_states(const std::vector<StatePtr>& todo, bool views);
  // Gives a borrowed state memory of its own (one copy kernel); its value is unchanged.
  static void copy_out(const StatePtr& st);
  // Realizes st into memory of its own (to be written in place).
  static void own(const StatePtr& st);
  static void run_assign(const UOp& a, const StatePtr& owner, const AllreduceSettings& settings);
  static UOp settle_assigns(const StatePtr& st, const AllreduceSettings& settings);
  static inline thread_local std::vector<const Tensor::State*> realizing;  // owners up this thread's stack
};

namespace {
// Realized: a buffer's memory (of its own or borrowed); realize() has nothing to run for it.
bool is_realized(const Tensor::State& st) { return st.borrowed || is_buffer_view(st.uop); }
}  // namespace

void Realizer::copy_out(const StatePtr& st) {
  if (!st->borrowed) return;
  auto copy = make_state(st->uop.contiguous(), st->storages);
  realize_states({copy}, false);
  st->uop = copy->uop;
  st->storages = copy->storages;
  st->borrowed = false;
}

void Realizer::own(const StatePtr& st) {
  if (st->borrowed) {
    copy_out(st);
  } else if (!is_realized(*st)) {
    realize_states({st}, false);
  }
}

// Runs the assignment a (its value already free of other pending assignments): first every live
// tensor that still reads the destination's old contents is realized (write after read), then the
// program writes the value into the destination.
void Realizer::run_assign(const UOp& a, const StatePtr& owner, const AllreduceSettings& settings) {
  UOp dest = a.src(0);  // a buffer view, or a MULTI of one
  int64_t id = buffer_id_of(dest);
  std::vector<Tensor> readers;
  {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (auto& w : r.live)
      if (auto s = w.lock(); s && s != owner && !is_realized(*s) && buffers_read(s->uop).count(id))
        readers.push_back(Tensor(s));
  }
  // A reader holding this very assignment reads the new contents (it is realized after); one already
  // being realized up the stack is not waited for; a reader that cannot be realized would fail anyway.
  realizing.push_back(owner.get());
  for (Tensor& r : readers) {
    if (contains(r.uop(), a) || std::find(realizing.begin(), realizing.end(), r.s_.get()) != realizing.end()) continue;
    try {
      r.realize();
    } catch (const Error&) {
    }
  }
  realizing.pop_back();
  // values borrowing the destination's memory (those just realized too) get their own copy first
  std::vector<StatePtr> borrowers;
  {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (auto& w : r.live)
      if (auto s = w.lock(); s && s != owner && s->borrowed && buffers_read(s->uop).count(id)) borrowers.push_back(s);
  }
  for (const StatePtr& b : borrowers) copy_out(b);
  auto [program, low] = program_for({a.replace(a.src(), Arg())}, settings);  // one program for every call
  program->run({{}}, find_storage);
  std::lock_guard<std::mutex> lock(assign_log().mu);
  assign_log().dest.emplace(a.node(), dest);
}

// st's graph with every assignment in it run once (innermost first) and replaced by its
// destination; reads of a destination's old contents outside its assignment are snapshotted first.
UOp Realizer::settle_assigns(const StatePtr& st, const AllreduceSettings& settings) {
  UOp root = st->uop;
  for (;;) {
    std::unordered_map<const detail::Node*, UOp> sub;
    std::optional<UOp> pending;
    {
      std::lock_guard<std::mutex> lock(assign_log().mu);
      for (const UOp& u : root.graph().toposort({root})) {
        if (u.op() != Ops::ASSIGN) continue;
        if (auto it = assign_log().dest.find(u.node()); it != assign_log().dest.end()) {
          sub.emplace(u.node(), it->second);
        } else if (!pending) {
          pending = u;  // the first in order: its sources hold no unrun assignment
        }
      }
    }
    if (!sub.empty()) root = substitute(root, sub);
    if (!pending) return root;
    UOp a = *pending;
    if (a.node() != root.node()) {
      // old contents read elsewhere in this graph: copy them out before the destination changes
      std::unordered_map<const detail::Node*, UOp> snap{{a.node(), a}};  // a itself stays as it is
      for (const UOp& v : reads_outside(root, a, buffer_id_of(a.src(0)))) {
        auto copy = make_state(v.contiguous(), st->storages);
        realize_states({copy}, false);  // a copy in memory of its own, never a view of the destination
        snap.emplace(v.node(), copy->uop);
        st->storages.insert(st->storages.end(), copy->storages.begin(), copy->storages.end());
      }
      if (snap.size() > 1) {
        root = substitute(root, snap);
        continue;  // a is unchanged: its dest and value are excluded from the snapshot walk
      }
    }
    run_assign(a, st, settings);
  }
}

void Tensor::realize_all(const std::vector<Tensor>& tensors) {
  std::vector<std::shared_ptr<State>> todo;
  for (const Tensor& t : tensors)
    if (std::find(todo.begin(), todo.end(), t.s_) == todo.end()) todo.push_back(t.s_);
  Realizer::realize_states(todo, true);
}

void Realizer::realize_states(const std::vector<StatePtr>& states, bool views) {
  std::vector<StatePtr> todo;
  for (const StatePtr& st : states)
    if (!is_realized(*st)) todo.push_back(st);
  if (todo.empty()) return;
  AllreduceSettings settings = current_settings();

  // assignments write in place, once, before anything reads their result
  std::vector<StatePtr> plain;
  for (auto& st : todo) {
    auto keep = st->storages;
    st->uop = Realizer::settle_assigns(st, settings);
    if (is_buffer_view(st->uop)) continue;
    if (std::optional<UOp> view = views ? as_buffer_view(st->uop, settings) : std::nullopt) {
      st->uop = *view;  // no kernel: the range of the buffer, which the state keeps alive
      st->storages = {find_storage(buffer_id_of(*view))};
      st->borrowed = true;
      continue;
    }
    plain.push_back(st);
  }
  if (plain.empty()) return;

  std::vector<UOp> roots;
  for (auto& st : plain) roots.push_back(st->uop);
  auto [program, low] = program_for(roots, settings);
  std::vector<std::shared_ptr<Storage>> outputs;
  std::vector<std::vector<Block>> outs;
  std::vector<UOp> buffers;
  for (const UOp& root : low.roots) {
    DeviceSpec dev = root.device().none() ? DeviceSpec("CPU:0") : root.device();
    UOp buf = new_buffer(dev, ringrt::prod(root.shape()), root.dtype());
    outputs.push_back(new_storage(buf, {}));
    outs.push_back(outputs.back()->blocks());
    buffers.push_back(buf);
  }
  std::vector<std::shared_ptr<Storage>> keep;
  for (auto& st : plain) keep.insert(keep.end(), st->storages.begin(), st->storages.end());
  ExecOptions options;
  options.keep_alive.assign(outputs.begin(), outputs.end());
  program->run(outs, find_storage, options);
  for (size_t i = 0; i < plain.size(); ++i) {
    UOp view = buffers[i].reshape(low.roots[i].shape());
    plain[i]->uop = low.axes[i] ? view.multi(low.axes[i]) : view;
    plain[i]->storages = {outputs[i]};
  }
}

size_t Tensor::programs_built() {
  auto& cache = program_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  return cache.builds;
}

Tensor& Tensor::assign(const Tensor& value) {
  if (value.shape() != shape())
    throw ShapeError(fmt::format("ASSIGN: value of shape {} into a tensor of shape {}", shape_str(value.shape()),
                                 shape_str(shape())));
  if (value.devices() != devices())
    throw DeviceError(fmt::format("ASSIGN: value on {} into a tensor on {}", value.uop().device().to_string(),
                                  uop().device().to_string()));
  auto axis_str = [](std::optional<int> a) { return a ? std::to_string(*a) : std::string("none"); };
  // into a view of a sharded tensor a replicated value works too: each device keeps its part
  bool replicated_into_view = s_->view_base && shard_axis() && !value.uop().logical() && value.uop().device().tuple();
  if (!replicated_into_view && (value.shard_axis() != shard_axis() || value.uop().logical() != uop().logical()))
    throw ShapeError(
        fmt::format("ASSIGN: value sharded on axis {} into a tensor sharded on axis {} (shape {}); "
                    "reshard the value first",
                    axis_str(value.shard_axis()), axis_str(shard_axis()), shape_str(shape())));
  if (s_->view_base) return assign_view(value);
  if (!s_->borrowed && !is_buffer_view(uop()) && group::movement().contains(uop().op()))
    throw ShapeError(
        fmt::format("ASSIGN: the tensor (shape {}) is a lazy {} view with no memory of its own (e.g. from full "
                    "or expand); realize a contiguous() copy of it first, or assign into a shrink of it",
                    shape_str(shape()), op_name(uop().op())));
  Realizer::own(s_);  // a borrowed value gets its own memory first: the write never reaches the lender
  Tensor v = value.cast(dtype());
  static std::atomic<int64_t> calls{0};  // each call its own ASSIGN: X.assign(X + 1) runs every time
  s_->uop = uop().assign(v.uop(), calls++);
  s_->storages.insert(s_->storages.end(), v.s_->storages.begin(), v.s_->storages.end());
  return *this;
}

// A shrink (of a shrink ...) of a tensor: the base, realized first, is assigned a select between the
// value (padded into the region) and its own elements, so every device holding part of the region
// writes that part and every other element keeps its value. Reference: tinygrad assigns into a shrink
// of a buffer with a store through the view; here the write is one in-place kernel over the base.
Tensor& Tensor::assign_view(const Tensor& value) {
  Tensor base(s_->view_base);
  Realizer::own(base.s_);
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
  merged.s_->storages.insert(merged.s_->storages.end(), v.s_->storages.begin(), v.s_->storages.end());
  base.assign(merged);
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
  HostBuffer out = ringrt::interpret(t.uop()).at(0);  // a realized tensor: only gathers its buffers
  out.shape = shape();
  return out;
}

std::vector<HostBuffer> Tensor::interpret_shards() const {
  auto keep = s_->storages;
  UOp local = uop();
  if (!is_buffer_view(local)) local = lower_multi({uop()}, current_settings()).roots[0];
  if (local.op() == Ops::MULTI) local = local.src(0);
  std::vector<HostBuffer> out = ringrt::interpret(local);
  for (auto& v : out) v.shape = local.shape();
  return out;
}

HostBuffer Tensor::interpret() const {
  auto keep = s_->storages;
  HostBuffer out = ringrt::interpret(uop()).at(0);
  out.shape = shape();
  return out;
}

std::vector<Tensor> Tensor::shards() const {
  Tensor t = *this;
  t.realize();
  UOp local = t.uop().op() == Ops::MULTI ? t.uop().src(0) : t.uop();
  std::vector<HostBuffer> v = ringrt::interpret(local);
  std::vector<std::string> devs = devices();
  std::vector<Tensor> out;
  for (size_t i = 0; i < v.size(); ++i) {
    v[i].shape = local.shape();
    out.push_back(from_host(v[i], devs.at(i)));
  }
  return out;
}

Schedule Tensor::schedule() const {
  // a view of a realized buffer, or a contiguous() that will be one: nothing to run
  if (s_->borrowed || as_buffer_view(uop(), current_settings())) return {};
  Lowered low = lower_multi({uop()}, current_settings());
  Schedule s;
  s.algorithms = low.algorithms;
  ItemPlan plan = plan_schedule(low.roots);
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const ScheduleItem& item = plan.items[i];
    if (item.kind == ScheduleItem::Kind::kernel) {  // the IR the executor would compile for it
      s.kernel_items.push_back({i, item.device.to_string(), lower_item(item).kernel});
      continue;
    }
    const UOp& c = item.ast;
    s.copy_items.push_back(
        {c.src(0).device().name(), c.device().name(), ringrt::prod(c.shape()) * itemsize(c.dtype())});
  }
  s.kernel_count = static_cast<int64_t>(plan.kernels());
  s.listing = plan.to_string();
  return s;
}

}  // namespace ringrt
