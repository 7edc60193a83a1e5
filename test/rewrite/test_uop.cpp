// UOps, part one: hash consing, the structural hash, toposort and printing (rewrite/uop.cpp).
#include <algorithm>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/errors.hpp"
#include "rewrite/uop.hpp"
#include "test/rewrite/uop_fixture.hpp"
#include "test/support/checks.hpp"
#include "test/support/print.hpp"

BOOST_AUTO_TEST_SUITE(test_uop)

namespace bdata = boost::unit_test::data;
using namespace ringrt;
using ringrt::test::message_has;
using namespace ringrt::test;  // NOLINT: the fixture

// ------------------------------------------------------------------------------------------------
BOOST_FIXTURE_TEST_SUITE(hash_consing, UOpFixture)

BOOST_AUTO_TEST_CASE(same_structure_is_the_same_node) {
  UOp a = buf({4}), b = buf({4});
  size_t before = g.size();
  UOp x = a + b, y = a + b;
  BOOST_TEST(x == y);
  BOOST_TEST(x.node() == y.node());
  BOOST_TEST(g.size() == before + 1);  // one ADD created, the second build found it
  BOOST_TEST(cst(2.5) == cst(2.5));
  BOOST_TEST(device_num(4, &g) == device_num(4, &g));
  BOOST_TEST(device_uop(DeviceSpec(cpus(2)), &g) == device_uop(DeviceSpec(cpus(2)), &g));
  BOOST_TEST(make_uop(Ops::NEG, DType::float32, {a}, {}, &g) == a.alu(Ops::NEG));
}

BOOST_AUTO_TEST_CASE(different_arg_dtype_or_src_is_a_different_node) {
  UOp a = buf({4}), b = buf({4});
  BOOST_TEST(a != b);  // two buffers: different BufferArg ids
  BOOST_TEST(cst(1.0) != cst(2.0));
  BOOST_TEST(cst(1.0) != cst(1.0, DType::float16));
  BOOST_TEST(cst(1.0, DType::int32) != cst(1.0, DType::int64));
  // the same number as an int64 and as a double arg
  BOOST_TEST(make_uop(Ops::CONST, DType::float32, {}, int64_t{1}, &g) !=
             make_uop(Ops::CONST, DType::float32, {}, 1.0, &g));
  BOOST_TEST((a + b) != (b + a));  // source order matters
  BOOST_TEST((a + b) != (a * b));
  BOOST_TEST((a + a) != (a + b));
  BOOST_TEST(a.reshape({2, 2}) != a.reshape({4, 1}));
  BOOST_TEST(a.cast(DType::float16) != a.cast(DType::bfloat16));
  BOOST_TEST(a.r(Ops::ADD, {0}) != a.r(Ops::MAX, {0}));
  BOOST_TEST(device_num(4, &g) != device_num(2, &g));
  UOp t = tbuf({4}, 2);
  BOOST_TEST(t.shard_local(0) != t.pad(spans({{0, 0}})).shrink(spans({{0, 2}})));
  Spans s1{{Affine{0, 2}, Affine{2, 2}}}, s2{{Affine{0, 1}, Affine{2, 1}}};
  BOOST_TEST(t.shrink(s1) != t.shrink(s2));  // only the device factor differs
}

// Constants are compared by their bits: 0.0 and -0.0 differ (1/x tells them apart), NaN equals NaN.
BOOST_AUTO_TEST_CASE(float_constants_cons_by_bit_pattern) {
  BOOST_TEST(cst(0.0) != cst(-0.0));
  BOOST_TEST(cst(-0.0) == cst(-0.0));
  double nan = std::nan("");
  size_t before = g.size();
  UOp a = cst(nan), b = cst(nan);
  BOOST_TEST(a == b);
  BOOST_TEST(g.size() == before + 1);
  BOOST_TEST((a + a) == (b + b));
}

BOOST_AUTO_TEST_CASE(builders_return_the_input_for_identity_views) {
  UOp a = buf({2, 3});
  BOOST_TEST(a.reshape({2, 3}) == a);
  BOOST_TEST(a.expand({2, 3}) == a);
  BOOST_TEST(a.permute({0, 1}) == a);
  BOOST_TEST(a.pad(spans({{0, 0}, {0, 0}})) == a);
  BOOST_TEST(a.shrink(spans({{0, 2}, {0, 3}})) == a);
  BOOST_TEST(a.flip({0, 0}) == a);
  BOOST_TEST(a.cast(DType::float32) == a);
}

BOOST_AUTO_TEST_CASE(replace_rebuilds_with_new_sources) {
  UOp a = buf({4}), b = buf({4}), c = buf({4});
  UOp x = a + b;
  BOOST_TEST(x.replace({a, b}) == x);
  BOOST_TEST(x.replace({a, c}) == a + c);
  UOp r = a.reshape({2, 2});
  BOOST_TEST(r.replace({c}) == c.reshape({2, 2}));
  BOOST_TEST(r.replace({a}, std::vector<int64_t>{4, 1}) == a.reshape({4, 1}));
}

BOOST_AUTO_TEST_CASE(a_fresh_graph_conses_too) {
  UOpGraph h;
  UOp a = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &h);
  UOp x = (a + a) * const_uop(DType::float32, 2, &h).reshape({1}).expand({4});
  UOp y = (a + a) * const_uop(DType::float32, 2, &h).reshape({1}).expand({4});
  BOOST_TEST(x == y);
  BOOST_TEST(&x.graph() == &h);
  // the same structure in this fixture's graph is another node, with the same structural hash
  UOp a2 = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &g);
  UOp z = (a2 + a2) * const_uop(DType::float32, 2, &g).reshape({1}).expand({4});
  BOOST_TEST(z != x);
  BOOST_TEST(z.hash() == x.hash());
}

BOOST_AUTO_TEST_CASE(sources_from_another_graph_are_rejected) {
  UOpGraph h;
  UOp mine = buf({4});
  UOp theirs = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &h);
  BOOST_CHECK_THROW(make_uop(Ops::ADD, DType::float32, {mine, theirs}, {}, &g), InternalError);
  BOOST_CHECK_THROW(make_uop(Ops::NEG, DType::float32, {UOp()}, {}, &g), InternalError);
}

BOOST_AUTO_TEST_CASE(a_failed_build_creates_nothing) {
  UOp a = buf({2, 3});
  size_t before = g.size();
  BOOST_CHECK_THROW(a.reshape({5}), ShapeError);
  BOOST_CHECK_THROW(a + buf({3, 2}), ShapeError);
  BOOST_TEST(g.size() == before + 2);  // only the second buffer and its reshape
}

// Many threads building the same structure at once get the same nodes, each created once.
BOOST_AUTO_TEST_CASE(concurrent_builds_agree) {
  auto build = [](UOpGraph& graph, UOp x) {
    UOp acc = x;
    for (int i = 0; i < 500; ++i) {
      UOp c = const_uop(DType::float32, i % 7, &graph).reshape({1}).expand({8});
      acc = (i % 2 ? acc + c : acc * c).alu(Ops::MAX, {x});
    }
    return acc;
  };
  UOpGraph reference;
  build(reference, new_buffer(DeviceSpec("CPU:0"), 8, DType::float32, &reference));
  for (int round = 0; round < 5; ++round) {  // the race window is small: try a few times
    UOpGraph shared;
    UOp x = new_buffer(DeviceSpec("CPU:0"), 8, DType::float32, &shared);
    std::vector<UOp> roots(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < roots.size(); ++t) threads.emplace_back([&, t] { roots[t] = build(shared, x); });
    for (auto& th : threads) th.join();
    BOOST_TEST_CONTEXT("round " << round) {
      for (size_t t = 1; t < roots.size(); ++t) BOOST_TEST(roots[t] == roots[0]);
      BOOST_TEST(shared.size() == reference.size());
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(structural_hash)

// Builds the same structure in two graphs, in different creation orders and with unrelated nodes in
// between: every node's hash matches its counterpart.
BOOST_AUTO_TEST_CASE(equal_across_graphs_and_creation_orders) {
  auto build = [](UOpGraph& g, bool reverse) {
    if (reverse) const_uop(DType::int32, 99, &g).alu(Ops::NEG);  // noise, first in one graph only
    UOp a = new_buffer(DeviceSpec(cpus(2)), 8, DType::float32, &g);
    UOp b = new_buffer(DeviceSpec(cpus(2)), 8, DType::float32, &g);
    UOp dn = device_num(2, &g);
    UOp x = reverse ? b.reshape({2, 4}) : a.reshape({2, 4});
    UOp y = reverse ? a.reshape({2, 4}) : b.reshape({2, 4});
    if (reverse) std::swap(x, y);
    UOp cond = dn.eq(const_uop(DType::int32, 0, &g)).reshape({1, 1}).expand({2, 4});
    UOp z = cond.where(x, y).r(Ops::ADD, {1}).shrink({{Affine{0, 1}, Affine{1, 1}}, {Affine{}, Affine{1, 0}}});
    UOp m = z.multi(0).permute({1, 0}).cast(DType::float16);
    return sink({m, z.allreduce(Ops::MAX, DeviceSpec("CPU:0")), device_uop(DeviceSpec("CPU:5"), &g)});
  };
  UOpGraph g1, g2;
  UOp r1 = build(g1, false), r2 = build(g2, true);
  BOOST_TEST(r1.hash() == r2.hash());
  auto t1 = g1.toposort({r1}), t2 = g2.toposort({r2});
  BOOST_REQUIRE(t1.size() == t2.size());
  for (size_t i = 0; i < t1.size(); ++i) {
    BOOST_TEST_CONTEXT("node " << i << ": " << t1[i].to_string()) {
      BOOST_TEST(t1[i].hash() == t2[i].hash());
      BOOST_TEST(t1[i].to_string() == t2[i].to_string());
    }
  }
}

BOOST_AUTO_TEST_CASE(distinct_structures_hash_apart) {
  UOpGraph g;
  UOp a = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &g);
  UOp b = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &g);
  std::vector<UOp> nodes{a,
                         b,
                         a + b,
                         b + a,
                         a * b,
                         a + a,
                         a.alu(Ops::NEG),
                         a.cast(DType::float16),
                         a.reshape({2, 2}),
                         a.reshape({4, 1}),
                         a.r(Ops::ADD, {0}),
                         a.r(Ops::MAX, {0}),
                         const_uop(DType::float32, 0.0, &g),
                         const_uop(DType::float32, -0.0, &g),
                         const_uop(DType::float32, 1.0, &g),
                         const_uop(DType::int32, 1, &g)};
  std::unordered_set<uint64_t> hashes;
  for (const auto& n : nodes) hashes.insert(n.hash());
  BOOST_TEST(hashes.size() == nodes.size());
}

BOOST_AUTO_TEST_SUITE_END()
// ------------------------------------------------------------------------------------------------
BOOST_FIXTURE_TEST_SUITE(toposort, UOpFixture)

BOOST_AUTO_TEST_CASE(sources_in_order_then_the_user) {
  UOp a = cst(1), b = cst(2);
  BOOST_TEST((g.toposort({a + b}) == std::vector<UOp>{a, b, a + b}));
  BOOST_TEST((g.toposort({b + a}) == std::vector<UOp>{b, a, b + a}));
  UOp y = a + a, z = y * a;
  BOOST_TEST((g.toposort({z}) == std::vector<UOp>{a, y, z}));
  // several roots: each node once, in root order
  BOOST_TEST((g.toposort({z, b, a + b}) == std::vector<UOp>{a, y, z, b, a + b}));
}

BOOST_AUTO_TEST_CASE(every_reachable_node_once_and_sources_first) {
  std::vector<UOp> pool{buf({4}), buf({4}), buf({4})};
  uint32_t state = 12345;
  auto rnd = [&](size_t n) {
    state = state * 1664525u + 1013904223u;
    return static_cast<size_t>(state >> 8) % n;
  };
  for (int i = 0; i < 300; ++i) {
    UOp a = pool[rnd(pool.size())], b = pool[rnd(pool.size())];
    pool.push_back(rnd(3) == 0 ? a.alu(Ops::NEG) : rnd(2) ? a + b : a.alu(Ops::MAX, {b}));
  }
  UOp root = sink(pool);
  auto order = g.toposort({root});
  std::unordered_map<const detail::Node*, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) {
    BOOST_TEST(pos.count(order[i].node()) == 0u);
    pos[order[i].node()] = i;
  }
  for (size_t i = 0; i < order.size(); ++i)
    for (const auto& s : order[i].src()) BOOST_TEST(pos.at(s.node()) < i);
  BOOST_TEST(order.back() == root);
  for (const auto& p : pool) BOOST_TEST(pos.count(p.node()) == 1u);
}

// The order comes from structure alone: two graphs built in different orders sort alike.
BOOST_AUTO_TEST_CASE(order_is_structural) {
  UOpGraph g1, g2;
  auto build = [](UOpGraph& gr, bool flip) {
    UOp a = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &gr);
    UOp b = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &gr);
    UOp p, q;
    if (flip) {
      q = b.alu(Ops::NEG) * a;
      p = a + b;
    } else {
      p = a + b;
      q = b.alu(Ops::NEG) * a;
    }
    return sink({p.alu(Ops::MAX, {q}), q});
  };
  auto o1 = g1.toposort({build(g1, false)}), o2 = g2.toposort({build(g2, true)});
  BOOST_REQUIRE(o1.size() == o2.size());
  for (size_t i = 0; i < o1.size(); ++i) {
    BOOST_TEST(o1[i].hash() == o2[i].hash());
    BOOST_TEST(o1[i].to_string() == o2[i].to_string());
  }
  // and repeated sorts agree
  UOp r = build(g1, false);
  BOOST_TEST((g1.toposort({r}) == g1.toposort({r})));
}

BOOST_AUTO_TEST_CASE(a_chain_100000_deep) {
  UOp x = buf({4});
  UOp c = x.const_like(1);
  UOp acc = x;
  for (int i = 0; i < 100000; ++i) acc = acc + c;
  auto order = g.toposort({acc});
  BOOST_TEST(order.size() == 100000u + 2u + 3u);  // the adds, DEVICE and BUFFER, CONST RESHAPE EXPAND
  BOOST_TEST(order.back() == acc);
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_FIXTURE_TEST_SUITE(printing, UOpFixture)

BOOST_AUTO_TEST_CASE(to_string_names_op_dtype_shape_device_arg) {
  UOp a = buf({4});
  std::string s = (a + a).to_string();
  BOOST_TEST(s.find("ADD") != std::string::npos);
  BOOST_TEST(s.find("float32") != std::string::npos);
  BOOST_TEST(s.find("(4,)") != std::string::npos);
  BOOST_TEST(s.find("CPU:0") != std::string::npos);
  BOOST_TEST(a.reshape({2, 2}).to_string().find("(2, 2)") != std::string::npos);
  std::string t = tbuf({4}, 2).to_string();
  BOOST_TEST(t.find("(CPU:0, CPU:1)") != std::string::npos);
  BOOST_TEST(a.r(Ops::MAX, {0}).to_string().find("MAX") != std::string::npos);
  BOOST_TEST(shape_str({}) == "()");
  BOOST_TEST(shape_str({7}) == "(7,)");
  BOOST_TEST(shape_str({2, 3}) == "(2, 3)");
}

BOOST_AUTO_TEST_CASE(print_graph_lists_every_node_once) {
  UOp a = buf({4}), b = buf({4});
  UOp root = (a + b).alu(Ops::MAX, {a}).r(Ops::ADD, {0});
  std::string text = print_graph(root);
  auto order = g.toposort({root});
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  // DEVICE nodes are folded into their users ("dev")
  size_t shown = 0;
  for (const auto& u : order) shown += u.op() != Ops::DEVICE;
  BOOST_TEST(lines.size() == shown);
  for (size_t i = 0, k = 0; i < order.size(); ++i) {
    if (order[i].op() == Ops::DEVICE) continue;
    BOOST_TEST_CONTEXT("line " << k << ": " << lines[k]) {
      BOOST_TEST(lines[k].find("%" + std::to_string(i)) == 0u);
      BOOST_TEST(lines[k].find(order[i].to_string()) != std::string::npos);
    }
    ++k;
  }
  // the MAX line references its sources by their numbers
  size_t add = static_cast<size_t>(std::find(order.begin(), order.end(), a + b) - order.begin());
  size_t pa = static_cast<size_t>(std::find(order.begin(), order.end(), a) - order.begin());
  BOOST_TEST(text.find("%" + std::to_string(add) + ", %" + std::to_string(pa)) != std::string::npos);
  BOOST_TEST(text.find("dev") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(write_dot_contains_every_node_label) {
  UOp t = tbuf({2, 4}, 2);
  UOp m = t.shard_local(1).multi(1).r(Ops::ADD, {0});
  UOp root = sink({m, t.allreduce(Ops::ADD, DeviceSpec("CPU:0"))});
  std::string dot = dot_of(g, {root});
  auto order = g.toposort({root});
  BOOST_TEST(dot.find("digraph") != std::string::npos);
  size_t labels = 0, edges = 0, nsrc = 0;
  for (size_t p = dot.find("label="); p != std::string::npos; p = dot.find("label=", p + 1)) ++labels;
  for (size_t p = dot.find("->"); p != std::string::npos; p = dot.find("->", p + 1)) ++edges;
  for (const auto& u : order) nsrc += u.src().size();
  BOOST_TEST(labels == order.size());
  BOOST_TEST(edges == nsrc);
  for (size_t i = 0; i < order.size(); ++i) {
    const UOp& u = order[i];
    std::string head = std::to_string(i) + "[label=\"" + std::string(op_name(u.op())) + "\\n" +
                       std::string(dtype_name(u.dtype())) + " " + shape_str(u.shape());
    BOOST_TEST_CONTEXT(head) { BOOST_TEST(dot.find(head) != std::string::npos); }
  }
}

BOOST_AUTO_TEST_CASE(write_dot_is_the_same_for_the_same_structure) {
  UOpGraph h;
  auto build = [](UOpGraph& gr) {
    UOp a = new_buffer(DeviceSpec("CPU:0"), 4, DType::float32, &gr);
    return (a + a).alu(Ops::NEG);
  };
  const_uop(DType::float32, 3, &h);  // different creation ids in the second graph
  UOp r1 = build(g), r2 = build(h);
  BOOST_TEST(dot_of(g, {r1}) == dot_of(h, {r2}));
  BOOST_TEST(print_graph(r1) == print_graph(r2));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
