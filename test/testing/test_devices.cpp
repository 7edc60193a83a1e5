// The testing library's device sets (testing/devices.hpp): the cpu fixture, the MPI fixture outside mpirun (one
// rank), and the reasons a set is missing, which skip a case: a HIP set this process cannot have, run as a child
// case whose output must say it was skipped and why.
#include <sys/wait.h>

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "testing/devices.hpp"

BOOST_AUTO_TEST_SUITE(test_devices)

using namespace ringrt;

namespace {

// Runs the disabled case `child` of this case's suite in a process of its own: (exit status, its output).
std::pair<int, std::string> run_child(const std::string& child) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string path = boost::unit_test::framework::current_test_case().full_name();
  path = path.substr(0, path.rfind('/') + 1) + child;
  std::string cmd = "'" + self + "' --run_test=" + path + " --log_level=all --color_output=no 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe.get())) > 0;) out.append(buf, n);
  int raw = pclose(pipe.release());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, out};
}

}  // namespace

RINGRT_DEVICE_TEST_CASE(cpu_devices_fixture, testing::CpuDevices<3>) {
  BOOST_TEST(devices == (std::vector<std::string>{"CPU:0", "CPU:1", "CPU:2"}));
  BOOST_TEST(testing::CpuDevices<3>::set().missing().empty());
}

// Without mpirun: one rank, its devices the job's.
RINGRT_DEVICE_TEST_CASE(mpi_fixture_outside_mpirun, testing::MpiRanks<2>) {
  BOOST_TEST(rank.ranks == 1);
  BOOST_TEST(rank.rank == 0);
  BOOST_TEST(local == (std::vector<std::string>{"CPU:0", "CPU:1"}));
  BOOST_TEST(devices == local);
}

// Why a set is missing, in the words a skipped case prints; names() throws the same.
BOOST_AUTO_TEST_CASE(a_missing_set_says_why) {
  size_t have = hip_devices().size();
  testing::DeviceSet many{"HIP", 1000};
  std::string why = many.missing();
  BOOST_TEST(why.find("needs 1000 HIP devices; this process has " + std::to_string(have)) == 0, why);
  if (have == 0) BOOST_TEST(why.find("(no GPU, or ringrt built without HIP)") != std::string::npos, why);
  BOOST_CHECK_EXCEPTION(many.names(), DeviceError, [&](const DeviceError& e) { return e.what() == why; });
  testing::DeviceSet tpu{"TPU", 2}, none{"CPU", 0};
  BOOST_TEST(tpu.missing() == "no device kind 'TPU' (CPU or HIP)");
  BOOST_TEST(none.missing() == "needs 1 to 1024 CPU devices, not 0");
  boost::test_tools::assertion_result present = testing::DevicesPresent{many}(0);
  BOOST_TEST(!present);
  BOOST_TEST(present.message().str() == why);
  testing::DevicesPresent two_cpus{{"CPU", 2}};
  BOOST_TEST(static_cast<bool>(two_cpus(0)));
  std::ostringstream name;
  name << many << ", " << testing::DeviceSet{"HIP", 4, true};
  BOOST_TEST(name.str() == "1000 HIP, 4 logical HIP");
}

// A case on more HIP devices than any machine has, with RINGRT_DEVICE_TEST_CASE's precondition: skipped, with the
// reason. Disabled: the next case runs it in a child process.
BOOST_FIXTURE_TEST_CASE(child_needs_1000_hip_devices, testing::HipDevices<1000>,
                        *testing::needs(testing::HipDevices<1000>::set()) * boost::unit_test::disabled()) {
  BOOST_ERROR("ran without its devices: " << devices.size());
}

BOOST_AUTO_TEST_CASE(a_case_without_its_devices_is_skipped_with_the_reason) {
  auto [status, out] = run_child("child_needs_1000_hip_devices");
  BOOST_TEST(status == 0, out);
  BOOST_TEST(out.find("precondition failed: needs 1000 HIP devices; this process has") != std::string::npos, out);
  BOOST_TEST(out.find("ran without its devices") == std::string::npos, out);
}

BOOST_AUTO_TEST_SUITE_END()
