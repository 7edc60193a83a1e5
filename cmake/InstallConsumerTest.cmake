# The install_consumer test (cmake -P). Inputs (-D): BUILD_DIR, SOURCE_DIR, WORK_DIR, GENERATOR,
# CXX_COMPILER, BUILD_TYPE, CXX_FLAGS, LINKER_FLAGS. Sanitizer flags are passed on, because the
# installed static library was compiled with them.
cmake_minimum_required(VERSION 3.25)   # policies for this -P script
file(REMOVE_RECURSE "${WORK_DIR}")
function(step)
  message(STATUS "install_consumer: ${ARGV}")
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: step failed (${rc}): ${ARGV}")
  endif()
endfunction()
step("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
# Only the public headers are installed: none of the IR, the code generator or the engine.
file(GLOB_RECURSE _internal RELATIVE "${WORK_DIR}/prefix/include/ringrt"
  "${WORK_DIR}/prefix/include/ringrt/codegen/*" "${WORK_DIR}/prefix/include/ringrt/runtime/engine/*"
  "${WORK_DIR}/prefix/include/ringrt/rewrite/uop.hpp" "${WORK_DIR}/prefix/include/ringrt/rewrite/interpreter.hpp")
if(_internal)
  message(FATAL_ERROR "install_consumer: internal headers installed: ${_internal}")
endif()
step("${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
  "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}" "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
  "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}")
step("${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
step("${WORK_DIR}/build/consumer")
