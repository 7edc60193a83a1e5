// The hip backend's streaming kernels (codegen/render_hip.cpp, docs/gpu-path.md "Kernels that stream");
// label gpu, and simgpu on the simulated GPUs. Without a GPU: the launch geometry (a grid of at most
// kBlocksPerMultiprocessor blocks per multiprocessor). With one: elementwise kernels over every element
// width, at sizes around the vectors, the grid and the scalar tail (the simulated GPU's 4 multiprocessors
// make 8192 threads: 100003 elements loop several times), with every pointer aligned (the vector path),
// one pointer misaligned by an element (the scalar loop), in place (the output is an input) and with
// peer outputs; each output compared bit for bit with the interpreter, and the bytes around it unwritten.
#include <boost/test/unit_test.hpp>

#include "test/gpu/skip_without_hip.hpp"

#ifdef RINGRT_HAVE_HIP

#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "codegen/kernel.hpp"
#include "codegen/render.hpp"
#include "rewrite/interpreter.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/device/device.hpp"
#include "runtime/hip/hip_device.hpp"
#include "test/gpu/hip_test_support.hpp"
#endif

BOOST_AUTO_TEST_SUITE(test_hip_streams)
RINGRT_SKIP_WITHOUT_HIP()

#ifdef RINGRT_HAVE_HIP

using namespace hip_test;
namespace hl = ringrt::hip_launch;

BOOST_AUTO_TEST_SUITE(no_gpu)

// One iteration per thread up to a full grid (kBlocksPerMultiprocessor per multiprocessor), at least one
// block; beyond it the kernels' grid-stride loops take the rest.
BOOST_AUTO_TEST_CASE(launch_blocks_fill_the_gpu_and_no_more) {
  BOOST_TEST(hl::launch_blocks(0, 1, 132) == 0);
  BOOST_TEST(hl::launch_blocks(-5, 4, 132) == 0);
  BOOST_TEST(hl::launch_blocks(1, 1, 132) == 1);
  BOOST_TEST(hl::launch_blocks(256, 1, 132) == 1);
  BOOST_TEST(hl::launch_blocks(257, 1, 132) == 2);
  BOOST_TEST(hl::launch_blocks(1024, 4, 132) == 1);  // vectors of 4: 256 threads
  BOOST_TEST(hl::launch_blocks(1025, 4, 132) == 2);
  BOOST_TEST(hl::launch_blocks((1 << 20) + 3, 1, 132) == 132 * 8);  // a full H200
  BOOST_TEST(hl::launch_blocks((1 << 19) + 3, 1, 304) == 2049);     // MI300X: 304 CUs, not full
  BOOST_TEST(hl::launch_blocks(int64_t{1} << 40, 16, 0) == 8);      // at least one multiprocessor
  BOOST_TEST(hl::launch_blocks(100, 0, 4) == 1);                    // lanes below 1 count as 1
  BOOST_TEST(hl::kBlockSize == 256u);
  BOOST_TEST(hl::kBlocksPerMultiprocessor == 8u);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

constexpr int64_t kGuard = 16;  // elements before and after each output, checked unwritten

// Runs k on dev (_device_num 0) with its output and peer outputs at element `shift[0]` of their blocks
// and input i at element `shift[1 + i]` (shift[0] for an input that `in_place` makes the output), and
// checks every output against `want`, and the kGuard elements around it against their fill (an output
// in place: the ones after it).
void run_shifted(Device& dev, const codegen::Kernel& k, const ringrt::BufferLookup& lookup, const HostBuffer& want,
                 const std::vector<int64_t>& shift, bool in_place, const std::string& label) {
  auto ck = dev.compile(k);
  const size_t size = static_cast<size_t>(ringrt::itemsize(k.dtype));
  const size_t span = (static_cast<size_t>(k.numel) + 2 * kGuard) * size;
  std::vector<std::pair<void*, size_t>> blocks;
  auto block = [&](const std::vector<std::byte>& bytes) {
    void* p = dev.allocate(bytes.size());
    dev.copy_in(p, bytes.data(), bytes.size());
    blocks.push_back({p, bytes.size()});
    return p;
  };
  std::vector<std::byte> fill(span + static_cast<size_t>(shift[0]) * size, std::byte{0xab});
  std::vector<void*> bufs, outs;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    const HostBuffer& h = lookup(k.inputs[i].buffer_id)->at(0);
    const size_t isize = static_cast<size_t>(ringrt::itemsize(h.dtype));
    int64_t s = in_place && i == 0 ? shift[0] : shift[1 + i];
    std::vector<std::byte> bytes(h.bytes.size() + static_cast<size_t>(s + kGuard) * isize, std::byte{0xab});
    std::memcpy(bytes.data() + static_cast<size_t>(s) * isize, h.bytes.data(), h.bytes.size());
    bufs.push_back(static_cast<char*>(block(bytes)) + static_cast<size_t>(s) * isize);
  }
  for (int j = 0; j <= k.peer_outputs; ++j) {
    if (j == 0 && in_place) {  // input 0's block, already holding the input
      outs.push_back(bufs[0]);
      continue;
    }
    outs.push_back(static_cast<char*>(block(fill)) + static_cast<size_t>(kGuard + shift[0]) * size);
  }
  std::vector<void*> args{outs[0]};
  args.insert(args.end(), bufs.begin(), bufs.end());
  args.insert(args.end(), outs.begin() + 1, outs.end());
  wait(dev.launch(*ck, args, 0, {}), "the launch");
  for (size_t j = 0; j < outs.size(); ++j) {
    std::vector<std::byte> got(span);
    const size_t before = j == 0 && in_place ? 0 : static_cast<size_t>(kGuard) * size;
    dev.copy_out(got.data(), static_cast<char*>(outs[j]) - before, want.bytes.size() + before + kGuard * size);
    bool same = std::memcmp(got.data() + before, want.bytes.data(), want.bytes.size()) == 0;
    bool guards = std::all_of(got.begin(), got.begin() + static_cast<ptrdiff_t>(before),
                              [](std::byte b) { return b == std::byte{0xab}; });
    guards = guards && std::all_of(got.begin() + static_cast<ptrdiff_t>(before + want.bytes.size()),
                                   got.begin() + static_cast<ptrdiff_t>(before + want.bytes.size() + kGuard * size),
                                   [](std::byte b) { return b == std::byte{0xab}; });
    BOOST_TEST(same, label << ": output " << j << " differs from the interpreter\n" << codegen::render_hip(k));
    BOOST_TEST(guards, label << ": output " << j << " wrote outside its elements");
  }
  for (auto [p, n] : blocks) dev.free(p, n);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu, *ringrt::testing::needs({"HIP", 1}))

BOOST_AUTO_TEST_CASE(streaming_kernels_match_interpreter_at_every_alignment) {
  Device& dev = ringrt::device("HIP:0");
  ringrt::DeviceSpec one(std::string("HIP:0"));
  for (int64_t n : {1, 7, 64, 1001, 100003}) {
    Graph g;
    UOp f = g.buffer(one, DType::float32, n, 1), f2 = g.buffer(one, DType::float32, n, 1);
    UOp f3 = g.buffer(one, DType::float32, n, 1);
    UOp h = g.buffer(one, DType::float16, n, 1), bf = g.buffer(one, DType::bfloat16, n, 1);
    UOp i8 = g.buffer(one, DType::int8, n, 1), d = g.buffer(one, DType::float64, n, 1);
    const std::vector<std::pair<UOp, std::string>> asts{
        {f + f2 + f3, "float32 sum of 3"},
        {h + h * h, "float16"},
        {bf * bf + bf, "bfloat16"},
        {i8 + i8 * i8, "int8"},
        {d * d + d, "float64"},
        {h.cast(DType::float32) + f, "float16 and float32"},
    };
    for (const auto& [ast, what] : asts) {
      codegen::Kernel k = codegen::lower_kernel(ast);
      BOOST_TEST((n == 1 || codegen::hip_vector_lanes(k) > 1), what);  // n 1 reads element 0, not gid
      HostBuffer want = ringrt::Interpreter(g.lookup()).evaluate(ast).at(0);
      const std::vector<int64_t> aligned(1 + k.inputs.size(), 0);
      std::vector<int64_t> out_off = aligned, in_off = aligned;
      out_off[0] = 1;
      in_off.back() = 1;
      const std::vector<std::pair<std::vector<int64_t>, const char*>> shifts{
          {aligned, "aligned"}, {out_off, "output misaligned"}, {in_off, "an input misaligned"}};
      for (const auto& [shift, how] : shifts)
        run_shifted(dev, k, g.lookup(), want, shift, false, fmt::format("{}, n {}, {}", what, n, how));
      if (k.inputs[0].dtype == k.dtype)  // the output in input 0's place, as an in-place allreduce
        run_shifted(dev, k, g.lookup(), want, aligned, true, fmt::format("{}, n {}, in place", what, n));
      codegen::Kernel peers = codegen::with_peer_outputs(k, 2);
      run_shifted(dev, peers, g.lookup(), want, aligned, false, fmt::format("{}, n {}, 2 peer outputs", what, n));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

#endif

BOOST_AUTO_TEST_SUITE_END()
