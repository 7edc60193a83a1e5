// Statement rendering shared by render_cpp.cpp and render_hip.cpp (see render.hpp).
//
// Every value lives in its dtype's storage type. An op decodes its operands to a compute type, F32
// (float32, float16, bfloat16, the wire's fp8: float), F64 (float64: double) or I64 (integers and bool: long long,
// bool as x != 0), computes as rewrite/interpreter.cpp's alu_float/alu_int do, and encodes the result
// in the output dtype (16-bit floats round to nearest even, integers wrap through the unsigned type
// of their width). Float32 + - * / sqrt are exact in float (the interpreter's double result rounds
// to the same float); EXP2, LOG2 and SIN are computed in double and rounded, as the interpreter does.
#include "codegen/render_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/errors.hpp"

namespace ringrt::codegen::cstyle {

namespace {

enum class Kind { F32, F64, I64 };

Kind kind_of(DType d) {
  if (d == DType::float64) return Kind::F64;
  return is_float(d) ? Kind::F32 : Kind::I64;
}

// v (stored as d) as an expression of compute type k.
std::string decode(const std::string& v, DType d, Kind k) {
  std::string e = d == DType::float16    ? fmt::format("rt_h2f({})", v)
                  : d == DType::bfloat16 ? fmt::format("rt_bf2f({})", v)
                  : d == DType::fp8e4m3  ? fmt::format("rt_e4m32f({})", v)
                  : d == DType::fp8e5m2  ? fmt::format("rt_e5m22f({})", v)
                  : d == DType::bool_    ? fmt::format("(long long)({} != 0)", v)
                  : is_float(d)          ? v
                                         : fmt::format("(long long){}", v);
  Kind from = kind_of(d);
  if (from == k) return e;
  if (k == Kind::F64) return "(double)" + e;
  throw InternalError(fmt::format("render: cannot read {} as {}", dtype_name(d), k == Kind::F32 ? "float" : "int"));
}

std::string narrow(const std::string& e, DType d) {  // long long -> d, wrapping
  switch (d) {
    case DType::int32:
      return fmt::format("(int)(unsigned int)({})", e);
    case DType::int8:
      return fmt::format("(signed char)(unsigned char)({})", e);
    case DType::uint8:
      return fmt::format("(unsigned char)({})", e);
    case DType::int16:
      return fmt::format("(short)(unsigned short)({})", e);
    case DType::uint32:
      return fmt::format("(unsigned int)({})", e);
    case DType::bool_:
      return fmt::format("(unsigned char)(({}) != 0)", e);
    default:
      return fmt::format("(long long)({})", e);
  }
}

// Expression e of compute type k, stored as d (HostBuffer::set / set_int).
std::string encode(const std::string& e, Kind k, DType d) {
  if (d == DType::float32)
    return k == Kind::F32 ? e : k == Kind::F64 ? fmt::format("(float)({})", e) : fmt::format("(float)(double)({})", e);
  if (d == DType::float16) return fmt::format("rt_f2h({})", encode(e, k, DType::float32));
  if (d == DType::bfloat16) return fmt::format("rt_f2bf({})", encode(e, k, DType::float32));
  if (d == DType::fp8e4m3) return fmt::format("rt_f2e4m3({})", encode(e, k, DType::float32));
  if (d == DType::fp8e5m2) return fmt::format("rt_f2e5m2({})", encode(e, k, DType::float32));
  if (d == DType::float64) return k == Kind::F64 ? e : fmt::format("(double)({})", e);
  if (d == DType::bool_ || k == Kind::I64) return narrow(e, d);
  return narrow(fmt::format("rt_d2i({})", k == Kind::F32 ? fmt::format("(double)({})", e) : e), d);
}

// One line per ALU op: its C form for float operands (computed in float or double) and for integer
// operands (long long, + - * NEG wrapping through unsigned); {0} {1} {2} are the decoded operands, {3}
// the dialect's function for the op, {4} the literal 1 of the compute type. nullptr: no semantics
// (lowering rejects those, as the interpreter does).
struct AluForm {
  const char* fl;
  const char* in;
};
const std::map<Ops, AluForm>& alu_forms() {
  static const std::map<Ops, AluForm> forms{
      {Ops::NEG, {"(-{0})", "(long long)(0ULL - (unsigned long long){0})"}},
      {Ops::EXP2, {"{3}({0})", nullptr}},  // in double: the operand is widened first
      {Ops::LOG2, {"{3}({0})", nullptr}},
      {Ops::SIN, {"{3}({0})", nullptr}},
      {Ops::SQRT, {"{3}({0})", nullptr}},
      {Ops::RECIP, {"({4} / {0})", nullptr}},
      {Ops::ADD, {"({0} + {1})", "(long long)((unsigned long long){0} + (unsigned long long){1})"}},
      {Ops::SUB, {"({0} - {1})", "(long long)((unsigned long long){0} - (unsigned long long){1})"}},
      {Ops::MUL, {"({0} * {1})", "(long long)((unsigned long long){0} * (unsigned long long){1})"}},
      {Ops::FDIV, {"({0} / {1})", nullptr}},
      {Ops::IDIV, {nullptr, "rt_idiv({0}, {1})"}},            // x/0 -> 0, INT64_MIN/-1 -> 0
      {Ops::MOD, {nullptr, "rt_imod({0}, {1})"}},             // x%0 -> 0, x%-1 -> 0
      {Ops::MAX, {"rt_max({0}, {1})", "rt_imax({0}, {1})"}},  // a NaN first operand wins
      {Ops::MIN, {"rt_min({0}, {1})", "rt_imin({0}, {1})"}},
      {Ops::CMPLT, {"({0} < {1})", "({0} < {1})"}},
      {Ops::CMPNE, {"({0} != {1})", "({0} != {1})"}},
      {Ops::CMPEQ, {"({0} == {1})", "({0} == {1})"}},
      {Ops::AND, {nullptr, "({0} & {1})"}},
      {Ops::OR, {nullptr, "({0} | {1})"}},
      {Ops::XOR, {nullptr, "({0} ^ {1})"}},
      {Ops::WHERE, {"({0} ? {1} : {2})", "({0} ? {1} : {2})"}},
  };
  return forms;
}

// The result of ALU op over (value, dtype) operands, stored as `out`; `quiet`: a float32 value an op passes
// on unchanged is quieted (below), which its uses may make needless (quiet_free).
std::string alu(Ops op, DType out, const std::vector<std::pair<std::string, DType>>& args, const Dialect& dl,
                bool quiet = true) {
  DType operand = args.back().second;  // the interpreter picks float or int semantics from it
  if (op == Ops::WHERE && out == operand && args[1].second == operand &&
      (operand == DType::float16 || operand == DType::bfloat16)) {  // on the bits (rt_hsel, rt_bfsel)
    const auto& [c, cd] = args[0];
    return fmt::format("{}((unsigned)({} != 0), {}, {})", operand == DType::float16 ? "rt_hsel" : "rt_bfsel",
                       is_float(cd) ? decode(c, cd, kind_of(cd)) : c, args[1].first, args[2].first);
  }
  Kind k = kind_of(operand), rk = k;
  bool transcendental = op == Ops::EXP2 || op == Ops::LOG2 || op == Ops::SIN;
  std::vector<std::string> a(3);
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& [v, d] = args[i];
    if (op == Ops::WHERE && i == 0) {
      a[i] = fmt::format("({} != 0)", is_float(d) ? decode(v, d, kind_of(d)) : v);
    } else {
      a[i] = decode(v, d, transcendental ? Kind::F64 : k);  // EXP2, LOG2, SIN: in double, as the interpreter
    }
  }
  auto it = alu_forms().find(op);
  const char* form = it == alu_forms().end() ? nullptr : k == Kind::I64 ? it->second.in : it->second.fl;
  if (k == Kind::F32 && operand != DType::float32) {  // decoded operands: no branch (render_prelude.cpp)
    if (op == Ops::WHERE) form = "rt_self((unsigned){0}, {1}, {2})";
    if (op == Ops::MAX) form = "rt_maxd({0}, {1})";
    if (op == Ops::MIN) form = "rt_mind({0}, {1})";
  }
  if (!form) throw InternalError(fmt::format("render: {} of {} has no semantics", op_name(op), dtype_name(operand)));
  const char* fn = op == Ops::EXP2   ? dl.exp2
                   : op == Ops::LOG2 ? dl.log2
                   : op == Ops::SIN  ? dl.sin
                   : k == Kind::F32  ? dl.sqrtf
                                     : dl.sqrt;
  std::string e = fmt::format(fmt::runtime(form), a[0], a[1], a[2], fn, k == Kind::F32 ? "1.0f" : "1.0");
  if (transcendental) rk = Kind::F64;
  if (group::compare().contains(op)) rk = Kind::I64;
  // The interpreter passes float32 values through double, which quiets a signaling NaN; ops that
  // return an operand unchanged (no arithmetic) must quiet it explicitly.
  bool passes_operand = op == Ops::NEG || op == Ops::MAX || op == Ops::MIN || op == Ops::WHERE;
  if (quiet && passes_operand && rk == Kind::F32 && out == DType::float32) e = fmt::format("rt_quiet({})", e);
  return encode(e, rk, out);
}

std::string cast(const std::string& v, DType from, DType to) {
  if (!is_float(from) && !is_float(to)) return encode(decode(v, from, Kind::I64), Kind::I64, to);
  Kind k = kind_of(from) == Kind::F32 && kind_of(to) == Kind::F32 ? Kind::F32 : Kind::F64;  // float->double exact
  std::string e = decode(v, from, k);
  if (k == Kind::F32 && to == DType::float32) e = fmt::format("rt_quiet({})", e);  // as through double
  return encode(e, k, to);
}

// The stored bits as a literal of the storage type.
std::string literal(uint64_t bits, DType d) {
  switch (d) {
    case DType::float32: {
      uint32_t b = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &b, 4);
      return std::isfinite(f) ? fmt::format("{:a}f", f) : fmt::format("__builtin_bit_cast(float, 0x{:08x}u)", b);
    }
    case DType::float64: {
      double f;
      std::memcpy(&f, &bits, 8);
      return std::isfinite(f) ? fmt::format("{:a}", f) : fmt::format("__builtin_bit_cast(double, 0x{:016x}ull)", bits);
    }
    case DType::float16:
    case DType::bfloat16:
      return fmt::format("(unsigned short)0x{:04x}", bits & 0xffff);
    case DType::int32:
      return fmt::format("(int)0x{:08x}u", bits & 0xffffffffu);
    case DType::int64:
      return fmt::format("(long long)0x{:016x}ull", bits);
    case DType::int8:
      return fmt::format("(signed char)(unsigned char)0x{:02x}", bits & 0xff);
    case DType::fp8e4m3:
    case DType::fp8e5m2:
      return fmt::format("(unsigned char)0x{:02x}", bits & 0xff);
    case DType::int16:
      return fmt::format("(short)(unsigned short)0x{:04x}", bits & 0xffff);
    case DType::uint32:
      return fmt::format("0x{:08x}u", bits & 0xffffffffu);
    default:
      return fmt::format("(unsigned char)0x{:02x}", bits & 0xff);
  }
}

// The values every use of which is an operand of a float32 ADD or MUL (in the body, in a reduce's fold):
// float arithmetic quiets a signaling NaN itself and returns the same quiet NaN it would return for the
// operand quieted first (x86: the first operand's payload, quieted; GPUs: a canonical NaN either way), so
// an op that passes such a value on unchanged (WHERE, MAX, MIN, NEG) needs no rt_quiet. The naive
// allreduce's kernel selects each peer's element by device number and adds them: with rt_quiet on every
// select it took 4.5x the time (g++ -O3 -march=native, AVX-512 mask registers spilled).
std::unordered_set<int> quiet_free(const std::vector<Stmt>& body, int result) {
  std::unordered_map<int, int> uses, arithmetic;
  std::unordered_map<int, DType> dtypes;
  auto use = [&](int id, Ops op) {
    ++uses[id];
    if ((op == Ops::ADD || op == Ops::MUL) && dtypes[id] == DType::float32) ++arithmetic[id];
  };
  std::function<void(const std::vector<Stmt>&)> walk = [&](const std::vector<Stmt>& stmts) {
    for (const Stmt& st : stmts) {
      walk(st.body);
      if (st.kind == StmtKind::Reduce) use(st.result, st.op);
      for (int x : st.src) use(x, st.kind == StmtKind::Alu ? st.op : Ops::SINK);
      dtypes[st.id] = st.dtype;
    }
  };
  walk(body);
  ++uses[result];  // stored (or used by the caller of render_values)
  std::unordered_set<int> out;
  for (const auto& [id, n] : uses)
    if (arithmetic[id] == n) out.insert(id);
  return out;
}

class BodyRenderer {
 public:
  BodyRenderer(const Dialect& d, const GidRange* range, const IndexForm& form, std::unordered_set<int> quiet_free)
      : d_(d), range_(range), form_(form), quiet_free_(std::move(quiet_free)) {}

  void block(const std::vector<Stmt>& stmts, int depth) {
    for (const Stmt& s : stmts) stmt(s, depth);
  }
  std::string out;

 private:
  std::string v(int id) const { return fmt::format("v{}", id); }
  std::pair<std::string, DType> arg(int id) const { return {v(id), types_.at(id)}; }

  void line(int depth, const std::string& text) {
    out += std::string(static_cast<size_t>(2 * depth), ' ') + text + "\n";
  }

  void stmt(const Stmt& s, int depth) {
    std::string t = c_type(s.dtype), e;
    // x where the mask holds, else 0; on a gid range the constraints on gid alone are resolved, and a
    // value masked off over the whole range is a plain 0, so its load is not emitted at all
    auto masked = [&](const std::string& x) {
      Mask m = range_ ? s.valid.on_range("gid", range_->first, range_->last) : s.valid;
      if (m.never()) return fmt::format("({})0", t);
      return m.always() ? x : fmt::format("({}) ? {} : ({})0", m.render(), x, t);
    };
    switch (s.kind) {
      case StmtKind::Const:
        e = literal(s.bits, s.dtype);
        break;
      case StmtKind::Load:
        e = masked(form_.lanes ? fmt::format("ld{}.v[lane]", s.input)
                               : fmt::format("in{}[{}]", s.input, s.index.render()));
        break;
      case StmtKind::DeviceNum:
        e = fmt::format("({})dnum", t);
        break;
      case StmtKind::Scalar: {  // the argument word's low bytes are the value's stored bytes
        static const char* kWord[] = {"", "unsigned char",     "unsigned short", "", "unsigned int", "", "",
                                      "", "unsigned long long"};
        e = fmt::format("__builtin_bit_cast({}, ({})sc{})", t, kWord[itemsize(s.dtype)], s.input);
        break;
      }
      case StmtKind::Alu: {
        std::vector<std::pair<std::string, DType>> args;
        for (int x : s.src) args.push_back(arg(x));
        e = alu(s.op, s.dtype, args, d_, !quiet_free_.count(s.id));
        break;
      }
      case StmtKind::Cast:
        e = cast(v(s.src[0]), types_.at(s.src[0]), s.dtype);
        break;
      case StmtKind::Bitcast:
        e = fmt::format("__builtin_bit_cast({}, {})", t, v(s.src[0]));
        break;
      case StmtKind::Select:
        e = masked(v(s.src[0]));
        break;
      case StmtKind::Reduce: {
        std::string acc = fmt::format("acc{}", s.id);
        line(depth, fmt::format("{} {} = {};", t, acc, literal(s.bits, s.dtype)));
        int d = depth;
        for (const auto& l : s.loops)
          line(d++, fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1}) {{", form_.counter, l.name, l.extent));
        block(s.body, d);
        // an integer max or min of at most 32 bits, in its own type: the form g++ vectorizes (the long long
        // form of alu, with its narrowing, it does not); the same value (no wrap, no NaN)
        bool narrow_int = !is_float(s.dtype) && s.dtype != DType::bool_ && itemsize(s.dtype) <= 4 &&
                          (s.op == Ops::MAX || s.op == Ops::MIN) && types_.at(s.result) == s.dtype;
        if (narrow_int)
          line(d, fmt::format("{0} = {0} {2} {1} ? {1} : {0};", acc, v(s.result), s.op == Ops::MAX ? "<" : ">"));
        else
          line(d, fmt::format("{} = {};", acc, alu(s.op, s.dtype, {{acc, s.dtype}, arg(s.result)}, d_)));
        while (d-- > depth) line(d, "}");
        e = acc;
        break;
      }
    }
    types_[s.id] = s.dtype;
    line(depth, fmt::format("const {} {} = {};", t, v(s.id), e));
  }

  const Dialect& d_;
  const GidRange* range_;  // null: every gid
  IndexForm form_;
  std::unordered_set<int> quiet_free_;  // values whose uses quiet them (quiet_free)
  std::unordered_map<int, DType> types_;
};

}  // namespace

std::string c_type(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return "float";
    case DType::float64:
      return "double";
    case DType::float16:
    case DType::bfloat16:
      return "unsigned short";
    case DType::int32:
      return "int";
    case DType::int64:
      return "long long";
    case DType::int8:
      return "signed char";
    case DType::int16:
      return "short";
    case DType::uint32:
      return "unsigned int";
    case DType::uint8:
    case DType::bool_:
    case DType::fp8e4m3:
    case DType::fp8e5m2:
      return "unsigned char";
    default:
      throw InternalError(fmt::format("render: no storage type for {}", dtype_name(dtype)));
  }
}

std::string render_values(const Kernel& k, const Dialect& d, int depth, const GidRange* range, const IndexForm& form) {
  BodyRenderer r(d, range, form, quiet_free(k.body, k.result));
  r.block(k.body, depth);
  return std::move(r.out);
}

std::string render_body(const Kernel& k, const Dialect& d, int depth, const GidRange* range, const IndexForm& form) {
  std::string out = render_values(k, d, depth, range, form);
  std::string indent(static_cast<size_t>(2 * depth), ' ');
  out += fmt::format("{}out[gid] = v{};\n", indent, k.result);
  for (int j = 0; j < k.peer_outputs; ++j) out += fmt::format("{}peer{}[gid] = v{};\n", indent, j, k.result);
  return out;
}

namespace {
void collect_flips(const std::vector<Stmt>& body, std::vector<int64_t>& out) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Load || s.kind == StmtKind::Select) {
      auto f = s.valid.flips("gid");
      out.insert(out.end(), f.begin(), f.end());
    }
    collect_flips(s.body, out);
  }
}
}  // namespace

std::vector<GidRange> gid_ranges(const Kernel& k, size_t max_ranges) {
  std::vector<int64_t> cuts;
  collect_flips(k.body, cuts);
  std::erase_if(cuts, [&](int64_t p) { return p <= 0; });  // gid >= 0; a kept mask flips inside [1, numel)
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  if (cuts.empty() || cuts.size() + 1 > max_ranges) return {};
  // the last range is open (kLastGid), so the ranges and the source do not depend on numel (code())
  std::vector<GidRange> out;
  int64_t first = 0;
  for (int64_t p : cuts) {
    out.push_back({first, p - 1});
    first = p;
  }
  out.push_back({first, kLastGid});
  return out;
}

std::vector<const Kernel*> unique_kernels(std::span<const Kernel> kernels) {
  std::map<std::string, const Kernel*> by_name;
  std::vector<const Kernel*> out;
  for (const Kernel& k : kernels) {
    auto [it, fresh] = by_name.emplace(k.name, &k);
    if (fresh) {
      out.push_back(&k);
    } else if (it->second->code() != k.code()) {
      throw ConfigError(fmt::format("two different kernels are named {}", k.name));
    }
  }
  return out;
}

std::vector<std::string> input_params(const Kernel& k) {
  std::vector<std::string> p;
  for (size_t i = 0; i < k.inputs.size(); ++i) p.push_back(fmt::format("const {}* in{}", c_type(k.inputs[i].dtype), i));
  return p;
}

std::vector<std::string> scalar_params(const Kernel& k) {
  std::vector<std::string> p;
  for (size_t j = 0; j < k.scalars.size(); ++j) p.push_back(fmt::format("unsigned long long sc{}", j));
  return p;
}

}  // namespace ringrt::codegen::cstyle
