// main() of every test program, compiled once into ringrt_test_support (Boost.Test, shared-library
// variant). The test files define no BOOST_TEST_MODULE: they include the Boost.Test headers through
// the precompiled header of cmake/RingrtTests.cmake, which must come first in every file, before any
// macro that would change what the headers generate. The master suite is named after the program.
#include <boost/test/unit_test.hpp>
#include <filesystem>

namespace {

std::string g_program = "ringrt_test";

bool init_unit_test() {
  boost::unit_test::framework::master_test_suite().p_name.value = g_program;
  return true;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc > 0 && argv[0]) g_program = std::filesystem::path(argv[0]).filename().string();
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
