#include <boost/test/unit_test.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "rewrite/pattern.hpp"
#include "test/support/checks.hpp"
#include "test/support/print.hpp"

BOOST_AUTO_TEST_SUITE(test_pattern)

using namespace ringrt;

namespace {

using Captures = std::vector<std::pair<std::string, UOp>>;

// Scalar int32 leaves (shape (), no device) and a buffer with stores for the AFTER patterns.
struct Fixture {
  UOpGraph g;
  UOp v = make_uop(Ops::DEFINE_VAR, DType::int32, {}, VarArg{"v", 0, 9}, &g);
  UOp w = make_uop(Ops::DEFINE_VAR, DType::int32, {}, VarArg{"w", 0, 9}, &g);
  UOp c0 = const_uop(DType::int32, 0, &g);
  UOp c1 = const_uop(DType::int32, 1, &g);
  UOp f1 = const_uop(DType::float32, 1.0, &g);

  bool matches(const UPat& p, const UOp& u) {
    Captures caps;
    return p.match(u, caps);
  }
  Captures captures(const UPat& p, const UOp& u) {
    Captures caps;
    BOOST_REQUIRE(p.match(u, caps));
    return caps;
  }
};

// The rewrite of u, or an invalid UOp when no rule applies.
UOp rw(const PatternMatcher& pm, const UOp& u) { return pm.rewrite(u).value_or(UOp()); }

// A rule that always rewrites to `to` and counts its calls.
std::pair<UPat, RewriteFn> always(UPat p, UOp to, int* calls = nullptr) {
  return {std::move(p), [to, calls](const Match&) -> std::optional<UOp> {
            if (calls) ++*calls;
            return to;
          }};
}

// A rule that counts its calls and declines.
std::pair<UPat, RewriteFn> declines(UPat p, int* calls) {
  return {std::move(p), [calls](const Match&) -> std::optional<UOp> {
            ++*calls;
            return std::nullopt;
          }};
}

}  // namespace

// ------------------------------------------------------------------------------------------------
BOOST_FIXTURE_TEST_SUITE(upat, Fixture)

BOOST_AUTO_TEST_CASE(any_matches_everything) {
  for (const UOp& u : {v, c1, f1, v + c1, v.alu(Ops::CMPLT, {w}), sink({v, w})}) {
    BOOST_TEST(matches(UPat(), u));
    BOOST_TEST(matches(UPat::any(), u));
  }
}

BOOST_AUTO_TEST_CASE(one_op) {
  BOOST_TEST(matches(UPat(Ops::ADD), v + c1));
  BOOST_TEST(!matches(UPat(Ops::ADD), v * c1));
  BOOST_TEST(!matches(UPat(Ops::ADD), v));
  BOOST_TEST(matches(UPat(Ops::DEFINE_VAR), v));
}

BOOST_AUTO_TEST_CASE(op_set) {
  UPat p(OpSet{Ops::ADD, Ops::MUL});
  BOOST_TEST(matches(p, v + c1));
  BOOST_TEST(matches(p, v * c1));
  BOOST_TEST(!matches(p, v.alu(Ops::MAX, {c1})));
  BOOST_TEST(!matches(p, c1));
  UPat bin(group::binary());
  BOOST_TEST(matches(bin, v.alu(Ops::XOR, {w})));
  BOOST_TEST(matches(bin, v.alu(Ops::CMPEQ, {w})));
  BOOST_TEST(!matches(bin, v.alu(Ops::NEG)));
  BOOST_TEST(!matches(UPat(OpSet{}), v));  // an empty set matches nothing
}

BOOST_AUTO_TEST_CASE(dtype_set) {
  BOOST_TEST(matches(UPat().dtype({DType::int32}), v));
  BOOST_TEST(!matches(UPat().dtype({DType::int32}), f1));
  BOOST_TEST(!matches(UPat().dtype({DType::int32}), v.alu(Ops::CMPLT, {w})));  // bool
  BOOST_TEST(matches(UPat().dtype({DType::bool_}), v.alu(Ops::CMPLT, {w})));
  UPat either = UPat(Ops::CONST).dtype({DType::float32, DType::int32});
  BOOST_TEST(matches(either, f1));
  BOOST_TEST(matches(either, c1));
  BOOST_TEST(!matches(either, const_uop(DType::float16, 1, &g)));
  BOOST_TEST(matches(UPat().dtype({}), f1));  // no dtypes: any dtype
}

BOOST_AUTO_TEST_CASE(ordered_sources) {
  UPat p = UPat(Ops::ADD).src({UPat(Ops::DEFINE_VAR), UPat(Ops::CONST)});
  BOOST_TEST(matches(p, v + c1));
  BOOST_TEST(!matches(p, c1 + v));
  BOOST_TEST(!matches(p, v + w));
  // nested
  UPat q = UPat(Ops::MUL).src({UPat(Ops::ADD).src({UPat(Ops::DEFINE_VAR), UPat(Ops::CONST)}), UPat()});
  BOOST_TEST(matches(q, (v + c1) * w));
  BOOST_TEST(!matches(q, (c1 + v) * w));
  BOOST_TEST(!matches(q, w * (v + c1)));
}

BOOST_AUTO_TEST_CASE(source_count_is_exact) {
  BOOST_TEST(!matches(UPat(Ops::ADD).src({UPat()}), v + c1));
  BOOST_TEST(!matches(UPat(Ops::ADD).src({UPat(), UPat(), UPat()}), v + c1));
  BOOST_TEST(matches(UPat(Ops::ADD).src({UPat(), UPat()}), v + c1));
  BOOST_TEST(matches(UPat().src({}), c1));  // no sources
  BOOST_TEST(!matches(UPat().src({}), v + c1));
  BOOST_TEST(matches(UPat(Ops::WHERE).src({UPat(), UPat(), UPat()}), v.alu(Ops::CMPLT, {w}).where(v, w)));
}

BOOST_AUTO_TEST_CASE(source_prefix_allows_more) {
  UOp buf = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &g);
  UOp val = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &g);
  UOp st1 = buf.store(val), st2 = buf.store(val + val);
  UOp a1 = buf.after({}), a2 = buf.after({st1}), a3 = buf.after({st1, st2});
  UPat any_len = UPat(Ops::AFTER).src_prefix({UPat(Ops::BUFFER)});
  BOOST_TEST(matches(any_len, a1));
  BOOST_TEST(matches(any_len, a2));
  BOOST_TEST(matches(any_len, a3));
  BOOST_TEST(!matches(UPat(Ops::AFTER).src({UPat(Ops::BUFFER)}), a2));  // exact length
  UPat two = UPat(Ops::AFTER).src_prefix({UPat(Ops::BUFFER), UPat(Ops::STORE)});
  BOOST_TEST(!matches(two, a1));  // fewer sources than the prefix
  BOOST_TEST(matches(two, a2));
  BOOST_TEST(matches(two, a3));
  BOOST_TEST(!matches(UPat(Ops::AFTER).src_prefix({UPat(Ops::STORE)}), a3));  // the prefix is still checked
  // src() after src_prefix() is exact again
  BOOST_TEST(!matches(UPat(Ops::AFTER).src_prefix({UPat(Ops::BUFFER)}).src({UPat(Ops::BUFFER)}), a3));
  // a prefix of nothing: any number of sources
  BOOST_TEST(matches(UPat(Ops::AFTER).src_prefix({}), a3));
}

BOOST_AUTO_TEST_CASE(named_captures) {
  UPat p = UPat(Ops::MUL).named("root").src(
      {UPat(Ops::ADD).src({UPat::var("x"), UPat(Ops::CONST).named("c")}), UPat::var("y")});
  UOp u = (v + c1) * w;
  Match m(captures(p, u));
  BOOST_TEST(m["root"] == u);
  BOOST_TEST(m["x"] == v);
  BOOST_TEST(m["c"] == c1);
  BOOST_TEST(m["y"] == w);
  BOOST_TEST(m.has("x"));
  BOOST_TEST(!m.has("z"));
  BOOST_CHECK_EXCEPTION(m["z"], InternalError, ringrt::test::message_has({"z"}));
}

BOOST_AUTO_TEST_CASE(named_on_lvalue_and_rvalue) {
  const UPat base(Ops::CONST);
  UPat a = base.named("a");
  UPat b = UPat(Ops::CONST).named("b");
  BOOST_TEST(Match(captures(a, c1))["a"] == c1);
  BOOST_TEST(Match(captures(b, c1))["b"] == c1);
  BOOST_TEST(captures(base, c1).empty());  // the original is unchanged
}

BOOST_AUTO_TEST_CASE(var_matches_anything_and_captures_it) {
  for (const UOp& u : {v, c1, v + c1, sink({v})}) {
    Match m(captures(UPat::var("x"), u));
    BOOST_TEST(m["x"] == u);
  }
}

BOOST_AUTO_TEST_CASE(the_same_name_twice_binds_the_same_node) {
  UPat p = UPat(Ops::ADD).src({UPat::var("x"), UPat::var("x")});
  BOOST_TEST(matches(p, v + v));
  BOOST_TEST(!matches(p, v + w));
  BOOST_TEST(!matches(p, v + c1));
  // across levels: (x + y) * x
  UPat q = UPat(Ops::MUL).src({UPat(Ops::ADD).src({UPat::var("x"), UPat::var("y")}), UPat::var("x")});
  BOOST_TEST(matches(q, (v + w) * v));
  BOOST_TEST(!matches(q, (v + w) * w));
  Match m(captures(q, (v + w) * v));
  BOOST_TEST(m["x"] == v);
  BOOST_TEST(m["y"] == w);
}

BOOST_AUTO_TEST_CASE(arg_exact) {
  BOOST_TEST(matches(UPat(Ops::CONST).arg(Arg(int64_t{1})), c1));
  BOOST_TEST(!matches(UPat(Ops::CONST).arg(Arg(int64_t{1})), c0));
  BOOST_TEST(!matches(UPat(Ops::CONST).arg(Arg(int64_t{1})), f1));  // 1.0 is a double arg
  BOOST_TEST(matches(UPat(Ops::CONST).arg(Arg(1.0)), f1));
  BOOST_TEST(matches(UPat(Ops::DEFINE_VAR).arg(VarArg{"v", 0, 9}), v));
  BOOST_TEST(!matches(UPat(Ops::DEFINE_VAR).arg(VarArg{"v", 0, 8}), v));
  UOp b = new_buffer(DeviceSpec("CPU:0"), 6, DType::float32, &g).reshape({2, 3});
  BOOST_TEST(matches(UPat(Ops::RESHAPE).arg(std::vector<int64_t>{2, 3}), b));
  BOOST_TEST(!matches(UPat(Ops::RESHAPE).arg(std::vector<int64_t>{3, 2}), b));
  BOOST_TEST(matches(UPat(Ops::REDUCE_AXIS).arg(ReduceArg{Ops::MAX, {1}}), b.r(Ops::MAX, {1})));
  BOOST_TEST(!matches(UPat(Ops::REDUCE_AXIS).arg(ReduceArg{Ops::ADD, {1}}), b.r(Ops::MAX, {1})));
  BOOST_TEST(!matches(UPat().arg(Arg(int64_t{1})), v + c1));  // an ALU node's arg is empty
  BOOST_TEST(matches(UPat().arg(Arg()), v + c1));
}

BOOST_AUTO_TEST_CASE(arg_predicate) {
  UPat positive = UPat(Ops::CONST).arg_if([](const Arg& a) {
    return std::holds_alternative<int64_t>(a) && std::get<int64_t>(a) > 0;
  });
  BOOST_TEST(matches(positive, c1));
  BOOST_TEST(!matches(positive, c0));
  BOOST_TEST(!matches(positive, f1));
  int calls = 0;
  UPat counting = UPat(Ops::CONST).arg_if([&](const Arg&) {
    ++calls;
    return true;
  });
  BOOST_TEST(!matches(counting, v));  // the op check comes first
  BOOST_TEST(calls == 0);
  BOOST_TEST(matches(counting, c1));
  BOOST_TEST(calls == 1);
  // exact arg and predicate together: both must hold
  UPat both = UPat(Ops::CONST).arg(Arg(int64_t{1})).arg_if([](const Arg&) { return false; });
  BOOST_TEST(!matches(both, c1));
}

BOOST_AUTO_TEST_CASE(early_reject) {
  UPat p = UPat(Ops::ADD).early_reject(OpSet{Ops::CONST});
  BOOST_TEST(matches(p, v + c1));
  BOOST_TEST(matches(p, c1 + v));
  BOOST_TEST(!matches(p, v + w));
  BOOST_TEST(!matches(UPat().early_reject(OpSet{Ops::CONST}), c1));  // no sources at all
  BOOST_TEST(matches(UPat(Ops::ADD).early_reject(OpSet{}), v + w));  // an empty set checks nothing
  // with source patterns, both must hold
  UPat q = UPat(Ops::ADD).src({UPat::var("x"), UPat::var("y")}).early_reject(OpSet{Ops::DEFINE_VAR});
  BOOST_TEST(matches(q, v + c1));
  BOOST_TEST(!matches(q, c0 + c1));
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_FIXTURE_TEST_SUITE(pattern_matcher, Fixture)

BOOST_AUTO_TEST_CASE(no_rule_applies) {
  PatternMatcher empty;
  BOOST_TEST(empty.size() == 0u);
  BOOST_TEST(!empty.rewrite(v + c1));
  PatternMatcher pm({always(UPat(Ops::MUL), v)});
  BOOST_TEST(!pm.rewrite(v + c1));
  BOOST_TEST(rw(pm, v * c1) == v);
}

BOOST_AUTO_TEST_CASE(first_rule_in_table_order_wins) {
  int first = 0, second = 0;
  PatternMatcher pm({always(UPat(Ops::ADD), v, &first), always(UPat(Ops::ADD), w, &second)});
  BOOST_TEST(pm.size() == 2u);
  BOOST_TEST(rw(pm, v + c1) == v);
  BOOST_TEST(first == 1);
  BOOST_TEST(second == 0);  // never tried once the first accepted
  PatternMatcher reversed({always(UPat(Ops::ADD), w), always(UPat(Ops::ADD), v)});
  BOOST_TEST(rw(reversed, v + c1) == w);
}

BOOST_AUTO_TEST_CASE(a_declining_callback_lets_the_next_rule_try) {
  int declined = 0, accepted = 0;
  PatternMatcher pm({declines(UPat(Ops::ADD), &declined), always(UPat(Ops::ADD), w, &accepted)});
  BOOST_TEST(rw(pm, v + c1) == w);
  BOOST_TEST(declined == 1);
  BOOST_TEST(accepted == 1);
  PatternMatcher all_decline({declines(UPat(Ops::ADD), &declined), declines(UPat(), &declined)});
  BOOST_TEST(!all_decline.rewrite(v + c1));
  BOOST_TEST(declined == 3);
}

BOOST_AUTO_TEST_CASE(a_callback_reads_its_captures) {
  // x + 0 -> x
  PatternMatcher pm({{UPat(Ops::ADD).src({UPat::var("x"), UPat(Ops::CONST).arg(Arg(int64_t{0}))}),
                      [](const Match& m) -> std::optional<UOp> { return m["x"]; }}});
  BOOST_TEST(rw(pm, v + c0) == v);
  BOOST_TEST(rw(pm, (v * w) + c0) == v * w);
  BOOST_TEST(!pm.rewrite(v + c1));
  BOOST_TEST(!pm.rewrite(c0 + v));
  // one step only: the matcher does not rewrite its result again
  BOOST_TEST(rw(pm, (v + c0) + c0) == v + c0);
}

BOOST_AUTO_TEST_CASE(only_rules_for_the_root_op_are_tried) {
  int mul_calls = 0, any_calls = 0;
  PatternMatcher pm({declines(UPat(Ops::MUL), &mul_calls), declines(UPat(), &any_calls)});
  pm.rewrite(v + c1);
  BOOST_TEST(mul_calls == 0);
  BOOST_TEST(any_calls == 1);  // a pattern without ops is tried for every op
  pm.rewrite(v * c1);
  BOOST_TEST(mul_calls == 1);
  BOOST_TEST(any_calls == 2);
  pm.rewrite(c1);
  BOOST_TEST(any_calls == 3);
  // a set of ops indexes the rule under each of them
  int set_calls = 0;
  PatternMatcher ps({declines(UPat(OpSet{Ops::ADD, Ops::NEG}), &set_calls)});
  ps.rewrite(v + c1);
  ps.rewrite(v.alu(Ops::NEG));
  ps.rewrite(v * c1);
  BOOST_TEST(set_calls == 2);
}

// A rule that matched partly and failed must not leave captures behind for the next rule.
BOOST_AUTO_TEST_CASE(captures_start_fresh_for_each_rule) {
  int first = 0;
  PatternMatcher pm({
      {UPat(Ops::ADD).src({UPat::var("x"), UPat(Ops::MUL)}),  // binds x to the first source, then fails
       [&](const Match&) -> std::optional<UOp> {
         ++first;
         return std::nullopt;
       }},
      {UPat(Ops::ADD).src({UPat(Ops::DEFINE_VAR), UPat::var("x")}),
       [](const Match& m) -> std::optional<UOp> { return m["x"]; }},
  });
  BOOST_TEST(rw(pm, v + c1) == c1);
  BOOST_TEST(first == 0);
  // and a rule whose callback declined leaves none either
  PatternMatcher pd({
      {UPat(Ops::ADD).src({UPat::var("x"), UPat()}), [](const Match&) -> std::optional<UOp> { return std::nullopt; }},
      {UPat(Ops::ADD).src({UPat(), UPat::var("x")}), [](const Match& m) -> std::optional<UOp> { return m["x"]; }},
  });
  BOOST_TEST(rw(pd, v + c1) == c1);
}

BOOST_AUTO_TEST_CASE(composition_appends_tables) {
  PatternMatcher a({always(UPat(Ops::ADD), v)});
  PatternMatcher b({always(UPat(Ops::ADD), w), always(UPat(Ops::MUL), c0)});
  PatternMatcher ab = a + b, ba = b + a;
  BOOST_TEST(ab.size() == 3u);
  BOOST_TEST(ba.size() == 3u);
  BOOST_TEST(rw(ab, v + c1) == v);
  BOOST_TEST(rw(ba, v + c1) == w);
  BOOST_TEST(rw(ab, v * c1) == c0);  // b's rules are indexed in the composition too
  // the operands are unchanged
  BOOST_TEST(a.size() == 1u);
  BOOST_TEST(!a.rewrite(v * c1));
  BOOST_TEST((PatternMatcher() + a).size() == 1u);
  BOOST_TEST(rw((PatternMatcher() + a), v + c1) == v);
  BOOST_TEST(rw((a + PatternMatcher()), v + c1) == v);
}

BOOST_AUTO_TEST_CASE(a_declining_rule_in_the_first_table_falls_through_to_the_second) {
  int declined = 0;
  PatternMatcher a({declines(UPat(Ops::ADD), &declined)});
  PatternMatcher b({always(UPat(Ops::ADD), w)});
  BOOST_TEST(rw((a + b), v + c1) == w);
  BOOST_TEST(declined == 1);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
