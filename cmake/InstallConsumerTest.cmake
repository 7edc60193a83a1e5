# The install_consumer and install_user_tests tests (cmake -P): install this build into a scratch prefix, then
# configure and build a separate project against it with find_package(ringrt), as a user would. Inputs (-D):
# BUILD_DIR, SOURCE_DIR, WORK_DIR, GENERATOR, CXX_COMPILER, BUILD_TYPE, CXX_FLAGS, LINKER_FLAGS (sanitizer flags
# are passed on, because the installed static library was compiled with them), and RUN:
#   consumer  (the default) run the project's program `consumer` (test/consumer/)
#   ctest     run the project's own CTest tests (examples/user-tests/: the testing library's program, one test per
#             Boost.Test case, and its `ringrt regress` folder), with CTest's JUnit file; then the program once with
#             Boost.Test's JUnit log; and check the JUnit files and the regression summary say what passed
cmake_minimum_required(VERSION 3.25)   # policies for this -P script
file(REMOVE_RECURSE "${WORK_DIR}")
function(step)
  message(STATUS "install test: ${ARGV}")
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: step failed (${rc}): ${ARGV}")
  endif()
endfunction()
# `text` (a file's, named `what`) holds `part`.
function(expect what text part)
  string(FIND "${text}" "${part}" at)
  if(at LESS 0)
    message(FATAL_ERROR "install test: ${what} does not hold '${part}':\n${text}")
  endif()
endfunction()

step("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
# Only the public headers are installed: none of the IR, the code generator or the engine.
file(GLOB_RECURSE _internal RELATIVE "${WORK_DIR}/prefix/include/ringrt"
  "${WORK_DIR}/prefix/include/ringrt/codegen/*" "${WORK_DIR}/prefix/include/ringrt/runtime/engine/*"
  "${WORK_DIR}/prefix/include/ringrt/rewrite/uop.hpp" "${WORK_DIR}/prefix/include/ringrt/rewrite/interpreter.hpp")
if(_internal)
  message(FATAL_ERROR "install test: internal headers installed: ${_internal}")
endif()
step("${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
  "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}" "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
  "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}")
step("${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
if(NOT RUN STREQUAL "ctest")
  step("${WORK_DIR}/build/consumer")
  return()
endif()

get_filename_component(_ctest "${CMAKE_COMMAND}" DIRECTORY)
step("${_ctest}/ctest" --test-dir "${WORK_DIR}/build" --output-on-failure -j2 --output-junit "${WORK_DIR}/ctest.xml")
step("${WORK_DIR}/build/train_step_tests" "--logger=JUNIT,all,${WORK_DIR}/boost.xml")
file(READ "${WORK_DIR}/ctest.xml" _ctest_xml)  # CTest's: a test case per CTest test
expect("ctest.xml" "${_ctest_xml}" "tests=\"10\"")
expect("ctest.xml" "${_ctest_xml}" "failures=\"0\"")
expect("ctest.xml" "${_ctest_xml}" "name=\"train_step_tests.gradient_matches_the_host/_5\"")
file(READ "${WORK_DIR}/boost.xml" _boost_xml)  # Boost.Test's: a test case per case, the GPU one skipped here
expect("boost.xml" "${_boost_xml}" "skipped=\"1\" errors=\"0\" failures=\"0\" id=\"0\" name=\"train_step\"")
expect("boost.xml" "${_boost_xml}" "name=\"steps_match_the_interpreter\"")
file(READ "${WORK_DIR}/build/regress.xml" _regress_xml)  # `ringrt regress --junit`: a test case per row
expect("regress.xml" "${_regress_xml}" "<testsuites tests=\"4\" failures=\"0\" errors=\"0\"")
file(READ "${WORK_DIR}/build/regress.md" _summary)
expect("regress.md" "${_summary}" "**Result: OK (exit 0)**: 4 rows: 4 ok")
