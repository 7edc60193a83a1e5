# boost_test_discover_tests(<target> [LABELS l...] [TEST_PREFIX p] [FILE_SUITES file...] [TIMEOUT s] [WORKING_DIRECTORY d]
#                           [ENVIRONMENT VAR=value...] [GROUP_DATA_CASES regex] [COSTS name=cost...])
#
# Registers one CTest test per Boost.Test case of <target>, like gtest_discover_tests. The cases
# are listed at build time: a POST_BUILD step runs `<exe> --list_content` and writes
# <target>_tests.cmake, which ctest reads through the directory's TEST_INCLUDE_FILES, so a new
# case appears in ctest after a rebuild, without re-running CMake.
#
# Test names are `<prefix><suite>/<case>` (prefix defaults to `<target>.`), nested suites included;
# each sample of a BOOST_DATA_TEST_CASE is its own test, `<suite>/<case>/_<i>`, run with
# `--run_test=<suite>/<case>/_<i>`, except a data case whose `<suite>/<case>` path matches the
# GROUP_DATA_CASES regular expression: it is one test, `<suite>/<case>`, all its samples in one
# process (for sweeps whose samples share expensive set-up, such as a matrix built once per process).
# FILE_SUITES <source files...>: the program's top-level suites are its source files' (each file's cases in
# a suite named for the file: test/x/test_y.cpp -> test_y), and a test is named `<prefix><file suite>.<suite>/<case>`, as if
# each file were a program of its own; GROUP_DATA_CASES then matches the path below the file suite. A
# case outside any suite, or a top-level suite not in the list, fails the listing.
# Cases disabled in the source are registered DISABLED. COSTS sets the COST of the tests it names
# (full test names), which ctest -j starts in descending COST while it has no timings of its own.
# A case is reported skipped when it exits 77, or when Boost.Test skips it (a false
# precondition / enable_if): see _boost_test_skip_regex in the script.
set(_BOOST_TEST_DISCOVERY_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/BoostTestDiscoveryScript.cmake")

function(boost_test_discover_tests target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TEST_PREFIX;TIMEOUT;WORKING_DIRECTORY;GROUP_DATA_CASES"
                        "LABELS;ENVIRONMENT;COSTS;FILE_SUITES")
  if(NOT DEFINED arg_TEST_PREFIX)
    set(arg_TEST_PREFIX "${target}.")
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)
  endif()
  if(NOT arg_WORKING_DIRECTORY)
    set(arg_WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
  endif()
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/boost_tests")
  set(ctest_file "${dir}/${target}_tests.cmake")
  set(include_file "${dir}/${target}_include.cmake")

  # Lists cannot pass through a custom command's -D arguments (";" splits them): join with "|".
  string(JOIN "|" labels ${arg_LABELS})
  string(JOIN "|" environment ${arg_ENVIRONMENT})
  string(JOIN "|" costs ${arg_COSTS})
  set(file_suites "")
  foreach(file IN LISTS arg_FILE_SUITES)
    get_filename_component(suite "${file}" NAME_WE)
    list(APPEND file_suites "${suite}")
  endforeach()
  string(JOIN "|" file_suites ${file_suites})
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}"
      "-DTEST_EXECUTABLE=$<TARGET_FILE:${target}>" "-DTEST_PREFIX=${arg_TEST_PREFIX}"
      "-DTEST_FILE_SUITES=${file_suites}"
      "-DTEST_LABELS=${labels}" "-DTEST_ENVIRONMENT=${environment}" "-DTEST_TIMEOUT=${arg_TIMEOUT}"
      "-DTEST_WORKING_DIRECTORY=${arg_WORKING_DIRECTORY}" "-DCTEST_FILE=${ctest_file}"
      "-DTEST_GROUP_DATA_CASES=${arg_GROUP_DATA_CASES}" "-DTEST_COSTS=${costs}"
      -P "${_BOOST_TEST_DISCOVERY_SCRIPT}"
    BYPRODUCTS "${ctest_file}"
    COMMENT "Listing Boost.Test cases of ${target}"
    VERBATIM)

  # Until the target is built, ctest shows one placeholder test that fails, saying why.
  file(WRITE "${include_file}"
    "if(EXISTS [==[${ctest_file}]==])\n"
    "  include([==[${ctest_file}]==])\n"
    "else()\n"
    "  add_test([==[${target}_NOT_BUILT]==] [==[${target}_NOT_BUILT]==])\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
