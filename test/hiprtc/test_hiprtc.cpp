// The GPU compiler (no GPU needed), for RINGRT_TEST_GPU_ARCH: hipRTC for gfx90a here, NVRTC for sm_90 in
// nvrtc_test_hiprtc (built against ringrt_nvidia: cmake/RingrtTests.cmake). Every random kernel AST of
// the CPU fuzz test also compiles (a third of them with peer outputs); an unsupported target (on AMD
// gfx942 and gfx11xx, which abort Debian's hipRTC) is a CompileError and never reaches the compiler; a
// bad source is a CompileError with the program log; the second compile is a cache hit. Without HIP (RINGRT_HAVE_HIP
// undefined) the one case here is skipped (a false precondition), which CTest reports as skipped.
#include <fmt/format.h>
#include <stdlib.h>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <filesystem>

#include "codegen/compiler.hpp"
#include "codegen/render.hpp"
#include "core/errors.hpp"
#ifdef RINGRT_HAVE_HIP
#include "runtime/hip/hip_device.hpp"
#endif
#include "test/codegen/random_kernel.hpp"

BOOST_AUTO_TEST_SUITE(test_hiprtc)

namespace bdata = boost::unit_test::data;
namespace utf = boost::unit_test;
using namespace ringrt;
using namespace ringrt::codegen;

#ifdef RINGRT_HAVE_HIP

#ifdef RINGRT_TEST_NVIDIA
// Targets this build compiles for and refuses (NVIDIA: the sm_XY NVRTC lists; CUDA 13 dropped sm_50..72).
const std::vector<std::string> kSupported{"sm_90", "sm_90a", "sm_80", "sm_100"};
const std::vector<std::string> kRefused{"sm_50",        "sm_9",   "sm_90b", "sm_",    "gfx90a", "",
                                        "sm_90:xnack+", "sm_090", "sm_80a", "sm_75a", "SM_90"};
const std::vector<std::string> kRefusedCompiles{"sm_50", "gfx90a"};
constexpr std::string_view kTargetOption = "--gpu-architecture=sm_90a";
constexpr std::string_view kNoContraction = "--fmad=false";
constexpr const char* kFeatureArch = "sm_90a";
constexpr const char* kOtherArch = "sm_80";
#else
// Debian's HIP 5.2: gfx942 (ROCm 6.0) and gfx1100 (5.5) are refused before hipRTC, which would abort.
const std::vector<std::string> kSupported{"gfx90a",       "gfx908", "gfx906", "gfx1030", "gfx90a:sramecc+:xnack-",
                                          "gfx908:xnack+"};
const std::vector<std::string> kRefused{
    "gfx942", "gfx940", "gfx1100", "gfx90", "gfx90a:", "gfx90a:bogus+", "gfx90a:xnack", "", "sm_90"};
const std::vector<std::string> kRefusedCompiles{"gfx942", "gfx1100", "gfx90a:bogus+"};
constexpr std::string_view kTargetOption = "--offload-arch=gfx90a:sramecc+:xnack-";
constexpr std::string_view kNoContraction = "-ffp-contract=off";
constexpr const char* kFeatureArch = "gfx90a:sramecc+:xnack-";
constexpr const char* kOtherArch = "gfx1030";
#endif

BOOST_AUTO_TEST_CASE(arch_allow_list) {  // no compiler call: the checks come first
  for (const std::string& ok : kSupported) BOOST_TEST(hiprtc_supports_arch(ok), ok);
  for (const std::string& bad : kRefused) BOOST_TEST(!hiprtc_supports_arch(bad), bad);
}

namespace {

// A fresh cache directory for one test (RINGRT_CACHE_DIR), removed at the end.
struct TempCache {
  std::filesystem::path dir;
  std::string old;
  bool had_old = false;
  TempCache() {
    std::string templ = (std::filesystem::temp_directory_path() / "ringrt-hiprtc-cache-XXXXXX").string();
    BOOST_REQUIRE(::mkdtemp(templ.data()) != nullptr);
    dir = templ;
    if (const char* o = std::getenv("RINGRT_CACHE_DIR")) old = o, had_old = true;
    ::setenv("RINGRT_CACHE_DIR", dir.c_str(), 1);
  }
  ~TempCache() {
    had_old ? ::setenv("RINGRT_CACHE_DIR", old.c_str(), 1) : ::unsetenv("RINGRT_CACHE_DIR");
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

bool is_code_object(const std::string& bytes) {
  return bytes.size() > 4 && bytes.compare(0, 4,
                                           "\x7f"
                                           "ELF") == 0;
}

}  // namespace

// The seeds of test/codegen/test_fuzz.cpp (8 batches of 30), two batches per hipRTC program.
BOOST_DATA_TEST_CASE(random_kernels_compile, bdata::xrange(4), batch) {
  UOpGraph g;
  std::vector<Kernel> kernels;
  for (int i = 0; i < 60; ++i) {
    uint64_t seed = 1000 + static_cast<uint64_t>(batch * 60 + i);
    Kernel k = lower_kernel(test::KernelGen(seed, g).make().ast);
    kernels.push_back(i % 3 == 0 ? with_peer_outputs(std::move(k), 1 + i % 4)
                                 : std::move(k));  // some with peer outputs
  }
  std::string src = render_hip(kernels);
  std::string code;
  try {
    code = HiprtcCompiler(RINGRT_TEST_GPU_ARCH).compile(src, fmt::format("fuzz_batch_{}", batch));
  } catch (const CompileError& e) {
    BOOST_FAIL("seeds " << 1000 + batch * 60 << ".." << 1000 + batch * 60 + 59 << ": " << e.what());
  }
  BOOST_TEST(is_code_object(code));
}

BOOST_AUTO_TEST_CASE(unsupported_targets_are_compile_errors_not_aborts) {
  for (const std::string& arch : kRefusedCompiles) {
    try {
      HiprtcCompiler cc(arch);
      cc.compile("extern \"C\" __global__ void k() {}", "k");
      BOOST_ERROR(arch << ": no CompileError");
    } catch (const CompileError& e) {
      BOOST_TEST(std::string(e.what()).find(arch) != std::string::npos, e.what());
    }
  }
}

BOOST_AUTO_TEST_CASE(target_features_and_cache_hits) {
  TempCache cache;
  UOpGraph g;
  UOp b = new_buffer(DeviceSpec(DeviceTuple{"HIP:0", "HIP:1"}), 800, DType::float16, &g);
  Kernel k = lower_kernel(b.reshape({2, 400}).shard_local(0).alu(Ops::SQRT));
  std::string src = render_hip(k);
  BOOST_TEST(src.find("in0[gid + 400*dnum]") != std::string::npos, src);
  HiprtcCompiler cc(kFeatureArch);
  BOOST_TEST(cc.identity().find(kTargetOption) != std::string::npos, cc.identity());
  BOOST_TEST(cc.identity().find(kNoContraction) != std::string::npos, cc.identity());  // numerics as the interpreter
  CompileStats before = compile_stats();
  BOOST_TEST(is_code_object(cc.compile(src, k.name)));
  BOOST_TEST(compile_stats().compiles == before.compiles + 1);
  BOOST_TEST(is_code_object(HiprtcCompiler(kFeatureArch).compile(src, k.name)));
  BOOST_TEST(compile_stats().compiles == before.compiles + 1);
  BOOST_TEST(compile_stats().cache_hits == before.cache_hits + 1);
  BOOST_TEST(is_code_object(HiprtcCompiler(kOtherArch).compile(src, k.name)));  // another target: its own key
  BOOST_TEST(compile_stats().compiles == before.compiles + 2);
}

// The kernel a queue falls back to where hipStreamWaitValue32 fails (runtime/hip/hip_queue.hpp) compiles
// for the target like every generated kernel.
BOOST_AUTO_TEST_CASE(gate_wait_kernel_compiles) {
  std::string code =
      HiprtcCompiler(RINGRT_TEST_GPU_ARCH).compile(ringrt::hip_launch::gate_wait_source(), "rt_gate_wait");
  BOOST_TEST(is_code_object(code));
}

BOOST_AUTO_TEST_CASE(bad_source_is_a_compile_error_with_the_log) {
  TempCache cache;
  try {
    HiprtcCompiler(RINGRT_TEST_GPU_ARCH)
        .compile("extern \"C\" __global__ void k(float* o) { o[0] = undeclared_x; }", "bad_kernel");
    BOOST_FAIL("no CompileError");
  } catch (const CompileError& e) {
    std::string what = e.what();
    BOOST_TEST(what.find("bad_kernel") != std::string::npos, what);
    BOOST_TEST(what.find("undeclared_x") != std::string::npos, what);  // from the compiler's program log
  }
}

#else  // no HIP: report the hipRTC tests as skipped

BOOST_AUTO_TEST_CASE(hiprtc_compiles, *utf::precondition([](utf::test_unit_id) {
                       boost::test_tools::assertion_result r(false);
                       r.message() << "built without HIP (RINGRT_HAVE_HIP undefined)";
                       return r;
                     })) {}

#endif

BOOST_AUTO_TEST_SUITE_END()
