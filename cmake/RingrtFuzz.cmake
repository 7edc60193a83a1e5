# Fuzz targets (test/fuzz/fuzz_*.cpp), each an LLVMFuzzerTestOneInput over one input parser, with seeds
# in test/fuzz/corpus/<name>/ (included from cmake/RingrtTests.cmake).
# - RINGRT_LIBFUZZER=ON (the `fuzz` preset: clang, -fsanitize=fuzzer-no-link,address,undefined): each
#   target links libFuzzer; scripts/fuzz.sh builds them and fuzzes for minutes, coverage-guided.
# - Otherwise (every g++ build): each links test/fuzz/replay_main.cpp, and CTest runs its seeds plus
#   2,000 blind, seeded mutations of them (label `fuzz`, a few seconds each).
option(RINGRT_LIBFUZZER "Link the fuzz targets with libFuzzer (needs clang)" OFF)

file(GLOB RINGRT_FUZZ_SOURCES CONFIGURE_DEPENDS test/fuzz/fuzz_*.cpp)
foreach(src IN LISTS RINGRT_FUZZ_SOURCES)
  get_filename_component(target "${src}" NAME_WE)  # fuzz_config
  string(REGEX REPLACE "^fuzz_" "" corpus "${target}")
  if(RINGRT_LIBFUZZER)
    add_executable(${target} "${src}")
    target_link_options(${target} PRIVATE -fsanitize=fuzzer)
  else()
    add_executable(${target} "${src}" test/fuzz/replay_main.cpp)
  endif()
  target_link_libraries(${target} PRIVATE ringrt_tools)
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/test/fuzz")
  ringrt_warnings(${target})
  set(seeds "${PROJECT_SOURCE_DIR}/test/fuzz/corpus/${corpus}")
  if(corpus STREQUAL "config")
    list(APPEND seeds "${PROJECT_SOURCE_DIR}/configs")  # the shipped configs seed the loader too
  endif()
  if(NOT RINGRT_LIBFUZZER)
    add_test(NAME ${target} COMMAND ${target} --mutations 2000 --seed 1 ${seeds}
             WORKING_DIRECTORY "${PROJECT_BINARY_DIR}/test/fuzz")
    set_tests_properties(${target} PROPERTIES LABELS fuzz TIMEOUT 120 ENVIRONMENT "${RINGRT_TEST_ENVIRONMENT}")
  endif()
endforeach()
