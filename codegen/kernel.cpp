// Lowering a kernel AST to the kernel IR (see kernel.hpp). One recursive walk from the root with the
// index each node is read at: movement ops rewrite the index (view.hpp), everything else becomes a
// statement. Statements are hash-consed per block (common subexpressions are shared) and each
// (node, index) pair is lowered once per block. The walk recurses on the depth of the kernel AST,
// which the scheduler keeps small (one fused kernel), not on the depth of the whole program graph.
#include "codegen/kernel.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <unordered_map>

#include "codegen/view.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "rewrite/interpreter.hpp"

namespace ringrt::codegen {

std::string stable_hash_hex(std::string_view text) { return fmt::format("{:016x}", fnv1a(text)); }

namespace {

const OpSet& float_ops() {
  static const OpSet s{Ops::NEG, Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT,  Ops::RECIP, Ops::ADD,   Ops::SUB,
                       Ops::MUL, Ops::FDIV, Ops::MAX,  Ops::MIN, Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ, Ops::WHERE};
  return s;
}
const OpSet& int_ops() {
  static const OpSet s{Ops::NEG,   Ops::ADD,   Ops::SUB,   Ops::MUL, Ops::IDIV, Ops::MOD, Ops::MAX,  Ops::MIN,
                       Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ, Ops::AND, Ops::OR,   Ops::XOR, Ops::WHERE};
  return s;
}

uint64_t bits_of(const HostBuffer& b) {
  uint64_t bits = 0;
  std::memcpy(&bits, b.bytes.data(), b.bytes.size());
  return bits;
}

// The stored bytes of a CONST, exactly as the interpreter stores it.
uint64_t const_bits(const UOp& u) { return bits_of(const_value(u)); }

// The accumulator's starting value (interpreter.cpp `reduce`).
uint64_t identity_bits(Ops op, DType dtype) {
  HostBuffer acc(dtype, {});
  if (is_float(dtype)) {
    acc.set(0, reduce_identity(op));
    return bits_of(acc);
  }
  int64_t lo = int_min(dtype), hi = int_max(dtype);
  acc.set_int(0, op == Ops::MAX ? lo : op == Ops::MIN ? hi : op == Ops::MUL ? 1 : 0);
  return bits_of(acc);
}

std::string kind_name(StmtKind k) {
  static const char* names[] = {"const", "load", "dnum", "alu", "cast", "bitcast", "select", "reduce", "scalar"};
  return names[static_cast<int>(k)];
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

class Lowerer {
 public:
  explicit Lowerer(const UOp& ast) : ast_(ast) {}

  Kernel run(std::string name) {
    k_.dtype = ast_.dtype();
    k_.shape = ast_.shape();
    k_.numel = prod(k_.shape);
    for (const UOp& u : ast_.graph().toposort({ast_})) {
      if (u.op() == Ops::BUFFER && !inputs_.count(u.node())) {
        inputs_[u.node()] = static_cast<int>(k_.inputs.size());
        k_.inputs.push_back({std::get<BufferArg>(u.arg()).id, u.dtype(), std::get<BufferArg>(u.arg()).numel});
      }
      int64_t n = static_cast<int64_t>(u.device().count());
      if (u.op() == Ops::DEFINE_VAR) n = std::get<VarArg>(u.arg()).max + 1;
      k_.dnum_max = std::max(k_.dnum_max, n - 1);
    }
    dnum_ = dnum_var(k_.dnum_max);
    scopes_.push_back({&k_.body, {}, {}});
    k_.result = emit(ast_, ViewIndex{unravel(gid_var(k_.numel), k_.shape), Mask{}});
    if (name.empty()) name = (k_.has_reduce() ? "r_" : "E_") + stable_hash_hex(k_.code());
    if (!is_identifier(name)) throw ConfigError(fmt::format("kernel name '{}' is not a C identifier", name));
    k_.name = std::move(name);
    return std::move(k_);
  }

 private:
  struct Scope {
    std::vector<Stmt>* block;
    std::unordered_map<std::string, int> cse, memo;
  };

  // The value a key names in the current block or an enclosing one (values of enclosing blocks are
  // defined before the loop that reads them).
  static const int* find(const std::vector<Scope>& scopes, std::unordered_map<std::string, int> Scope::*table,
                         const std::string& key) {
    for (auto s = scopes.rbegin(); s != scopes.rend(); ++s)
      if (auto it = ((*s).*table).find(key); it != ((*s).*table).end()) return &it->second;
    return nullptr;
  }

  // Appends s to the current block unless an equal statement is visible; returns its value id.
  int add(Stmt s) {
    std::string key =
        fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", static_cast<int>(s.kind), static_cast<int>(s.dtype),
                    static_cast<int>(s.op), fmt::join(s.src, ","), s.bits, s.input, s.index.render(), s.valid.render());
    if (const int* hit = find(scopes_, &Scope::cse, key)) return *hit;
    s.id = next_id_++;
    scopes_.back().cse[key] = s.id;
    scopes_.back().block->push_back(std::move(s));
    return scopes_.back().block->back().id;
  }

  int zero(DType dtype) { return add(Stmt{.kind = StmtKind::Const, .dtype = dtype}); }

  // A program parameter: argument word j of the kernel, one per slot however often it is read.
  int scalar(const ScalarArg& p, DType dtype) {
    KernelScalar want{p.slot, dtype};
    auto at = std::find(k_.scalars.begin(), k_.scalars.end(), want);
    if (at == k_.scalars.end()) at = k_.scalars.insert(at, want);
    return add(Stmt{.kind = StmtKind::Scalar, .dtype = dtype, .input = static_cast<int>(at - k_.scalars.begin())});
  }

  // The value of u at `at`, lowered once per (node, index) and block.
  int emit(const UOp& u, const ViewIndex& at) {
    std::string key = fmt::format("{}|{}", reinterpret_cast<uintptr_t>(u.node()), at.valid.render());
    for (const auto& e : at.idx) {
      key += '|';
      key += e.render();
    }
    if (const int* hit = find(scopes_, &Scope::memo, key)) return *hit;
    // lowering recurses once per op on the path to a leaf: bound it before the stack runs out
    if (depth_ >= kMaxDepth)
      throw ShapeError(fmt::format(
          "lower_kernel: a kernel's expression is more than {} ops deep (at {}); realize() an intermediate value "
          "of the chain",
          kMaxDepth, u.to_string()));
    ++depth_;  // (after a throw the Lowerer is not used again)
    int v = lower(u, at);
    --depth_;
    scopes_.back().memo[key] = v;
    return v;
  }

  int lower(const UOp& u, const ViewIndex& at) {
    Ops op = u.op();
    if (op == Ops::PAD && !is_buffer_view(u.src(0))) {  // a padded computed value: select 0 outside
      Mask own = push_through(u, ViewIndex{at.idx, Mask{}}, dnum_).valid;
      if (own.never()) return zero(u.dtype());
      int s = emit(u.src(0), push_through(u, at, dnum_));
      return own.always() ? s : add(Stmt{.kind = StmtKind::Select, .dtype = u.dtype(), .src = {s}, .valid = own});
    }
    if (group::movement().contains(op)) return emit(u.src(0), push_through(u, at, dnum_));
    if (group::alu().contains(op)) {
      DType operand = u.src().back().dtype();
      if (!(is_float(operand) ? float_ops() : int_ops()).contains(op))
        throw InternalError(fmt::format("lower_kernel: {} of {} has no semantics (as in the interpreter)", op_name(op),
                                        dtype_name(operand)));
      Stmt s{.kind = StmtKind::Alu, .dtype = u.dtype(), .op = op};
      for (const UOp& x : u.src()) s.src.push_back(emit(x, at));
      return add(std::move(s));
    }
    switch (op) {
      case Ops::BUFFER: {
        if (at.valid.never()) return zero(u.dtype());
        return add(Stmt{.kind = StmtKind::Load,
                        .dtype = u.dtype(),
                        .input = inputs_.at(u.node()),
                        .index = ravel(at.idx, u.shape()),
                        .valid = at.valid});
      }
      case Ops::CONST:
        if (const auto* p = std::get_if<ScalarArg>(&u.arg()); p && p->slot >= 0) return scalar(*p, u.dtype());
        return add(Stmt{.kind = StmtKind::Const, .dtype = u.dtype(), .bits = const_bits(u)});
      case Ops::DEFINE_VAR:
        if (std::get<VarArg>(u.arg()).name != "_device_num")
          throw InternalError(fmt::format("lower_kernel: unbound variable {}", std::get<VarArg>(u.arg()).name));
        return add(Stmt{.kind = StmtKind::DeviceNum, .dtype = u.dtype()});
      case Ops::CAST:
      case Ops::BITCAST: {
        StmtKind kind = op == Ops::CAST ? StmtKind::Cast : StmtKind::Bitcast;
        return add(Stmt{.kind = kind, .dtype = u.dtype(), .src = {emit(u.src(0), at)}});
      }
      case Ops::DETACH:
        return emit(u.src(0), at);
      case Ops::REDUCE_AXIS:
        return reduce(u, at);
      case Ops::CALL:
        throw CompileError(
            fmt::format("lower_kernel: CALL of custom kernel '{}': ringrt generates no code for "
                        "custom kernels",
                        std::get<std::string>(u.arg())));
      default:
        throw InternalError(fmt::format("lower_kernel: {} cannot appear inside a kernel", op_name(op)));
    }
  }

  // One loop nest over the reduced axes in the interpreter's order; the accumulator is the dtype.
  int reduce(const UOp& u, const ViewIndex& at) {
    const ReduceArg& ra = u.arg_reduce();
    const UOp& src = u.src(0);
    Stmt r{.kind = StmtKind::Reduce, .dtype = src.dtype(), .op = ra.op, .bits = identity_bits(ra.op, src.dtype())};
    ViewIndex inner = at;
    for (int a : ra.axes) {
      int64_t n = src.shape()[static_cast<size_t>(a)];
      std::string name = fmt::format("r{}", next_loop_++);
      r.loops.push_back({name, n});
      inner.idx[static_cast<size_t>(a)] = Expr::var(name, 0, std::max<int64_t>(0, n - 1), next_loop_);
    }
    scopes_.push_back({&r.body, {}, {}});
    r.result = emit(src, inner);
    scopes_.pop_back();
    r.id = next_id_++;
    scopes_.back().block->push_back(std::move(r));
    return scopes_.back().block->back().id;
  }

  UOp ast_;
  Kernel k_;
  std::vector<Scope> scopes_;
  std::unordered_map<const detail::Node*, int> inputs_;
  Expr dnum_;
  int next_id_ = 0, next_loop_ = 0;
  // Ops on one path from the kernel's value to a leaf: each costs two stack frames (emit, lower);
  // 2000 stays far inside a 4 MiB thread stack (TBB's default for its workers).
  static constexpr int kMaxDepth = 2000;
  int depth_ = 0;
};

void dump_block(std::string& out, const std::vector<Stmt>& block, int depth) {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  for (const Stmt& s : block) {
    out += fmt::format("{}v{} = {} {}", pad, s.id, kind_name(s.kind), dtype_name(s.dtype));
    if (s.kind == StmtKind::Alu || s.kind == StmtKind::Reduce) out += fmt::format(" {}", op_name(s.op));
    for (int x : s.src) out += fmt::format(" v{}", x);
    if (s.kind == StmtKind::Const || s.kind == StmtKind::Reduce) out += fmt::format(" 0x{:x}", s.bits);
    if (s.kind == StmtKind::Load) out += fmt::format(" in{}[{}]", s.input, s.index.render());
    if (s.kind == StmtKind::Scalar) out += fmt::format(" sc{}", s.input);
    if (s.kind == StmtKind::Load || s.kind == StmtKind::Select) out += fmt::format(" if {}", s.valid.render());
    if (s.kind == StmtKind::Reduce) {
      for (const auto& l : s.loops) out += fmt::format(" {}<{}", l.name, l.extent);
      out += " {\n";
      dump_block(out, s.body, depth + 1);
      out += fmt::format("{}}} <- v{}", pad, s.result);
    }
    out += "\n";
  }
}

bool block_has_reduce(const std::vector<Stmt>& block) {
  for (const Stmt& s : block)
    if (s.kind == StmtKind::Reduce) return true;
  return false;
}

}  // namespace

bool Kernel::has_reduce() const { return block_has_reduce(body); }

std::optional<int64_t> Kernel::gid_offset(int input) const {
  std::optional<int64_t> offset;
  const Expr gid = gid_var(numel);
  std::function<bool(const std::vector<Stmt>&, bool)> same_offset = [&](const std::vector<Stmt>& block, bool looped) {
    for (const Stmt& s : block) {
      if (s.kind == StmtKind::Reduce && !same_offset(s.body, true)) return false;
      if (s.kind != StmtKind::Load || s.input != input) continue;
      std::optional<int64_t> c = (s.index - gid).as_constant();
      if (looped || !c || (offset && *offset != *c)) return false;
      offset = c;
    }
    return true;
  };
  return same_offset(body, false) ? offset : std::nullopt;
}

bool Kernel::reads_at_gid() const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    int in = static_cast<int>(i);
    if (!read_bounds(in)) continue;  // never read
    if (gid_offset(in) != int64_t{0} || inputs[i].numel < numel) return false;
  }
  return true;
}

bool Kernel::fits_int32() const {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  std::function<bool(const std::vector<Stmt>&)> fits = [&](const std::vector<Stmt>& block) {
    for (const Stmt& s : block) {
      if (s.kind == StmtKind::Load && s.index.magnitude() > kMax) return false;
      if (s.valid.magnitude() > kMax) return false;
      for (const LoopVar& l : s.loops)
        if (l.extent > kMax) return false;
      if (!fits(s.body)) return false;
    }
    return true;
  };
  return numel <= kMax && dnum_max <= kMax && fits(body);
}

std::string Kernel::dump() const {
  std::string out = fmt::format("kernel {} {} dnum<={}\n", dtype_name(dtype), shape_str(shape), dnum_max);
  for (size_t i = 0; i < inputs.size(); ++i)
    out += fmt::format("in{} {}[{}]\n", i, dtype_name(inputs[i].dtype), inputs[i].numel);
  for (size_t j = 0; j < scalars.size(); ++j)
    out += fmt::format("sc{} {} ${}\n", j, dtype_name(scalars[j].dtype), scalars[j].slot);
  dump_block(out, body, 0);
  out += fmt::format("out = v{}\n", result);
  if (peer_outputs > 0) out += fmt::format("peer outputs {}\n", peer_outputs);
  return out;
}

std::string Kernel::code() const {
  std::string out = fmt::format("kernel {}\n", dtype_name(dtype));
  for (size_t i = 0; i < inputs.size(); ++i) out += fmt::format("in{} {}\n", i, dtype_name(inputs[i].dtype));
  for (size_t j = 0; j < scalars.size(); ++j) out += fmt::format("sc{} {}\n", j, dtype_name(scalars[j].dtype));
  dump_block(out, body, 0);
  out += fmt::format("out = v{}\n", result);
  if (peer_outputs > 0) out += fmt::format("peer outputs {}\n", peer_outputs);
  return out;
}

Kernel with_peer_outputs(Kernel k, int n) {
  if (n <= 0) return k;
  k.peer_outputs = n;
  k.name += fmt::format("_p{}", n);
  return k;
}

std::optional<std::pair<int64_t, int64_t>> Kernel::read_bounds(int input) const {
  std::optional<std::pair<int64_t, int64_t>> out;
  std::function<void(const std::vector<Stmt>&)> visit = [&](const std::vector<Stmt>& block) {
    for (const Stmt& s : block) {
      if (s.kind == StmtKind::Reduce) visit(s.body);
      if (s.kind != StmtKind::Load || s.input != input) continue;
      std::pair<int64_t, int64_t> b{s.index.min(), s.index.max()};
      out = out ? std::pair{std::min(out->first, b.first), std::max(out->second, b.second)} : b;
    }
  };
  visit(body);
  return out;
}

Kernel lower_kernel(const UOp& ast, std::string name) { return Lowerer(ast).run(std::move(name)); }

}  // namespace ringrt::codegen
