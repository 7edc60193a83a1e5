// The GPU compiler (no GPU needed): every kernel of the multi-device allreduce test matrix (test/support/
// allreduce_matrix.hpp: ndev x algorithm x dtype x op x numel) compiles for RINGRT_TEST_GPU_ARCH: with
// hipRTC for gfx90a (hiprtc_test_matrix_hiprtc), with NVRTC for sm_90 (nvrtc_test_matrix_hiprtc, built
// against ringrt_nvidia: cmake/RingrtTests.cmake). The kernels are
// the ones realize() compiles (codegen/item_kernel.hpp lower_item), rendered by render_hip and
// deduplicated by source over the whole matrix; 40 kernels share one hipRTC program, which costs
// ~14x less than a program each (hipRTC's fixed cost per program dominates these small kernels). Six
// test cases each compile a sixth, so `ctest -j` spreads them. Without HIP the case is skipped (a false
// precondition), which CTest reports as skipped.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "codegen/compiler.hpp"
#include "codegen/render.hpp"
#include "rewrite/errors.hpp"
#include "test/support/allreduce_matrix.hpp"

namespace bdata = boost::unit_test::data;
namespace utf = boost::unit_test;
using namespace ringrt;
using namespace ringrt::codegen;

#ifdef RINGRT_HAVE_HIP

namespace {

// Kernels per hipRTC program. Measured on a 2-core VM (Debian 12, ROCm 5.2 hipRTC, gfx90a), 120 matrix
// kernels: one per program 29 s of CPU, 10 per program 4.1 s, 40 per program 2.1 s, 120 in one 2.5 s:
// a program costs ~0.24 s, a kernel ~0.015 s.
constexpr size_t kPerProgram = 40;
constexpr size_t kParts = 6;  // test cases; each collects the whole matrix (~2.5 s) and compiles a sixth

bool is_code_object(const std::string& bytes) {
  return bytes.size() > 4 && bytes.compare(0, 4,
                                           "\x7f"
                                           "ELF") == 0;
}

}  // namespace

BOOST_DATA_TEST_CASE(matrix_kernels_compile, bdata::xrange(kParts), part) {
  size_t items = 0, distinct = 0;
  auto render = [](const Kernel& k) { return render_hip(k); };
  std::vector<test::MatrixKernel> ks = test::matrix_kernels_part(part, kParts, render, &items, &distinct);
  BOOST_TEST_MESSAGE("matrix: " << items << " kernel items, " << distinct << " distinct kernels; part " << part << ": "
                                << ks.size());
  BOOST_TEST_REQUIRE(ks.size() >= distinct / kParts);
  HiprtcCompiler cc(RINGRT_TEST_GPU_ARCH);
  for (size_t first = 0; first < ks.size(); first += kPerProgram) {
    std::vector<Kernel> batch;
    for (size_t i = first; i < std::min(ks.size(), first + kPerProgram); ++i) batch.push_back(ks[i].kernel);
    std::string name = fmt::format("matrix_part{}_{}", part, first / kPerProgram);
    try {
      BOOST_TEST(is_code_object(cc.compile(render_hip(batch), name)), name);
    } catch (const CompileError& e) {
      // find the kernel that fails: compile the batch's kernels one by one
      for (size_t i = first; i < first + batch.size(); ++i) {
        try {
          cc.compile(render_hip(ks[i].kernel), ks[i].kernel.name);
        } catch (const CompileError& one) {
          BOOST_ERROR(ks[i].label << ": " << one.what() << "\n" << render_hip(ks[i].kernel));
        }
      }
      BOOST_ERROR(name << ": " << e.what());
    }
  }
}

#else  // no HIP: report the matrix compile as skipped

BOOST_AUTO_TEST_CASE(matrix_kernels_compile, *utf::precondition([](utf::test_unit_id) {
                       boost::test_tools::assertion_result r(false);
                       r.message() << "built without HIP (RINGRT_HAVE_HIP undefined)";
                       return r;
                     })) {}

#endif
