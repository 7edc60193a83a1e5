// The GPU compiler (no GPU needed): every kernel of the multi-device test matrices compiles for
// RINGRT_TEST_GPU_ARCH: with hipRTC for gfx90a (hiprtc_test_matrix_hiprtc), with NVRTC for sm_90
// (nvrtc_test_matrix_hiprtc, built against ringrt_nvidia: cmake/RingrtTests.cmake). The matrices: the
// allreduce's (test/support/allreduce_matrix.hpp: ndev x algorithm x dtype x op x numel;
// matrix_kernels_compile) and the other collectives' (test/support/collectives_matrix.hpp: collective x
// algorithm x ndev x dtype x op x shape; collective_kernels_compile, the kernels the allreduce matrix does
// not have). The kernels are the ones realize() compiles (codegen/item_kernel.hpp lower_item), rendered by
// render_hip, one of each form over each matrix (test::kernel_form: the source up to its constants, whose
// values a compiler does not judge; ~3.5x fewer than distinct sources); 40 kernels share one hipRTC program, which
// costs ~14x less than a program each (hipRTC's fixed cost per program dominates these small kernels). Each matrix is
// split into test cases (the samples of one CTest test, one process), so a failure names its part. Without HIP the
// cases are skipped (a false precondition), which CTest reports as skipped.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "codegen/compiler.hpp"
#include "codegen/render.hpp"
#include "core/errors.hpp"
#include "test/support/allreduce_matrix.hpp"
#include "test/support/collectives_matrix.hpp"

BOOST_AUTO_TEST_SUITE(test_matrix_hiprtc)

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
constexpr size_t kParts = 3;            // test cases (of one process, which collects the matrix once): a third each
constexpr size_t kCollectiveParts = 2;  // the collectives matrix's forms: each case compiles a half

bool is_code_object(const std::string& bytes) {
  return bytes.size() > 4 && bytes.compare(0, 4,
                                           "\x7f"
                                           "ELF") == 0;
}

// Compiles ks, kPerProgram kernels per program named <name>_<i>; a program that fails is compiled again
// kernel by kernel, and each failing kernel is reported with its matrix point and source.
void compile_in_batches(const std::vector<test::MatrixKernel>& ks, const std::string& name) {
  HiprtcCompiler cc(RINGRT_TEST_GPU_ARCH);
  for (size_t first = 0; first < ks.size(); first += kPerProgram) {
    std::vector<Kernel> batch;
    for (size_t i = first; i < std::min(ks.size(), first + kPerProgram); ++i) batch.push_back(ks[i].kernel);
    std::string program = fmt::format("{}_{}", name, first / kPerProgram);
    try {
      BOOST_TEST(is_code_object(cc.compile(render_hip(batch), program)), program);
    } catch (const CompileError& e) {
      // find the kernel that fails: compile the batch's kernels one by one
      for (size_t i = first; i < first + batch.size(); ++i) {
        try {
          cc.compile(render_hip(ks[i].kernel), ks[i].kernel.name);
        } catch (const CompileError& one) {
          BOOST_ERROR(ks[i].label << ": " << one.what() << "\n" << render_hip(ks[i].kernel));
        }
      }
      BOOST_ERROR(program << ": " << e.what());
    }
  }
}

// The key the matrices deduplicate by: the kernel's form (compile_in_batches renders the kernels again).
auto render = [](const Kernel& k) { return test::kernel_form(render_hip(k), k.name); };

}  // namespace

BOOST_DATA_TEST_CASE(matrix_kernels_compile, bdata::xrange(kParts), part) {
  size_t items = 0, distinct = 0;
  std::vector<test::MatrixKernel> ks = test::matrix_kernels_part(part, kParts, render, &items, &distinct);
  BOOST_TEST_MESSAGE("matrix: " << items << " kernel items, " << distinct << " kernel forms; part " << part << ": "
                                << ks.size());
  BOOST_TEST_REQUIRE(distinct >= test::kMinMatrixKernels);  // an empty or shrunken matrix checks nothing
  BOOST_TEST_REQUIRE(ks.size() >= distinct / kParts);
  BOOST_TEST_REQUIRE(!ks.empty());
  compile_in_batches(ks, fmt::format("matrix_part{}", part));
}

// The collectives matrix (test/support/collectives_matrix.hpp), in kCollectiveParts cases.
BOOST_DATA_TEST_CASE(collective_kernels_compile, bdata::xrange(kCollectiveParts), part) {
  size_t items = 0, distinct = 0;
  std::vector<test::MatrixKernel> ks =
      test::kernels_part(test::all_collective_kernels(render), part, kCollectiveParts, &items, &distinct);
  BOOST_TEST_MESSAGE("collectives: " << items << " kernel items, " << distinct
                                     << " kernel forms not in the allreduce matrix; part " << part << ": "
                                     << ks.size());
  BOOST_TEST_REQUIRE(distinct > 0u);
  BOOST_TEST_REQUIRE(ks.size() >= distinct / kCollectiveParts);
  BOOST_TEST_REQUIRE(!ks.empty());
  compile_in_batches(ks, fmt::format("collectives_part{}", part));
}

#else  // no HIP: report the matrix compile as skipped

boost::test_tools::assertion_result no_hip(utf::test_unit_id) {
  boost::test_tools::assertion_result r(false);
  r.message() << "built without HIP (RINGRT_HAVE_HIP undefined)";
  return r;
}
BOOST_AUTO_TEST_CASE(matrix_kernels_compile, *utf::precondition(no_hip)) {}
BOOST_AUTO_TEST_CASE(collective_kernels_compile, *utf::precondition(no_hip)) {}

#endif

BOOST_AUTO_TEST_SUITE_END()
