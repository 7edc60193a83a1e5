# The test installed_headers (cmake -P): installs this build into a scratch prefix and checks the public API is
# closed. Inputs (-D): BUILD_DIR, WORK_DIR, CXX_COMPILER.
#  1. include/ holds nothing but ringrt/ (a user's include path then has no name ringrt could take from the
#     user's tree, nor the other way round).
#  2. Every installed header but the testing library's (which needs Boost.Test) compiles alone, with include/
#     as the only include folder.
#  3. A use of each internal name (the IR's ops and graph, the loader's and the tests' hooks, the backends'
#     counters, a Schedule's IR, a Trace's state) fails to compile through <ringrt/ringrt.hpp>, while the same
#     program using the public names compiles: the internal names are not reachable.
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix"
                OUTPUT_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed_headers: install failed (${rc})")
endif()
set(_include "${WORK_DIR}/prefix/include")

# 1. only ringrt/
file(GLOB _top RELATIVE "${_include}" "${_include}/*")
if(NOT _top STREQUAL "ringrt")
  message(FATAL_ERROR "installed_headers: include/ holds '${_top}', not ringrt/ alone")
endif()

# Compiles `source` (text) as WORK_DIR/<name>.cpp with include/ alone; its result into out_var (0: compiled).
function(try_compile_text name source out_var)
  file(WRITE "${WORK_DIR}/${name}.cpp" "${source}")
  execute_process(COMMAND "${CXX_COMPILER}" -std=c++20 -fsyntax-only -I "${_include}" "${WORK_DIR}/${name}.cpp"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(${out_var} ${rc} PARENT_SCOPE)
  set(${out_var}_output "${out}" PARENT_SCOPE)
endfunction()

# 2. each header alone
file(GLOB_RECURSE _headers RELATIVE "${_include}" "${_include}/ringrt/*.hpp")
list(FILTER _headers EXCLUDE REGEX "^ringrt/testing")
list(LENGTH _headers _count)
if(_count LESS 10)
  message(FATAL_ERROR "installed_headers: only ${_count} headers installed: ${_headers}")
endif()
set(i 0)
foreach(h IN LISTS _headers)
  try_compile_text("alone_${i}" "#include <${h}>\nint main() { return 0; }\n" rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "installed_headers: <${h}> does not compile alone:\n${rc_output}")
  endif()
  math(EXPR i "${i} + 1")
endforeach()

# 3. internal names unreachable. Each entry: a name, then the statement that uses it (in main, after `s`, a
# Schedule, and `t`, a Trace pointer, are declared).
set(_uses
  "Ops|auto op = ringrt::Ops::ADD@"
  "UOp|ringrt::UOp* u = nullptr@ (void)u->op()@"
  "UOpGraph|ringrt::UOpGraph g@"
  "reset_runtime_params|ringrt::reset_runtime_params()@"
  "runtime_params_generation|(void)ringrt::runtime_params_generation()@"
  "detail::env_values|(void)ringrt::detail::env_values()@"
  "set_param|ringrt::set_param@"
  "dump_params|(void)&ringrt::dump_params@"
  "RINGRT_CHECK_PARAMS|RINGRT_CHECK_PARAMS(RINGRT_RUNTIME_PARAMS)@"
  "MemoryCounter|ringrt::MemoryCounter c@"
  "PerfOptions|ringrt::PerfOptions p@"
  "Device|ringrt::Device* d = nullptr@ (void)d->name()@"
  "TensorAccess|(void)&ringrt::TensorAccess::state@"
  "Schedule::ir|(void)s.ir_@"
  "Trace::State|ringrt::Trace::State* st = nullptr@ (void)st@"
  "codegen::Kernel|ringrt::codegen::Kernel k@")
# `@` stands for `;` (which would split a CMake list).
set(_prefix "#include <ringrt/ringrt.hpp>\nint main() {\n  ringrt::Schedule s@\n  ringrt::Trace* t = nullptr@\n  (void)s@ (void)t@\n")
string(REPLACE "@" ";" _prefix "${_prefix}")
set(_public "${_prefix}  auto op = ringrt::ReduceOp::sum@ (void)op@\n  (void)s.listing@\n  (void)ringrt::current_runtime_params()@\n  return 0@\n}\n")
string(REPLACE "@" ";" _public "${_public}")
try_compile_text(public_names "${_public}" rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed_headers: the public names do not compile:\n${rc_output}")
endif()
set(_reachable "")
set(i 0)
foreach(entry IN LISTS _uses)
  string(FIND "${entry}" "|" bar)
  string(SUBSTRING "${entry}" 0 ${bar} name)
  math(EXPR from "${bar} + 1")
  string(SUBSTRING "${entry}" ${from} -1 use)
  set(_text "${_prefix}  ${use}\n  return 0@\n}\n")
  string(REPLACE "@" ";" _text "${_text}")
  try_compile_text("internal_${i}" "${_text}" rc)
  if(rc EQUAL 0)
    list(APPEND _reachable "${name}")
  endif()
  math(EXPR i "${i} + 1")
endforeach()
if(_reachable)
  message(FATAL_ERROR "installed_headers: internal names reachable through <ringrt/ringrt.hpp>: ${_reachable}")
endif()
message(STATUS "installed_headers: ${_count} headers compile alone; ${i} internal names unreachable")
