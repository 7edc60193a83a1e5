// Seeded fuzz test of the whole CPU code path: random kernel ASTs (test/codegen/random_kernel.hpp)
// are lowered, rendered into one translation unit per batch, compiled with the host compiler, run for
// every _device_num, and compared bit for bit with the reference interpreter. A failure names the
// seed, prints the graph, the kernel IR and the C++ source.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "test/codegen/kernel_check.hpp"

BOOST_AUTO_TEST_SUITE(test_fuzz)

namespace bdata = boost::unit_test::data;

constexpr int kBatches = 8;
constexpr int kPerBatch = 30;

BOOST_DATA_TEST_CASE(random_kernels_match_interpreter, bdata::xrange(kBatches), batch) {
  ringrt::test::check_random_batch(static_cast<uint64_t>(1000 + batch * kPerBatch), kPerBatch);
}

BOOST_AUTO_TEST_SUITE_END()
