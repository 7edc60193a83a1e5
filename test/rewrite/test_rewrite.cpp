#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "rewrite/interpreter.hpp"
#include "rewrite/rewrite.hpp"
#include "test/support/checks.hpp"
#include "test/support/print.hpp"

BOOST_AUTO_TEST_SUITE(test_rewrite)

namespace bdata = boost::unit_test::data;
using namespace ringrt;

namespace {

// ---- a small simplifier: the rule set every test here rewrites with ----

// The value of a constant, looking through the RESHAPE/EXPAND that broadcast it (const_like).
std::optional<double> broadcast_const(UOp u) {
  while (u.op() == Ops::RESHAPE || u.op() == Ops::EXPAND) u = u.src(0);
  if (u.op() != Ops::CONST) return std::nullopt;
  return u.arg_float();
}

bool is_const(const UOp& u, double v) {
  auto c = broadcast_const(u);
  return c && *c == v;
}

// Folds a op b of two constants while the result stays small (exact in float32 as in double).
std::optional<UOp> fold(const UOp& node) {
  auto a = broadcast_const(node.src(0)), b = broadcast_const(node.src(1));
  if (!a || !b) return std::nullopt;
  double r = node.op() == Ops::ADD ? *a + *b : node.op() == Ops::MUL ? *a * *b : std::max(*a, *b);
  if (std::fabs(r) > 1048576) return std::nullopt;
  return node.const_like(r);
}

const OpSet kCommutative{Ops::ADD, Ops::MUL, Ops::MAX};

PatternMatcher simplifier() {
  auto x = UPat::var("x"), y = UPat::var("y");
  return PatternMatcher({
      // x + 0 -> x, 0 + x -> x
      {UPat(Ops::ADD).src({x, y}),
       [](const Match& m) -> std::optional<UOp> {
         if (is_const(m["y"], 0)) return m["x"];
         if (is_const(m["x"], 0)) return m["y"];
         return std::nullopt;
       }},
      // x * 1 -> x, 1 * x -> x
      {UPat(Ops::MUL).src({x, y}),
       [](const Match& m) -> std::optional<UOp> {
         if (is_const(m["y"], 1)) return m["x"];
         if (is_const(m["x"], 1)) return m["y"];
         return std::nullopt;
       }},
      // max(x, x) -> x
      {UPat(Ops::MAX).src({x, x}), [](const Match& m) -> std::optional<UOp> { return m["x"]; }},
      // c1 op c2 -> c
      {UPat(kCommutative).named("n"), [](const Match& m) { return fold(m["n"]); }},
      // c op x -> x op c (constants to the right)
      {UPat(kCommutative).named("n").src({x, y}),
       [](const Match& m) -> std::optional<UOp> {
         if (!broadcast_const(m["x"]) || broadcast_const(m["y"])) return std::nullopt;
         return m["y"].alu(m["n"].op(), {m["x"]});
       }},
      // -(-x) -> x
      {UPat(Ops::NEG).src({UPat(Ops::NEG).src({x})}), [](const Match& m) -> std::optional<UOp> { return m["x"]; }},
      // -c -> c
      {UPat(Ops::NEG).src({x}),
       [](const Match& m) -> std::optional<UOp> {
         auto c = broadcast_const(m["x"]);
         return c ? std::optional<UOp>(m["x"].const_like(-*c)) : std::nullopt;
       }},
      // reshape(reshape(x)) -> reshape(x)
      {UPat(Ops::RESHAPE).named("r").src({UPat(Ops::RESHAPE).src({x})}),
       [](const Match& m) -> std::optional<UOp> { return m["x"].reshape(m["r"].shape()); }},
      // reshape of a broadcast constant -> the constant broadcast to the new shape
      {UPat(Ops::RESHAPE).named("r").src({UPat(Ops::EXPAND).named("e")}),
       [](const Match& m) -> std::optional<UOp> {
         auto c = broadcast_const(m["e"]);
         return c ? std::optional<UOp>(m["r"].const_like(*c)) : std::nullopt;
       }},
  });
}

const PatternMatcher& pm() {
  static const PatternMatcher p = simplifier();
  return p;
}

RewriteOptions serial() {
  RewriteOptions o;
  o.driver = RewriteDriver::serial;
  return o;
}
RewriteOptions parallel(int threads) {
  RewriteOptions o;
  o.driver = RewriteDriver::parallel;
  o.threads = threads;
  return o;
}

struct DriverCase {
  const char* name;
  RewriteOptions options;
};
std::ostream& operator<<(std::ostream& os, const DriverCase& d) { return os << d.name; }

const std::vector<DriverCase> kDrivers{
    {"serial", serial()},
    {"parallel_1_thread", parallel(1)},
    {"parallel_2_threads", parallel(2)},
    {"parallel_default", parallel(0)},
};

struct Fixture {
  UOpGraph g;
  UOp buf(const Shape& shape, const std::string& device = "CPU:0") {
    return new_buffer(DeviceSpec(device), prod(shape), DType::float32, &g).reshape(shape);
  }
  UOp cst(double v) { return const_uop(DType::float32, v, &g); }
};

// ---- random graphs ----

// The shapes a reshape of a node of numel elements may take (none past 8 elements).
std::vector<Shape> reshapes_of(int64_t numel) {
  switch (numel) {
    case 1:
      return {{1}, {1, 1}};
    case 2:
      return {{2}, {1, 2}, {2, 1}};
    case 4:
      return {{4}, {2, 2}, {1, 4}, {4, 1}};
    case 8:
      return {{8}, {2, 4}, {4, 2}, {2, 2, 2}};
    default:
      return {};
  }
}

// random_graph's state: its random numbers and the pool of nodes built so far (the buffers first).
struct RandomGraph {
  static constexpr double consts[] = {0, 1, -1, 2, 3, 0.5};
  std::mt19937_64 rng;
  std::vector<UOp> pool;

  size_t rnd(size_t n) { return static_cast<size_t>(rng() % n); }
  // A node of the pool, one of the latest 64.
  UOp pick() { return pool[pool.size() - 1 - std::min(pool.size() - 1, rnd(pool.size()) % 64)]; }
  // A node of the pool with a's shape (8 tries), else a constant like a.
  UOp same_shape(const UOp& a) {
    for (int tries = 0; tries < 8; ++tries) {
      UOp b = pick();
      if (b.shape() == a.shape()) return b;
    }
    return a.const_like(consts[rnd(6)]);
  }
  // A new node on a: an op drawn at random, or none when the op drawn does not fit a's shape.
  std::optional<UOp> grow(const UOp& a) {
    UOp out;
    switch (rnd(10)) {
      case 0:
      case 1:
      case 2: {
        static const Ops ops[] = {Ops::ADD, Ops::MUL, Ops::MAX};
        UOp b = rnd(3) == 0 ? a.const_like(consts[rnd(3)]) : same_shape(a);
        out = rnd(2) ? a.alu(ops[rnd(3)], {b}) : b.alu(ops[rnd(3)], {a});
        break;
      }
      case 3:
        out = a.alu(Ops::NEG);
        break;
      case 4: {
        auto shapes = reshapes_of(prod(a.shape()));
        if (shapes.empty()) return std::nullopt;
        out = a.reshape(shapes[rnd(shapes.size())]);
        break;
      }
      case 5: {
        if (prod(a.shape()) > 4) return std::nullopt;
        Shape to = a.shape();
        std::vector<size_t> ones;
        for (size_t i = 0; i < to.size(); ++i)
          if (to[i] == 1) ones.push_back(i);
        if (ones.empty()) return std::nullopt;
        to[ones[rnd(ones.size())]] = 2;
        out = a.expand(to);
        break;
      }
      case 6: {
        std::vector<int> axes;
        for (size_t i = 0; i < a.shape().size(); ++i)
          if (a.shape()[i] > 1) axes.push_back(static_cast<int>(i));
        if (axes.empty()) return std::nullopt;
        out = a.r(rnd(2) ? Ops::ADD : Ops::MAX, {axes[rnd(axes.size())]});
        break;
      }
      case 7:
        out = a.const_like(consts[rnd(6)]);
        break;
      case 8: {
        if (a.shape().size() != 2) return std::nullopt;
        out = a.permute({1, 0});
        break;
      }
      default:
        out = a.alu(Ops::ADD, {a.const_like(0)}).alu(Ops::MUL, {a.const_like(1)});  // x + 0 then * 1
        break;
    }
    return out;
  }
};

// A random DAG of about `min_nodes` nodes over six (4,) float32 buffers: ADD MUL MAX NEG, broadcast
// constants (often 0, 1 and -1, so that the rules fire), reshapes, expands, reductions, permutes.
// Returns a SINK of every node built; `buffers` receives the input buffers.
UOp random_graph(UOpGraph& g, uint64_t seed, size_t min_nodes, std::vector<UOp>* buffers) {
  RandomGraph r{std::mt19937_64(seed), {}};
  for (int i = 0; i < 6; ++i) r.pool.push_back(new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &g));
  if (buffers) *buffers = r.pool;
  while (g.size() < min_nodes) {
    UOp a = r.pick();
    if (std::optional<UOp> out = r.grow(a)) r.pool.push_back(*out);
  }
  return sink(r.pool);
}

// Buffer contents for the interpreter: small integers, so that float32 math is exact.
std::map<int64_t, std::vector<HostBuffer>> buffer_data(const std::vector<UOp>& buffers, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5eedull);
  std::map<int64_t, std::vector<HostBuffer>> data;
  for (const auto& b : buffers) {
    std::vector<float> v;
    for (int i = 0; i < 4; ++i) v.push_back(static_cast<float>(static_cast<int>(rng() % 7) - 3));
    data[std::get<BufferArg>(b.arg()).id] = {HostBuffer::from_vector(v, DType::float32, {4})};
  }
  return data;
}

bool same_values(const HostBuffer& a, const HostBuffer& b) {
  if (a.shape != b.shape) return false;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get(i), y = b.get(i);
    if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
  }
  return true;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
BOOST_FIXTURE_TEST_SUITE(fixpoint, Fixture)

BOOST_AUTO_TEST_CASE(identities_and_folding_reach_the_fixpoint) {
  UOp x = buf({4});
  UOp c = x.const_like(0), one = x.const_like(1), two = x.const_like(2), three = x.const_like(3);
  UOp expr = ((x + c) * one) + (two + three) * one;
  RewriteResult r = rewrite_graph(expr, pm(), serial());
  BOOST_TEST(r.converged);
  BOOST_TEST(r.root == x + x.const_like(5));
  BOOST_TEST(r.rewrites > 0u);
  BOOST_TEST(graph_rewrite(expr, pm()) == x + x.const_like(5));
}

BOOST_AUTO_TEST_CASE(sources_first_then_the_user_again) {
  // x + (1 + -1): the inner sum folds to 0 first, then x + 0 -> x
  UOp x = buf({4});
  BOOST_TEST(graph_rewrite(x + (x.const_like(1) + x.const_like(-1)), pm()) == x);
  // scalar constants fold all the way: (2 + 3) * (1 + 1) = 10
  BOOST_TEST(graph_rewrite((cst(2) + cst(3)) * (cst(1) + cst(1)), pm()) == cst(10));
  // constants move right, then fold: (1 + x) * 1 -> x + 1
  BOOST_TEST(graph_rewrite((x.const_like(1) + x) * x.const_like(1), pm()) == x + x.const_like(1));
}

BOOST_AUTO_TEST_CASE(new_nodes_in_a_replacement_are_rewritten_too) {
  UOp x = buf({4});
  // sqrt(x) -> ((x + 0) * 1) + 0, whose new nodes the simplifier then removes
  PatternMatcher expand_sqrt({{UPat(Ops::SQRT).src({UPat::var("x")}), [](const Match& m) -> std::optional<UOp> {
                                 UOp v = m["x"];
                                 return ((v + v.const_like(0)) * v.const_like(1)) + v.const_like(0);
                               }}});
  BOOST_TEST(graph_rewrite(x.alu(Ops::SQRT).alu(Ops::NEG), expand_sqrt + pm()) == x.alu(Ops::NEG));
}

BOOST_AUTO_TEST_CASE(nothing_to_do_returns_the_same_graph) {
  UOp x = buf({4}), y = buf({4});
  UOp root = (x * y).alu(Ops::MAX, {x.alu(Ops::NEG)});
  RewriteResult r = rewrite_graph(root, pm(), serial());
  BOOST_TEST(r.root == root);
  BOOST_TEST(r.rewrites == 0u);
  for (const auto& [from, to] : r.map) BOOST_TEST(from == to);
  BOOST_TEST(graph_rewrite(root, PatternMatcher()) == root);
}

BOOST_AUTO_TEST_CASE(the_automatic_driver_gives_the_same_answer) {
  UOp x = buf({4});
  UOp expr = ((x + x.const_like(0)) * x.const_like(1)).alu(Ops::MAX, {x});
  RewriteOptions small;
  small.parallel_min_nodes = 1;  // automatic picks the parallel driver
  BOOST_TEST(graph_rewrite(expr, pm(), small) == x);
  BOOST_TEST(graph_rewrite(expr, pm(), RewriteOptions{}) == x);
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(deep)

// 10,000 alternating + 0 and * 1 on x: nothing may recurse on the depth of the graph.
BOOST_DATA_TEST_CASE(chain_of_identities, bdata::make(kDrivers), d) {
  UOpGraph g;
  UOp x = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &g);
  UOp zero = x.const_like(0), one = x.const_like(1);
  UOp acc = x;
  for (int i = 0; i < 10000; ++i) acc = i % 2 ? acc * one : acc + zero;
  RewriteResult r = rewrite_graph(acc, pm(), d.options);
  BOOST_TEST(r.converged);
  BOOST_TEST(r.root == x);
  BOOST_TEST(r.map.size() == g.toposort({acc}).size());
  BOOST_TEST(r.rewrites >= 2u);  // at least x + 0 -> x and x * 1 -> x (a memo may skip the repeats)
}

BOOST_DATA_TEST_CASE(chain_of_negations, bdata::make(kDrivers), d) {
  UOpGraph g;
  UOp x = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &g);
  UOp acc = x;
  for (int i = 0; i < 10001; ++i) acc = acc.alu(Ops::NEG);
  BOOST_TEST(graph_rewrite(acc, pm(), d.options) == x.alu(Ops::NEG));
}

// A callback that returns a brand-new chain 10,000 deep: the driver rewrites it bottom-up without
// recursing on its depth.
BOOST_DATA_TEST_CASE(deep_replacement, bdata::make(kDrivers), d) {
  UOpGraph g;
  UOp x = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &g);
  PatternMatcher grow({{UPat(Ops::SQRT).src({UPat::var("x")}), [](const Match& m) -> std::optional<UOp> {
                          UOp v = m["x"], acc = m["x"];
                          for (int i = 0; i < 10000; ++i) acc = i % 2 ? acc * v.const_like(1) : acc + v.const_like(0);
                          return acc;
                        }}});
  BOOST_TEST(graph_rewrite(x.alu(Ops::SQRT), grow + pm(), d.options) == x);
}

// A rule whose callback runs a parallel rewrite of its own (of 300+ nodes: more than one block) inside
// the parallel driver's workers, over 24 chains of 30 nodes (3 blocks): every driver gives the same
// answer (each SQRT becomes a NEG, and -(-x) -> x). A worker that took up another block of the outer
// rewrite while waiting inside the callback would deadlock; that needs an unlucky schedule, so this
// case does not always catch it (the workers are isolated so that it cannot happen).
BOOST_DATA_TEST_CASE(a_rule_that_rewrites_in_parallel_itself, bdata::make(kDrivers), d) {
  RINGRT_RUN_IN_CHILD();  // a deadlock ends at the child's time limit, failing this case only
  UOpGraph g;
  PatternMatcher nested({{UPat(Ops::SQRT).src({UPat::var("x")}), [](const Match& m) -> std::optional<UOp> {
                            UOp acc = m["x"];
                            for (int i = 0; i < 150; ++i) acc = (acc + acc.const_like(0)) * acc.const_like(1);
                            return graph_rewrite(acc, pm(), parallel(2)).alu(Ops::NEG);
                          }}});
  std::vector<UOp> tops;
  for (int c = 0; c < 24; ++c) {
    UOp leaf = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &g), acc = leaf;
    for (int i = 0; i < 30; ++i) acc = i % 2 ? acc.alu(Ops::SQRT) : acc + acc.const_like(0);
    tops.push_back(acc);
  }
  UOp root = sink(tops);
  BOOST_REQUIRE(g.toposort({root}).size() > 600u);
  RewriteResult r = rewrite_graph(root, nested + pm(), d.options);
  BOOST_TEST(r.converged);
  for (size_t c = 0; c < tops.size(); ++c) {
    UOp leaf = tops[c];
    while (leaf.op() != Ops::BUFFER) leaf = leaf.src(0);
    BOOST_TEST_CONTEXT("chain " << c) { BOOST_TEST(r.map.at(tops[c]) == leaf.alu(Ops::NEG)); }  // 15 SQRTs
  }
}

// A rule that throws on one node of an early block (of 200 chains of 30 nodes, 24 blocks): the error
// reaches the caller from every driver, and no thread is left waiting for the node that never finished
// (the SINK, in the last block, waits for every chain).
BOOST_DATA_TEST_CASE(a_rule_that_throws_stops_every_thread, bdata::make(kDrivers), d) {
  RINGRT_RUN_IN_CHILD();  // a thread left waiting ends at the child's time limit, failing this case only
  UOpGraph g;
  std::vector<UOp> tops;
  for (int c = 0; c < 200; ++c) {
    UOp acc = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &g);
    for (int i = 0; i < 30; ++i) acc = c == 20 && i == 15 ? acc.alu(Ops::SQRT) : acc + acc.const_like(0);
    tops.push_back(acc);
  }
  PatternMatcher fails({{UPat(Ops::SQRT), [](const Match&) -> std::optional<UOp> { throw ShapeError("no sqrt"); }}});
  BOOST_CHECK_EXCEPTION(rewrite_graph(sink(tops), fails + pm(), d.options), ShapeError,
                        ringrt::test::message_has({"no sqrt"}));
}

// One node rewritten 50,000 times in a row (a constant counting down): the per-node fixpoint loop must
// be iterative too. Runs in a child process, so that a stack overflow fails only this case.
BOOST_DATA_TEST_CASE(long_rewrite_sequence_of_one_node, bdata::make(kDrivers), d) {
  RINGRT_RUN_IN_CHILD();
  UOpGraph g;
  PatternMatcher countdown(
      {{UPat(Ops::CONST).dtype({DType::int32}).named("c"), [&g](const Match& m) -> std::optional<UOp> {
          int64_t v = m["c"].arg_int();
          if (v <= 0) return std::nullopt;
          return const_uop(DType::int32, static_cast<double>(v - 1), &g);
        }}});
  RewriteOptions o = d.options;
  o.max_rewrites_per_node = 1000000;
  UOp start = const_uop(DType::int32, 50000, &g);
  RewriteResult r = rewrite_graph(start.alu(Ops::NEG), countdown, o);
  BOOST_TEST(r.converged);
  BOOST_TEST(r.root == const_uop(DType::int32, 0, &g).alu(Ops::NEG));
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_FIXTURE_TEST_SUITE(rewrite_map, Fixture)

BOOST_AUTO_TEST_CASE(covers_every_node_with_its_rewrite) {
  UOp x = buf({4}), y = buf({4});
  UOp zero = x.const_like(0), one = x.const_like(1), two = x.const_like(2), three = x.const_like(3);
  UOp a = x + zero, b = a * one, c = b.alu(Ops::MAX, {y}), s = two + three, d = c + s;
  UOpMap map = graph_rewrite_map(d, pm());
  auto order = g.toposort({d});
  BOOST_TEST(map.size() == order.size());
  for (const auto& n : order) BOOST_TEST(map.count(n) == 1u);
  BOOST_TEST(map.at(x) == x);
  BOOST_TEST(map.at(y) == y);
  BOOST_TEST(map.at(zero) == zero);
  BOOST_TEST(map.at(a) == x);
  BOOST_TEST(map.at(b) == x);
  BOOST_TEST(map.at(c) == x.alu(Ops::MAX, {y}));
  BOOST_TEST(map.at(s) == x.const_like(5));
  BOOST_TEST(map.at(d) == x.alu(Ops::MAX, {y}) + x.const_like(5));
  // every entry is what rewriting that node alone gives
  for (const auto& n : order) BOOST_TEST(map.at(n) == graph_rewrite(n, pm()));
}

BOOST_AUTO_TEST_CASE(the_same_map_from_every_driver) {
  RINGRT_RUN_IN_CHILD();
  std::vector<UOp> buffers;
  UOp root = random_graph(g, 7, 1500, &buffers);
  UOpMap ref = graph_rewrite_map(root, pm(), serial());
  for (const auto& d : kDrivers) {
    BOOST_TEST_CONTEXT(d.name) {
      RewriteOptions without_map = d.options;
      without_map.map = false;  // graph_rewrite_map asks for the map whatever the options say
      UOpMap m = graph_rewrite_map(root, pm(), without_map);
      BOOST_TEST(m.size() == ref.size());
      size_t differ = 0;
      for (const auto& [from, to] : ref) differ += m.at(from) != to;
      BOOST_TEST(differ == 0u);
      // rewrite_graph without the map: the same root, no map
      RewriteResult r = rewrite_graph(root, pm(), without_map);
      BOOST_TEST(r.root == ref.at(root));
      BOOST_TEST(r.map.empty());
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
// A rule set that never stops: x + 0 -> x * 1 -> x + 0 -> ... The driver gives up on that node after
// max_rewrites_per_node and says so; graph_rewrite turns that into an InternalError. Each case runs in
// a child process, so that a driver that recurses instead of counting fails only that case.
BOOST_AUTO_TEST_SUITE(non_convergence)

struct Ping {
  UOpGraph g;
  UOp x = device_num(4, &g);
  UOp zero = const_uop(DType::int32, 0, &g), one = const_uop(DType::int32, 1, &g);
  PatternMatcher pm{{
      {UPat(Ops::ADD).src({UPat::var("x"), UPat(Ops::CONST).arg(Arg(int64_t{0}))}),
       [this](const Match& m) -> std::optional<UOp> { return m["x"] * one; }},
      {UPat(Ops::MUL).src({UPat::var("x"), UPat(Ops::CONST).arg(Arg(int64_t{1}))}),
       [this](const Match& m) -> std::optional<UOp> { return m["x"] + zero; }},
  }};
  UOp root = (x + zero).alu(Ops::NEG);
  RewriteOptions options(const DriverCase& d) {
    RewriteOptions o = d.options;
    o.max_rewrites_per_node = 8;
    return o;
  }
};

BOOST_DATA_TEST_CASE(rewrite_graph_reports_converged_false, bdata::make(kDrivers), d) {
  RINGRT_RUN_IN_CHILD();
  Ping p;
  RewriteResult r = rewrite_graph(p.root, p.pm, p.options(d));
  BOOST_TEST(!r.converged);
  BOOST_TEST(r.rewrites >= 8u);
  BOOST_TEST(r.root.valid());
  BOOST_TEST(r.root.op() == Ops::NEG);  // the last form of the stuck node is kept
}

BOOST_DATA_TEST_CASE(graph_rewrite_throws_internal_error, bdata::make(kDrivers), d) {
  RINGRT_RUN_IN_CHILD();
  Ping p;
  BOOST_CHECK_EXCEPTION(graph_rewrite(p.root, p.pm, p.options(d)), InternalError,
                        ringrt::test::message_has({"converge"}));
  BOOST_CHECK_THROW(graph_rewrite_map(p.root, p.pm, p.options(d)), InternalError);
}

BOOST_AUTO_TEST_CASE(the_bound_is_generous_enough_for_a_finite_rule) {
  // 1000 steps of a terminating countdown under the default bound of 10000
  UOpGraph g;
  PatternMatcher countdown(
      {{UPat(Ops::CONST).dtype({DType::int32}).named("c"), [&g](const Match& m) -> std::optional<UOp> {
          int64_t v = m["c"].arg_int();
          if (v <= 0) return std::nullopt;
          return const_uop(DType::int32, static_cast<double>(v - 1), &g);
        }}});
  RewriteResult r = rewrite_graph(const_uop(DType::int32, 1000, &g), countdown, serial());
  BOOST_TEST(r.converged);
  BOOST_TEST(r.root == const_uop(DType::int32, 0, &g));
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
// The serial and the parallel driver return the very same nodes, and the rewrite leaves the
// interpreter's answer unchanged: 200 seeded random graphs of 1000+ nodes, in 8 batches of 25.
// Reproduce one seed by changing kPerBatch/the seed formula, or read it from the failure context.
BOOST_AUTO_TEST_SUITE(serial_equals_parallel)

constexpr int kBatches = 8, kPerBatch = 25;
constexpr size_t kNodes = 1000;

BOOST_DATA_TEST_CASE(random_graphs, bdata::xrange(kBatches), batch) {
  RINGRT_RUN_IN_CHILD();  // a crashing driver fails this batch only, naming the seed (checkpoint)
  for (int k = 0; k < kPerBatch; ++k) {
    uint64_t seed = static_cast<uint64_t>(batch * kPerBatch + k);
    BOOST_TEST_CHECKPOINT("seed " << seed);
    BOOST_TEST_CONTEXT("seed " << seed) {
      UOpGraph g;
      std::vector<UOp> buffers;
      UOp root = random_graph(g, seed, kNodes, &buffers);
      auto order = g.toposort({root});
      BOOST_REQUIRE(order.size() >= kNodes);

      RewriteResult ref = rewrite_graph(root, pm(), serial());
      BOOST_TEST(ref.converged);
      BOOST_TEST(ref.map.size() == order.size());
      for (const auto& d : kDrivers) {
        BOOST_TEST_CONTEXT(d.name) {
          RewriteResult r = rewrite_graph(root, pm(), d.options);
          BOOST_TEST(r.converged);
          BOOST_TEST(r.root == ref.root);
          size_t differ = 0;
          for (const auto& [from, to] : ref.map) differ += r.map.at(from) != to;
          BOOST_TEST(differ == 0u);
        }
      }

      // The same graph built afresh and rewritten in parallel first: the same structure.
      UOpGraph fresh;
      UOp root2 = random_graph(fresh, seed, kNodes, nullptr);
      UOp out2 = graph_rewrite(root2, pm(), parallel(2));
      BOOST_TEST(out2.hash() == ref.root.hash());
      BOOST_TEST(fresh.toposort({out2}).size() == g.toposort({ref.root}).size());

      // The rules changed something, and the interpreter's answer did not change.
      BOOST_TEST(ref.root != root);
      auto data = buffer_data(buffers, seed);
      Interpreter interp([&](int64_t id) -> const std::vector<HostBuffer>* {
        auto it = data.find(id);
        return it == data.end() ? nullptr : &it->second;
      });
      for (size_t i : {root.src().size() - 1, static_cast<size_t>(seed * 7919 % root.src().size())}) {
        BOOST_TEST_CONTEXT("sink source " << i) {
          auto before = interp.evaluate(root.src(i)), after = interp.evaluate(ref.root.src(i));
          BOOST_REQUIRE(before.size() == 1u);
          BOOST_REQUIRE(after.size() == 1u);
          BOOST_TEST(same_values(before[0], after[0]));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
