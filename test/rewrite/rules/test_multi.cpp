// Sharding rules: every op of a sharded chain gives what the interpreter gives for the same chain unsharded, and
// every impossible request is a ShapeError naming the op. Reference: multi.py multi_pm.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <functional>

#include "codegen/kernel.hpp"
#include "core/errors.hpp"
#include "rewrite/interpreter.hpp"
#include "rewrite/lower/lower.hpp"
#include "rewrite/rules/multi.hpp"
#include "runtime/api/internal.hpp"

BOOST_AUTO_TEST_SUITE(test_multi)

namespace bdata = boost::unit_test::data;
using namespace ringrt;

namespace {

using Chain = std::function<Tensor(const Tensor&)>;

// x = arange(prod(shape)) as int32 in shape; f applied sharded on axis over ndev devices, run on the cpu
// devices, equals the reference interpreter's value of f applied to the unsharded tensor (Tensor::interpret_shards:
// evaluated on the host, nothing compiled or run, no sharding rule), in shape and in every value. (Compared with
// ringrt's own unsharded run, a bug both paths share would pass.)
void check_chain(const Shape& shape, int axis, int ndev, const Chain& f, std::optional<int> want_axis = {}) {
  Tensor x = Tensor::arange(ringrt::prod(shape), DType::int32).reshape(shape);
  Tensor lazy = f(x);
  std::vector<HostBuffer> oracle = lazy.interpret_shards();
  BOOST_TEST_REQUIRE(oracle.size() == 1u);
  std::vector<int> want;
  for (int64_t i = 0; i < oracle[0].numel(); ++i) want.push_back(static_cast<int>(oracle[0].get_int(i)));
  for (bool realize_first : {false, true}) {
    Tensor xs = x.shard(cpu_devices(ndev), axis);
    if (realize_first) xs.realize();
    Tensor got = f(xs);
    BOOST_TEST((got.shape() == lazy.shape()));
    if (want_axis) BOOST_TEST((got.shard_axis() == want_axis));
    BOOST_TEST(got.to_vector<int>() == want, boost::test_tools::per_element());
  }
}

template <class F>
void check_shape_error(const Shape& shape, int axis, int ndev, F f, const std::string& op) {
  Tensor xs = Tensor::arange(ringrt::prod(shape), DType::int32).reshape(shape).shard(cpu_devices(ndev), axis);
  BOOST_CHECK_EXCEPTION(f(xs).realize(), ShapeError, [&](const ShapeError& e) {
    std::string m = e.what();
    BOOST_TEST_MESSAGE(m);
    return m.find(op) != std::string::npos;
  });
}

const std::vector<int> kDevices{2, 3, 4};

}  // namespace

BOOST_DATA_TEST_CASE(alu_same_axis_and_scalars, bdata::make(kDevices), n) {
  check_chain(
      {12, 5}, 0, n, [](const Tensor& t) { return (t * 3.0 + 1.0) - t; }, 0);
  check_chain(
      {12, 5}, 0, n, [](const Tensor& t) { return t.maximum(t * -1.0 + 20.0); }, 0);
}

BOOST_DATA_TEST_CASE(alu_with_replicated_operand, bdata::make(kDevices), n) {
  // the replicated operand is sharded on the fly
  Tensor b = Tensor::arange(60, DType::int32).reshape({12, 5}) * 10.0;
  check_chain(
      {12, 5}, 0, n,
      [&](const Tensor& t) { return uop_of(t).device().tuple() ? t + b.shard(t.devices(), std::nullopt) : t + b; }, 0);
}

BOOST_DATA_TEST_CASE(alu_with_other_axis_operand, bdata::make(kDevices), n) {
  // axis mismatch: the operand is unsharded, allreduced and sharded on the root's axis
  Tensor b = Tensor::arange(12 * 12, DType::int32).reshape({12, 12});
  check_chain({12, 12}, 0, n,
              [&](const Tensor& t) { return uop_of(t).device().tuple() ? t + b.shard(t.devices(), 1) : t + b; });
}

BOOST_DATA_TEST_CASE(reduce_keeps_or_allreduces, bdata::make(kDevices), n) {
  check_chain(
      {6, 4, 12}, 2, n, [](const Tensor& t) { return t.sum({1}); }, 1);       // other axis: stays sharded
  check_chain({6, 4, 12}, 2, n, [](const Tensor& t) { return t.max({2}); });  // sharded axis: allreduce
  check_chain({6, 4, 12}, 2, n, [](const Tensor& t) { return t.sum({0, 2}); });
  check_chain({12, 4, 6}, 0, n, [](const Tensor& t) { return t.min({}); });
}

BOOST_DATA_TEST_CASE(movement_ops, bdata::make(kDevices), n) {
  check_chain(
      {2, 12, 2}, 1, n,
      [](const Tensor& t) {
        return t.reshape({2, 12, 2, 1});
      },
      1);
  check_chain(
      {2, 12, 2}, 1, n,
      [](const Tensor& t) {
        return t.reshape({1, 2, 12, 2});
      },
      2);
  check_chain(
      {2, 12, 1}, 1, n,
      [](const Tensor& t) {
        return t.expand({2, 12, 3});
      },
      1);
  check_chain(
      {2, 12, 2}, 1, n,
      [](const Tensor& t) {
        return t.pad({{1, 2}, {0, 0}, {3, 0}});
      },
      1);
  check_chain(
      {2, 12, 2}, 1, n,
      [](const Tensor& t) {
        return t.shrink({{1, 2}, {0, 12}, {0, 1}});
      },
      1);
  check_chain(
      {2, 12, 2}, 1, n,
      [](const Tensor& t) {
        return t.permute({2, 0, 1});
      },
      2);
  check_chain(
      {2, 12, 2}, 1, n,
      [](const Tensor& t) {
        return t.flip({0, 2});
      },
      1);
  check_chain(
      {2, 12, 2}, 1, n, [](const Tensor& t) { return t.cast(DType::float32).contiguous().cast(DType::int32); }, 1);
}

BOOST_DATA_TEST_CASE(shrink_to_one_shard_is_copied_everywhere, bdata::make(kDevices), n) {
  int64_t rows = 2 * n;
  check_chain({rows, 4}, 0, n, [&](const Tensor& t) { return t.shrink({{2, 4}, {0, 4}}); });
  check_chain({rows, 4}, 0, n, [&](const Tensor& t) { return t.shrink({{rows - 2, rows}, {1, 3}}) * 2.0; });
}

BOOST_DATA_TEST_CASE(copy_to_one_device, bdata::make(kDevices), n) {
  cpu_devices(n + 2);  // a device outside the tuple exists too
  check_chain({4 * n, 3}, 0, n, [](const Tensor& t) { return t.to("CPU:1"); });
  check_chain({3, 4 * n}, 1, n, [&](const Tensor& t) { return t.to("CPU:" + std::to_string(n + 1)); });
}

BOOST_AUTO_TEST_CASE(shape_errors) {
  check_shape_error(
      {4, 4}, 1, 2, [](const Tensor& t) { return t.reshape({16}); }, "RESHAPE");
  check_shape_error(
      {4, 1}, 0, 2,
      [](const Tensor& t) {
        return t.pad({{1, 0}, {0, 0}});
      },
      "PAD");
  check_shape_error(
      {4, 2}, 0, 2, [](const Tensor& t) { return t.flip({0}); }, "FLIP");
  check_shape_error(
      {8, 2}, 0, 4,
      [](const Tensor& t) {
        return t.shrink({{0, 3}, {0, 2}});
      },
      "SHRINK");
  BOOST_CHECK_EXCEPTION(Tensor::arange(6, DType::int32).shard(cpu_devices(4), 0), ShapeError, [](const ShapeError& e) {
    return std::string(e.what()).find("length 6") != std::string::npos;
  });
  Tensor a = Tensor::arange(4, DType::int32).shard(cpu_devices(2), 0);
  BOOST_CHECK_EXCEPTION(a + Tensor::arange(4, DType::int32), ShapeError, [](const ShapeError& e) {
    std::string m = e.what();
    return m.find("CPU:0") != std::string::npos && m.find("CPU:1") != std::string::npos;
  });
}

// CALL of a custom kernel: with a sharded first argument it runs on the shards (every other sharded
// argument passes its shards too) and stays sharded on that axis; a void CALL takes the shards of its
// sharded arguments; AFTER(sharded, CALL) orders each shard. ringrt itself has no custom kernels, so
// running one is a CompileError naming it. Reference: multi.py multi_pm (CALL, AFTER rules).
BOOST_DATA_TEST_CASE(call_passes_through, bdata::make(kDevices), n) {
  auto devs = cpu_devices(n);
  Tensor x = Tensor::arange(4 * n * 3, DType::float32).reshape({4 * n, 3}).shard(devs, 0);
  Tensor y = Tensor::arange(4 * n * 3, DType::float32).reshape({4 * n, 3}).shard(devs, 0) * 2.0;
  Shape local{4, 3};
  AllreduceSettings settings;

  UOp value = call("my_gelu", {uop_of(x), uop_of(y)}, DType::float32);
  BOOST_TEST(value.shape() == (Shape{4 * n, 3}), boost::test_tools::per_element());
  Lowered low = lower_multi({value}, settings);
  const UOp& r = low.roots.at(0);
  BOOST_TEST(r.op() == Ops::CALL);
  BOOST_TEST((low.axes.at(0) == std::optional<int>(0)));
  BOOST_TEST(r.shape() == local, boost::test_tools::per_element());
  BOOST_TEST(r.device().count() == static_cast<size_t>(n));
  BOOST_REQUIRE_EQUAL(r.src().size(), 2u);
  for (const UOp& s : r.src()) {
    BOOST_TEST(s.op() != Ops::MULTI);
    BOOST_TEST(s.shape() == local, boost::test_tools::per_element());
  }
  BOOST_TEST(std::get<std::string>(r.arg()) == "my_gelu");

  // void: first argument unsharded (a device-less constant), the sharded one passes its shards
  UOp effect = call("fill_halo", {const_uop(DType::int32, 0), uop_of(x)}, DType::void_);
  Lowered low2 = lower_multi({effect}, settings);
  const UOp& e = low2.roots.at(0);
  BOOST_TEST(e.op() == Ops::CALL);
  BOOST_TEST(!low2.axes.at(0).has_value());
  BOOST_TEST(e.src(1).op() != Ops::MULTI);
  BOOST_TEST(e.src(1).shape() == local, boost::test_tools::per_element());

  // AFTER(sharded, void CALL on it): the ordering holds per shard and the result stays sharded
  UOp after = make_uop(Ops::AFTER, DType::float32, {uop_of(x), call("touch", {uop_of(x)}, DType::void_)});
  Lowered low3 = lower_multi({after}, settings);
  BOOST_TEST(low3.roots.at(0).op() == Ops::AFTER);
  BOOST_TEST((low3.axes.at(0) == std::optional<int>(0)));
  BOOST_TEST(low3.roots.at(0).shape() == local, boost::test_tools::per_element());
  BOOST_TEST(low3.roots.at(0).src(1).op() == Ops::CALL);

  // not runnable here: a CompileError that names the kernel, from the interpreter and from codegen
  auto names_it = [](const CompileError& err) { return std::string(err.what()).find("my_gelu") != std::string::npos; };
  UOp runnable_args = call("my_gelu", {uop_of(Tensor::full({3}, 1.0))}, DType::float32);
  BOOST_CHECK_EXCEPTION(Interpreter().evaluate(runnable_args), CompileError, names_it);
  BOOST_CHECK_EXCEPTION(codegen::lower_kernel(runnable_args), CompileError, names_it);
  BOOST_CHECK_EXCEPTION(call("k", {}, DType::float32), ShapeError, [](const ShapeError& err) {
    return std::string(err.what()).find("CALL of 'k'") != std::string::npos;
  });
}

BOOST_AUTO_TEST_SUITE_END()
