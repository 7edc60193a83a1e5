// UOps, part two: what each op infers (dtype, shape, device, shard axis) and the ShapeErrors of the
// builders (rewrite/uop.cpp).
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

BOOST_AUTO_TEST_SUITE(test_uop_inference)

namespace bdata = boost::unit_test::data;
using namespace ringrt;
using ringrt::test::message_has;
using namespace ringrt::test;  // NOLINT: the fixture

// ------------------------------------------------------------------------------------------------
BOOST_FIXTURE_TEST_SUITE(inference, UOpFixture)

BOOST_AUTO_TEST_CASE(sink_op) {
  UOp s = sink({buf({4}), buf({2, 2})});
  BOOST_TEST(s.op() == Ops::SINK);
  BOOST_TEST(s.dtype() == DType::void_);
  BOOST_TEST(s.shape().empty());
  BOOST_TEST(s.device().none());
}

BOOST_AUTO_TEST_CASE(device_op) {
  UOp one = device_uop(DeviceSpec("HIP:3"), &g);
  BOOST_TEST(one.device().single());
  BOOST_TEST(one.device().name() == "HIP:3");
  BOOST_TEST(one.device().count() == 1u);
  UOp two = device_uop(DeviceSpec(cpus(2)), &g);
  BOOST_TEST(two.device().tuple());
  BOOST_TEST(two.device().count() == 2u);
  BOOST_TEST(two.device().names() == cpus(2));
  BOOST_TEST(two.device().to_string() == "(CPU:0, CPU:1)");
  BOOST_CHECK_EXCEPTION(make_uop(Ops::DEVICE, DType::void_, {}, DeviceTuple{}, &g), ShapeError,
                        message_has({"DEVICE"}));
  BOOST_CHECK_EXCEPTION(make_uop(Ops::DEVICE, DType::void_, {}, int64_t{0}, &g), ShapeError, message_has({"DEVICE"}));
  BOOST_CHECK_THROW(one.device().names(), InternalError);
  BOOST_CHECK_THROW(two.device().name(), InternalError);
}

BOOST_AUTO_TEST_CASE(buffer_op) {
  UOp b = new_buffer(DeviceSpec("CPU:1"), 12, DType::int8, &g);
  BOOST_TEST(b.op() == Ops::BUFFER);
  BOOST_TEST(b.shape() == Shape{12});
  BOOST_TEST(b.dtype() == DType::int8);
  BOOST_TEST(b.device().name() == "CPU:1");
  BOOST_TEST(!b.logical());
  BOOST_TEST(axis_of(b) == -1);
  UOp t = new_buffer(DeviceSpec(cpus(3)), 5, DType::float32, &g);
  BOOST_TEST(t.device().names() == cpus(3));
  BOOST_TEST(t.shape() == Shape{5});  // the local shape: 5 elements on each device
  UOp c = cst(1);
  BOOST_CHECK_EXCEPTION(make_uop(Ops::BUFFER, DType::float32, {c}, BufferArg{100, 4}, &g), ShapeError,
                        message_has({"BUFFER", "DEVICE"}));
  BOOST_CHECK_EXCEPTION(
      make_uop(Ops::BUFFER, DType::float32, {device_uop(DeviceSpec("CPU:0"), &g)}, BufferArg{100, -1}, &g), ShapeError,
      message_has({"BUFFER", "-1"}));
}

BOOST_AUTO_TEST_CASE(const_and_define_var) {
  UOp c = cst(2.5);
  BOOST_TEST(c.shape().empty());
  BOOST_TEST(c.device().none());
  BOOST_TEST(c.arg_float() == 2.5);
  UOp i = cst(-7, DType::int32);
  BOOST_TEST(i.arg_int() == -7);
  BOOST_TEST(i.arg_float() == -7.0);
  UOp v = device_num(4, &g);
  BOOST_TEST(v.op() == Ops::DEFINE_VAR);
  BOOST_TEST(v.dtype() == DType::int32);
  BOOST_TEST(v.shape().empty());
  BOOST_TEST(v.device().none());
  BOOST_TEST((std::get<VarArg>(v.arg()) == VarArg{"_device_num", 0, 3}));
  BOOST_CHECK_EXCEPTION(make_uop(Ops::CONST, DType::float32, {}, std::string("x"), &g), ShapeError,
                        message_has({"CONST"}));
  BOOST_CHECK_EXCEPTION(make_uop(Ops::DEFINE_VAR, DType::int32, {}, int64_t{1}, &g), ShapeError,
                        message_has({"DEFINE_VAR"}));
}

BOOST_AUTO_TEST_CASE(const_like_broadcasts) {
  UOp a = buf({2, 3}, DType::int32);
  UOp c = a.const_like(5);
  BOOST_TEST(c.shape() == (Shape{2, 3}));
  BOOST_TEST(c.dtype() == DType::int32);
  BOOST_TEST(c.op() == Ops::EXPAND);
  BOOST_TEST(c.src(0).op() == Ops::RESHAPE);
  BOOST_TEST(c.src(0).src(0) == cst(5, DType::int32));
  BOOST_TEST(cst(1).const_like(3) == cst(3));  // a scalar stays a CONST
}

BOOST_AUTO_TEST_CASE(contiguous_detach_cast_bitcast) {
  UOp a = tbuf({2, 4}, 2).multi(1);
  for (UOp u : {a.contiguous(), a.detach(), a.cast(DType::float16), a.bitcast(DType::int32)}) {
    BOOST_TEST_CONTEXT(u.to_string()) {
      BOOST_TEST(u.shape() == (Shape{2, 8}));
      BOOST_TEST(u.device().names() == cpus(2));
      BOOST_TEST(axis_of(u) == 1);
      BOOST_TEST(u.logical());
    }
  }
  BOOST_TEST(a.cast(DType::float16).dtype() == DType::float16);
  BOOST_TEST(a.bitcast(DType::int32).dtype() == DType::int32);
  BOOST_CHECK_EXCEPTION(a.bitcast(DType::float16), ShapeError,
                        message_has({"BITCAST", "float32", "float16", "(2, 8)"}));
  BOOST_CHECK_EXCEPTION(buf({3}, DType::int8).bitcast(DType::int32), ShapeError, message_has({"BITCAST", "(3,)"}));
}

BOOST_AUTO_TEST_CASE(copy_op) {
  UOp a = buf({2, 2});
  UOp c = a.copy_to_device(DeviceSpec("CPU:3"));
  BOOST_TEST(c.op() == Ops::COPY);
  BOOST_TEST(c.shape() == (Shape{2, 2}));
  BOOST_TEST(c.device().name() == "CPU:3");
  UOp b = a.copy_to_device(DeviceSpec(cpus(2)));  // broadcast
  BOOST_TEST(b.device().names() == cpus(2));
  UOp t = tbuf({4}, 3);
  UOp one = t.copy_to_device(DeviceSpec("CPU:7"), 2);
  BOOST_TEST(one.device().name() == "CPU:7");
  BOOST_TEST(one.arg_int() == 2);
  BOOST_CHECK_EXCEPTION(t.copy_to_device(DeviceSpec("CPU:7"), 3), ShapeError, message_has({"COPY", "3", "(4,)"}));
  BOOST_CHECK_EXCEPTION(a.copy_to_device(DeviceSpec("CPU:7"), 0), ShapeError, message_has({"COPY", "(2, 2)"}));
  BOOST_CHECK_EXCEPTION(make_uop(Ops::COPY, DType::float32, {a, a}, {}, &g), ShapeError,
                        message_has({"COPY", "DEVICE"}));
}

BOOST_AUTO_TEST_CASE(store_after_assign) {
  UOp dst = buf({4}), val = buf({4});
  UOp st = dst.store(val);
  BOOST_TEST(st.dtype() == DType::void_);
  BOOST_TEST(st.shape().empty());
  BOOST_TEST(st.device().name() == "CPU:0");
  UOp af = dst.after({st});
  BOOST_TEST(af.shape() == Shape{4});
  BOOST_TEST(af.dtype() == DType::float32);
  BOOST_TEST(af.device().name() == "CPU:0");
  UOp as = dst.assign(val);
  BOOST_TEST(as.shape() == Shape{4});
  BOOST_TEST(as.device().name() == "CPU:0");
  BOOST_CHECK_EXCEPTION(dst.store(buf({2, 2})), ShapeError, message_has({"STORE", "(4,)", "(2, 2)"}));
  BOOST_CHECK_EXCEPTION(dst.assign(buf({5})), ShapeError, message_has({"ASSIGN", "(4,)", "(5,)"}));
  // a store into one device of a scratch buffer on a tuple
  UOp scratch = new_buffer(DeviceSpec(cpus(2)), 4, DType::float32, &g);
  UOp st1 = scratch.mselect(1).store(val.copy_to_device(DeviceSpec("CPU:1")));
  BOOST_TEST(st1.device().name() == "CPU:1");
  BOOST_TEST(scratch.after({st1}).device().names() == cpus(2));
}

BOOST_AUTO_TEST_CASE(multi_op) {
  UOp local = tbuf({2, 3}, 4);
  UOp m0 = local.multi(0), m1 = local.multi(1), mr = local.multi(std::nullopt), mneg = local.multi(-1);
  BOOST_TEST(m0.shape() == (Shape{8, 3}));
  BOOST_TEST(axis_of(m0) == 0);
  BOOST_TEST(m1.shape() == (Shape{2, 12}));
  BOOST_TEST(axis_of(m1) == 1);
  BOOST_TEST(mr.shape() == (Shape{2, 3}));
  BOOST_TEST(axis_of(mr) == -1);
  BOOST_TEST(axis_of(mneg) == 1);  // -1 is the last axis
  BOOST_TEST(mneg.shape() == (Shape{2, 12}));
  for (UOp m : {m0, m1, mr}) {
    BOOST_TEST(m.logical());
    BOOST_TEST(m.device().names() == cpus(4));
  }
  BOOST_TEST(!local.logical());
  BOOST_TEST((m0 + m0).logical());
  BOOST_CHECK_EXCEPTION(buf({2, 3}).multi(0), ShapeError, message_has({"MULTI", "(2, 3)"}));
  BOOST_CHECK_EXCEPTION(local.multi(2), ShapeError, message_has({"MULTI", "(2, 3)", "axis 2"}));
}

BOOST_AUTO_TEST_CASE(mselect_and_mstack_ops) {
  UOp t = tbuf({3}, 3);
  UOp s = t.mselect(2);
  BOOST_TEST(s.device().name() == "CPU:2");
  BOOST_TEST(s.shape() == Shape{3});
  BOOST_CHECK_EXCEPTION(t.mselect(3), ShapeError, message_has({"MSELECT", "3", "(3,)"}));
  BOOST_CHECK_EXCEPTION(t.mselect(-1), ShapeError, message_has({"MSELECT", "(3,)"}));
  BOOST_CHECK_EXCEPTION(buf({3}).mselect(0), ShapeError, message_has({"MSELECT", "(3,)"}));
  UOp st = mstack({buf({3}, DType::float32, "CPU:4"), buf({3}, DType::float32, "CPU:2")});
  BOOST_TEST(st.device().names() == (DeviceTuple{"CPU:4", "CPU:2"}));
  BOOST_TEST(st.shape() == Shape{3});
  BOOST_TEST(st.mselect(0).device().name() == "CPU:4");
  BOOST_CHECK_EXCEPTION(mstack({t, buf({3})}), ShapeError, message_has({"MSTACK", "(3,)"}));
  BOOST_CHECK_EXCEPTION(mstack({buf({3}), buf({4}, DType::float32, "CPU:1")}), ShapeError,
                        message_has({"MSTACK", "(3,)", "(4,)"}));
}

BOOST_AUTO_TEST_CASE(allreduce_op) {
  UOp t = tbuf({2, 2}, 4);
  UOp all = t.allreduce(Ops::ADD, DeviceSpec(cpus(4)));
  BOOST_TEST(all.shape() == (Shape{2, 2}));
  BOOST_TEST(all.device().names() == cpus(4));
  UOp one = t.allreduce(Ops::MAX, DeviceSpec("CPU:0"));
  BOOST_TEST(one.device().name() == "CPU:0");
  BOOST_TEST(one.to_string().find("MAX") != std::string::npos);
  BOOST_CHECK_EXCEPTION(t.allreduce(Ops::SUB, DeviceSpec("CPU:0")), ShapeError, message_has({"ALLREDUCE"}));
}

BOOST_AUTO_TEST_CASE(movement_shapes) {
  UOp a = buf({2, 3, 4});
  BOOST_TEST(a.reshape({6, 4}).shape() == (Shape{6, 4}));
  BOOST_TEST(a.reshape({24}).shape() == Shape{24});
  BOOST_TEST(a.reshape({1, 2, 1, 12}).shape() == (Shape{1, 2, 1, 12}));
  BOOST_TEST(buf({1, 3}).expand({5, 3}).shape() == (Shape{5, 3}));
  BOOST_TEST(a.permute({2, 0, 1}).shape() == (Shape{4, 2, 3}));
  BOOST_TEST(a.pad(spans({{1, 0}, {0, 2}, {3, 3}})).shape() == (Shape{3, 5, 10}));
  BOOST_TEST(a.shrink(spans({{0, 1}, {1, 3}, {2, 2}})).shape() == (Shape{1, 2, 0}));
  BOOST_TEST(a.flip({1, 0, 1}).shape() == (Shape{2, 3, 4}));
  for (UOp u : {a.reshape({6, 4}), a.permute({2, 0, 1}), a.flip({0, 0, 1})}) BOOST_TEST(u.device().name() == "CPU:0");
  BOOST_TEST(cst(1).reshape({1, 1}).device().none());
}

BOOST_AUTO_TEST_CASE(device_dependent_spans) {
  UOp t = tbuf({6, 2}, 3);  // the same (6, 2) on each of 3 devices
  UOp s = t.shard_local(0);
  BOOST_TEST(s.op() == Ops::SHRINK);
  BOOST_TEST(s.shape() == (Shape{2, 2}));
  BOOST_TEST((s.arg_spans()[0] == std::pair{Affine{0, 2}, Affine{2, 2}}));
  UOp u = s.unshard_local(0);
  BOOST_TEST(u.op() == Ops::PAD);
  BOOST_TEST(u.shape() == (Shape{6, 2}));
  BOOST_TEST((u.arg_spans()[0] == std::pair{Affine{0, 2}, Affine{4, -2}}));
  // the shard of the last device must still be in range
  BOOST_CHECK_EXCEPTION(t.shrink({{Affine{0, 3}, Affine{3, 3}}, {Affine{}, Affine{2, 0}}}), ShapeError,
                        message_has({"SHRINK", "(6, 2)", "axis 0"}));
  // a result size that depends on the device
  BOOST_CHECK_EXCEPTION(t.shrink({{Affine{0, 1}, Affine{2, 2}}, {Affine{}, Affine{2, 0}}}), ShapeError,
                        message_has({"SHRINK", "(6, 2)", "axis 0"}));
  BOOST_CHECK_EXCEPTION(t.pad({{Affine{0, 1}, Affine{0, 0}}, {Affine{}, Affine{}}}), ShapeError,
                        message_has({"PAD", "(6, 2)", "axis 0"}));
}

BOOST_AUTO_TEST_CASE(shard_local_needs_an_even_split) {
  BOOST_CHECK_EXCEPTION(tbuf({5}, 2).shard_local(0), ShapeError, message_has({"axis 0", "(5,)", "2 devices"}));
  BOOST_CHECK_EXCEPTION(tbuf({4, 3}, 2).shard_local(1), ShapeError, message_has({"axis 1", "(4, 3)", "2 devices"}));
  BOOST_CHECK_EXCEPTION(tbuf({4}, 2).shard_local(1), ShapeError, message_has({"axis 1", "(4,)"}));
}

BOOST_AUTO_TEST_CASE(reduce_keeps_dims) {
  UOp a = buf({2, 3, 4});
  BOOST_TEST(a.r(Ops::ADD, {1}).shape() == (Shape{2, 1, 4}));
  BOOST_TEST(a.r(Ops::MAX, {0, 2}).shape() == (Shape{1, 3, 1}));
  BOOST_TEST(a.r(Ops::MIN, {2, 0, 2}).shape() == (Shape{1, 3, 1}));
  BOOST_TEST(a.r(Ops::MIN, {2, 0, 2}) == a.r(Ops::MIN, {0, 2}));  // axes sorted and deduplicated
  BOOST_TEST(a.r(Ops::MUL, {}).shape() == (Shape{2, 3, 4}));
  BOOST_TEST(a.r(Ops::MUL, {0}).arg_reduce().op == Ops::MUL);
}

BOOST_AUTO_TEST_CASE(alu_op) {
  UOp a = buf({2, 2}), b = buf({2, 2}), i = buf({2, 2}, DType::int32);
  BOOST_TEST(a.alu(Ops::SQRT).shape() == (Shape{2, 2}));
  BOOST_TEST((a + b).dtype() == DType::float32);
  BOOST_TEST((a + b).device().name() == "CPU:0");
  for (Ops op : {Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ}) BOOST_TEST(a.alu(op, {b}).dtype() == DType::bool_);
  UOp cond = a.alu(Ops::CMPLT, {b});
  BOOST_TEST(cond.where(i, i).dtype() == DType::int32);
  BOOST_TEST(cond.where(a, b).shape() == (Shape{2, 2}));
  // a device-less constant joins any device
  UOp c = a.const_like(1);
  BOOST_TEST(c.device().none());
  BOOST_TEST((c + a).device().name() == "CPU:0");
  UOp t = tbuf({2, 2}, 2);
  BOOST_TEST((t * t.const_like(2)).device().names() == cpus(2));
  UOp dn = device_num(2, &g).reshape({1, 1}).expand({2, 2});
  BOOST_TEST((dn.cast(DType::float32) + t).device().names() == cpus(2));
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
// Every impossible request is a ShapeError whose message names the op and the shapes (and the axis).
BOOST_FIXTURE_TEST_SUITE(shape_errors, UOpFixture)

BOOST_AUTO_TEST_CASE(reshape_count_mismatch) {
  BOOST_CHECK_EXCEPTION(buf({2, 3}).reshape({4}), ShapeError, message_has({"RESHAPE", "(2, 3)", "(4,)"}));
  BOOST_CHECK_EXCEPTION(buf({2, 3}).reshape({7}), ShapeError, message_has({"RESHAPE", "(2, 3)", "(7,)"}));
  BOOST_CHECK_EXCEPTION(buf({4}).reshape({-2, -2}), ShapeError, message_has({"RESHAPE", "(-2, -2)"}));
}

BOOST_AUTO_TEST_CASE(expand_non_one_axis) {
  BOOST_CHECK_EXCEPTION(buf({2, 3}).expand({4, 3}), ShapeError, message_has({"EXPAND", "(2, 3)", "(4, 3)", "axis 0"}));
  BOOST_CHECK_EXCEPTION(buf({2, 1}).expand({2, 1, 5}), ShapeError, message_has({"EXPAND", "(2, 1)", "(2, 1, 5)"}));
}

BOOST_AUTO_TEST_CASE(bad_permute) {
  UOp a = buf({2, 3});
  BOOST_CHECK_EXCEPTION(a.permute({0, 0}), ShapeError, message_has({"PERMUTE", "(2, 3)", "(0, 0)"}));
  BOOST_CHECK_EXCEPTION(a.permute({0, 2}), ShapeError, message_has({"PERMUTE", "(2, 3)", "(0, 2)"}));
  BOOST_CHECK_EXCEPTION(a.permute({0}), ShapeError, message_has({"PERMUTE", "(2, 3)", "(0,)"}));
  BOOST_CHECK_EXCEPTION(a.permute({1, 0, 2}), ShapeError, message_has({"PERMUTE", "(2, 3)"}));
  BOOST_CHECK_EXCEPTION(a.permute({-1, 0}), ShapeError, message_has({"PERMUTE", "(2, 3)"}));
}

BOOST_AUTO_TEST_CASE(pad_out_of_range) {
  UOp a = buf({2, 3});
  BOOST_CHECK_EXCEPTION(a.pad(spans({{0, 0}, {-1, 0}})), ShapeError, message_has({"PAD", "(2, 3)", "axis 1"}));
  BOOST_CHECK_EXCEPTION(a.pad(spans({{0, -2}, {0, 0}})), ShapeError, message_has({"PAD", "(2, 3)", "axis 0"}));
  BOOST_CHECK_EXCEPTION(a.pad(spans({{1, 1}})), ShapeError, message_has({"PAD", "(2, 3)"}));
}

BOOST_AUTO_TEST_CASE(shrink_out_of_range) {
  UOp a = buf({2, 3});
  BOOST_CHECK_EXCEPTION(a.shrink(spans({{0, 2}, {0, 4}})), ShapeError,
                        message_has({"SHRINK", "(2, 3)", "(0, 4)", "axis 1"}));
  BOOST_CHECK_EXCEPTION(a.shrink(spans({{-1, 1}, {0, 3}})), ShapeError, message_has({"SHRINK", "(2, 3)", "axis 0"}));
  BOOST_CHECK_EXCEPTION(a.shrink(spans({{2, 1}, {0, 3}})), ShapeError, message_has({"SHRINK", "(2, 3)", "axis 0"}));
  BOOST_CHECK_EXCEPTION(a.shrink(spans({{0, 1}})), ShapeError, message_has({"SHRINK", "(2, 3)"}));
}

BOOST_AUTO_TEST_CASE(flip_flag_count) {
  BOOST_CHECK_EXCEPTION(buf({2, 3}).flip({1}), ShapeError, message_has({"FLIP", "(2, 3)"}));
}

BOOST_AUTO_TEST_CASE(reduce_axis_out_of_range) {
  UOp a = buf({2, 3});
  BOOST_CHECK_EXCEPTION(a.r(Ops::ADD, {2}), ShapeError, message_has({"REDUCE_AXIS", "(2, 3)", "axis 2"}));
  BOOST_CHECK_EXCEPTION(a.r(Ops::ADD, {-1}), ShapeError, message_has({"REDUCE_AXIS", "(2, 3)", "axis -1"}));
  BOOST_CHECK_EXCEPTION(a.r(Ops::SUB, {0}), ShapeError, message_has({"REDUCE_AXIS", "SUB", "(2, 3)"}));
}

BOOST_AUTO_TEST_CASE(alu_shape_mismatch) {
  UOp a = buf({2, 3}), b = buf({3, 2});
  BOOST_CHECK_EXCEPTION(a + b, ShapeError, message_has({"ADD", "(2, 3)", "(3, 2)"}));
  BOOST_CHECK_EXCEPTION(a * buf({2, 3, 1}), ShapeError, message_has({"MUL", "(2, 3)", "(2, 3, 1)"}));
  BOOST_CHECK_EXCEPTION(a.alu(Ops::CMPLT, {a}).where(a, b), ShapeError, message_has({"WHERE", "(2, 3)", "(3, 2)"}));
  // a scalar is not broadcast implicitly
  BOOST_CHECK_EXCEPTION(a + cst(1), ShapeError, message_has({"ADD", "(2, 3)", "()"}));
}

BOOST_AUTO_TEST_CASE(alu_operands_on_different_devices) {
  UOp a = buf({4}), b = buf({4}, DType::float32, "CPU:1");
  BOOST_CHECK_EXCEPTION(a * b, ShapeError, message_has({"MUL", "CPU:0", "CPU:1", "(4,)"}));
  UOp t = tbuf({4}, 2);
  BOOST_CHECK_EXCEPTION(t + a, ShapeError, message_has({"ADD", "(CPU:0, CPU:1)", "CPU:0", "(4,)"}));
  BOOST_CHECK_EXCEPTION(a.alu(Ops::CMPLT, {a}).where(a, b), ShapeError, message_has({"WHERE", "CPU:0", "CPU:1"}));
}

BOOST_AUTO_TEST_CASE(alu_dtypes) {
  UOp a = buf({4}), i = buf({4}, DType::int32);
  BOOST_CHECK_EXCEPTION(a + i, ShapeError, message_has({"ADD", "float32", "int32", "(4,)"}));
  BOOST_CHECK_EXCEPTION(a.where(a, a), ShapeError, message_has({"WHERE", "bool", "(4,)"}));
  BOOST_CHECK_EXCEPTION(make_uop(Ops::CMPLT, DType::float32, {a, a}, {}, &g), ShapeError,
                        message_has({"CMPLT", "bool"}));
  BOOST_CHECK_EXCEPTION(make_uop(Ops::ADD, DType::int32, {a, a}, {}, &g), ShapeError, message_has({"ADD", "float32"}));
}

BOOST_AUTO_TEST_CASE(alu_operand_kinds) {
  UOp f = buf({2}), i = buf({2}, DType::int32);
  for (Ops op : {Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT, Ops::RECIP})
    BOOST_CHECK_EXCEPTION(i.alu(op), ShapeError, message_has({std::string(op_name(op)), "int32", "(2,)"}));
  BOOST_CHECK_EXCEPTION(i.alu(Ops::FDIV, {i}), ShapeError, message_has({"FDIV", "int32", "(2,)"}));
  for (Ops op : {Ops::IDIV, Ops::MOD, Ops::AND, Ops::OR, Ops::XOR})
    BOOST_CHECK_EXCEPTION(f.alu(op, {f}), ShapeError, message_has({std::string(op_name(op)), "float32", "(2,)"}));
  BOOST_CHECK_NO_THROW(i.alu(Ops::IDIV, {i}));
  BOOST_CHECK_NO_THROW(f.alu(Ops::FDIV, {f}));
}

BOOST_AUTO_TEST_CASE(alu_source_count) {
  UOp a = buf({4});
  BOOST_CHECK_EXCEPTION(make_uop(Ops::ADD, DType::float32, {a}, {}, &g), ShapeError, message_has({"ADD", "2", "1"}));
  BOOST_CHECK_EXCEPTION(make_uop(Ops::NEG, DType::float32, {a, a}, {}, &g), ShapeError, message_has({"NEG", "1", "2"}));
  BOOST_CHECK_EXCEPTION(make_uop(Ops::WHERE, DType::float32, {a, a}, {}, &g), ShapeError, message_has({"WHERE", "3"}));
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
// The shard axis of logical (MULTI) nodes (reference: tinygrad UOp.axis; shared/cases C07, C08).
BOOST_FIXTURE_TEST_SUITE(shard_axis, UOpFixture)

struct ReshapeCase {
  Shape to;
  int axis;  // -1: ShapeError
};
std::ostream& operator<<(std::ostream& os, const ReshapeCase& c) { return os << shape_str(c.to) << "->" << c.axis; }

// 3 devices, arange(24) as (2, 6, 2) sharded on axis 1 (each device holds (2, 2, 2)).
const std::vector<ReshapeCase> kReshapes{
    {{2, 3, 2, 2}, 1}, {{2, 12}, 1}, {{2, 6, 2, 1}, 1}, {{1, 2, 6, 2}, 2},
    {{2, 6, 1, 2}, 1}, {{24}, -1},   {{12, 2}, -1},     {{4, 3, 2}, -1},
};

BOOST_DATA_TEST_CASE(through_reshape, bdata::make(kReshapes), c) {
  UOpGraph g;
  UOp m = new_buffer(DeviceSpec(cpus(3)), 8, DType::int32, &g).reshape({2, 2, 2}).multi(1);
  BOOST_REQUIRE(m.shape() == (Shape{2, 6, 2}));
  if (c.axis >= 0) {
    UOp r = m.reshape(c.to);
    BOOST_TEST(r.shape() == c.to);
    BOOST_TEST(axis_of(r) == c.axis);
  } else {
    BOOST_CHECK_EXCEPTION(m.reshape(c.to), ShapeError,
                          message_has({"RESHAPE", "(2, 6, 2)", shape_str(c.to), "axis 1"}));
  }
}

BOOST_AUTO_TEST_CASE(reshape_that_moves_elements_between_shards_on_two_devices) {
  // ones (5, 4) sharded on axis 1 over 2 devices, reshaped to (10, 2)  (shared/cases C08)
  UOp m = tbuf({5, 2}, 2).multi(1);
  BOOST_CHECK_EXCEPTION(m.reshape({10, 2}), ShapeError, message_has({"RESHAPE", "(5, 4)", "(10, 2)"}));
}

BOOST_AUTO_TEST_CASE(through_permute) {
  UOp m = tbuf({2, 2, 2}, 3).multi(1);  // (2, 6, 2), axis 1
  BOOST_TEST(axis_of(m.permute({2, 0, 1})) == 2);
  BOOST_TEST(m.permute({2, 0, 1}).shape() == (Shape{2, 2, 6}));
  BOOST_TEST(axis_of(m.permute({1, 0, 2})) == 0);
  BOOST_TEST(axis_of(m.permute({0, 2, 1})) == 2);
}

BOOST_AUTO_TEST_CASE(through_reduce) {
  UOp m = tbuf({2, 2, 2}, 3).multi(1);
  BOOST_TEST(axis_of(m.r(Ops::ADD, {1})) == -1);  // reduced over the shard axis: no longer sharded
  BOOST_TEST(axis_of(m.r(Ops::MAX, {0, 1, 2})) == -1);
  BOOST_TEST(axis_of(m.r(Ops::ADD, {0})) == 1);
  BOOST_TEST(axis_of(m.r(Ops::ADD, {0, 2})) == 1);
  BOOST_TEST(m.r(Ops::ADD, {0, 2}).shape() == (Shape{1, 6, 1}));
}

BOOST_AUTO_TEST_CASE(through_other_ops) {
  UOp m = tbuf({2, 2, 2}, 3).multi(1);
  BOOST_TEST(axis_of(m.flip({1, 0, 1})) == 1);
  BOOST_TEST(axis_of(m.shrink(spans({{0, 1}, {0, 6}, {0, 2}}))) == 1);
  BOOST_TEST(axis_of(m.pad(spans({{1, 1}, {0, 0}, {0, 0}}))) == 1);
  BOOST_TEST(axis_of(m.reshape({2, 6, 2, 1}).expand({2, 6, 2, 5})) == 1);
  BOOST_TEST(axis_of((m + m)) == 1);
  BOOST_TEST(axis_of(m.alu(Ops::NEG)) == 1);
  BOOST_TEST(axis_of(m.cast(DType::float32)) == 1);
  BOOST_TEST(axis_of(m.copy_to_device(DeviceSpec(cpus(3)))) == 1);
  BOOST_TEST(axis_of(m.copy_to_device(DeviceSpec("CPU:0"))) == -1);  // one device holds the whole value
  BOOST_TEST(axis_of(m.allreduce(Ops::ADD, DeviceSpec(cpus(3)))) == 1);
  BOOST_TEST(axis_of(m.allreduce(Ops::ADD, DeviceSpec("CPU:0"))) == -1);
  // mixing a replicated and a sharded operand: the sharded axis
  UOp rep = tbuf({2, 6, 2}, 3).multi(std::nullopt);
  BOOST_TEST(axis_of((rep + m)) == 1);
  BOOST_TEST(axis_of((m + rep)) == 1);
  BOOST_TEST(axis_of((rep + rep)) == -1);
}

BOOST_AUTO_TEST_CASE(multi_bounds) {
  UOp m = tbuf({2, 2, 2}, 3).multi(1);
  using B = std::vector<std::pair<int64_t, int64_t>>;
  BOOST_TEST((m.bounds() == B{{0, 2}, {2, 4}, {4, 6}}));
  BOOST_TEST((tbuf({5}, 2).multi(0).bounds() == B{{0, 5}, {5, 10}}));
  BOOST_CHECK_THROW(tbuf({5}, 2).multi(std::nullopt).bounds(), InternalError);
  BOOST_CHECK_THROW(buf({5}).bounds(), InternalError);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
