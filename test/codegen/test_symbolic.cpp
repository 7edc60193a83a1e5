// codegen/symbolic: the simplification rules as a table, the rendered text of common index forms, and
// a seeded fuzz test that every simplified expression keeps its value (floor semantics).
#include <fmt/format.h>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <functional>
#include <random>

#include "codegen/symbolic.hpp"
#include "codegen/view.hpp"
#include "core/errors.hpp"

BOOST_AUTO_TEST_SUITE(test_symbolic)

namespace bdata = boost::unit_test::data;
using ringrt::codegen::Expr;
using ringrt::codegen::Mask;

namespace {

const Expr x = Expr::var("x", 0, 99);
const Expr y = Expr::var("y", 0, 9);
Expr k(int64_t v) { return Expr::constant(v); }

int64_t floor_div(int64_t a, int64_t d) { return a / d - ((a % d != 0 && a < 0) ? 1 : 0); }

}  // namespace

BOOST_AUTO_TEST_CASE(rules) {
  BOOST_TEST((x * 1 == x));                                   // x*1
  BOOST_TEST((x * 0 == k(0)));                                // x*0
  BOOST_TEST((x + k(0) == x));                                // x+0
  BOOST_TEST(((x * 4).floordiv(4) == x));                     // (a*k)//k
  BOOST_TEST((x.floordiv(2).floordiv(5) == x.floordiv(10)));  // (x//a)//b
  BOOST_TEST((y.mod(10) == y));                               // x%n, 0 <= x < n
  BOOST_TEST((y.floordiv(10) == k(0)));                       // x//n, 0 <= x < n
  BOOST_TEST((x.floordiv(10) * 10 + x.mod(10) == x));         // unravel then ravel
  BOOST_TEST(((x * 6 + k(3)).floordiv(3) == x * 2 + k(1)));
  BOOST_TEST(((x * 4 + y).mod(2) == y.mod(2)));
  BOOST_TEST(((x * 10 + y).floordiv(10) == x));
  BOOST_TEST(((x * 10 + y).mod(10) == y));
  BOOST_TEST(((x * 2).floordiv(4) == x.floordiv(2)));  // gcd
  BOOST_TEST((x.mod(12).mod(4) == x.mod(4)));
  BOOST_TEST(((x - x) == k(0)));
  BOOST_TEST(((y + k(10)).floordiv(10) == k(1)));  // one bucket
  BOOST_TEST(((y + k(10)).mod(10) == y));
  BOOST_TEST(*(k(7) * 3 + k(1)).as_constant() == 22);
  BOOST_TEST(*k(-7).floordiv(2).as_constant() == -4);  // floor, not truncation
  BOOST_TEST(*k(-7).mod(2).as_constant() == 1);
  BOOST_TEST(x.min() == 0);
  BOOST_TEST((x * -2 + k(5)).min() == -193);
  BOOST_CHECK_THROW(x.floordiv(0), ringrt::InternalError);
}

BOOST_AUTO_TEST_CASE(render) {
  BOOST_TEST(x.render() == "x");
  BOOST_TEST((x * 400 + y).render() == "400*x + y");
  BOOST_TEST((x - k(2)).render() == "x - 2");
  BOOST_TEST(x.floordiv(10).render() == "(x / 10)");
  BOOST_TEST((x + y).mod(7).render() == "((x + y) % 7)");
  BOOST_TEST((x - k(5)).floordiv(10).render() == "((x + 5) / 10) - 1");
  BOOST_TEST(Expr::var("n", -5, 5).floordiv(10).render() == "rt_floordiv(n, 10)");  // may be negative
  BOOST_TEST(k(3000000000LL).render() == "3000000000LL");
  Expr gid = ringrt::codegen::gid_var(1600), dnum = ringrt::codegen::dnum_var(3);
  BOOST_TEST((gid + dnum * 400).render() == "gid + 400*dnum");
  Mask m;
  m.require_range(gid - k(2), k(0), k(400));
  BOOST_TEST(m.render() == "(gid >= 2) && (gid < 402)");
  Mask always, never;
  always.require_ge0(gid);
  never.require_ge0(gid - k(5000));
  never.require_ge0(k(-1));
  BOOST_TEST(always.always());
  BOOST_TEST(always.render() == "1");
  BOOST_TEST(never.never());
  BOOST_TEST(never.render() == "0");
}

BOOST_AUTO_TEST_CASE(mask_flips_and_ranges) {
  // gid in [2, 402) over gid in [0, 999]: the truth of both constraints changes at 2 and at 402
  Expr gid = ringrt::codegen::gid_var(1000), dnum = ringrt::codegen::dnum_var(3);
  Mask m;
  m.require_range(gid, k(2), k(402));
  std::vector<int64_t> f = m.flips("gid");
  std::sort(f.begin(), f.end());
  BOOST_TEST(f == (std::vector<int64_t>{2, 402}), boost::test_tools::per_element());
  BOOST_TEST(m.on_range("gid", 0, 1).never());
  BOOST_TEST(m.on_range("gid", 2, 401).always());
  BOOST_TEST(m.on_range("gid", 402, 999).never());
  BOOST_TEST(m.on_range("gid", 0, 401).render() == "(gid >= 2)");  // the other constraint holds there
  // odd coefficients: 3*gid - 7 >= 0 from gid 3 on; 10 - 4*gid >= 0 up to gid 2
  Mask odd;
  odd.require_ge0(gid * 3 - k(7));
  odd.require_ge0(k(10) - gid * 4);
  f = odd.flips("gid");
  BOOST_TEST(f == (std::vector<int64_t>{3, 3}), boost::test_tools::per_element());
  for (int64_t g = 0; g < 6; ++g) {  // on a one-point range the mask is exactly its value there
    Mask at = odd.on_range("gid", g, g);
    BOOST_TEST((at.always() || at.never()));
    BOOST_TEST(at.always() == odd.eval({{"gid", g}}), "gid " << g);
  }
  // a constraint with another variable (dnum) or a div/mod of gid gives no flip and stays
  Mask mixed;
  mixed.require_ge0(gid - dnum * 100);
  mixed.require_ge0(gid.mod(10) - k(3));
  BOOST_TEST(mixed.flips("gid").empty());
  BOOST_TEST((mixed.on_range("gid", 0, 5) == mixed));
}

// Constraints on floor((k1*gid + c1) / d) (a concatenation read through a flattened view: device j's
// chunk i of an alltoall is gid / 4096 == i) flip where the quotient crosses its bound; on every range
// between consecutive flips each constraint is constant, checked against eval at every gid.
BOOST_AUTO_TEST_CASE(mask_flips_of_quotients) {
  Expr gid = ringrt::codegen::gid_var(60);
  Mask m;
  m.require_ge0(gid.floordiv(8) - k(2));               // gid / 8 >= 2: from 16 on
  m.require_ge0(k(4) - (gid * 3 + k(5)).floordiv(7));  // (3 gid + 5) / 7 <= 4: up to gid 9
  Mask upper;
  upper.require_ge0(k(4) - (gid * 3 + k(5)).floordiv(7));
  Mask lower;
  lower.require_ge0(gid.floordiv(8) - k(2));
  BOOST_TEST(lower.flips("gid") == (std::vector<int64_t>{16}), boost::test_tools::per_element());
  BOOST_TEST(upper.flips("gid") == (std::vector<int64_t>{10}), boost::test_tools::per_element());
  for (const Mask* mask : {&m, &upper, &lower}) {
    std::vector<int64_t> cuts = mask->flips("gid");
    cuts.push_back(0);
    cuts.push_back(60);
    std::sort(cuts.begin(), cuts.end());
    for (size_t r = 0; r + 1 < cuts.size(); ++r) {
      int64_t lo = std::clamp<int64_t>(cuts[r], 0, 60), hi = std::clamp<int64_t>(cuts[r + 1], 0, 60) - 1;
      if (lo > hi) continue;
      Mask on = mask->on_range("gid", lo, hi);
      BOOST_TEST((on.always() || on.never()), "range " << lo << ".." << hi);
      for (int64_t g = lo; g <= hi; ++g) BOOST_TEST(on.always() == mask->eval({{"gid", g}}), "gid " << g);
    }
  }
}

BOOST_AUTO_TEST_CASE(unravel_ravel_round_trip) {
  Expr gid = ringrt::codegen::gid_var(2 * 3 * 4);
  auto idx = ringrt::codegen::unravel(gid, {2, 3, 4});
  BOOST_TEST(idx[0].render() == "(gid / 12)");
  BOOST_TEST(idx[1].render() == "((gid / 4) % 3)");
  BOOST_TEST(idx[2].render() == "(gid % 4)");
  BOOST_TEST((ringrt::codegen::ravel(idx, {2, 3, 4}) == gid));
  BOOST_TEST((ringrt::codegen::ravel(ringrt::codegen::unravel(gid, {6, 4}), {6, 4}) == gid));
}

// Random expressions over two variables built with every operation, evaluated symbolically (after
// simplification) and directly: the values agree at every point of the ranges.
BOOST_DATA_TEST_CASE(simplification_keeps_values, bdata::xrange(20), batch) {
  std::mt19937_64 rng(static_cast<uint64_t>(7000 + batch));
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 100; ++trial) {
    int64_t alo = pick(-5, 3), ahi = alo + pick(0, 40), blo = 0, bhi = pick(0, 12);
    Expr a = Expr::var("a", alo, ahi), b = Expr::var("b", blo, bhi, 1);
    using Fn = std::function<int64_t(int64_t, int64_t)>;
    Expr e = a;
    Fn f = [](int64_t av, int64_t) { return av; };
    std::string trace = "a";
    for (int step = 0; step < 6; ++step) {
      int op = pick(0, 5);
      int64_t v = pick(1, 7);
      if (op == 0) {
        e = e + b * v, f = [f, v](int64_t p, int64_t q) { return f(p, q) + q * v; }, trace += fmt::format(" +b*{}", v);
      } else if (op == 1) {
        e = e * v, f = [f, v](int64_t p, int64_t q) { return f(p, q) * v; }, trace += fmt::format(" *{}", v);
      } else if (op == 2) {
        e = e.floordiv(v), f = [f, v](int64_t p, int64_t q) { return floor_div(f(p, q), v); },
        trace += fmt::format(" //{}", v);
      } else if (op == 3) {
        e = e.mod(v), f = [f, v](int64_t p, int64_t q) { return f(p, q) - floor_div(f(p, q), v) * v; },
        trace += fmt::format(" %{}", v);
      } else if (op == 4) {
        e = e - k(v), f = [f, v](int64_t p, int64_t q) { return f(p, q) - v; }, trace += fmt::format(" -{}", v);
      } else {
        e = e + a.floordiv(v) * v + a.mod(v) - a, trace += fmt::format(" +a//{0}*{0}+a%{0}-a", v);
      }
    }
    for (int64_t av = alo; av <= ahi; ++av) {
      for (int64_t bv = blo; bv <= bhi; ++bv) {
        int64_t got = e.eval({{"a", av}, {"b", bv}}), want = f(av, bv);
        BOOST_REQUIRE_MESSAGE(got == want, "batch " << batch << " trial " << trial << ": " << trace << " at a=" << av
                                                    << " b=" << bv << " simplified to " << e.render() << " = " << got
                                                    << ", want " << want);
        BOOST_REQUIRE(got >= e.min() && got <= e.max());
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
