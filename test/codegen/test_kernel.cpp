// codegen/kernel + render_cpp: what lowering produces (index text, names, input order, sharing,
// errors) and golden semantics tables compiled and compared bit for bit with the interpreter: every
// float16 and bfloat16 bit pattern through casts and ops, random float32 bit patterns, integer edge
// cases (x/0, INT_MIN/-1, wrap), reductions, and _device_num-dependent pads of computed values.
#include <bit>
#include <boost/test/unit_test.hpp>
#include <climits>
#include <random>

#include "codegen/kernel.hpp"
#include "codegen/render.hpp"
#include "core/errors.hpp"
#include "test/codegen/kernel_check.hpp"

BOOST_AUTO_TEST_SUITE(test_kernel)

using namespace ringrt;
using namespace ringrt::codegen;

namespace {

// Input buffers on a tuple of `ndev` devices, with their data.
struct Inputs {
  UOpGraph g;
  DeviceTuple devs;
  std::map<int64_t, std::vector<HostBuffer>> data;
  std::vector<UOp> asts;
  std::vector<std::string> labels;

  explicit Inputs(int ndev = 1) {
    for (int d = 0; d < ndev; ++d) devs.push_back("CPU:" + std::to_string(d));
  }
  UOp buffer(const std::vector<HostBuffer>& per_device) {
    UOp b = new_buffer(DeviceSpec(devs), per_device.at(0).numel(), per_device[0].dtype, &g);
    data[std::get<BufferArg>(b.arg()).id] = per_device;
    return b;
  }
  UOp buffer(const HostBuffer& same) { return buffer(std::vector<HostBuffer>(devs.size(), same)); }
  void add(const UOp& ast, const std::string& label) {
    asts.push_back(ast);
    labels.push_back(label);
  }
  // Checks every kernel against the interpreter, and again with `peer_outputs` peer outputs (each
  // must hold the output's bytes) when not 0; `strict_nans`: NaNs bit for bit too.
  void check(int peer_outputs = 0, bool strict_nans = false) {
    BufferLookup lookup = [this](int64_t id) { return &data.at(id); };
    for (int peers : {0, peer_outputs}) {
      test::check_against_interpreter(asts, std::vector<BufferLookup>(asts.size(), lookup),
                                      std::vector<int>(asts.size(), static_cast<int>(devs.size())), labels, peers,
                                      codegen::HostCompiler(), strict_nans);
      if (peer_outputs == 0) break;
    }
  }
};

HostBuffer bits16(DType dt) {  // every 16-bit pattern
  HostBuffer b(dt, {65536});
  for (uint32_t i = 0; i < 65536; ++i) std::memcpy(b.bytes.data() + 2 * i, &i, 2);
  return b;
}

}  // namespace

BOOST_AUTO_TEST_CASE(contiguous_and_shard_reads_render_plainly) {
  Inputs in(4);
  UOp b = in.buffer(HostBuffer(DType::float32, {1600}));
  std::string plain = render_cpp(lower_kernel(b.reshape({4, 400}) + b.reshape({4, 400}).const_like(1.0)));
  BOOST_TEST(plain.find("in0[gid];") != std::string::npos, plain);
  Kernel shard = lower_kernel(b.reshape({4, 400}).shard_local(0) * b.reshape({4, 400}).shard_local(0));
  BOOST_TEST(render_cpp(shard).find("in0[gid + 400*dnum];") != std::string::npos);
  // Kernel::gid_offset: element gid + c of an input, read at gid only (what peer outputs may alias)
  BOOST_TEST(lower_kernel(b.reshape({4, 400}) + b.reshape({4, 400}).const_like(1.0)).gid_offset(0).value_or(-1) == 0);
  BOOST_TEST(!shard.gid_offset(0));  // gid + 400*dnum: not one offset
  BOOST_TEST(!shard.gid_offset(1));  // no such input
  Kernel reduce = lower_kernel(b.reshape({4, 400}).r(Ops::ADD, {1}));
  BOOST_TEST(!reduce.gid_offset(0));                                            // read in a reduce loop
  BOOST_TEST((reduce.read_bounds(0) == std::pair<int64_t, int64_t>{0, 1599}));  // every element, in the loop
  BOOST_TEST((shard.read_bounds(0) == std::pair<int64_t, int64_t>{0, 1599}));   // gid + 400*dnum, dnum <= 3
  BOOST_TEST(render_hip(shard).find("in0[gid + 400*dnum];") != std::string::npos);
  BOOST_TEST(shard.dump().find("load float32") == shard.dump().rfind("load float32"));  // x*x loads once
  BOOST_TEST(shard.dnum_max == 3);
}

BOOST_AUTO_TEST_CASE(reassembly_of_chunks_splits_the_loop) {
  // an allreduce's last kernel: chunks padded into place and added. The cpu source has one loop per
  // chunk that reads it unmasked; the values (run in uneven ranges) equal the interpreter's.
  Inputs in(2);
  std::vector<UOp> chunks;
  for (int c = 0; c < 3; ++c) {
    HostBuffer b(DType::float32, {5});
    for (int64_t i = 0; i < 5; ++i) b.set(i, 10.0 * c + static_cast<double>(i) + 0.5);
    chunks.push_back(in.buffer(b));
  }
  UOp sum = chunks[0].pad(spans({{0, 10}})) + chunks[1].pad(spans({{5, 5}})) + chunks[2].pad(spans({{10, 0}}));
  std::string src = render_cpp(lower_kernel(sum));
  src = src.substr(src.find("extern \"C\" void"));  // the kernel, without the prelude
  BOOST_TEST(src.find("in0[gid];") != std::string::npos, src);
  BOOST_TEST(src.find("in1[gid - 5];") != std::string::npos, src);
  BOOST_TEST(src.find("in2[gid - 10];") != std::string::npos, src);
  BOOST_TEST(src.find("? in") == std::string::npos, src);          // no masked read is left
  BOOST_TEST(lower_kernel(sum).gid_offset(2).value_or(0) == -10);  // read under a mask: still element gid - 10
  // Kernel::read_bounds: the index bounds, masked-off reads included (gid - 10 over gid in [0, 15))
  auto bounds = lower_kernel(sum).read_bounds(2);
  BOOST_TEST_REQUIRE(bounds.has_value());
  BOOST_TEST(bounds->first == -10);
  BOOST_TEST(bounds->second == 4);
  BOOST_TEST(!lower_kernel(sum).read_bounds(3).has_value());     // no such input
  BOOST_TEST(!lower_kernel(chunks[0].flip({1})).gid_offset(0));  // in0[4 - gid]
  in.add(sum, "three chunks padded and added");
  in.add(chunks[0].pad(spans({{3, 4}})) * chunks[1].pad(spans({{7, 0}})), "overlapping pads: four ranges");
  in.add(chunks[0].pad(spans({{2, 2}})).shrink(spans({{1, 8}})).flip({0}), "pad, shrink and flip");
  in.check(3);  // and with 3 peer outputs, stored in every split loop
  // the hip source keeps one masked body: every gid is its own thread
  BOOST_TEST(render_hip(lower_kernel(sum)).find("(gid < 5)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(names_are_structural_and_inputs_follow_toposort) {
  std::string names[2], dumps[2];
  for (int i = 0; i < 2; ++i) {  // the same structure in two graphs
    Inputs in;
    UOp a = in.buffer(HostBuffer(DType::float16, {12})), b = in.buffer(HostBuffer(DType::float16, {12}));
    Kernel k = lower_kernel(b + a);
    BOOST_TEST(k.inputs.size() == 2u);
    BOOST_TEST(k.inputs[0].buffer_id == std::get<BufferArg>(b.arg()).id);  // b comes first in toposort
    names[i] = k.name, dumps[i] = k.dump();
    BOOST_TEST(lower_kernel(a.reshape({3, 4}).r(Ops::ADD, {1})).name.rfind("r_", 0) == 0u);
    BOOST_TEST(lower_kernel(b + a, "my_kernel").name == "my_kernel");
    BOOST_CHECK_THROW(lower_kernel(b + a, "not a name"), ConfigError);
  }
  Inputs in;
  UOp a = in.buffer(HostBuffer(DType::int8, {4}));
  std::vector<Kernel> clash{lower_kernel(a + a, "k"), lower_kernel(a * a, "k")};
  BOOST_CHECK_THROW(render_cpp(clash), ConfigError);  // two different kernels, one name
  std::vector<Kernel> twice{lower_kernel(a + a), lower_kernel(a + a)};
  BOOST_TEST(render_cpp(twice) == render_cpp(twice[0]));  // the same kernel is emitted once
  BOOST_TEST(names[0] == names[1]);
  BOOST_TEST(dumps[0] == dumps[1]);
  BOOST_TEST(names[0].rfind("E_", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(sizes_outside_the_index_math_do_not_name_a_kernel) {
  // the element count is a launch argument: b + a over 12 and over 1000 elements (and on 1 or 4
  // devices) is one kernel, one function in a translation unit; the values of each equal the
  // interpreter's. A size the index math folds in (a pad bound, a chunk offset) names a new kernel.
  Inputs in(4);
  std::vector<Kernel> ks;
  for (int64_t n : {12, 1000}) {
    HostBuffer x(DType::float32, {n}), y(DType::float32, {n});
    for (int64_t i = 0; i < n; ++i) x.set(i, static_cast<double>(i) * 0.25), y.set(i, 3.0 - static_cast<double>(i));
    UOp a = in.buffer(x), b = in.buffer(y);
    ks.push_back(lower_kernel(b + a));
    in.add(b + a, fmt::format("b + a over {}", n));
    ks.push_back(lower_kernel(a.pad(spans({{0, n}})) + b.pad(spans({{n, 0}}))));
    in.add(a.pad(spans({{0, n}})) + b.pad(spans({{n, 0}})), fmt::format("two chunks of {}", n));
  }
  Inputs one;
  UOp a1 = one.buffer(HostBuffer(DType::float32, {12})), b1 = one.buffer(HostBuffer(DType::float32, {12}));
  BOOST_TEST(lower_kernel(b1 + a1).name == ks[0].name);  // dnum_max 0, not 3
  BOOST_TEST(ks[0].name == ks[2].name);
  BOOST_TEST(ks[0].dump() != ks[2].dump());  // the sizes differ
  BOOST_TEST(ks[0].code() == ks[2].code());
  BOOST_TEST(ks[1].name != ks[3].name);  // chunk offsets 12 and 1000 are in the index math
  std::vector<Kernel> same{ks[0], ks[2]};
  BOOST_TEST(render_cpp(same) == render_cpp(ks[0]));
  BOOST_TEST(render_hip(same) == render_hip(ks[0]));
  in.check();
}

BOOST_AUTO_TEST_CASE(ops_without_semantics_are_internal_errors) {
  Inputs in;
  UOp i = in.buffer(HostBuffer(DType::int32, {4})), f = in.buffer(HostBuffer(DType::float32, {4}));
  // the builder may already refuse these (ShapeError); lowering refuses them in any case
  BOOST_CHECK_THROW(lower_kernel(i.alu(Ops::SQRT)), Error);
  BOOST_CHECK_THROW(lower_kernel(f.alu(Ops::AND, {f})), Error);
  BOOST_CHECK_THROW(lower_kernel(f.contiguous() + f), InternalError);
}

BOOST_AUTO_TEST_CASE(float16_and_bfloat16_bit_patterns) {
  Inputs in;
  UOp h = in.buffer(bits16(DType::float16)), b = in.buffer(bits16(DType::bfloat16));
  for (DType t : {DType::float32, DType::bfloat16, DType::int32, DType::int8, DType::uint8, DType::bool_})
    in.add(h.cast(t), fmt::format("float16 -> {}", dtype_name(t)));
  for (DType t : {DType::float32, DType::float16, DType::int32, DType::bool_})
    in.add(b.cast(t), fmt::format("bfloat16 -> {}", dtype_name(t)));
  for (Ops op : {Ops::NEG, Ops::SQRT, Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::RECIP}) {
    in.add(h.alu(op), fmt::format("float16 {}", op_name(op)));
    in.add(b.alu(op), fmt::format("bfloat16 {}", op_name(op)));
  }
  UOp hr = h.reshape({256, 256}), hc = hr.permute({1, 0});  // every pair of (high byte, low byte) patterns
  for (Ops op : {Ops::ADD, Ops::MUL, Ops::FDIV, Ops::MAX, Ops::CMPLT})
    in.add(hr.alu(op, {hc}), fmt::format("float16 {}", op_name(op)));
  in.add(b.reshape({256, 256}).alu(Ops::SUB, {b.reshape({256, 256}).permute({1, 0})}), "bfloat16 SUB");
  in.add(b.alu(Ops::MUL, {b.const_like(0.1)}), "bfloat16 * 0.1");
  in.check();
}

// WHERE of two 16-bit floats into the same type selects their bits (render_prelude.cpp rt_hsel, rt_bfsel: a NaN
// canonical or quieted as decoding and encoding again would); of 8-bit floats it selects the decoded values
// (rt_self); MAX and MIN of decoded values are rt_maxd and rt_mind (a NaN first operand wins). Every pair of
// patterns, with the interpreter's bits: stored, bitcast, and added after.
BOOST_AUTO_TEST_CASE(where_max_and_min_of_16_and_8_bit_floats) {
  Inputs in;
  for (DType t : {DType::float16, DType::bfloat16}) {
    UOp x = in.buffer(bits16(t)).reshape({256, 256}), y = x.permute({1, 0});
    UOp sel = x.alu(Ops::CMPLT, {y}).where(x, y), odd = x.bitcast(DType::int16).cast(DType::bool_).where(y, x);
    in.add(sel, fmt::format("{} WHERE, stored", dtype_name(t)));
    in.add(odd.bitcast(DType::int16), fmt::format("{} WHERE, bitcast", dtype_name(t)));
    in.add(sel + odd, fmt::format("{} WHERE, added", dtype_name(t)));
    in.add(sel.cast(DType::float32), fmt::format("{} WHERE -> float32", dtype_name(t)));
    in.add(x.alu(Ops::MAX, {y}).bitcast(DType::int16), fmt::format("{} MAX, bitcast", dtype_name(t)));
    in.add(x.alu(Ops::MIN, {y}).bitcast(DType::int16), fmt::format("{} MIN, bitcast", dtype_name(t)));
  }
  HostBuffer codes(DType::uint8, {256});
  for (int64_t i = 0; i < 256; ++i) codes.set_int(i, i);
  for (DType t : {DType::fp8e4m3, DType::fp8e5m2}) {
    UOp c = in.buffer(codes).bitcast(t), r = c.flip({1});
    in.add(c.alu(Ops::CMPLT, {r}).where(c, r).bitcast(DType::uint8), fmt::format("{} WHERE, bitcast", dtype_name(t)));
    in.add(c.alu(Ops::MAX, {r}).bitcast(DType::uint8), fmt::format("{} MAX, bitcast", dtype_name(t)));
    in.add(c.alu(Ops::MIN, {r}).bitcast(DType::uint8), fmt::format("{} MIN, bitcast", dtype_name(t)));
  }
  in.check();
}

// The compressed wire's 8-bit floats (render_prelude.cpp rt_f2fp8 / rt_fp82f against core/wire_format.cpp's
// encode_fp8 / decode_fp8, which the interpreter's CAST uses): every code decoded, and float32 bits encoded:
// random patterns, every 97th pattern over the range where the codes' subnormals, normals and saturation lie
// (2^-20 .. 2^17), and the edge values (NaN, Inf, +-0, each format's max and the midpoints around it).
BOOST_AUTO_TEST_CASE(fp8_bit_patterns) {
  Inputs in;
  HostBuffer codes(DType::uint8, {256});
  for (int64_t i = 0; i < 256; ++i) codes.set_int(i, i);
  HostBuffer bits(DType::int32, {60000});
  std::mt19937_64 rng(5);
  for (int64_t i = 0; i < 20000; ++i) bits.set_int(i, static_cast<int64_t>(rng()));
  for (int64_t i = 20000; i < bits.numel(); ++i) {  // 0x35800000 = 2^-20 .. 0x47800000 = 2^16, both signs
    auto b = static_cast<uint32_t>(0x35800000 + (i - 20000) / 2 * 7549);
    bits.set_int(i, static_cast<int32_t>((i % 2) ? (b | 0x80000000u) : b));
  }
  HostBuffer edge = HostBuffer::from_vector<double>(
      {NAN,   -NAN,  INFINITY, -INFINITY, 0.0,     -0.0,   448,      464,     465,     480,       -464,
       57344, 61440, 61441,    1e30,      0x1p-10, 0x1p-9, 0x1.8p-9, 0x1p-17, 0x1p-16, 0x1.8p-16, 0x1p-130},
      DType::float32, {22});
  UOp c = in.buffer(codes), f = in.buffer(bits).bitcast(DType::float32), e = in.buffer(edge);
  for (DType t : {DType::fp8e4m3, DType::fp8e5m2}) {
    in.add(c.bitcast(t).cast(DType::float32), fmt::format("every {} code -> float32", dtype_name(t)));
    in.add(f.cast(t).bitcast(DType::uint8), fmt::format("float32 bits -> {}", dtype_name(t)));
    in.add(e.cast(t).bitcast(DType::uint8), fmt::format("float32 edge values -> {}", dtype_name(t)));
  }
  in.check();
}

// A read through a view that expands a per-block value over K elements (the wire's block scales, gid / 32)
// runs block by block, gid / K hoisted (render_cpp.cpp blocked_loop), with the interpreter's values; a range
// that does not start or end on a block edge included (the kernel is run over chunks of the range).
BOOST_AUTO_TEST_CASE(reads_of_expanded_blocks_run_block_by_block) {
  Inputs in;
  HostBuffer scales(DType::float32, {37}), x(DType::float32, {37 * 32});
  for (int64_t i = 0; i < scales.numel(); ++i) scales.set(i, 1.0 + static_cast<double>(i));
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i % 101) - 50.0);
  UOp s = in.buffer(scales), v = in.buffer(x);
  UOp per_element = s.reshape({37, 1}).expand({37, 32}).reshape({37 * 32});
  UOp scaled = v.alu(Ops::FDIV, {per_element});
  BOOST_TEST(render_cpp(lower_kernel(scaled)).find("gblock") != std::string::npos);
  in.add(scaled, "x / the block's scale");
  in.add(scaled.shrink(spans({{5, 37 * 32 - 7}})), "a range cut mid-block");
  in.check();
}

BOOST_AUTO_TEST_CASE(float32_bit_patterns) {
  Inputs in;
  HostBuffer bits(DType::int32, {50000});
  std::mt19937_64 rng(99);
  for (int64_t i = 0; i < bits.numel(); ++i) bits.set_int(i, static_cast<int64_t>(rng()));
  UOp f = in.buffer(bits).bitcast(DType::float32);
  for (DType t : {DType::float16, DType::bfloat16, DType::int32, DType::int8, DType::uint8, DType::bool_})
    in.add(f.cast(t), fmt::format("float32 bits -> {}", dtype_name(t)));
  HostBuffer edge = HostBuffer::from_vector<double>({1e10, -1e10, NAN, INFINITY, -INFINITY, 3.7, -3.7, 2147483648.0,
                                                     -2147483649.0, 1e19, -0.0, 65520.0, 65519.0, 1e-8},
                                                    DType::float32, {14});
  UOp e = in.buffer(edge);
  for (DType t : {DType::float16, DType::int32, DType::int8, DType::uint8, DType::bool_})
    in.add(e.cast(t), fmt::format("float32 edge values -> {}", dtype_name(t)));
  // every 509th float32 from 2^-26 to just past 2^-14 and its negation: float16's subnormals, their
  // rounding (half to even by float addition in rt_f2h) and the step to its smallest normal
  HostBuffer near(DType::int32, {2 * ((0x38900000 - 0x32800000) / 509)});
  for (int64_t i = 0; i < near.numel() / 2; ++i) {
    near.set_int(2 * i, 0x32800000 + 509 * i);
    near.set_int(2 * i + 1, static_cast<int32_t>(0x80000000u | static_cast<uint32_t>(0x32800000 + 509 * i)));
  }
  in.add(in.buffer(near).bitcast(DType::float32).cast(DType::float16), "float32 near float16's subnormals -> float16");
  for (Ops op : {Ops::LOG2, Ops::SIN, Ops::EXP2, Ops::SQRT}) in.add(f.alu(op), fmt::format("float32 {}", op_name(op)));
  in.check();
}

// Signaling NaNs through the ops that pass an operand on (WHERE, MAX, MIN, NEG): quieted where the value
// is stored, bitcast or compared, left to the ADD or MUL that is its only use otherwise (render_common.cpp
// quiet_free, the naive allreduce's selects). Bit for bit the interpreter's where one operand at most is a
// NaN; where two NaNs meet in an ADD or MUL, which payload wins is no contract (the compiler may swap the
// operands), and any NaN matches.
BOOST_AUTO_TEST_CASE(signaling_nans_through_ops_that_pass_an_operand_on) {
  HostBuffer x(DType::int32, {4096}), y(DType::int32, {4096}), z(DType::float32, {4096});
  for (int64_t i = 0; i < x.numel(); ++i) {
    uint32_t payload = 1 + static_cast<uint32_t>(i * 7919) % 0x3fffffu;  // quiet bit clear: signaling
    uint32_t patterns[4] = {0x7f800000u | payload, 0xff800000u | payload, 0x7fc00000u | payload,
                            std::bit_cast<uint32_t>(static_cast<float>(i % 97) - 48.0f)};
    x.set_int(i, static_cast<int32_t>(patterns[i % 4]));
    y.set_int(i, static_cast<int32_t>(patterns[(i / 4 + i) % 4]));
    z.set(i, static_cast<double>(i % 13) - 6.5);
  }
  for (bool strict : {true, false}) {
    Inputs in;
    UOp a = in.buffer(x).bitcast(DType::float32), b = in.buffer(y).bitcast(DType::float32), c = in.buffer(z);
    UOp sel = a.alu(Ops::CMPLT, {b}).where(a, b), mx = a.alu(Ops::MAX, {b}), ng = a.alu(Ops::NEG);
    if (strict) {
      in.add(sel + c, "where, then add");
      in.add(mx * c + c, "max, then mul and add");
      in.add(ng * c, "neg, then mul");
      in.add(sel, "where, stored");
      in.add(sel.bitcast(DType::int32), "where, bitcast");
      in.add(sel.alu(Ops::CMPNE, {sel}).where(c, sel + c), "where, compared and added");
      in.add(sel.reshape({64, 64}).r(Ops::MAX, {1}), "where, max-reduced");
    } else {  // two NaNs may meet
      in.add(sel + b, "where, then added to a NaN");
      in.add(mx * a + ng, "max and neg, then mul and add");
      in.add((sel + a).reshape({64, 64}).r(Ops::ADD, {1}), "where, then added, summed");
    }
    in.check(0, strict);
  }
}

BOOST_AUTO_TEST_CASE(integer_edge_cases) {
  Inputs in;
  auto pairs = [&](DType dt, const std::vector<int64_t>& vals) {
    size_t n = vals.size();
    HostBuffer a(dt, {static_cast<int64_t>(n * n)}), b(dt, {static_cast<int64_t>(n * n)});
    for (size_t i = 0; i < n * n; ++i)
      a.set_int(static_cast<int64_t>(i), vals[i / n]), b.set_int(static_cast<int64_t>(i), vals[i % n]);
    UOp x = in.buffer(a), y = in.buffer(b);
    for (Ops op : {Ops::IDIV, Ops::MOD, Ops::MUL, Ops::ADD, Ops::SUB, Ops::MAX, Ops::MIN, Ops::CMPLT, Ops::XOR})
      in.add(x.alu(op, {y}), fmt::format("{} {}", dtype_name(dt), op_name(op)));
    in.add(x.alu(Ops::NEG), fmt::format("{} NEG", dtype_name(dt)));
    in.add(x.cast(DType::float16), fmt::format("{} -> float16", dtype_name(dt)));
  };
  pairs(DType::int32, {INT_MIN, INT_MIN + 1, -7, -1, 0, 1, 7, INT_MAX});
  pairs(DType::int8, {-128, -127, -7, -1, 0, 1, 7, 127});
  pairs(DType::uint8, {0, 1, 7, 128, 255});
  pairs(DType::bool_, {0, 1});
  pairs(DType::int64, {LLONG_MIN, -1, 0, 3, LLONG_MAX});
  in.check();
}

BOOST_AUTO_TEST_CASE(float64) {
  Inputs in;
  UOp d = in.buffer(HostBuffer::from_vector<double>({1e300, -1e-300, NAN, -0.0, 3.0000000001, 65504.5, -7.25, 1e20},
                                                    DType::float64, {8}));
  UOp r = d.flip({1});
  for (DType t : {DType::float32, DType::float16, DType::bfloat16, DType::int32, DType::int64, DType::bool_})
    in.add(d.cast(t), fmt::format("float64 -> {}", dtype_name(t)));
  for (Ops op : {Ops::ADD, Ops::MUL, Ops::FDIV, Ops::MAX, Ops::MIN, Ops::CMPNE})
    in.add(d.alu(op, {r}), fmt::format("float64 {}", op_name(op)));
  for (Ops op : {Ops::NEG, Ops::SQRT, Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::RECIP})
    in.add(d.alu(op), fmt::format("float64 {}", op_name(op)));
  in.add(d.reshape({2, 4}).r(Ops::ADD, {1}), "float64 sum");
  in.check();
}

BOOST_AUTO_TEST_CASE(reductions) {
  Inputs in;
  HostBuffer small(DType::float16, {4096});
  for (int64_t i = 0; i < small.numel(); ++i) small.set(i, 0.001 * static_cast<double>(i % 7 + 1));
  UOp s = in.buffer(small).reshape({4, 1024});
  in.add(s.r(Ops::ADD, {1}), "float16 sum rounds every step");
  HostBuffer f = HostBuffer::from_vector<double>({1, 5, NAN, 2, -1, 3, 4, -INFINITY, 0, 7, 2, 1}, DType::float32, {12});
  UOp x = in.buffer(f).reshape({3, 4});
  in.add(x.r(Ops::MAX, {1}), "float32 max with NaN");
  in.add(x.r(Ops::MIN, {0, 1}).reshape({}), "float32 min of all");
  in.add(x.r(Ops::ADD, {0}).permute({1, 0}).pad(spans({{1, 2}, {0, 1}})), "permute and pad above a reduce");
  UOp i8 = in.buffer(HostBuffer::from_vector<int64_t>({3, 5, 7, 11, -128, -1, 0, 9}, DType::int8, {8})).reshape({2, 4});
  in.add(i8.r(Ops::MUL, {1}), "int8 product wraps");
  in.add(i8.r(Ops::MAX, {0}), "int8 max");
  in.add((i8.cast(DType::bool_)).r(Ops::ADD, {1}), "bool sum is any");
  UOp empty = in.buffer(HostBuffer(DType::float32, {0})).reshape({2, 0});
  in.add(empty.r(Ops::MUL, {1}), "an empty product is the identity");
  in.check(2);  // and with 2 peer outputs: float16, int8 and bool results, empty reductions
}

BOOST_AUTO_TEST_CASE(device_dependent_pads_of_computed_values) {
  Inputs in(3);
  std::vector<HostBuffer> per_dev;
  for (int d = 0; d < 3; ++d)
    per_dev.push_back(HostBuffer::from_vector<double>({1.5, -2, 3.25, 4}, DType::float32, {4}));
  UOp x = in.buffer(per_dev);
  UOp dn = device_num(3, &in.g).cast(DType::float32).reshape({1}).expand({4});
  UOp y = x * x.const_like(2.0) + dn;
  in.add(y.pad(Spans{{Affine{0, 1}, Affine{2, -1}}}), "pad of a computed value at dnum");
  in.add(y.pad(Spans{{Affine{0, 1}, Affine{2, -1}}}).shrink(Spans{{Affine{1, 0}, Affine{5, 0}}}).flip({1}),
         "pad+shrink");
  UOp c = make_uop(Ops::CONST, DType::float32, {device_uop(DeviceSpec(in.devs), &in.g)}, 2.5, &in.g);
  in.add(x + c.reshape({1}).expand({4}), "a CONST with a DEVICE source");
  in.check(1);  // and with a peer output
}

BOOST_AUTO_TEST_SUITE_END()
