// The IR: immutable, hash-consed UOp nodes owned by a UOpGraph (a Boost.Graph adjacency_list behind
// this interface; no other file includes <boost/graph/...>). Reference: tinygrad uop/ops.py UOp.
//
// A UOp handle is a pointer-sized value. Building the same structure (op, dtype, arg, sources) twice
// returns the same node. Every node knows its shape, its device (none, one name, or a tuple of names)
// and, for the logical multi-device graph, its shard axis. Nodes on a device tuple hold one value per
// device, all of the node's (local) shape; a MULTI node and everything computed from it is logical:
// its shape is the whole tensor's.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/dtype.hpp"
#include "core/shape.hpp"
#include "rewrite/ops.hpp"

namespace ringrt {

using DeviceTuple = std::vector<std::string>;

// c + k * _device_num: the bounds of the shrink and pad that shard and unshard a tensor depend on the
// index of the device a kernel runs on (reference: tinygrad UOp._shard, _unshard).
struct Affine {
  int64_t c = 0, k = 0;
  int64_t at(int64_t dnum) const { return c + k * dnum; }
  bool operator==(const Affine&) const = default;
};
// Per axis: (begin, end) for SHRINK, (before, after) for PAD.
using Spans = std::vector<std::pair<Affine, Affine>>;
Spans spans(const std::vector<std::pair<int64_t, int64_t>>& constant);

struct ReduceArg {  // REDUCE_AXIS
  Ops op;
  std::vector<int> axes;
  bool operator==(const ReduceArg&) const = default;
};
struct VarArg {  // DEFINE_VAR: name and inclusive range
  std::string name;
  int64_t min, max;
  bool operator==(const VarArg&) const = default;
};
// CONST whose value is a run-time scalar: a kernel argument, not part of the program's structure
// (docs/architecture.md "Runtime scalars"). In a user's graph: a named variable (Tensor::variable) with
// its value, slot -1. In a program's graph (Canonical::instantiate): parameter `slot` of the program,
// whose value each run supplies; `value` is 0 there.
struct ScalarArg {
  std::string name;  // the variable's name; "" for a number Canonical made a parameter
  double value = 0;
  int64_t slot = -1;
  bool operator==(const ScalarArg&) const = default;
};
struct BufferArg {  // BUFFER: id keeps two buffers of equal size apart; numel elements
  int64_t id, numel;
  bool operator==(const BufferArg&) const = default;
};

// int64: CONST (integers), MSELECT index, MULTI axis, COPY source index. double: CONST (floats).
// ScalarArg: CONST (a run-time scalar). vector<int64_t>: RESHAPE/EXPAND shape, PERMUTE order, FLIP
// flags. string/DeviceTuple: DEVICE.
using Arg = std::variant<std::monostate, int64_t, double, std::vector<int64_t>, std::string, DeviceTuple, ReduceArg,
                         Spans, VarArg, BufferArg, ScalarArg>;
std::string arg_str(const Arg& arg);

// Where a node lives: nowhere (constants), one device, or a tuple of devices. A tuple is interned:
// every DeviceSpec of equal names shares one immutable copy (kept for the process's life), so copying,
// comparing and hashing a spec costs O(1) whatever the tuple's length (nodes on a tuple of n devices
// would otherwise each hold all n names: n^2 for a ring's plan).
class DeviceSpec {
 public:
  DeviceSpec() = default;
  DeviceSpec(std::string one) : v_(std::move(one)) {}
  DeviceSpec(const DeviceTuple& tuple);  // O(length) once: looks up (or adds) the interned copy
  bool none() const { return v_.index() == 0; }
  bool single() const { return v_.index() == 1; }
  bool tuple() const { return v_.index() == 2; }
  const std::string& name() const;   // single only
  const DeviceTuple& names() const;  // tuple only
  size_t count() const;              // 0, 1 or the tuple's length
  std::string to_string() const;     // "", "CPU:0" or "(CPU:0, CPU:1)"
  Arg as_arg() const;
  bool operator==(const DeviceSpec&) const = default;  // tuples by identity: interned, so by value

 private:
  std::variant<std::monostate, std::string, const DeviceTuple*> v_;
};

class UOpGraph;
namespace detail {
struct Node;
}

class UOp {
 public:
  UOp() = default;
  explicit UOp(const detail::Node* node) : n_(node) {}

  bool valid() const { return n_ != nullptr; }
  Ops op() const;
  DType dtype() const;
  const Arg& arg() const;
  const std::vector<UOp>& src() const;
  const UOp& src(size_t i) const;
  const Shape& shape() const;
  const DeviceSpec& device() const;
  bool logical() const;             // a MULTI node or computed from one
  std::optional<int> axis() const;  // the shard axis of a logical multi-device node (reference: UOp.axis)
  UOpGraph& graph() const;
  uint64_t hash() const;  // structural: equal for equal structure in any graph or run
  int64_t id() const;     // creation order in the graph; never used to order anything that reaches output
  int64_t arg_int() const;
  double arg_float() const;
  const std::vector<int64_t>& arg_ints() const;
  const Spans& arg_spans() const;
  const ReduceArg& arg_reduce() const;

  bool operator==(const UOp& o) const { return n_ == o.n_; }
  bool operator!=(const UOp& o) const { return n_ != o.n_; }
  const detail::Node* node() const { return n_; }

  // Builders. Each infers the result's shape and device and throws ShapeError (naming the op, the
  // shapes and the axis) when the request is impossible.
  UOp alu(Ops op, const std::vector<UOp>& others = {}) const;
  UOp operator+(const UOp& o) const { return alu(Ops::ADD, {o}); }
  UOp operator*(const UOp& o) const { return alu(Ops::MUL, {o}); }
  UOp where(const UOp& a, const UOp& b) const { return alu(Ops::WHERE, {a, b}); }
  UOp eq(const UOp& o) const { return alu(Ops::CMPEQ, {o}); }
  UOp const_like(double value) const;  // a constant of this dtype, broadcast to this shape
  UOp cast(DType dtype) const;
  UOp bitcast(DType dtype) const;
  UOp reshape(const Shape& shape) const;
  UOp expand(const Shape& shape) const;
  UOp permute(const std::vector<int64_t>& order) const;
  UOp pad(const Spans& before_after) const;
  UOp shrink(const Spans& begin_end) const;
  UOp flip(const std::vector<int64_t>& flags) const;  // one 0/1 flag per axis
  UOp r(Ops op, std::vector<int> axes) const;         // REDUCE_AXIS, keepdim
  UOp contiguous() const;
  UOp detach() const;
  UOp copy_to_device(const DeviceSpec& device, std::optional<int64_t> src_index = std::nullopt) const;
  UOp allreduce(Ops op, const DeviceSpec& device) const;
  UOp multi(std::optional<int> axis) const;
  UOp mselect(int64_t index) const;
  UOp store(const UOp& value) const;
  UOp after(const std::vector<UOp>& deps) const;
  // ASSIGN of value into this view. `call`, when given, tells separate assignments of the same structure
  // apart (Tensor::assign numbers each call): an assignment runs once per call, never folded into an
  // earlier one that hash-conses to the same node. The lowering ignores it.
  UOp assign(const UOp& value, std::optional<int64_t> call = std::nullopt) const;
  // The same node with other sources (and optionally another arg).
  UOp replace(std::vector<UOp> src) const;
  UOp replace(std::vector<UOp> src, Arg arg) const;

  // Per-shard bounds along the shard axis of a MULTI node (reference: UOp.bounds).
  std::vector<std::pair<int64_t, int64_t>> bounds() const;
  // Shard along axis with a _device_num-dependent shrink; bring the shards back with a pad
  // (reference: UOp._shard, _unshard). ShapeError when the axis does not divide evenly.
  UOp shard_local(int axis) const;
  UOp unshard_local(int axis) const;

  std::string to_string() const;  // one line: "ADD float32 (4, 4) CPU:0 arg"

 private:
  const detail::Node* n_ = nullptr;
};

struct UOpHash {
  size_t operator()(const UOp& u) const { return std::hash<const void*>()(u.node()); }
};

// Free builders for nodes without a natural receiver.
UOp make_uop(Ops op, DType dtype, std::vector<UOp> src = {}, Arg arg = {}, UOpGraph* graph = nullptr);
UOp device_uop(const DeviceSpec& device, UOpGraph* graph = nullptr);
UOp const_uop(DType dtype, double value, UOpGraph* graph = nullptr);  // shape (), on no device
// A constant of shape () placed on device (one name or a tuple: the same value on each); on no device
// when device is none. Its arg as const_uop's: the value rounded to dtype's kind.
UOp const_uop(DType dtype, double value, const DeviceSpec& device, UOpGraph* graph = nullptr);
UOp new_buffer(const DeviceSpec& device, int64_t numel, DType dtype, UOpGraph* graph = nullptr);
UOp device_num(int64_t ndev, UOpGraph* graph = nullptr);  // DEFINE_VAR _device_num in [0, ndev-1], int32
UOp mstack(const std::vector<UOp>& shards);
UOp sink(const std::vector<UOp>& roots);
UOp fold(Ops op, const std::vector<UOp>& terms);  // left fold of the binary op over terms (at least one)
inline UOp usum(const std::vector<UOp>& terms) { return fold(Ops::ADD, terms); }  // fold of ADD
// CALL of the custom kernel `name` on args (at least one; the result has args[0]'s shape and devices);
// dtype void for a call run for its effect on its arguments. Reference: tinygrad Ops.CALL.
UOp call(const std::string& name, const std::vector<UOp>& args, DType dtype);
// root with every node found in sub replaced by its value there (sources first, so a replacement is
// not itself rewritten); unchanged nodes keep their identity. Shapes must agree (ShapeError if not).
UOp substitute(const UOp& root, const std::unordered_map<const detail::Node*, UOp>& sub);

// Owns the nodes. Node creation is the only mutation; it is safe from many threads at once.
class UOpGraph {
 public:
  UOpGraph();
  ~UOpGraph();
  UOpGraph(const UOpGraph&) = delete;
  UOpGraph& operator=(const UOpGraph&) = delete;

  // The graph the Tensor front end builds in. Nodes no live tensor reaches are collected (see collect),
  // so in-tree code holds handles into it only under a GraphUse (runtime/engine/collect.hpp).
  static UOpGraph& global();

  // The hash-consed node (op, dtype, src, arg), created if new. Throws ShapeError for invalid input.
  UOp make(Ops op, DType dtype, std::vector<UOp> src, Arg arg);
  size_t size() const;      // nodes ever created
  size_t alive() const;     // nodes alive now (created and not collected)
  int64_t new_buffer_id();  // a fresh BUFFER id

  // Removes every node not reachable from keep (mark and sweep); returns how many. Hash-consing is
  // unaffected for the nodes kept. The caller guarantees that no other thread uses the graph
  // meanwhile and that no handle to a removed node is used again (runtime/engine/collect.hpp does
  // this for the global graph: its roots are every live tensor's graph).
  size_t collect(const std::vector<UOp>& keep);

  // Every node reachable from roots, sources before users. The order is derived from structure
  // alone (depth-first over sources in order), so it is the same in every run and thread count.
  std::vector<UOp> toposort(const std::vector<UOp>& roots) const;
  // Graphviz DOT of everything reachable from roots (boost::write_graphviz).
  void write_dot(std::ostream& out, const std::vector<UOp>& roots) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A multi-line listing of everything reachable from root, one numbered node per line.
std::string print_graph(const UOp& root);

}  // namespace ringrt
