// The one test case of a gpu test file in a build without HIP: it exits 77, which CTest reports as
// skipped (SKIP_RETURN_CODE, cmake/RingrtTests.cmake). Included once by each test/gpu/*.cpp.
#pragma once

#ifndef RINGRT_HAVE_HIP
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <cstdlib>

BOOST_AUTO_TEST_CASE(hip_backend_not_built) {
  std::fputs("skipped: ringrt was built without HIP (RINGRT_HAVE_HIP is not defined)\n", stderr);
  std::fflush(nullptr);
  std::exit(77);
}
#endif
