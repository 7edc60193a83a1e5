// render_hip's streaming form (docs/gpu-path.md "Kernels that stream"): the vector path exactly where
// every input is read at the output's element and covers it (Kernel::reads_at_gid), 32-bit indices
// exactly where every index fits (Kernel::fits_int32, Expr::magnitude), one form per kernel name in a
// source. That the kernels compute the interpreter's bits on both paths is test/gpu/test_hip_streams.cpp's
// (simgpu); that they compile for every target, test/hiprtc/test_stream_kernels.cpp's.
#include <boost/test/unit_test.hpp>
#include <string>

#include "codegen/kernel.hpp"
#include "codegen/render.hpp"
#include "codegen/symbolic.hpp"

BOOST_AUTO_TEST_SUITE(test_render_hip)

using namespace ringrt;
using namespace ringrt::codegen;

namespace {

bool has(const std::string& src, const std::string& text) { return src.find(text) != std::string::npos; }
bool vector_path(const std::string& src) { return has(src, "RT_UNROLL\n") && has(src, ".v[lane]"); }

}  // namespace

BOOST_AUTO_TEST_CASE(vector_path_exactly_where_inputs_are_read_at_gid) {
  UOpGraph g;
  DeviceSpec one("HIP:0");
  UOp a = new_buffer(one, 1000, DType::float32, &g), b = new_buffer(one, 1000, DType::float32, &g);
  UOp m = new_buffer(one, 40 * 25, DType::float32, &g);
  // elementwise over contiguous inputs: 16-byte vectors of 4 floats, every pointer's alignment checked
  Kernel sum = with_peer_outputs(lower_kernel(a + b * a), 2);
  std::string src = render_hip(sum);
  BOOST_TEST(vector_path(src), src);
  BOOST_TEST(sum.reads_at_gid());
  BOOST_TEST(hip_vector_lanes(sum) == 4);
  for (const char* p : {"out", "in0", "in1", "peer0", "peer1"})
    BOOST_TEST(has(src, fmt::format("(unsigned long long){} % 16 == 0", p)), p);
  BOOST_TEST(has(src, "const rt_vec<float, 4> ld0 = *(const rt_vec<float, 4>*)(in0 + base);"), src);
  BOOST_TEST(has(src, "*(rt_vec<float, 4>*)(peer1 + base) = st;"), src);
  BOOST_TEST(has(src, "for (unsigned i = first + start; i < (unsigned)n; i += stride)"), src);  // the tail
  // the widest dtype sets the lanes: float16 loads of 8 bytes beside float32 stores of 16; int8 alone 16
  UOp h = new_buffer(one, 1000, DType::float16, &g), i8 = new_buffer(one, 1000, DType::int8, &g);
  Kernel mixed = lower_kernel(h.cast(DType::float32) + a);
  BOOST_TEST(hip_vector_lanes(mixed) == 4);
  BOOST_TEST(has(render_hip(mixed), " % 8 == 0 && "), render_hip(mixed));  // the float16 input
  BOOST_TEST(hip_vector_lanes(lower_kernel(i8 + i8)) == 16);
  // no vector path: a permuted read, a shard of the device number, a shifted (padded) read, a read in a
  // reduction, and a read at gid of an input shorter than the output (its last vector would overrun it)
  const std::vector<std::pair<UOp, const char*>> scalar{
      {m.reshape({40, 25}).permute({1, 0}).reshape({1000}) + a, "permuted"},
      {new_buffer(DeviceSpec(DeviceTuple{"HIP:0", "HIP:1"}), 2000, DType::float32, &g)
           .reshape({2, 1000})
           .shard_local(0),
       "shard"},
      {a.pad(spans({{3, 0}})).shrink(spans({{0, 1000}})) + b, "shifted"},
      {m.reshape({40, 25}).r(Ops::ADD, {1}), "reduction"},
      {a.pad(spans({{0, 24}})), "shorter input"},
  };
  for (const auto& [ast, what] : scalar) {
    Kernel k = lower_kernel(ast);
    std::string s = render_hip(k);
    BOOST_TEST(!vector_path(s), what << ":\n" << s);
    BOOST_TEST(!k.reads_at_gid(), what);
    BOOST_TEST(hip_vector_lanes(k) == 1, what);
    BOOST_TEST(has(s, "for (unsigned i = start; i < (unsigned)n; i += stride)"), what << ":\n" << s);
  }
}

BOOST_AUTO_TEST_CASE(index_width_follows_the_largest_index) {
  UOpGraph g;
  DeviceSpec one("HIP:0");
  // below 2^31 elements: int indices and reduce counters, unsigned loops
  UOp a = new_buffer(one, 1 << 20, DType::float32, &g);
  Kernel small = lower_kernel(a.reshape({1024, 1024}).r(Ops::ADD, {1}));
  BOOST_TEST(small.fits_int32());
  std::string s = render_hip(small);
  BOOST_TEST(has(s, "const int gid = (int)i;"), s);
  BOOST_TEST(has(s, "for (int r0 = 0; r0 < 1024; ++r0)"), s);
  BOOST_TEST(has(s, "const int dnum = dnum_arg;"), s);
  // 2^31 elements or more: 64-bit throughout
  UOp big = new_buffer(one, int64_t{1} << 31, DType::int8, &g);
  Kernel large = lower_kernel(big + big);
  BOOST_TEST(!large.fits_int32());
  std::string l = render_hip(large);
  BOOST_TEST(has(l, "const long long gid = (long long)i;"), l);
  BOOST_TEST(has(l, "const long long base = (long long)(at * 16);"), l);
  BOOST_TEST(has(l, "for (unsigned long long i = first + start; i < (unsigned long long)n; i += stride)"), l);
  // few elements, but an index past INT32_MAX: the second half of a 2^31 + 10 element buffer
  UOp wide = new_buffer(one, (int64_t{1} << 31) + 10, DType::int8, &g);
  Kernel half = lower_kernel(wide.reshape({2, (int64_t{1} << 30) + 5}).shrink(spans({{1, 2}, {0, (1 << 30) + 5}})));
  BOOST_TEST(half.numel < int64_t{1} << 31);
  BOOST_TEST(!half.fits_int32(), half.dump());
  BOOST_TEST(has(render_hip(half), "const long long gid"));
  // one form per name in a source: a kernel of the name that needs 64 bits makes it 64-bit for both
  UOp x = new_buffer(one, 100, DType::int8, &g);
  Kernel a_small = lower_kernel(x + x);
  BOOST_REQUIRE(a_small.name == large.name);  // equal code, one name
  std::vector<Kernel> both{a_small, large};
  std::string shared = render_hip(both);
  BOOST_TEST((has(shared, "const long long gid") && !has(shared, "const int gid")), shared);
  BOOST_TEST(has(render_hip(a_small), "const int gid"));
}

BOOST_AUTO_TEST_CASE(magnitude_bounds_every_value_the_text_computes) {
  Expr gid = Expr::var("gid", 0, 99), dnum = Expr::var("dnum", 0, 3, 100);
  BOOST_TEST((gid * 3 + 7).magnitude() == 304);
  BOOST_TEST((Expr::constant(5) - gid).magnitude() == 104);  // 5 - gid reaches -94; |terms| sum to 104
  BOOST_TEST((gid + dnum * 400).magnitude() == 1299);
  BOOST_TEST(gid.floordiv(7).magnitude() == 99);    // the numerator
  BOOST_TEST((gid * 5).mod(7).magnitude() == 495);  // the numerator, not the remainder
  BOOST_TEST(Expr::constant(-8).magnitude() == 8);
  Expr huge = Expr::var("gid", 0, int64_t{1} << 62);
  BOOST_TEST((huge * 4 + huge.floordiv(3) * 8).magnitude() == INT64_MAX);  // saturates
  Mask m;
  m.require_range(gid, Expr::constant(10), Expr::constant(50));
  BOOST_TEST(m.magnitude() == 149);  // gid - 10 >= 0 and 49 - gid >= 0: 49 + 99, compared with c + 1
}

BOOST_AUTO_TEST_SUITE_END()
