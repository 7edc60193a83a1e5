// Persistent tensors written from the host: Tensor::write and write_shards.
//
// Every expected value comes from host loops over the logical data (test/support/host_oracle.hpp);
// per-device values are read back through Tensor::shards(). Sweeps: 1 to 4 devices, sharded on axis 0,
// on axis 1, or replicated (a one-device tensor for 1), dtypes rotating through float32, float16 and
// int32 (values small integers, exact in each). Checked: the new values land (whole tensor and every
// device), a lazy reader built before the write keeps the old values, lazy ops built after see the
// new ones, a contiguous() that borrowed the memory keeps its value, a write creates no graph node and
// builds no program, and bad shapes, dtypes, counts, views and constants are refused.
// clang-format off
#include <boost/test/unit_test.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
// clang-format on

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/errors.hpp"
#include "runtime/api/internal.hpp"
#include "test/support/checks.hpp"
#include "test/support/host_oracle.hpp"

BOOST_AUTO_TEST_SUITE(test_tensor_write)

namespace bdata = boost::unit_test::data;

using ringrt::DeviceError;
using ringrt::DType;
using ringrt::HostBuffer;
using ringrt::ReduceOp;
using ringrt::Shape;
using ringrt::ShapeError;
using ringrt::Tensor;
using ringrt::UOpGraph;
using ringrt::test::message_has;

namespace tensor_write {

using namespace ringrt::test::host;  // NOLINT: the oracle

// How a sample lays its tensor out: sharded on axis 0 or 1, or replicated.
enum class Layout { axis0, axis1, replicated };
const char* layout_name(Layout l) {
  return l == Layout::axis0 ? "axis 0" : l == Layout::axis1 ? "axis 1" : "replicated";
}
std::optional<int> axis_of(Layout l) {
  if (l == Layout::replicated) return std::nullopt;
  return l == Layout::axis0 ? 0 : 1;
}

const std::vector<DType> kDtypes = {DType::float32, DType::float16, DType::int32};

// A realized tensor of logical value a on n devices laid out as l (one device for n == 1: no tuple).
Tensor placed(const Arr& a, DType dt, int n, Layout l) {
  Tensor t = make_tensor(a, dt);
  if (n > 1) t = t.shard(ringrt::cpu_devices(n), axis_of(l));
  t.realize();
  return t;
}

// Logical values of step s: small integers, different for every step and element.
Arr values(const Shape& s, int step) {
  return make_arr(s, [step](int64_t i) { return static_cast<double>((i * 7 + step * 3) % 23 - 11); });
}

// Device d's expected local value of logical value a.
Arr local_of(const Arr& a, int n, Layout l, int d) {
  std::optional<int> axis = axis_of(l);
  if (n == 1 || !axis) return a;
  int64_t len = a.shape[static_cast<size_t>(*axis)] / n;
  return slice(a, *axis, d * len, (d + 1) * len);
}

void expect_shards(const Tensor& t, const std::vector<Arr>& want) {
  std::vector<Tensor> shards = t.shards();
  BOOST_TEST_REQUIRE(shards.size() == want.size());
  for (size_t d = 0; d < shards.size(); ++d) {
    BOOST_TEST_CONTEXT("device " << d) { expect_equal(read(shards[d]), want[d]); }
  }
}

struct Sample {
  int ndev;
  Layout layout;
  DType dtype;
};
std::ostream& operator<<(std::ostream& os, const Sample& s) {
  return os << s.ndev << " devices, " << layout_name(s.layout) << ", " << dname(s.dtype);
}
std::vector<Sample> samples() {
  std::vector<Sample> out;
  size_t k = 0;
  for (int n = 1; n <= 4; ++n)
    for (Layout l : {Layout::axis0, Layout::axis1, Layout::replicated}) {
      if (n == 1 && l != Layout::axis0) continue;  // one device: no layout
      out.push_back({n, l, kDtypes[k++ % kDtypes.size()]});
    }
  return out;
}

BOOST_DATA_TEST_CASE(write_whole_tensor, bdata::make(samples()), sample) {
  int n = sample.ndev;
  Shape shape{2 * n, 3 * n};
  Arr old = values(shape, 0), fresh = values(shape, 1), later = values(shape, 2);
  Tensor x = placed(old, sample.dtype, n, sample.layout);
  Tensor reader = x * 2 + 1;  // lazy: built on the old contents, not realized before the write
  x.write(to_buffer(fresh, sample.dtype));
  expect_equal(read(x), fresh);
  std::vector<Arr> want;
  for (int d = 0; d < n; ++d) want.push_back(local_of(fresh, n, sample.layout, d));
  expect_shards(x, want);
  expect_equal(read(reader), map2(old, old, [](double a, double) { return a * 2 + 1; }));
  expect_equal(read(x + 1), map2(fresh, fresh, [](double a, double) { return a + 1; }));
  // a second write: no graph node, no program, the same memory
  size_t nodes = UOpGraph::global().size(), built = Tensor::programs_built();
  auto storage = ringrt::TensorAccess::state(x)->storages;
  x.write(to_buffer(later, sample.dtype));
  BOOST_TEST(UOpGraph::global().size() == nodes);
  BOOST_TEST(Tensor::programs_built() == built);
  BOOST_TEST((ringrt::TensorAccess::state(x)->storages == storage));
  expect_equal(read(x), later);
}

BOOST_DATA_TEST_CASE(write_shards_per_device, bdata::make(samples()), sample) {
  int n = sample.ndev;
  Shape shape{2 * n, 3 * n};
  Arr old = values(shape, 0);
  Tensor x = placed(old, sample.dtype, n, sample.layout);
  Tensor reader = x.reduce(ReduceOp::max, {1});  // lazy
  Shape local = local_of(old, n, sample.layout, 0).shape;
  std::vector<Arr> want;
  std::vector<HostBuffer> host;
  for (int d = 0; d < n; ++d) {
    // a replicated tensor may take different values per device (gradients before their allreduce)
    want.push_back(values(local, 5 + d));
    host.push_back(to_buffer(want.back(), sample.dtype));
  }
  size_t built = Tensor::programs_built();
  x.write_shards(host);
  expect_shards(x, want);
  expect_equal(read(reader), reduce(old, Op::max, {1}));
  BOOST_TEST(Tensor::programs_built() >= built);
  if (sample.layout != Layout::replicated || n == 1) {  // the logical value is the shards side by side
    Arr all = make_arr(shape, [](int64_t) { return 0.0; });
    for (int d = 0; d < n; ++d) {
      std::optional<int> axis = axis_of(sample.layout);
      int ax = n == 1 ? 0 : *axis;
      int64_t len = local[static_cast<size_t>(ax)];
      Region r = whole(shape);
      r[static_cast<size_t>(ax)] = {d * len, (d + 1) * len};
      all = write(all, r, want[static_cast<size_t>(d)]);
    }
    expect_equal(read(x), all);
    expect_equal(read(x.sum({0})), reduce(all, Op::sum, {0}));
  }
  size_t nodes = UOpGraph::global().size();
  x.write_shards(host);
  BOOST_TEST(UOpGraph::global().size() == nodes);
}

// A contiguous() that borrowed the memory (a range of the buffer, no kernel) keeps its value when the
// buffer is written; writing the borrower leaves the lender unchanged.
BOOST_AUTO_TEST_CASE(borrowed_contiguous_keeps_its_value) {
  Shape shape{6, 4};
  Arr old = values(shape, 0), fresh = values(shape, 1);
  Tensor x = placed(old, DType::float32, 1, Layout::axis0);
  Tensor rows = x.shrink({{2, 4}, {0, 4}}).contiguous();
  rows.realize();
  BOOST_TEST(ringrt::TensorAccess::state(rows)->borrowed);
  x.write(to_buffer(fresh, DType::float32));
  expect_equal(read(rows), slice(old, 0, 2, 4));
  expect_equal(read(x), fresh);
  Tensor view = x.shrink({{0, 2}, {0, 4}}).contiguous();
  view.realize();
  Arr mine = values({2, 4}, 9);
  view.write(to_buffer(mine, DType::float32));  // gets memory of its own first
  expect_equal(read(view), mine);
  expect_equal(read(x), fresh);
}

// A pending assign() runs before the write (which then replaces its result); a lazy tensor becomes
// memory of its own first.
BOOST_AUTO_TEST_CASE(pending_assign_and_lazy_tensor) {
  auto devs = ringrt::cpu_devices(2);
  Shape shape{4, 3};
  Arr old = values(shape, 0), fresh = values(shape, 1);
  Tensor x = placed(old, DType::int32, 2, Layout::axis0);
  Tensor before = x + 0;  // lazy: the old value
  x.assign(x * 3);
  Tensor between = x - 1;  // lazy: the assigned value
  x.write(to_buffer(fresh, DType::int32));
  expect_equal(read(before), old);
  expect_equal(read(between), map2(old, old, [](double a, double) { return a * 3 - 1; }));
  expect_equal(read(x), fresh);
  Tensor lazy = Tensor::full(shape, 2.0, DType::float32).shard(devs, 0);
  lazy.write(to_buffer(fresh, DType::float32));
  expect_equal(read(lazy), fresh);
  expect_equal(read(lazy * 2), map2(fresh, fresh, [](double a, double) { return a * 2; }));
}

BOOST_AUTO_TEST_CASE(bad_input_is_refused) {
  auto devs = ringrt::cpu_devices(3);
  Arr old = values({6, 2}, 0);
  Tensor x = placed(old, DType::float32, 3, Layout::axis0);
  BOOST_CHECK_EXCEPTION(x.write(to_buffer(values({2, 6}, 1), DType::float32)), ShapeError,
                        message_has({"write", "(2, 6)", "(6, 2)"}));
  BOOST_CHECK_EXCEPTION(x.write(to_buffer(old, DType::int32)), ShapeError, message_has({"write", "int32", "float32"}));
  HostBuffer torn = to_buffer(old, DType::float32);
  torn.bytes.pop_back();
  BOOST_CHECK_EXCEPTION(x.write(torn), ShapeError, message_has({"write", "bytes"}));
  std::vector<HostBuffer> two(2, to_buffer(values({2, 2}, 1), DType::float32));
  BOOST_CHECK_EXCEPTION(x.write_shards(two), ShapeError, message_has({"write_shards", "2 host buffers", "3 devices"}));
  std::vector<HostBuffer> wrong(3, to_buffer(values({2, 2}, 1), DType::float32));
  wrong[1] = to_buffer(values({3, 2}, 1), DType::float32);
  BOOST_CHECK_EXCEPTION(x.write_shards(wrong), ShapeError,
                        message_has({"write_shards", "buffer 1", "(3, 2)", "(2, 2)"}));
  std::vector<HostBuffer> typed(3, to_buffer(values({2, 2}, 1), DType::float16));
  BOOST_CHECK_EXCEPTION(x.write_shards(typed), ShapeError, message_has({"write_shards", "float16", "float32"}));
  Tensor view = x.shrink({{0, 6}, {0, 1}});
  BOOST_CHECK_EXCEPTION(view.write(to_buffer(values({6, 1}, 1), DType::float32)), ShapeError,
                        message_has({"write", "shrink", "(6, 1)", "(6, 2)"}));
  Tensor transposed = x.permute({1, 0});  // a lazy view: assign() refuses it too
  BOOST_CHECK_EXCEPTION(transposed.write(to_buffer(values({2, 6}, 1), DType::float32)), ShapeError,
                        message_has({"write", "PERMUTE", "(2, 6)"}));
  BOOST_CHECK_EXCEPTION(Tensor::constant(1.0).write(to_buffer(values({}, 1), DType::float32)), DeviceError,
                        message_has({"write", "no device"}));
  BOOST_CHECK_EXCEPTION(x.allreduce_in_place(static_cast<ReduceOp>(7)), ShapeError,
                        message_has({"allreduce_in_place", "7", "not a ReduceOp"}));
  expect_equal(read(x), old);  // nothing was written
}

}  // namespace tensor_write

BOOST_AUTO_TEST_SUITE_END()
