#include "rewrite/uop.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <tbb/spin_mutex.h>

#include <algorithm>
#include <atomic>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#include <cmath>
#include <mutex>
#include <numeric>
#include <ostream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/errors.hpp"
#include "rewrite/collective.hpp"
#include "rewrite/node.hpp"
#include "rewrite/node_map.hpp"
#include "rewrite/node_table.hpp"

namespace ringrt {

// ---------------------------------------------------------------------------------------------
// small value helpers

Spans spans(const std::vector<std::pair<int64_t, int64_t>>& constant) {
  Spans out;
  for (auto [a, b] : constant) out.push_back({Affine{a, 0}, Affine{b, 0}});
  return out;
}

namespace {

std::string affine_str(const Affine& a) {
  if (a.k == 0) return std::to_string(a.c);
  std::string dn = a.k == 1 ? "dnum" : fmt::format("{}*dnum", a.k);
  return a.c == 0 ? dn : fmt::format("{}+{}", a.c, dn);
}

}  // namespace

namespace detail {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 12) + (h >> 4);
  return h * 0xff51afd7ed558ccdull;
}

namespace {
uint64_t hash_str(const std::string& s) { return std::hash<std::string>()(s); }
}  // namespace

uint64_t hash_arg(const Arg& arg) {
  uint64_t h = mix(0, arg.index());
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          h = mix(h, static_cast<uint64_t>(v));
        } else if constexpr (std::is_same_v<T, double>) {
          uint64_t bits;
          std::memcpy(&bits, &v, 8);
          h = mix(h, bits);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          for (int64_t x : v) h = mix(h, static_cast<uint64_t>(x));
        } else if constexpr (std::is_same_v<T, std::string>) {
          h = mix(h, hash_str(v));
        } else if constexpr (std::is_same_v<T, DeviceTuple>) {
          for (const auto& s : v) h = mix(h, hash_str(s));
        } else if constexpr (std::is_same_v<T, ReduceArg>) {
          h = mix(h, static_cast<uint64_t>(v.op));
          for (int x : v.axes) h = mix(h, static_cast<uint64_t>(x));
        } else if constexpr (std::is_same_v<T, Spans>) {
          for (const auto& [a, b] : v)
            for (int64_t x : {a.c, a.k, b.c, b.k}) h = mix(h, static_cast<uint64_t>(x));
        } else if constexpr (std::is_same_v<T, VarArg>) {
          h = mix(mix(mix(h, hash_str(v.name)), static_cast<uint64_t>(v.min)), static_cast<uint64_t>(v.max));
        } else if constexpr (std::is_same_v<T, BufferArg>) {
          h = mix(mix(h, static_cast<uint64_t>(v.id)), static_cast<uint64_t>(v.numel));
        } else if constexpr (std::is_same_v<T, ScalarArg>) {
          uint64_t bits;
          std::memcpy(&bits, &v.value, 8);
          h = mix(mix(mix(h, hash_str(v.name)), bits), static_cast<uint64_t>(v.slot));
        }
      },
      arg);
  return h;
}

// Args are equal when their bits are: NaN equals NaN, 0.0 and -0.0 differ (as the hash says).
bool same_arg(const Arg& a, const Arg& b) {
  const double *x = std::get_if<double>(&a), *y = std::get_if<double>(&b);
  if (x && y) return std::memcmp(x, y, sizeof(double)) == 0;
  const ScalarArg *p = std::get_if<ScalarArg>(&a), *q = std::get_if<ScalarArg>(&b);
  if (p && q) return p->name == q->name && p->slot == q->slot && std::memcmp(&p->value, &q->value, sizeof(double)) == 0;
  return a == b;
}

}  // namespace detail

using detail::hash_arg;
using detail::mix;
using detail::same_arg;

std::string arg_str(const Arg& arg) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "";
        } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
          return fmt::format("{}", v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return shape_str(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, DeviceTuple>) {
          return fmt::format("({})", fmt::join(v, ", "));
        } else if constexpr (std::is_same_v<T, ReduceArg>) {
          return fmt::format("({}, ({}))", op_name(v.op), fmt::join(v.axes, ", "));
        } else if constexpr (std::is_same_v<T, Spans>) {
          std::vector<std::string> parts;
          for (const auto& [a, b] : v) parts.push_back(fmt::format("({}, {})", affine_str(a), affine_str(b)));
          return fmt::format("({})", fmt::join(parts, ", "));
        } else if constexpr (std::is_same_v<T, VarArg>) {
          return fmt::format("{}[{}..{}]", v.name, v.min, v.max);
        } else if constexpr (std::is_same_v<T, ScalarArg>) {
          std::string name = v.name.empty() ? "" : v.name + " ";
          return v.slot >= 0 ? fmt::format("{}${}", name, v.slot) : fmt::format("{}= {}", name, v.value);
        } else {
          return fmt::format("buf{} n={}", v.id, v.numel);
        }
      },
      arg);
}

namespace {
struct TupleHash {
  size_t operator()(const DeviceTuple& t) const {
    uint64_t h = t.size();
    for (const auto& s : t) h = mix(h, std::hash<std::string>()(s));
    return h;
  }
};
}  // namespace

DeviceSpec::DeviceSpec(const DeviceTuple& tuple) {
  // Never freed: nodes in the process-wide graph may outlive any other static (and so this table).
  static auto* table = new std::unordered_set<DeviceTuple, TupleHash>();
  static std::mutex lock;
  std::lock_guard<std::mutex> guard(lock);
  v_ = &*table->insert(tuple).first;  // node-based: the element's address is stable
}

const std::string& DeviceSpec::name() const {
  if (!single()) throw InternalError("DeviceSpec::name on " + to_string());
  return std::get<std::string>(v_);
}
const DeviceTuple& DeviceSpec::names() const {
  if (!tuple()) throw InternalError("DeviceSpec::names on '" + to_string() + "'");
  return *std::get<const DeviceTuple*>(v_);
}
size_t DeviceSpec::count() const { return none() ? 0 : single() ? 1 : names().size(); }
std::string DeviceSpec::to_string() const {
  if (none()) return "";
  if (single()) return name();
  return fmt::format("({})", fmt::join(names(), ", "));
}
Arg DeviceSpec::as_arg() const {
  if (none()) return {};
  if (single()) return name();
  return names();
}

// ---------------------------------------------------------------------------------------------
// nodes and the graph

namespace {

using detail::Node;
// listS keeps vertex descriptors (and so Node addresses) stable while the graph grows; directedS
// means adding a node touches only the new vertex.
using BoostGraph = boost::adjacency_list<boost::vecS, boost::listS, boost::directedS, Node>;
using Vertex = BoostGraph::vertex_descriptor;

}  // namespace

struct UOpGraph::Impl {
  BoostGraph g;
  // Guards vertex creation (a short section: one allocation, the edges, the table entry); look-ups
  // take only the table's shard lock. A spin lock: a std::mutex sent the parallel rewrite's threads to
  // sleep in the kernel on every collision, and its driver ran slower than the serial one.
  tbb::spin_mutex create;
  NodeTable table;
  std::atomic<int64_t> next_id{0}, next_buffer{0};
  std::atomic<size_t> alive{0};  // num_vertices(g), readable without the lock
};

UOpGraph::UOpGraph() : impl_(std::make_unique<Impl>()) {}
UOpGraph::~UOpGraph() = default;

UOpGraph& UOpGraph::global() {
  static UOpGraph g;
  return g;
}

size_t UOpGraph::size() const { return static_cast<size_t>(impl_->next_id.load()); }
size_t UOpGraph::alive() const { return impl_->alive.load(std::memory_order_relaxed); }

size_t UOpGraph::collect(const std::vector<UOp>& keep) {
  tbb::spin_mutex::scoped_lock lock(impl_->create);
  NodeSet live(
      impl_->alive.load(std::memory_order_relaxed));  // mark: iteratively, deep chains cannot overflow the stack
  std::vector<const Node*> stack;
  for (const UOp& k : keep)
    if (k.valid() && live.insert(k.node())) stack.push_back(k.node());
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const UOp& s : n->src)
      if (live.insert(s.node())) stack.push_back(s.node());
  }
  std::vector<Vertex> dead;  // sweep: no live node has an edge into a dead one
  for (auto [v, end] = boost::vertices(impl_->g); v != end; ++v)
    if (!live.contains(&impl_->g[*v])) dead.push_back(*v);
  for (Vertex v : dead) {
    const Node& n = impl_->g[v];
    impl_->table.erase(n.hash, &n);
    boost::clear_out_edges(v, impl_->g);
  }
  for (Vertex v : dead) boost::remove_vertex(v, impl_->g);
  impl_->alive.store(boost::num_vertices(impl_->g), std::memory_order_relaxed);
  return dead.size();
}
int64_t UOpGraph::new_buffer_id() { return impl_->next_buffer++; }

UOp UOpGraph::make(Ops op, DType dtype, std::vector<UOp> src, Arg arg) {
  uint64_t h = mix(mix(static_cast<uint64_t>(op), static_cast<uint64_t>(dtype)), hash_arg(arg));
  for (const auto& s : src) {
    if (!s.valid()) throw InternalError(fmt::format("{}: invalid source", op_name(op)));
    const Node* n = s.node();  // one read of each source node (UOp::graph and UOp::hash are out of line)
    if (n->graph != this) throw InternalError(fmt::format("{}: source from another graph", op_name(op)));
    h = mix(h, n->hash);
  }
  if (static_cast<size_t>(op) >= kNumOps) throw ShapeError(fmt::format("unknown op {}", static_cast<int>(op)));
  check_dtype(dtype, op_name(op), true);
  Node proto;
  proto.op = op;
  proto.dtype = dtype;
  proto.arg = std::move(arg);
  proto.src = std::move(src);
  // Compare against proto (src and arg are moved from), also in the re-check under the lock below.
  auto same = [&](const Node* n) {
    return n->op == op && n->dtype == dtype && n->src == proto.src && same_arg(n->arg, proto.arg);
  };
  auto find = [&]() -> const Node* { return impl_->table.find(h, same); };
  if (const Node* hit = find()) return UOp(hit);

  infer(proto);  // throws before anything is created
  proto.hash = h;
  proto.graph = this;
  tbb::spin_mutex::scoped_lock lock(impl_->create);
  if (const Node* hit = find()) return UOp(hit);
  proto.id = impl_->next_id++;
  Vertex v = boost::add_vertex(std::move(proto), impl_->g);
  Node& node = impl_->g[v];
  node.vertex = v;
  impl_->g.out_edge_list(v).reserve(node.src.size());  // one allocation, not one per doubling
  for (const auto& s : node.src) boost::add_edge(v, static_cast<Vertex>(s.node()->vertex), impl_->g);
  impl_->table.insert(h, &node);
  impl_->alive.fetch_add(1, std::memory_order_relaxed);
  return UOp(&node);
}

std::vector<UOp> UOpGraph::toposort(const std::vector<UOp>& roots) const {
  // Depth-first, iterative (an explicit stack: deep chains cannot overflow the call stack), sources
  // in order, so the order is structural: each node after its sources, the first root's first. The
  // walk follows Node::src, which mirrors the vertex's out-edges (as Boost's depth_first_visit did,
  // which spent a hash-map node per vertex on its colors).
  std::vector<UOp> out;
  NodeSet seen;
  std::vector<std::pair<const Node*, size_t>> stack;  // (node, next source to visit)
  for (const auto& r : roots) {
    if (!seen.insert(r.node())) continue;
    stack.push_back({r.node(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next == n->src.size()) {
        out.push_back(UOp(n));
        stack.pop_back();
        continue;
      }
      const Node* s = n->src[next++].node();
      if (seen.insert(s)) stack.push_back({s, 0});
    }
  }
  return out;
}

// boost::write_graphviz trips g++ 12's -Wmaybe-uninitialized inside Boost's edge iterator.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
void UOpGraph::write_dot(std::ostream& out, const std::vector<UOp>& roots) const {
  // Write the reachable subgraph, numbered by topological position (not by creation id).
  std::vector<UOp> order = toposort(roots);
  using Sub = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  Sub sub(order.size());
  std::unordered_map<const detail::Node*, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) pos[order[i].node()] = i;
  for (size_t i = 0; i < order.size(); ++i)
    for (const auto& s : order[i].src()) boost::add_edge(i, pos.at(s.node()), sub);
  auto label = [&](std::ostream& os, size_t v) {
    const UOp& u = order[v];
    std::string text = fmt::format("{}\\n{} {}", op_name(u.op()), dtype_name(u.dtype()), shape_str(u.shape()));
    if (!u.device().none()) text += "\\n" + u.device().to_string();
    if (!std::holds_alternative<std::monostate>(u.arg()) && u.op() != Ops::DEVICE) text += "\\n" + arg_str(u.arg());
    std::string escaped;
    for (char c : text) escaped += c == '"' ? std::string("\\\"") : std::string(1, c);
    os << "[label=\"" << escaped << "\"]";
  };
  boost::write_graphviz(out, sub, label);
}
#pragma GCC diagnostic pop

// ---------------------------------------------------------------------------------------------
// the handle

Ops UOp::op() const { return n_->op; }
DType UOp::dtype() const { return n_->dtype; }
const Arg& UOp::arg() const { return n_->arg; }
const std::vector<UOp>& UOp::src() const { return n_->src; }
const UOp& UOp::src(size_t i) const { return n_->src.at(i); }
const Shape& UOp::shape() const { return n_->shape; }
const DeviceSpec& UOp::device() const { return n_->device; }
std::optional<int> UOp::axis() const { return n_->axis; }
bool UOp::logical() const { return n_->logical; }
UOpGraph& UOp::graph() const { return *n_->graph; }
uint64_t UOp::hash() const { return n_->hash; }
int64_t UOp::id() const { return n_->id; }
int64_t UOp::arg_int() const { return std::get<int64_t>(n_->arg); }
double UOp::arg_float() const {
  if (const auto* s = std::get_if<ScalarArg>(&n_->arg)) return s->value;
  return std::holds_alternative<double>(n_->arg) ? std::get<double>(n_->arg)
                                                 : static_cast<double>(std::get<int64_t>(n_->arg));
}
const std::vector<int64_t>& UOp::arg_ints() const { return std::get<std::vector<int64_t>>(n_->arg); }
const Spans& UOp::arg_spans() const { return std::get<Spans>(n_->arg); }
const ReduceArg& UOp::arg_reduce() const { return std::get<ReduceArg>(n_->arg); }

UOp UOp::alu(Ops op, const std::vector<UOp>& others) const {
  std::vector<UOp> src{*this};
  src.insert(src.end(), others.begin(), others.end());
  DType out = group::compare().contains(op) ? DType::bool_ : op == Ops::WHERE ? others.at(0).dtype() : dtype();
  return graph().make(op, out, std::move(src), {});
}

UOp UOp::const_like(double value) const {
  UOp c = const_uop(dtype(), value, &graph());
  if (shape().empty()) return c;
  return c.reshape(Shape(shape().size(), 1)).expand(shape());
}

UOp UOp::cast(DType to) const { return to == dtype() ? *this : graph().make(Ops::CAST, to, {*this}, {}); }
UOp UOp::bitcast(DType to) const { return graph().make(Ops::BITCAST, to, {*this}, {}); }
UOp UOp::reshape(const Shape& s) const {
  return s == shape() ? *this : graph().make(Ops::RESHAPE, dtype(), {*this}, std::vector<int64_t>(s));
}
UOp UOp::expand(const Shape& s) const {
  return s == shape() ? *this : graph().make(Ops::EXPAND, dtype(), {*this}, std::vector<int64_t>(s));
}
UOp UOp::permute(const std::vector<int64_t>& order) const {
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) identity = identity && order[i] == static_cast<int64_t>(i);
  if (identity && order.size() == shape().size()) return *this;
  return graph().make(Ops::PERMUTE, dtype(), {*this}, order);
}
UOp UOp::pad(const Spans& sp) const {
  bool zero = sp.size() == shape().size();
  for (const auto& [a, b] : sp) zero = zero && a == Affine{} && b == Affine{};
  return zero ? *this : graph().make(Ops::PAD, dtype(), {*this}, sp);
}
UOp UOp::shrink(const Spans& sp) const {
  bool whole = sp.size() == shape().size();
  for (size_t i = 0; whole && i < sp.size(); ++i)
    whole = sp[i].first == Affine{0, 0} && sp[i].second == Affine{shape()[i], 0};
  return whole ? *this : graph().make(Ops::SHRINK, dtype(), {*this}, sp);
}
UOp UOp::flip(const std::vector<int64_t>& flags) const {
  bool none = flags.size() == shape().size();
  for (int64_t f : flags) none = none && f == 0;
  return none ? *this : graph().make(Ops::FLIP, dtype(), {*this}, flags);
}
UOp UOp::r(Ops op, std::vector<int> axes) const {
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return graph().make(Ops::REDUCE_AXIS, dtype(), {*this}, ReduceArg{op, std::move(axes)});
}
UOp UOp::contiguous() const { return graph().make(Ops::CONTIGUOUS, dtype(), {*this}, {}); }
UOp UOp::detach() const { return graph().make(Ops::DETACH, dtype(), {*this}, {}); }
UOp UOp::copy_to_device(const DeviceSpec& device, std::optional<int64_t> src_index) const {
  Arg arg = src_index ? Arg(*src_index) : Arg();
  return graph().make(Ops::COPY, dtype(), {*this, device_uop(device, &graph())}, arg);
}
UOp UOp::allreduce(Ops op, const DeviceSpec& device) const {
  return graph().make(Ops::ALLREDUCE, dtype(), {*this, device_uop(device, &graph())}, static_cast<int64_t>(op));
}
UOp UOp::multi(std::optional<int> axis) const {
  return graph().make(Ops::MULTI, dtype(), {*this}, axis ? Arg(static_cast<int64_t>(*axis)) : Arg());
}
UOp UOp::mselect(int64_t index) const { return graph().make(Ops::MSELECT, dtype(), {*this}, index); }
UOp UOp::store(const UOp& value) const { return graph().make(Ops::STORE, DType::void_, {*this, value}, {}); }
UOp UOp::after(const std::vector<UOp>& deps) const {
  std::vector<UOp> src{*this};
  src.insert(src.end(), deps.begin(), deps.end());
  return graph().make(Ops::AFTER, dtype(), std::move(src), {});
}
UOp UOp::assign(const UOp& value, std::optional<int64_t> call) const {
  return graph().make(Ops::ASSIGN, dtype(), {*this, value}, call ? Arg(*call) : Arg());
}
UOp UOp::replace(std::vector<UOp> src) const { return graph().make(op(), dtype(), std::move(src), arg()); }
UOp UOp::replace(std::vector<UOp> src, Arg a) const {
  return graph().make(op(), dtype(), std::move(src), std::move(a));
}

std::vector<std::pair<int64_t, int64_t>> UOp::bounds() const {
  if (op() != Ops::MULTI || !axis()) throw InternalError("bounds of a node that is not a sharded MULTI");
  int64_t sz = src(0).shape()[static_cast<size_t>(*axis())];
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t i = 0; i < device().count(); ++i)
    out.push_back({static_cast<int64_t>(i) * sz, static_cast<int64_t>(i + 1) * sz});
  return out;
}

UOp UOp::shard_local(int axis) const {
  int64_t n = static_cast<int64_t>(device().count());
  const Shape& s = shape();
  if (axis < 0 || axis >= static_cast<int>(s.size()) || n == 0 || s[static_cast<size_t>(axis)] % n != 0)
    throw ShapeError(
        fmt::format("shard: axis {} of {} (length {}) does not split evenly over {} devices", axis, shape_str(s),
                    axis >= 0 && axis < static_cast<int>(s.size()) ? s[static_cast<size_t>(axis)] : -1, n));
  int64_t sz = s[static_cast<size_t>(axis)] / n;
  Spans sp;
  for (size_t i = 0; i < s.size(); ++i)
    sp.push_back(static_cast<int>(i) == axis ? std::pair{Affine{0, sz}, Affine{sz, sz}}
                                             : std::pair{Affine{0, 0}, Affine{s[i], 0}});
  return shrink(sp);
}

UOp UOp::unshard_local(int axis) const {
  int64_t n = static_cast<int64_t>(device().count());
  int64_t bsz = shape()[static_cast<size_t>(axis)];
  Spans sp;
  for (size_t i = 0; i < shape().size(); ++i)
    sp.push_back(static_cast<int>(i) == axis ? std::pair{Affine{0, bsz}, Affine{bsz * (n - 1), -bsz}}
                                             : std::pair{Affine{}, Affine{}});
  return pad(sp);
}

std::string UOp::to_string() const {
  std::string s = fmt::format("{} {} {}", op_name(op()), dtype_name(dtype()), shape_str(shape()));
  if (!device().none()) s += " " + device().to_string();
  if (!std::holds_alternative<std::monostate>(arg()) && op() != Ops::DEVICE) {
    if (op() == Ops::ALLREDUCE)
      s += " " + std::string(op_name(static_cast<Ops>(arg_int())));
    else if (op() == Ops::COLLECTIVE && arg_ints().size() == 3)  // rewrite/collective.hpp
      s += fmt::format(" {} {}{}", op_name(static_cast<Ops>(arg_ints()[0])),
                       fused_name(static_cast<FusedAlgorithm>(arg_ints()[1])),
                       arg_ints()[2] == 1   ? " reduce_scatter"
                       : arg_ints()[2] == 2 ? " allgather"
                                            : "");
    else if (op() == Ops::COLLECTIVE && arg_ints().size() == 4)  // a broadcast from root
      s += fmt::format(" {} broadcast root {}", fused_name(static_cast<FusedAlgorithm>(arg_ints()[1])), arg_ints()[3]);
    else
      s += " " + arg_str(arg());
  }
  return s;
}

UOp make_uop(Ops op, DType dtype, std::vector<UOp> src, Arg arg, UOpGraph* graph) {
  return (graph ? *graph : UOpGraph::global()).make(op, dtype, std::move(src), std::move(arg));
}
UOp device_uop(const DeviceSpec& device, UOpGraph* graph) {
  return make_uop(Ops::DEVICE, DType::void_, {}, device.as_arg(), graph);
}
UOp const_uop(DType dtype, double value, UOpGraph* graph) {
  check_dtype(dtype, "CONST");
  Arg arg = is_float(dtype) ? Arg(value) : Arg(dtype == DType::bool_ ? int64_t{value != 0.0} : to_int64(value));
  return make_uop(Ops::CONST, dtype, {}, arg, graph);
}
UOp const_uop(DType dtype, double value, const DeviceSpec& device, UOpGraph* graph) {
  UOp c = const_uop(dtype, value, graph);
  return device.none() ? c : c.replace({device_uop(device, &c.graph())});
}
UOp new_buffer(const DeviceSpec& device, int64_t numel, DType dtype, UOpGraph* graph) {
  UOpGraph& g = graph ? *graph : UOpGraph::global();
  return g.make(Ops::BUFFER, dtype, {device_uop(device, &g)}, BufferArg{g.new_buffer_id(), numel});
}
UOp device_num(int64_t ndev, UOpGraph* graph) {
  return make_uop(Ops::DEFINE_VAR, DType::int32, {}, VarArg{"_device_num", 0, ndev - 1}, graph);
}
UOp mstack(const std::vector<UOp>& shards) {
  return shards.at(0).graph().make(Ops::MSTACK, shards[0].dtype(), shards, {});
}
UOp sink(const std::vector<UOp>& roots) { return roots.at(0).graph().make(Ops::SINK, DType::void_, roots, {}); }
UOp call(const std::string& name, const std::vector<UOp>& args, DType dtype) {
  if (args.empty()) throw ShapeError(fmt::format("CALL of '{}': needs at least one argument", name));
  return args[0].graph().make(Ops::CALL, dtype, args, name);
}
UOp fold(Ops op, const std::vector<UOp>& terms) {
  UOp acc = terms.at(0);
  for (size_t i = 1; i < terms.size(); ++i) acc = acc.alu(op, {terms[i]});
  return acc;
}

UOp substitute(const UOp& root, const std::unordered_map<const detail::Node*, UOp>& sub) {
  if (auto it = sub.find(root.node()); it != sub.end()) return it->second;
  std::unordered_map<const detail::Node*, UOp> done;
  auto now = [&](const UOp& u) {
    if (auto it = sub.find(u.node()); it != sub.end()) return it->second;
    auto it = done.find(u.node());
    return it == done.end() ? u : it->second;
  };
  // Post-order over the sources (in source order, as toposort), never below a substituted node: what
  // is under it is replaced with it, so a small ast over a long history costs its own size.
  std::unordered_set<const detail::Node*> seen{root.node()};
  std::vector<std::pair<UOp, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [u, next] = stack.back();
    if (next < u.src().size()) {
      const UOp& s = u.src()[next++];
      if (!sub.count(s.node()) && seen.insert(s.node()).second) stack.push_back({s, 0});
      continue;
    }
    std::vector<UOp> src;
    bool changed = false;
    for (const UOp& s : u.src()) {
      src.push_back(now(s));
      changed = changed || src.back() != s;
    }
    if (changed) done.emplace(u.node(), u.replace(std::move(src)));
    stack.pop_back();
  }
  return now(root);
}

std::string print_graph(const UOp& root) {
  std::vector<UOp> order = root.graph().toposort({root});
  std::unordered_map<const detail::Node*, size_t> pos;
  std::string out;
  for (size_t i = 0; i < order.size(); ++i) {
    pos[order[i].node()] = i;
    if (order[i].op() == Ops::DEVICE && order[i] != root) continue;
    std::vector<std::string> srcs;
    for (const auto& s : order[i].src())
      srcs.push_back(s.op() == Ops::DEVICE ? "dev" : fmt::format("%{}", pos.at(s.node())));
    out += fmt::format("%{:<4} = {}{}{}\n", i, order[i].to_string(), srcs.empty() ? "" : " <- ", fmt::join(srcs, ", "));
  }
  return out;
}

}  // namespace ringrt
