// The reference interpreter on movement ops and on multi-device graphs (rewrite/interpreter.cpp).
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "rewrite/interpreter.hpp"
#include "test/rewrite/interpreter_fixture.hpp"
#include "test/support/checks.hpp"
#include "test/support/print.hpp"

BOOST_AUTO_TEST_SUITE(test_interpreter_movement)

namespace bdata = boost::unit_test::data;
namespace tt = boost::test_tools;
using namespace ringrt;
using namespace ringrt::test;  // NOLINT: the fixture

// ------------------------------------------------------------------------------------------------
BOOST_FIXTURE_TEST_SUITE(movement, InterpreterFixture)

BOOST_AUTO_TEST_CASE(reshape_keeps_row_major_order) {
  UOp x = input(DType::int32, {2, 3}, I{1, 2, 3, 4, 5, 6});
  HostBuffer out = one(x.reshape({3, 2}));
  BOOST_TEST(out.shape == (Shape{3, 2}));
  CHECK_VALUES(out.to_vector<int64_t>(), I{1, 2, 3, 4, 5, 6});
  CHECK_VALUES(ints(x.reshape({3, 2}).permute({1, 0})), I{1, 3, 5, 2, 4, 6});
}

BOOST_AUTO_TEST_CASE(expand_broadcasts) {
  CHECK_VALUES(ints(input(DType::int32, {1, 3}, I{1, 2, 3}).expand({2, 3})), I{1, 2, 3, 1, 2, 3});
  CHECK_VALUES(ints(input(DType::int32, {2, 1}, I{1, 2}).expand({2, 3})), I{1, 1, 1, 2, 2, 2});
  CHECK_VALUES(ints(input(DType::int32, {1, 1}, I{7}).expand({2, 2})), I{7, 7, 7, 7});
  // broadcasting then adding: a column plus a row
  UOp col = input(DType::int32, {2, 1}, I{10, 20}).expand({2, 3});
  UOp row = input(DType::int32, {1, 3}, I{1, 2, 3}).expand({2, 3});
  CHECK_VALUES(ints(col + row), I{11, 12, 13, 21, 22, 23});
}

BOOST_AUTO_TEST_CASE(pad_fills_the_masked_region_with_zero) {
  UOp x = input(DType::int32, {2, 2}, I{1, 2, 3, 4});
  HostBuffer out = one(x.pad(spans({{1, 0}, {0, 1}})));
  BOOST_TEST(out.shape == (Shape{3, 3}));
  CHECK_VALUES(out.to_vector<int64_t>(), I{0, 0, 0, 1, 2, 0, 3, 4, 0});
  CHECK_VALUES(floats(input(DType::float32, {2}, F{5, 6}).pad(spans({{2, 1}}))), F{0, 0, 5, 6, 0});
  // the padding is zero even where the input is not: a sum counts only the real elements
  CHECK_VALUES(ints(x.pad(spans({{1, 1}, {1, 1}})).r(Ops::ADD, {0, 1})), I{10});
}

BOOST_AUTO_TEST_CASE(shrink_takes_a_window) {
  UOp x = input(DType::int32, {3, 3}, I{0, 1, 2, 3, 4, 5, 6, 7, 8});
  HostBuffer out = one(x.shrink(spans({{1, 3}, {0, 2}})));
  BOOST_TEST(out.shape == (Shape{2, 2}));
  CHECK_VALUES(out.to_vector<int64_t>(), I{3, 4, 6, 7});
  CHECK_VALUES(ints(x.shrink(spans({{2, 3}, {2, 3}}))), I{8});
  UOp y = input(DType::int32, {2}, I{7, 8});
  CHECK_VALUES(ints(y.pad(spans({{1, 1}})).shrink(spans({{1, 3}}))), I{7, 8});  // pad then shrink back
}

BOOST_AUTO_TEST_CASE(permute_moves_axes) {
  CHECK_VALUES(ints(input(DType::int32, {2, 3}, I{1, 2, 3, 4, 5, 6}).permute({1, 0})), I{1, 4, 2, 5, 3, 6});
  // x = arange(24) as (2, 3, 4), x[i][j][k] = 12i + 4j + k; out = x.permute(2, 0, 1): out[k][i][j] = x[i][j][k]
  I vals;
  for (int64_t v = 0; v < 24; ++v) vals.push_back(v);
  HostBuffer out = one(input(DType::int32, {2, 3, 4}, vals).permute({2, 0, 1}));
  BOOST_TEST(out.shape == (Shape{4, 2, 3}));
  I want;
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) want.push_back(12 * i + 4 * j + k);
  CHECK_VALUES(out.to_vector<int64_t>(), want);
}

BOOST_AUTO_TEST_CASE(flip_reverses_axes) {
  UOp x = input(DType::int32, {2, 3}, I{1, 2, 3, 4, 5, 6});
  CHECK_VALUES(ints(x.flip({0, 1})), I{3, 2, 1, 6, 5, 4});
  CHECK_VALUES(ints(x.flip({1, 0})), I{4, 5, 6, 1, 2, 3});
  CHECK_VALUES(ints(x.flip({1, 1})), I{6, 5, 4, 3, 2, 1});
}

BOOST_AUTO_TEST_CASE(contiguous_and_detach_keep_values) {
  UOp x = input(DType::float32, {2, 2}, F{1, 2, 3, 4}).permute({1, 0});
  CHECK_VALUES(floats(x.contiguous()), F{1, 3, 2, 4});
  CHECK_VALUES(floats(x.detach()), F{1, 3, 2, 4});
}

BOOST_AUTO_TEST_CASE(views_compose) {
  // [[1,2,3],[4,5,6]] -> transpose [[1,4],[2,5],[3,6]] -> rows 1..3, column 0 -> [2, 3]
  UOp x = input(DType::int32, {2, 3}, I{1, 2, 3, 4, 5, 6});
  CHECK_VALUES(ints(x.permute({1, 0}).shrink(spans({{1, 3}, {0, 1}}))), I{2, 3});
  // flip then reshape then expand
  CHECK_VALUES(ints(x.flip({0, 1}).reshape({1, 6}).expand({2, 6})), I{3, 2, 1, 6, 5, 4, 3, 2, 1, 6, 5, 4});
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
// A node on a device tuple holds one value per device.
BOOST_FIXTURE_TEST_SUITE(multi_device, InterpreterFixture)

BOOST_AUTO_TEST_CASE(a_buffer_on_a_tuple_has_one_value_per_device) {
  UOp t = tinput(DType::int32, {2}, std::vector<I>{{1, 2}, {10, 20}, {100, 200}});
  auto v = per_device_ints(t);
  BOOST_REQUIRE(v.size() == 3u);
  CHECK_VALUES(v[0], I{1, 2});
  CHECK_VALUES(v[1], I{10, 20});
  CHECK_VALUES(v[2], I{100, 200});
  // element-wise math stays per device
  auto d = per_device_ints(t + t);
  CHECK_VALUES(d[2], I{200, 400});
}

BOOST_AUTO_TEST_CASE(device_num_gives_each_device_its_index) {
  auto v = eval(device_num(3, &g));
  BOOST_REQUIRE(v.size() == 3u);
  for (int64_t d = 0; d < 3; ++d) {
    BOOST_TEST(v[static_cast<size_t>(d)].dtype == DType::int32);
    CHECK_VALUES(v[static_cast<size_t>(d)].to_vector<int64_t>(), I{d});
  }
  UOp t = tinput(DType::int32, {2}, std::vector<I>{{1, 2}, {1, 2}});
  auto s = per_device_ints(t + device_num(2, &g).reshape({1}).expand({2}));
  CHECK_VALUES(s[0], I{1, 2});
  CHECK_VALUES(s[1], I{2, 3});
  // a device-less node computed from _device_num has one value per device too
  auto dn = per_device_ints(device_num(4, &g) * cst(10, DType::int32));
  BOOST_REQUIRE(dn.size() == 4u);
  CHECK_VALUES(dn[3], I{30});
}

BOOST_AUTO_TEST_CASE(shard_local_gives_each_device_its_shard) {
  UOp rep = tinput(DType::int32, {4}, std::vector<I>{{10, 20, 30, 40}, {10, 20, 30, 40}});
  auto s = per_device_ints(rep.shard_local(0));
  CHECK_VALUES(s[0], I{10, 20});
  CHECK_VALUES(s[1], I{30, 40});
  UOp six = tinput(DType::int32, {6}, std::vector<I>(3, I{0, 1, 2, 3, 4, 5}));
  auto t = per_device_ints(six.shard_local(0));
  CHECK_VALUES(t[0], I{0, 1});
  CHECK_VALUES(t[1], I{2, 3});
  CHECK_VALUES(t[2], I{4, 5});
  // (2, 4) split on axis 1: each device gets two columns of both rows
  UOp m = tinput(DType::int32, {2, 4}, std::vector<I>(2, I{1, 2, 3, 4, 5, 6, 7, 8}));
  auto c = per_device_ints(m.shard_local(1));
  CHECK_VALUES(c[0], I{1, 2, 5, 6});
  CHECK_VALUES(c[1], I{3, 4, 7, 8});
}

BOOST_AUTO_TEST_CASE(unshard_local_pads_each_shard_into_place) {
  UOp rep = tinput(DType::int32, {4}, std::vector<I>{{10, 20, 30, 40}, {10, 20, 30, 40}});
  auto u = per_device_ints(rep.shard_local(0).unshard_local(0));
  CHECK_VALUES(u[0], I{10, 20, 0, 0});
  CHECK_VALUES(u[1], I{0, 0, 30, 40});
}

BOOST_AUTO_TEST_CASE(mselect_takes_one_device) {
  UOp t = tinput(DType::int32, {2}, std::vector<I>{{1, 2}, {10, 20}});
  CHECK_VALUES(ints(t.mselect(1)), I{10, 20});
  CHECK_VALUES(ints(t.mselect(0)), I{1, 2});
}

BOOST_AUTO_TEST_CASE(mstack_puts_single_device_values_on_a_tuple) {
  UOp a = input(DType::int32, {2}, I{1, 2}, "CPU:0"), b = input(DType::int32, {2}, I{3, 4}, "CPU:1");
  auto v = per_device_ints(mstack({a, b}));
  BOOST_REQUIRE(v.size() == 2u);
  CHECK_VALUES(v[0], I{1, 2});
  CHECK_VALUES(v[1], I{3, 4});
  CHECK_VALUES(ints(mstack({a, b}).mselect(1)), I{3, 4});
}

BOOST_AUTO_TEST_CASE(copy) {
  UOp a = input(DType::int32, {2}, I{5, 6});
  auto bcast = per_device_ints(a.copy_to_device(DeviceSpec(cpus(3))));  // one -> tuple broadcasts
  BOOST_REQUIRE(bcast.size() == 3u);
  for (const auto& v : bcast) CHECK_VALUES(v, I{5, 6});
  CHECK_VALUES(ints(a.copy_to_device(DeviceSpec("CPU:1"))), I{5, 6});
  UOp t = tinput(DType::int32, {2}, std::vector<I>{{1, 2}, {10, 20}, {100, 200}});
  CHECK_VALUES(ints(t.copy_to_device(DeviceSpec("CPU:7"))), I{1, 2});         // tuple -> one: shard 0
  CHECK_VALUES(ints(t.copy_to_device(DeviceSpec("CPU:7"), 2)), I{100, 200});  // or the given shard
  auto all = per_device_ints(t.copy_to_device(DeviceSpec(cpus(3)), 1));
  for (const auto& v : all) CHECK_VALUES(v, I{10, 20});
}

BOOST_AUTO_TEST_CASE(allreduce_combines_every_device) {
  UOp t = tinput(DType::int32, {2}, std::vector<I>{{1, 2}, {10, 20}, {100, 200}});
  struct {
    Ops op;
    I want;
  } cases[] = {{Ops::ADD, {111, 222}}, {Ops::MAX, {100, 200}}, {Ops::MIN, {1, 2}}, {Ops::MUL, {1000, 8000}}};
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(op_name(c.op)) {
      auto v = per_device_ints(t.allreduce(c.op, DeviceSpec(cpus(3))));
      BOOST_REQUIRE(v.size() == 3u);
      for (const auto& d : v) CHECK_VALUES(d, c.want);
      CHECK_VALUES(ints(t.allreduce(c.op, DeviceSpec("CPU:0"))), c.want);
    }
  }
  UOp f = tinput(DType::float32, {1}, std::vector<F>{{-1}, {-5}});
  CHECK_VALUES(floats(f.allreduce(Ops::MAX, DeviceSpec("CPU:0"))), F{-1});
}

BOOST_AUTO_TEST_CASE(multi_concatenates_shards_along_its_axis) {
  UOp t = tinput(DType::int32, {2}, std::vector<I>{{1, 2}, {3, 4}});
  HostBuffer m = one(t.multi(0));
  BOOST_TEST(m.shape == Shape{4});
  CHECK_VALUES(m.to_vector<int64_t>(), I{1, 2, 3, 4});
  UOp t2 = tinput(DType::int32, {2, 2}, std::vector<I>{{1, 2, 3, 4}, {5, 6, 7, 8}});
  HostBuffer c1 = one(t2.multi(1));
  BOOST_TEST(c1.shape == (Shape{2, 4}));
  CHECK_VALUES(c1.to_vector<int64_t>(), I{1, 2, 5, 6, 3, 4, 7, 8});
  CHECK_VALUES(ints(t2.multi(0)), I{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK_VALUES(ints(t2.multi(std::nullopt)), I{1, 2, 3, 4});  // replicated: one copy
  // logical ops on a MULTI see the whole tensor
  CHECK_VALUES(ints(t.multi(0).r(Ops::ADD, {0})), I{10});
  CHECK_VALUES(ints(t2.multi(1).r(Ops::MAX, {0})), I{3, 4, 7, 8});
}

// Stores into MSELECTs of a scratch buffer, ordered by AFTER (the all2all gather of the reference diff).
BOOST_AUTO_TEST_CASE(after_applies_stores_into_mselect_of_a_scratch_buffer) {
  UOp v0 = input(DType::int32, {2}, I{7, 8}, "CPU:0");
  UOp scratch = new_buffer(DeviceSpec(cpus(2)), 2, DType::int32, &g);
  UOp state = scratch.after({scratch.mselect(1).store(v0.copy_to_device(DeviceSpec("CPU:1")))});
  auto s1 = per_device_ints(state);
  BOOST_REQUIRE(s1.size() == 2u);
  CHECK_VALUES(s1[0], I{0, 0});  // untouched scratch
  CHECK_VALUES(s1[1], I{7, 8});
  UOp state2 = state.after({scratch.mselect(0).store(state.mselect(1).copy_to_device(DeviceSpec("CPU:0")))});
  auto s2 = per_device_ints(state2);
  CHECK_VALUES(s2[0], I{7, 8});
  CHECK_VALUES(s2[1], I{7, 8});
  // a store into another buffer than the one AFTER orders is a bug
  UOp other = new_buffer(DeviceSpec(cpus(2)), 2, DType::int32, &g);
  BOOST_CHECK_THROW(eval(scratch.after({other.mselect(0).store(v0)})), InternalError);
}

// The naive allreduce of the reference diff, written out for 2 devices: each device reads its own shard
// directly and the other device's shard from a scratch buffer; both end with the sum.
BOOST_AUTO_TEST_CASE(naive_allreduce_by_hand) {
  UOp buf = tinput(DType::int32, {2}, std::vector<I>{{1, 2}, {10, 20}});
  UOp dnum = device_num(2, &g);
  std::vector<UOp> terms;
  for (int64_t i = 0; i < 2; ++i) {
    UOp scratch = new_buffer(DeviceSpec(cpus(2)), 2, DType::int32, &g);
    int64_t j = 1 - i;
    UOp state = scratch.after(
        {scratch.mselect(j).store(buf.mselect(i).copy_to_device(DeviceSpec(cpus(2)[static_cast<size_t>(j)])))});
    UOp mine = dnum.eq(cst(static_cast<double>(i), DType::int32)).reshape({1}).expand({2});
    terms.push_back(mine.where(buf, state.reshape({2})));
  }
  auto v = per_device_ints(fold(Ops::ADD, terms));
  BOOST_REQUIRE(v.size() == 2u);
  CHECK_VALUES(v[0], I{11, 22});
  CHECK_VALUES(v[1], I{11, 22});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
