// ringrt's testing library (installed as <ringrt/testing.hpp>, the CMake target ringrt::testing): Boost.Test,
// ringrt's public API, and what a test of a sharded program needs on top of them:
//   testing/devices.hpp      fixtures of device sets (cpu, HIP, logical HIP, MPI ranks), skipped with the reason
//                            where the devices are missing
//   testing/datasets.hpp     datasets of device counts x algorithms x dtypes x ops x counts for BOOST_DATA_TEST_CASE,
//                            and the settings that force an algorithm
//   testing/collectives.hpp  the collectives, their inputs and the host's answer to each
//   testing/checks.hpp       checks against the interpreter or a host reference, under the rules `ringrt run`
//                            counts #wrong by (runtime/api/reference.hpp), with a report naming the first wrong
//                            element and the schedule
// A whole test program is `#define BOOST_TEST_MODULE name`, this header and the cases: ringrt::testing links
// Boost.Test's shared library, whose main() the header then defines (BOOST_TEST_DYN_LINK). The program's
// JUnit log: `PROGRAM --logger=JUNIT,all,FILE.xml` (or BOOST_TEST_LOGGER=JUNIT,all,FILE.xml). docs/testing.md
// is the design; README "Testing your own programs" the walk-through.
#pragma once

// clang-format off
#include <boost/test/unit_test.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
// clang-format on

#include <ringrt/ringrt.hpp>  // in-tree: the forwarding header in the build tree (CMakeLists.txt)
#include <ringrt/testing/checks.hpp>
#include <ringrt/testing/collectives.hpp>
#include <ringrt/testing/datasets.hpp>
#include <ringrt/testing/devices.hpp>
