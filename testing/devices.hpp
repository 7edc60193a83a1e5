// Device sets for tests: fixtures that hand a test case its devices (n cpu devices, n HIP devices, n logical
// HIP devices on the GPUs present, the devices of every rank of an mpirun job), and the Boost.Test
// precondition that skips a case, with the reason, where the devices are missing. Part of <ringrt/testing.hpp>.
//
//   RINGRT_DEVICE_TEST_CASE(step_on_two_gpus, ringrt::testing::HipDevices<2>) {
//     ringrt::Tensor x = ringrt::Tensor::from_vector(data, {2, 8}).shard(devices, 0);  // `devices`: the fixture's
//   }
//
// Without two HIP devices the case is skipped: Boost.Test prints "precondition failed: needs 2 HIP devices;
// this process has 0", CTest (ringrt_add_boost_tests) reports the test as skipped. A fixture used without its
// precondition (BOOST_FIXTURE_TEST_CASE) fails the case with the same reason instead.
#pragma once

#include <boost/test/tree/decorator.hpp>
#include <boost/test/unit_test.hpp>
#include <ostream>
#include <ringrt/core/errors.hpp>
#include <ringrt/core/params.hpp>
#include <ringrt/runtime/api/devices.hpp>
#include <string>
#include <vector>

namespace ringrt::testing {

// n devices of one kind.
struct DeviceSet {
  std::string kind = "CPU";  // CPU | HIP
  int count = 1;
  // HIP only: ask for `count` logical devices on the GPUs present (runtime.hip_logical_devices), each with its
  // own streams and memory, so that a multi-device schedule runs on one GPU. The HIP devices are fixed at the
  // first enumeration in a process: where that came first with another count (RINGRT_HIP_LOGICAL_DEVICES, an
  // earlier case), the set is missing (each CTest test is its own process under ringrt_add_boost_tests).
  bool logical = false;

  // "" when this process has the devices, else why not: "needs 2 HIP devices; this process has 0 (no GPU, or
  // ringrt built without HIP)". A logical set installs runtime.hip_logical_devices first, unless it was set.
  std::string missing() const {
    if (kind == "CPU")
      return count >= 1 && count <= 1024 ? "" : "needs 1 to 1024 CPU devices, not " + std::to_string(count);
    if (kind != "HIP") return "no device kind '" + kind + "' (CPU or HIP)";
    if (logical && current_runtime_params().hip_logical == 0) {
      RuntimeParams p = current_runtime_params();
      p.hip_logical = count;
      set_runtime_params(p, {"runtime.hip_logical_devices"});
    }
    size_t have = hip_devices().size();
    bool enough = logical ? have == static_cast<size_t>(count) : have >= static_cast<size_t>(count);
    if (enough) return "";
    std::string what = std::to_string(count) + (logical ? " logical" : "") + " HIP device" + (count == 1 ? "" : "s");
    std::string why = have == 0 ? " (no GPU, or ringrt built without HIP)"
                      : logical ? " (listed before with runtime.hip_logical_devices " +
                                      std::to_string(current_runtime_params().hip_logical) +
                                      ": set RINGRT_HIP_LOGICAL_DEVICES=" + std::to_string(count) + ")"
                                : "";
    return "needs " + what + "; this process has " + std::to_string(have) + why;
  }
  // The devices' names: CPU:0 .. CPU:count-1 (which exist from now on), or the first `count` HIP devices.
  // Throws DeviceError with missing()'s reason when the process does not have them.
  std::vector<std::string> names() const {
    if (std::string why = missing(); !why.empty()) throw DeviceError(why);
    if (kind == "CPU") return cpu_devices(count);
    std::vector<std::string> all = hip_devices();
    return {all.begin(), all.begin() + count};
  }
};

// "4 CPU", "2 HIP", "4 logical HIP": how a sample or a message names the set.
inline std::ostream& operator<<(std::ostream& os, const DeviceSet& s) {
  return os << s.count << (s.logical ? " logical " : " ") << s.kind;
}

// A Boost.Test precondition that holds when this process has `set`: a test unit whose precondition fails is
// skipped, and its reason (DeviceSet::missing) printed.
struct DevicesPresent {
  DeviceSet set;
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    std::string why = set.missing();
    boost::test_tools::assertion_result r(why.empty());
    r.message() << why;
    return r;
  }
};
// The decorator: BOOST_AUTO_TEST_CASE(name, *ringrt::testing::needs({"HIP", 2})), or before a data case
// BOOST_TEST_DECORATOR(*ringrt::testing::needs({"HIP", 2})).
inline boost::unit_test::decorator::precondition needs(DeviceSet set) {
  return boost::unit_test::precondition(DevicesPresent{std::move(set)});
}

// Fixtures (BOOST_FIXTURE_TEST_CASE, or RINGRT_DEVICE_TEST_CASE below with their precondition): `devices`
// holds the names; set() is what the fixture needs.
template <int N>
struct CpuDevices {
  static DeviceSet set() { return {"CPU", N}; }
  std::vector<std::string> devices = set().names();
};
template <int N>
struct HipDevices {
  static DeviceSet set() { return {"HIP", N}; }
  std::vector<std::string> devices = set().names();
};
template <int N>
struct LogicalHipDevices {
  static DeviceSet set() { return {"HIP", N, true}; }
  std::vector<std::string> devices = set().names();
};
// The ranks of an mpirun job, PerRank cpu devices each (one rank without mpirun): `devices` are every rank's,
// "rank<R>/CPU:i" (global_devices, a collective call: every rank builds the fixture in the same order),
// `local` this rank's, `rank` where this process stands.
template <int PerRank>
struct MpiRanks {
  static DeviceSet set() { return {"CPU", PerRank}; }
  RankInfo rank = rank_info();
  std::vector<std::string> local = set().names();
  std::vector<std::string> devices = global_devices(local);
};

}  // namespace ringrt::testing

// A test case with fixture F (one of the above) that is skipped, with the reason, where F's devices are missing.
#define RINGRT_DEVICE_TEST_CASE(name, F) BOOST_FIXTURE_TEST_CASE(name, F, *::ringrt::testing::needs(F::set()))
