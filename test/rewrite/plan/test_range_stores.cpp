// Stores into ranges of a buffer, as an allgather into the result makes them (rewrite/rules/allreduce.cpp
// allgather_into_result): their write sites (rewrite/plan/memory_plan.hpp write_site), the order the
// plan gives them (rewrite/plan/schedule.cpp: writers of disjoint ranges do not wait for each other,
// overlapping ones do, a reader waits for every range it reads) and their values in the interpreter,
// against host arithmetic.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <vector>

#include "rewrite/interpreter.hpp"
#include "rewrite/plan/memory_plan.hpp"
#include "rewrite/plan/schedule.hpp"
#include "test/rewrite/uop_fixture.hpp"

BOOST_AUTO_TEST_SUITE(test_range_stores)

using namespace ringrt;
using namespace ringrt::test;  // NOLINT: the fixture

namespace {

bool waits_for(const ScheduleItem& item, size_t dep) {
  return std::find(item.deps.begin(), item.deps.end(), dep) != item.deps.end();
}

// The plan's item whose target is t.
size_t item_of(const ItemPlan& plan, const UOp& t) {
  for (size_t i = 0; i < plan.items.size(); ++i)
    if (plan.items[i].target == t) return i;
  BOOST_FAIL("no item writes " << t.to_string());
  return 0;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(range_stores, UOpFixture)

BOOST_AUTO_TEST_CASE(a_store_into_a_contiguous_shrink_writes_that_range) {
  UOp b = new_buffer(DeviceSpec(cpus(2)), 12, DType::float32, &g);
  UOp target = b.mselect(1).shrink(spans({{4, 8}}));
  WriteSite s = write_site(target, true);
  BOOST_TEST((s.base == b.node()));
  BOOST_TEST(s.block == 1);
  BOOST_TEST(s.begin == 4);
  BOOST_TEST(s.end == 8);
  BOOST_TEST((write_site(target).base == target.node()));                       // no store: a value of its own
  BOOST_TEST(write_site(b.mselect(1).shrink(spans({{0, 12}})), true).whole());  // all of the block
  WriteSite low{b.node(), 1, 0, 4}, high{b.node(), 1, 4, 8}, block{b.node(), 1}, other{b.node(), 0};
  BOOST_TEST(!low.overlaps(high));
  BOOST_TEST(WriteSite({b.node(), 1, 2, 6}).overlaps(high));
  BOOST_TEST(block.overlaps(low));
  BOOST_TEST(!other.overlaps(low));
  BOOST_TEST(block.covers(low));
  BOOST_TEST(!low.covers(block));
  BOOST_TEST(WriteSite({b.node(), -1}).covers(low));
}

// Two kernels store into disjoint halves of block 1, a third into the middle; the result (the buffer
// after all three) is read by the root's item.
BOOST_AUTO_TEST_CASE(disjoint_ranges_run_apart_overlapping_ones_in_order) {
  UOp b = new_buffer(DeviceSpec(cpus(2)), 8, DType::float32, &g);
  UOp x = new_buffer(DeviceSpec("CPU:1"), 4, DType::float32, &g);
  UOp low = b.mselect(1).shrink(spans({{0, 4}})), high = b.mselect(1).shrink(spans({{4, 8}}));
  UOp mid = b.mselect(1).shrink(spans({{2, 6}}));
  auto c4 = [&](double v) { return cst(v).reshape({1}).expand({4}); };
  UOp s1 = low.store(x + c4(1)), s2 = high.store(x * c4(2));
  UOp s3 = mid.store(b.after({s1, s2}).mselect(1).shrink(spans({{0, 4}})) + c4(-3));
  UOp root = b.after({s1, s2, s3});
  ItemPlan plan = plan_schedule({root});
  size_t i1 = item_of(plan, low), i2 = item_of(plan, high), i3 = item_of(plan, mid), last = plan.items.size() - 1;
  BOOST_TEST(plan.items[i1].store);
  BOOST_TEST(!waits_for(plan.items[i2], i1));  // disjoint
  BOOST_TEST(waits_for(plan.items[i3], i1));   // overlaps both (and reads the first)
  BOOST_TEST(waits_for(plan.items[i3], i2));
  BOOST_TEST((plan.items[last].target == root));
  for (size_t i : {i1, i2, i3}) BOOST_TEST(waits_for(plan.items[last], i));

  // values: block 1 = x + 1, then x * 2, with elements 2..5 overwritten by (x + 1)[0..4) - 3
  HostBuffer xs = HostBuffer::from_vector(std::vector<float>{10, 20, 30, 40}, DType::float32, {4});
  std::vector<HostBuffer> x_blocks{xs};
  Interpreter interp([&](int64_t id) { return id == std::get<BufferArg>(x.arg()).id ? &x_blocks : nullptr; });
  std::vector<HostBuffer> got = interp.evaluate(root);
  BOOST_TEST_REQUIRE(got.size() == 2u);
  std::vector<float> want{11, 21, 31, 41, 20, 40, 60, 80};
  for (int64_t k = 0; k < 4; ++k) want[static_cast<size_t>(2 + k)] = xs.get(k) + 1 - 3;
  BOOST_TEST(got[1].to_vector<float>() == want, boost::test_tools::per_element());
  BOOST_TEST(got[0].to_vector<float>() == std::vector<float>(8, 0.0f), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
