// The ranges a copy reads in place (rewrite/plan/memory_plan.cpp's contiguous_range): a table of
// shrinks of a realized (2, 4, 6) buffer, each with the element offset it starts at, or none when the
// elements it keeps are not one contiguous run of the buffer; offsets checked against row-major
// arithmetic, contiguity against the kept elements' flat indices.
#include <boost/test/unit_test.hpp>
#include <optional>
#include <vector>

#include "rewrite/plan/memory_plan.hpp"
#include "test/rewrite/uop_fixture.hpp"

BOOST_AUTO_TEST_SUITE(test_memory_plan)

using namespace ringrt;
using namespace ringrt::test;  // NOLINT: the fixture

namespace {

using Bounds = std::vector<std::pair<int64_t, int64_t>>;

// The flat indices of the elements a shrink of `bounds` keeps from a row-major (2, 4, 6) tensor, in order;
// the offset of the first when they are consecutive, none otherwise.
std::optional<int64_t> host_offset(const Bounds& b) {
  std::vector<int64_t> idx;
  for (int64_t i = b[0].first; i < b[0].second; ++i)
    for (int64_t j = b[1].first; j < b[1].second; ++j)
      for (int64_t k = b[2].first; k < b[2].second; ++k) idx.push_back(i * 24 + j * 6 + k);
  for (size_t t = 1; t < idx.size(); ++t)
    if (idx[t] != idx[t - 1] + 1) return std::nullopt;
  return idx.at(0);
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(contiguous_range_of_shrinks, UOpFixture)

BOOST_AUTO_TEST_CASE(offsets_match_row_major_arithmetic) {
  const std::vector<Bounds> table{
      {{0, 2}, {0, 4}, {0, 6}},  // whole: offset 0
      {{1, 2}, {0, 4}, {0, 6}},  // the second half: 24
      {{1, 2}, {2, 3}, {0, 6}},  // one row: 36
      {{0, 1}, {1, 3}, {0, 6}},  // two rows of the first block (an alltoall chunk): 6
      {{1, 2}, {3, 4}, {2, 5}},  // part of one row: 44
      {{0, 1}, {0, 1}, {5, 6}},  // one element: 5
      {{0, 2}, {1, 2}, {0, 6}},  // a row of each block: not contiguous
      {{0, 1}, {1, 3}, {0, 5}},  // rows cut short: not contiguous
      {{0, 1}, {0, 4}, {1, 6}},  // a column cut off every row: not contiguous
  };
  UOp x = buf({2, 4, 6});
  auto realized = [&](const UOp& u) { return u == x; };
  for (const Bounds& b : table) {
    BOOST_TEST_CONTEXT("shrink " << b[0].first << ":" << b[0].second << ", " << b[1].first << ":" << b[1].second << ", "
                                 << b[2].first << ":" << b[2].second) {
      std::optional<MemoryRange> got = contiguous_range(x.shrink(spans(b)), realized);
      std::optional<int64_t> want = host_offset(b);
      BOOST_TEST(got.has_value() == want.has_value());
      if (got && want) {
        BOOST_TEST((got->base == x));
        BOOST_TEST(got->offset == *want);
      }
    }
  }
}

// A shrink of a shrink (and through reshapes) adds the offsets; a device-dependent bound is no range.
BOOST_AUTO_TEST_CASE(nested_views_add_offsets) {
  UOp x = buf({2, 4, 6});
  auto realized = [&](const UOp& u) { return u == x; };
  UOp block = x.shrink(spans({{1, 2}, {0, 4}, {0, 6}}));             // offset 24, shape (1, 4, 6)
  UOp rows = block.reshape({4, 6}).shrink(spans({{2, 4}, {0, 6}}));  // + 12
  std::optional<MemoryRange> got = contiguous_range(rows.reshape({12}).shrink(spans({{3, 9}})), realized);  // + 3
  BOOST_TEST_REQUIRE(got.has_value());
  BOOST_TEST(got->offset == 24 + 12 + 3);
  Spans by_device = spans({{0, 1}, {0, 4}, {0, 6}});
  by_device[0] = {Affine{0, 1}, Affine{1, 1}};  // block _device_num
  BOOST_TEST(!contiguous_range(x.shrink(by_device), realized).has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
