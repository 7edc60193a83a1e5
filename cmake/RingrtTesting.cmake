# ringrt_add_boost_tests(<target> [LABELS label...] [ENVIRONMENT VAR=value...] [TIMEOUT seconds]
#                        [WORKING_DIRECTORY dir] [TEST_PREFIX prefix])
#
# Registers each Boost.Test case of the test program <target> (one linked to ringrt::testing) as its own CTest
# test, named <prefix><suite>/<case> (prefix: "<target>." unless given), each sample of a BOOST_DATA_TEST_CASE
# as <suite>/<case>/_<i>; every test gets the LABELS, the ENVIRONMENT (a value may not hold '|' or ';') and the
# TIMEOUT (default 300 s), and runs in WORKING_DIRECTORY (default: the current binary folder). A case Boost.Test
# skips (a failed precondition: ringrt::testing's device fixtures where the devices are missing) or that exits 77
# is reported skipped. The cases are listed after each build (`<target> --list_content`), so a new case is a new
# test without running CMake again. Installed with the package (find_package(ringrt) includes it where Boost.Test
# is found); built on the project's own discovery, cmake/BoostTestDiscovery.cmake, which this file includes.
include("${CMAKE_CURRENT_LIST_DIR}/BoostTestDiscovery.cmake")

function(ringrt_add_boost_tests target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TIMEOUT;WORKING_DIRECTORY;TEST_PREFIX" "LABELS;ENVIRONMENT")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "ringrt_add_boost_tests(${target}): unknown arguments ${arg_UNPARSED_ARGUMENTS} (LABELS, "
                        "ENVIRONMENT, TIMEOUT, WORKING_DIRECTORY, TEST_PREFIX)")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "ringrt_add_boost_tests(${target}): no such target (add_executable it first)")
  endif()
  if(arg_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "ringrt_add_boost_tests(${target}): ${arg_KEYWORDS_MISSING_VALUES} given without a value")
  endif()
  get_target_property(added ${target} RINGRT_BOOST_TESTS)
  if(added)
    message(FATAL_ERROR "ringrt_add_boost_tests(${target}): called twice for one target (its cases are listed once)")
  endif()
  set_property(TARGET ${target} PROPERTY RINGRT_BOOST_TESTS ON)
  if(DEFINED arg_TIMEOUT AND NOT arg_TIMEOUT MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "ringrt_add_boost_tests(${target}): TIMEOUT '${arg_TIMEOUT}' is not a whole number of seconds")
  endif()
  foreach(entry IN LISTS arg_ENVIRONMENT)
    # the generated test file holds each value in a bracket argument and a '|'-separated list
    if(NOT entry MATCHES "^[A-Za-z_][A-Za-z0-9_]*=" OR entry MATCHES "[|\n]|\\\\$|\\]=*\\]")
      message(FATAL_ERROR "ringrt_add_boost_tests(${target}): ENVIRONMENT '${entry}' is not VAR=value (without '|', "
                          "a newline, ']]' or ']=]', or a trailing backslash)")
    endif()
  endforeach()
  foreach(text IN LISTS arg_LABELS arg_TEST_PREFIX)
    if(text MATCHES "[|\n]|\\]=*\\]")
      message(FATAL_ERROR "ringrt_add_boost_tests(${target}): '${text}' holds '|', a newline, ']]' or ']=]'")
    endif()
  endforeach()
  set(forward "")
  foreach(option TIMEOUT WORKING_DIRECTORY TEST_PREFIX)
    if(DEFINED arg_${option})
      list(APPEND forward ${option} "${arg_${option}}")
    endif()
  endforeach()
  boost_test_discover_tests(${target} ${forward} LABELS ${arg_LABELS} ENVIRONMENT ${arg_ENVIRONMENT})
endfunction()
