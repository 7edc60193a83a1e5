// Symbolic integer index expressions for generated kernels (reference: tinygrad uop/symbolic.py, the
// div/mod folding of its `sym` rules; Halide Simplify_Div.cpp / Simplify_Mod.cpp).
//
// Design. An Expr is always in one canonical form, c + sum_i k_i * atom_i, with the atoms sorted and
// distinct. An atom is a variable (gid, a reduce counter, dnum: each with an inclusive value range),
// floor(x / d) or x mod d (d > 0, floor semantics) of a smaller Expr. Every operation returns the
// simplified canonical form, so simplification is not a separate pass. The rules, using the value
// ranges atoms carry:
//   constants fold; k*x + j*x -> (k+j)*x; 0*x vanishes
//   (k*d*a + r) // d -> k*a + r // d           (k*d*a + r) % d -> r % d
//   x // d -> q when every value of x lies in [q*d, q*d + d)      x % d -> x - q*d likewise
//   (x // a) // b -> x // (a*b)                (x % (a*b)) % b -> x % b
//   (g*x) // (g*d) -> x // d                   k*(x % d) + k*d*(x // d) -> k*x   (unravel then ravel)
// The algebra is exact for all integers (floor semantics), so an identity never changes a value; the
// renderer emits C's `/` and `%` where the numerator is provably >= 0 and floor helpers elsewhere.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ringrt::codegen {

struct Atom;  // defined in symbolic.cpp

// Values of the variables, by name, for evaluating an expression numerically (tests, checks).
using VarValues = std::map<std::string, int64_t>;

class Expr {
 public:
  Expr() = default;  // the constant 0
  static Expr constant(int64_t c);
  // A variable with inclusive range [lo, hi]. `rank` orders variables when printed (gid first).
  static Expr var(const std::string& name, int64_t lo, int64_t hi, int rank = 0);

  Expr operator+(const Expr& o) const;
  Expr operator-(const Expr& o) const;
  Expr operator*(int64_t k) const;
  Expr operator+(int64_t c) const { return *this + constant(c); }
  Expr operator-(int64_t c) const { return *this - constant(c); }
  // floor(this / d) and this mod d (result in [0, d)); d > 0, else InternalError.
  Expr floordiv(int64_t d) const;
  Expr mod(int64_t d) const;

  std::optional<int64_t> as_constant() const;
  int64_t min() const;  // inclusive bounds over the variables' ranges (conservative)
  int64_t max() const;
  // A bound on the magnitude of every value render()'s C text computes over the variables' ranges: each
  // term, each partial sum, each div/mod numerator and divisor (INT64_MAX when it overflows). At most
  // INT32_MAX: the text is exact in 32-bit int arithmetic (the HIP renderer's 32-bit indices).
  int64_t magnitude() const;
  int64_t eval(const VarValues& vars) const;  // InternalError for an unknown variable
  int rank() const;                           // the lowest rank of its variables (INT_MAX: none)
  // C text over the variables' names, `long long` arithmetic: "gid + 400*dnum", "(gid / 400)".
  std::string render() const;

  bool operator==(const Expr& o) const;
  friend int compare(const Expr& a, const Expr& b);  // a total structural order: <0, 0, >0

 private:
  friend struct Atom;
  friend class Mask;
  struct Term {
    int64_t k;
    std::shared_ptr<const Atom> atom;
  };
  static Expr make(int64_t c, std::vector<Term> terms);  // canonicalizes
  static Expr from_atom(std::shared_ptr<const Atom> atom);
  int64_t c_ = 0;
  std::vector<Term> terms_;
};

// A conjunction of constraints `e >= 0`: where a padded read is in range. Empty means always true.
class Mask {
 public:
  // Adds e >= 0; dropped when always true over the ranges, makes the mask never() when always false.
  void require_ge0(const Expr& e);
  // Adds lo <= i < hi.
  void require_range(const Expr& i, const Expr& lo, const Expr& hi);
  Mask operator&(const Mask& o) const;
  bool always() const { return !never_ && atoms_.empty(); }
  bool never() const { return never_; }
  const std::vector<Expr>& atoms() const { return atoms_; }
  bool eval(const VarValues& vars) const;
  // Expr::magnitude over render()'s text: every atom's, plus 1 (the bound compared with).
  int64_t magnitude() const;
  // Where the mask's constraints on `var` alone that are monotone in it (k*var + c >= 0, e.g. gid >= 2,
  // gid < 402; k*(var // d) + c >= 0, e.g. gid / 4096 < 1, a concatenation's chunk of a flattened view) change truth:
  // each point p is the first value of var on the other side, so on [lo, hi] between two consecutive points every such
  // constraint is constant. Unsorted; one point per constraint.
  std::vector<int64_t> flips(const std::string& var) const;
  // The mask for var in [lo, hi] (inclusive): constraints on var alone that hold over the whole
  // range are dropped, one that fails everywhere makes the mask never(); the rest stay. For loop
  // splitting: the cpu renderer emits one loop per range between flips, without those masks.
  Mask on_range(const std::string& var, int64_t lo, int64_t hi) const;
  // C text: "(gid >= 2) && (gid < 402)", "1" when always, "0" when never.
  std::string render() const;
  bool operator==(const Mask& o) const { return never_ == o.never_ && atoms_ == o.atoms_; }

 private:
  // e = k * floor((k1*var + c1) / d) + c with k1 > 0 (d = 1, k1 = 1, c1 = 0: e = k*var + c), monotone in
  // var, when var is its only variable; nullopt otherwise.
  struct Monotone {
    int64_t k, c, k1 = 1, c1 = 0, d = 1;
    __int128 at(int64_t v) const;  // e's value at var = v
    int64_t flip() const;          // the first value of var on the other side of e >= 0
  };
  static std::optional<Monotone> monotone_in(const Expr& e, const std::string& var);
  bool never_ = false;
  std::vector<Expr> atoms_;  // in insertion order, no duplicates
};

}  // namespace ringrt::codegen
