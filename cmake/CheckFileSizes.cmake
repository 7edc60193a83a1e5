# lint_file_sizes: fails when a C++ source or header of ringrt (rewrite/, codegen/, runtime/, testing/, test/,
# scripts/, examples/) is longer than MAX_LINES lines (one file, one concern; split by feature).
#   cmake -DSOURCE_DIR=<repo> -DMAX_LINES=600 -P cmake/CheckFileSizes.cmake
file(GLOB_RECURSE _files RELATIVE "${SOURCE_DIR}"
  "${SOURCE_DIR}/rewrite/*.cpp" "${SOURCE_DIR}/rewrite/*.hpp" "${SOURCE_DIR}/codegen/*.cpp" "${SOURCE_DIR}/codegen/*.hpp"
  "${SOURCE_DIR}/runtime/*.cpp" "${SOURCE_DIR}/runtime/*.hpp" "${SOURCE_DIR}/test/*.cpp" "${SOURCE_DIR}/test/*.hpp"
  "${SOURCE_DIR}/scripts/*.cpp" "${SOURCE_DIR}/scripts/*.hpp" "${SOURCE_DIR}/testing/*.hpp"
  "${SOURCE_DIR}/examples/*.cpp" "${SOURCE_DIR}/examples/*.hpp")
set(_long "")
foreach(f IN LISTS _files)
  file(READ "${SOURCE_DIR}/${f}" _text)
  string(REGEX MATCHALL "\n" _newlines "${_text}")
  list(LENGTH _newlines _n)
  if(_n GREATER MAX_LINES)
    list(APPEND _long "${f} (${_n} lines)")
  endif()
endforeach()
list(LENGTH _files _count)
if(_long)
  list(JOIN _long "\n  " _msg)
  message(FATAL_ERROR "files over ${MAX_LINES} lines:\n  ${_msg}")
endif()
message(STATUS "${_count} files, none over ${MAX_LINES} lines")
