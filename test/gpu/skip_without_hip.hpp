// RINGRT_SKIP_WITHOUT_HIP(): the one test case of a gpu test file in a build without HIP, placed in the
// file's suite. It exits 77, which CTest reports as skipped (SKIP_RETURN_CODE, cmake/RingrtTests.cmake).
// With HIP it expands to nothing.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <cstdlib>

#ifdef RINGRT_HAVE_HIP
#define RINGRT_SKIP_WITHOUT_HIP()
#else
#define RINGRT_SKIP_WITHOUT_HIP()                                                                   \
  BOOST_AUTO_TEST_CASE(hip_backend_not_built) {                                                     \
    std::fputs("skipped: ringrt was built without HIP (RINGRT_HAVE_HIP is not defined)\n", stderr); \
    std::fflush(nullptr);                                                                           \
    std::exit(77);                                                                                  \
  }
#endif
