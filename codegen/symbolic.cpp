// Canonical sums of atoms and the div/mod rules listed in symbolic.hpp.
#include "codegen/symbolic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "core/errors.hpp"

namespace ringrt::codegen {

namespace {

int64_t fdiv(int64_t a, int64_t d) { return a / d - ((a % d != 0 && a < 0) ? 1 : 0); }  // d > 0
int64_t fmod(int64_t a, int64_t d) { return a - fdiv(a, d) * d; }

int64_t clamp128(__int128 v) {
  constexpr int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  return v < lo ? lo : v > hi ? hi : static_cast<int64_t>(v);
}

std::string lit(int64_t v) {
  bool small = v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
  return small ? std::to_string(v) : std::to_string(v) + "LL";
}

}  // namespace

struct Atom {
  enum class Kind : uint8_t { Var, Div, Mod };
  Kind kind = Kind::Var;
  std::string name;  // Var
  int rank = 0;      // print order: a Var's own, else the lowest of the variables in x
  Expr x;            // Div, Mod: the numerator
  int64_t d = 1;     // Div, Mod: the divisor, > 0
  int64_t lo = 0, hi = 0;

  int64_t eval(const VarValues& vars) const {
    if (kind == Kind::Var) {
      auto it = vars.find(name);
      if (it == vars.end()) throw InternalError(fmt::format("symbolic: no value for variable {}", name));
      return it->second;
    }
    int64_t v = x.eval(vars);
    return kind == Kind::Div ? fdiv(v, d) : fmod(v, d);
  }
  std::string render() const {
    if (kind == Kind::Var) return name;
    std::string num = x.render();
    if (x.min() < 0)  // C's truncating / and % agree with floor only for a numerator >= 0
      return fmt::format("{}({}, {})", kind == Kind::Div ? "rt_floordiv" : "rt_floormod", num, lit(d));
    bool simple = x.c_ == 0 && x.terms_.size() == 1 && x.terms_[0].k == 1;  // one atom: no parentheses
    return fmt::format("({} {} {})", simple ? num : "(" + num + ")", kind == Kind::Div ? "/" : "%", lit(d));
  }
};

namespace {

int compare_atoms(const Atom& a, const Atom& b) {
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  if (a.kind == Atom::Kind::Var) {
    if (a.rank != b.rank) return a.rank < b.rank ? -1 : 1;
    return a.name.compare(b.name);
  }
  if (a.d != b.d) return a.d < b.d ? -1 : 1;
  return compare(a.x, b.x);
}

}  // namespace

int compare(const Expr& a, const Expr& b) {
  size_t n = std::min(a.terms_.size(), b.terms_.size());
  for (size_t i = 0; i < n; ++i) {
    if (int c = compare_atoms(*a.terms_[i].atom, *b.terms_[i].atom); c != 0) return c;
    if (a.terms_[i].k != b.terms_[i].k) return a.terms_[i].k < b.terms_[i].k ? -1 : 1;
  }
  if (a.terms_.size() != b.terms_.size()) return a.terms_.size() < b.terms_.size() ? -1 : 1;
  return a.c_ == b.c_ ? 0 : a.c_ < b.c_ ? -1 : 1;
}

bool Expr::operator==(const Expr& o) const { return compare(*this, o) == 0; }

Expr Expr::constant(int64_t c) {
  Expr e;
  e.c_ = c;
  return e;
}

Expr Expr::var(const std::string& name, int64_t lo, int64_t hi, int rank) {
  auto a = std::make_shared<Atom>();
  a->name = name;
  a->rank = rank;
  a->lo = lo;
  a->hi = hi;
  return from_atom(std::move(a));
}

Expr Expr::from_atom(std::shared_ptr<const Atom> atom) {
  Expr e;
  e.terms_.push_back({1, std::move(atom)});
  return e;
}

Expr Expr::make(int64_t c, std::vector<Term> terms) {
  std::stable_sort(terms.begin(), terms.end(),
                   [](const Term& a, const Term& b) { return compare_atoms(*a.atom, *b.atom) < 0; });
  Expr e;
  e.c_ = c;
  for (auto& t : terms) {  // merge equal atoms, drop zero coefficients
    if (!e.terms_.empty() && compare_atoms(*e.terms_.back().atom, *t.atom) == 0) {
      e.terms_.back().k += t.k;
      if (e.terms_.back().k == 0) e.terms_.pop_back();
    } else if (t.k != 0) {
      e.terms_.push_back(std::move(t));
    }
  }
  // k*(x % d) + k*d*(x // d) -> k*x: an unravel followed by a ravel folds back to the flat index.
  for (size_t i = 0; i < e.terms_.size(); ++i) {
    const Atom& m = *e.terms_[i].atom;
    if (m.kind != Atom::Kind::Mod) continue;
    int64_t k = e.terms_[i].k;
    Expr q = m.x.floordiv(m.d);
    if (q.c_ != 0 || q.terms_.size() != 1 || q.terms_[0].k != 1) continue;
    for (size_t j = 0; j < e.terms_.size(); ++j) {
      if (j == i || e.terms_[j].k != k * m.d || compare_atoms(*e.terms_[j].atom, *q.terms_[0].atom) != 0) continue;
      Expr rest;
      rest.c_ = e.c_;
      for (size_t t = 0; t < e.terms_.size(); ++t)
        if (t != i && t != j) rest.terms_.push_back(e.terms_[t]);
      return rest + m.x * k;
    }
  }
  return e;
}

Expr Expr::operator+(const Expr& o) const {
  if (o.terms_.empty() && terms_.empty()) return constant(c_ + o.c_);
  std::vector<Term> t = terms_;
  t.insert(t.end(), o.terms_.begin(), o.terms_.end());
  return make(c_ + o.c_, std::move(t));
}

Expr Expr::operator-(const Expr& o) const { return *this + o * -1; }

Expr Expr::operator*(int64_t k) const {
  if (k == 0) return Expr();
  std::vector<Term> t = terms_;
  for (auto& term : t) term.k *= k;
  return make(c_ * k, std::move(t));
}

std::optional<int64_t> Expr::as_constant() const {
  if (terms_.empty()) return c_;
  return std::nullopt;
}

int64_t Expr::min() const {
  __int128 v = c_;
  for (const auto& t : terms_) v += static_cast<__int128>(t.k) * (t.k > 0 ? t.atom->lo : t.atom->hi);
  return clamp128(v);
}

int64_t Expr::max() const {
  __int128 v = c_;
  for (const auto& t : terms_) v += static_cast<__int128>(t.k) * (t.k > 0 ? t.atom->hi : t.atom->lo);
  return clamp128(v);
}

int64_t Expr::magnitude() const {
  auto abs128 = [](__int128 v) { return v < 0 ? -v : v; };
  constexpr __int128 kCap = static_cast<__int128>(1) << 100;  // saturated: far past INT64_MAX, no overflow
  __int128 sum = abs128(c_), most = 0;
  for (const auto& t : terms_) {
    const Atom& a = *t.atom;
    __int128 value = std::max(abs128(a.lo), abs128(a.hi)), k = abs128(t.k);
    most = std::max({most, value, k});
    if (a.kind != Atom::Kind::Var)
      most = std::max({most, static_cast<__int128>(a.x.magnitude()), static_cast<__int128>(a.d)});
    sum = std::min(kCap, sum + k * value);  // every partial sum is at most the sum of the magnitudes
  }
  return clamp128(std::max(sum, most));
}

Expr Expr::floordiv(int64_t d) const {
  if (d <= 0) throw InternalError(fmt::format("symbolic: division by {}", d));
  if (d == 1) return *this;
  if (terms_.empty()) return constant(fdiv(c_, d));
  int64_t lo = min(), hi = max();
  if (fdiv(lo, d) == fdiv(hi, d)) return constant(fdiv(lo, d));  // one bucket
  std::vector<Term> quot, rest;                                  // (k*d*a + r) // d -> k*a + r // d
  for (const auto& t : terms_) (t.k % d == 0 ? quot : rest).push_back(t.k % d == 0 ? Term{t.k / d, t.atom} : t);
  if (!quot.empty() || fdiv(c_, d) != 0) return make(fdiv(c_, d), quot) + make(fmod(c_, d), rest).floordiv(d);
  int64_t g = std::gcd(d, c_);  // (g*x) // (g*d) -> x // d
  for (const auto& t : terms_) g = std::gcd(g, t.k);
  if (g > 1) {
    std::vector<Term> t = terms_;
    for (auto& term : t) term.k /= g;
    return make(c_ / g, std::move(t)).floordiv(d / g);
  }
  const Atom& a0 = *terms_[0].atom;  // (x // a) // b -> x // (a*b)
  if (c_ == 0 && terms_.size() == 1 && terms_[0].k == 1 && a0.kind == Atom::Kind::Div) return a0.x.floordiv(a0.d * d);
  auto a = std::make_shared<Atom>();
  a->kind = Atom::Kind::Div;
  a->rank = rank();
  a->x = *this;
  a->d = d;
  a->lo = fdiv(lo, d);
  a->hi = fdiv(hi, d);
  return from_atom(std::move(a));
}

Expr Expr::mod(int64_t d) const {
  if (d <= 0) throw InternalError(fmt::format("symbolic: modulo by {}", d));
  if (d == 1) return Expr();
  std::vector<Term> rest;  // (k*d*a + r) % d -> r % d
  for (const auto& t : terms_)
    if (t.k % d != 0) rest.push_back(t);
  Expr r = make(fmod(c_, d), std::move(rest));
  if (r.terms_.empty()) return r;
  int64_t lo = r.min(), q = fdiv(lo, d);
  if (q == fdiv(r.max(), d)) return r - constant(q * d);  // one bucket (0 <= x < d: x itself)
  int64_t g = std::gcd(d, r.c_);                          // (g*x) % (g*d) -> g*(x % d)
  for (const auto& t : r.terms_) g = std::gcd(g, t.k);
  if (g > 1) {
    std::vector<Term> t = r.terms_;
    for (auto& term : t) term.k /= g;
    return make(r.c_ / g, std::move(t)).mod(d / g) * g;
  }
  const Atom& a0 = *r.terms_[0].atom;  // (x % (a*b)) % b -> x % b
  if (r.c_ == 0 && r.terms_.size() == 1 && r.terms_[0].k == 1 && a0.kind == Atom::Kind::Mod && a0.d % d == 0)
    return a0.x.mod(d);
  auto a = std::make_shared<Atom>();
  a->kind = Atom::Kind::Mod;
  a->rank = r.rank();
  a->x = r;
  a->d = d;
  a->lo = 0;
  a->hi = d - 1;
  return from_atom(std::move(a));
}

int Expr::rank() const {
  int r = std::numeric_limits<int>::max();
  for (const auto& t : terms_) r = std::min(r, t.atom->rank);
  return r;
}

int64_t Expr::eval(const VarValues& vars) const {
  int64_t v = c_;
  for (const auto& t : terms_) v += t.k * t.atom->eval(vars);
  return v;
}

std::string Expr::render() const {
  std::string out;
  for (const auto& t : terms_) {
    int64_t mag = t.k < 0 ? -t.k : t.k;
    std::string term = mag == 1 ? t.atom->render() : fmt::format("{}*{}", lit(mag), t.atom->render());
    out += out.empty() ? (t.k < 0 ? "-" + term : term) : (t.k < 0 ? " - " : " + ") + term;
  }
  if (out.empty()) return lit(c_);
  if (c_ != 0) out += (c_ < 0 ? " - " : " + ") + lit(c_ < 0 ? -c_ : c_);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Mask

void Mask::require_ge0(const Expr& e) {
  if (never_ || e.min() >= 0) return;
  if (e.max() < 0) {
    never_ = true;
    atoms_.clear();
    return;
  }
  if (std::find(atoms_.begin(), atoms_.end(), e) == atoms_.end()) atoms_.push_back(e);
}

void Mask::require_range(const Expr& i, const Expr& lo, const Expr& hi) {
  require_ge0(i - lo);
  require_ge0(hi - i - Expr::constant(1));
}

Mask Mask::operator&(const Mask& o) const {
  Mask m = *this;
  if (o.never_) {
    m.never_ = true;
    m.atoms_.clear();
  }
  for (const auto& a : o.atoms_) m.require_ge0(a);
  return m;
}

bool Mask::eval(const VarValues& vars) const {
  if (never_) return false;
  for (const auto& a : atoms_)
    if (a.eval(vars) < 0) return false;
  return true;
}

std::optional<Mask::Monotone> Mask::monotone_in(const Expr& e, const std::string& var) {
  if (e.terms_.size() != 1) return std::nullopt;
  const Atom& a = *e.terms_[0].atom;
  Monotone m{e.terms_[0].k, e.c_};
  if (a.kind == Atom::Kind::Var) return a.name == var ? std::optional(m) : std::nullopt;
  if (a.kind != Atom::Kind::Div || a.x.terms_.size() != 1 || a.x.terms_[0].k <= 0) return std::nullopt;
  const Atom& inner = *a.x.terms_[0].atom;
  if (inner.kind != Atom::Kind::Var || inner.name != var) return std::nullopt;
  m.k1 = a.x.terms_[0].k, m.c1 = a.x.c_, m.d = a.d;
  return m;
}

__int128 Mask::Monotone::at(int64_t v) const {
  __int128 num = static_cast<__int128>(k1) * v + c1, q = num / d - ((num % d != 0 && num < 0) ? 1 : 0);
  return k * q + c;
}

int64_t Mask::Monotone::flip() const {
  // f = floor((k1*var + c1) / d) is non-decreasing in var. k > 0: e >= 0 from f >= m = ceil(-c / k) on,
  // i.e. from k1*var + c1 >= m*d; k < 0: up to f <= M = floor(c / -k), i.e. k1*var + c1 < (M + 1)*d.
  __int128 bound = k > 0 ? static_cast<__int128>(-fdiv(c, k)) * d : static_cast<__int128>(fdiv(c, -k) + 1) * d;
  __int128 need = bound - c1;  // the first var with k1*var >= need: ceil(need / k1)
  __int128 p = need / k1 + ((need % k1 != 0 && need > 0) ? 1 : 0);
  return clamp128(p);
}

std::vector<int64_t> Mask::flips(const std::string& var) const {
  std::vector<int64_t> out;
  for (const auto& e : atoms_)
    if (auto m = monotone_in(e, var)) out.push_back(m->flip());
  return out;
}

Mask Mask::on_range(const std::string& var, int64_t lo, int64_t hi) const {
  Mask m;
  m.never_ = never_;
  for (const auto& e : atoms_) {
    auto mono = monotone_in(e, var);
    if (!mono) {
      m.atoms_.push_back(e);
      continue;
    }
    __int128 at_lo = mono->at(lo), at_hi = mono->at(hi);
    if (at_lo >= 0 && at_hi >= 0) continue;  // holds on the whole range (monotone: the ends bound it)
    if (at_lo < 0 && at_hi < 0) {
      m.never_ = true;
      m.atoms_.clear();
      return m;
    }
    m.atoms_.push_back(e);
  }
  return m;
}

int64_t Mask::magnitude() const {
  int64_t m = 0;  // render() moves terms across the comparison and compares with c + 1 at most
  for (const auto& e : atoms_) m = std::max(m, e.magnitude());
  return m == std::numeric_limits<int64_t>::max() ? m : m + 1;
}

std::string Mask::render() const {
  if (never_) return "0";
  if (atoms_.empty()) return "1";
  std::string out;
  for (const auto& e : atoms_) {
    // e = pos - neg + c >= 0, printed with the first variable on the left: "gid >= 2", "gid < 402".
    std::vector<Expr::Term> pos, neg;
    for (const auto& t : e.terms_) (t.k > 0 ? pos : neg).push_back({t.k > 0 ? t.k : -t.k, t.atom});
    Expr p = Expr::make(0, pos), n = Expr::make(0, neg);
    const Expr::Term* lead = &e.terms_[0];  // the term of the lowest-ranked variable (gid) leads
    for (const auto& t : e.terms_)
      if (t.atom->rank < lead->atom->rank) lead = &t;
    std::string atom = lead->k > 0 ? fmt::format("({} >= {})", p.render(), (n - e.c_).render())
                                   : fmt::format("({} < {})", n.render(), (p + (e.c_ + 1)).render());
    out += out.empty() ? atom : " && " + atom;
  }
  return out;
}

}  // namespace ringrt::codegen
