# Test programs and their CTest registration (included from the top-level CMakeLists.txt).
#
# - One program per test folder, <folder>_tests ('/' -> '_'): test/runtime/api/test_*.cpp ->
#   runtime_api_tests. Each test file puts its cases in a suite named for the file
#   (BOOST_AUTO_TEST_SUITE(test_views) after its #includes, BOOST_AUTO_TEST_SUITE_END() at its end),
#   which is also the file's own C++ namespace. The sweeps (RINGRT_TEST_GROUPS, RINGRT_TEST_KERNELS_AT_O3)
#   are programs of their own, <folder>_<file>. main() is test/support/test_main.cpp (in
#   ringrt_test_support), and the Boost.Test headers come precompiled: a test file defines no
#   BOOST_TEST_MODULE.
# - A program's files compile as unity batches (ringrt_unity_batches, CMakeLists.txt: RINGRT_UNITY_BATCH
#   files per translation unit); the file suites keep the files' names apart.
# - One CTest test per Boost.Test case, named as if each file were a program: <folder>_<file>.<suite>/
#   <case>[/_<sample>] (test/runtime/api/test_views.cpp's case c -> runtime_api_test_views.c); the data
#   cases listed in RINGRT_TEST_GROUPS are one test each, all samples in one process.
# - Label from the first directory under test/: integration, hiprtc, gpu, mpi name themselves;
#   anything else is `unit`. Select with `ctest -L unit` or a test preset's filter.
# - test/support/*.cpp is compiled once into ringrt_test_support, linked to every test.
# - Exit code 77 means skipped (e.g. a HIP test when RINGRT_HAVE_HIP is not defined).
include(BoostTestDiscovery)

set(RINGRT_TEST_LABEL_DIRS integration hiprtc gpu mpi)
# Extra VAR=value settings for every test, e.g. a sanitizer's options (the asan and tsan presets set
# it): in the tests' own environment, so that a plain `ctest --test-dir <build>` applies them too.
set(RINGRT_TEST_ENVIRONMENT "" CACHE STRING "VAR=value;... added to the environment of every test")

# Data cases whose samples run in one process, as one CTest test: pairs of <target> and a regex of
# `<suite>/<case>` paths. For sweeps whose samples share expensive set-up (the allreduce kernel matrix
# is collected once per process: test/support/allreduce_matrix.hpp) or are many cheap processes; the
# samples still report separately in the test's output, and `<exe> --run_test=<case>/_<i>` runs one.
set(RINGRT_TEST_GROUPS
  codegen_test_matrix_kernels "^matrix_kernels_match_interpreter$"
  hiprtc_test_matrix_hiprtc "^(matrix|collective)_kernels_compile$"
  rewrite_rules_test_allreduce "^(matrix|runtime_matches_interpreter)$")

# Seconds the slowest tests take on a cold run (2 cores, empty kernel cache), as their CTest COST:
# `ctest -j` starts tests in descending COST until it has timings of its own (a fresh build tree has
# none), so these start first instead of where they are listed, and the last minutes are not one long
# test on one core while the other idles.
set(RINGRT_TEST_COSTS
  codegen_test_matrix_kernels.matrix_kernels_match_interpreter=30
  rewrite_rules_test_allreduce.runtime_matches_interpreter=30
  hiprtc_test_matrix_hiprtc.matrix_kernels_compile=12
  hiprtc_test_matrix_hiprtc.collective_kernels_compile=6
  integration_test_cli.bad_input_found_by_the_breaker=8
  integration_test_cli.every_config_runs_with_no_wrong_values/_0=4)

# Kernel optimization level: the tests compile their kernels at -O1 (the tunable runtime.kernel_opt,
# RINGRT_KERNEL_OPT), which halves the cold suite's compile time; values do not depend on it
# (-ffp-contract=off, no fast-math). These test programs, the ones that sweep every kernel form against
# the interpreter, keep the default -O3 that users run, so the optimized code stays checked too (the
# allreduce matrix's kernels: -O3 for the first of each form, test/codegen/test_matrix_kernels.cpp).
set(RINGRT_TEST_KERNELS_AT_O3 codegen_test_matrix_kernels codegen_test_fuzz rewrite_rules_test_allreduce)

# Options every test target gets, through INTERFACE libraries: ringrt_test_flags (Boost.Test, flags,
# linker), and ringrt_test_options = those + the library under test, ringrt, with its GPU platform. The
# nvrtc tests below take the flags with ringrt_nvidia instead.
add_library(ringrt_test_flags INTERFACE)
target_link_libraries(ringrt_test_flags INTERFACE Boost::unit_test_framework)
target_compile_definitions(ringrt_test_flags INTERFACE
  BOOST_TEST_DYN_LINK RINGRT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")   # for configs/, reference/
add_library(ringrt_test_options INTERFACE)
target_link_libraries(ringrt_test_options INTERFACE ringrt_internal ringrt_test_flags)
if(RINGRT_WITH_HIP)
  ringrt_gpu_test_options(ringrt_test_options INTERFACE ${RINGRT_GPU_PLATFORM})  # tests may call the platform
endif()
# Test code builds at -O0 without debug information where the build type says -O2 -g (RelWithDebInfo:
# the dev and tsan presets): the test sources are most of the build, their template-heavy Boost.Test code
# does little work at run time, and a failure names its file:line through Boost.Test's own macros. The
# test objects of a clean dev build on 2 cores: 320 CPU s at -O1 -g1, 233 at -O0 -g0. The library under
# test keeps the build type's flags; step through a test in the asan preset (Debug, -g).
target_compile_options(ringrt_test_flags INTERFACE $<$<CONFIG:RelWithDebInfo>:-O0 -g0>)
# g++ 12 reports false -Warray-bounds and -Wstringop-overflow inside std::string's char_traits (GCC bug
# 105329) in optimized test code with the precompiled header (the release preset); the library keeps them.
target_compile_options(ringrt_test_flags INTERFACE $<$<CXX_COMPILER_ID:GNU>:-Wno-array-bounds -Wno-stringop-overflow>)
# lld (else gold) links the test programs faster than ld.bfd; each links the whole static library.
include(CheckLinkerFlag)
foreach(linker lld gold)
  check_linker_flag(CXX "-fuse-ld=${linker}" RINGRT_TEST_LINKER_${linker})
  if(RINGRT_TEST_LINKER_${linker})
    target_link_options(ringrt_test_flags INTERFACE "-fuse-ld=${linker}")
    break()
  endif()
endforeach()
if(rapidcheck_FOUND)
  target_link_libraries(ringrt_test_flags INTERFACE rapidcheck rapidcheck_boost_test)
  target_compile_definitions(ringrt_test_flags INTERFACE RINGRT_HAVE_RAPIDCHECK=1)
endif()

file(GLOB RINGRT_TEST_SUPPORT_SOURCES CONFIGURE_DEPENDS test/support/*.cpp)
add_library(ringrt_test_support STATIC ${RINGRT_TEST_SUPPORT_SOURCES})
target_link_libraries(ringrt_test_support PUBLIC ringrt_test_options)
ringrt_warnings(ringrt_test_support)
# The Boost.Test, {fmt} and standard headers, precompiled once here and reused by every test program:
# parsing Boost.Test's was about 3 of the 7 CPU seconds of a typical test file; {fmt} and the standard
# headers saved another 11 CPU seconds over the 66 files (measured before the unity batches). Every target
# that reuses it has the same compile options (ringrt_test_options, ringrt_warnings; a warning flag such as
# ringrt_unity_batches' does not invalidate it); defines that only some add
# (RINGRT_CLI_PATH) do not appear in these headers, so the precompiled header stays valid for them.
target_precompile_headers(ringrt_test_support PRIVATE
  <boost/test/unit_test.hpp> <boost/test/data/test_case.hpp> <boost/test/data/monomorphic.hpp> <fmt/format.h>
  <fmt/ranges.h> <algorithm> <chrono> <cmath> <cstring> <filesystem> <functional> <map> <memory> <mutex> <optional>
  <random> <set> <sstream> <string> <string_view> <thread> <unordered_map> <variant> <vector>)

# ringrt_add_test_program(<target> <folder> <sources...>): one test program of test/<folder>, its
# tests named <folder>_<file>.<case> (FILE_SUITES), labelled by the folder.
function(ringrt_add_test_program target dir)
  string(REPLACE "/" "_" prefix "${dir}")
  string(REGEX REPLACE "/.*" "" top "${dir}")
  set(label unit)
  if(top IN_LIST RINGRT_TEST_LABEL_DIRS)
    set(label "${top}")
  endif()
  add_executable(${target} ${ARGN})
  target_link_libraries(${target} PRIVATE ringrt_test_options ringrt_test_support)
  target_precompile_headers(${target} REUSE_FROM ringrt_test_support)
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/test/${dir}")
  ringrt_unity_batches(${target} ${ARGN})
  ringrt_warnings(${target})
  if(label STREQUAL "integration")
    # Integration tests run the `ringrt` program as a subprocess and parse its JSON output.
    target_compile_definitions(${target} PRIVATE RINGRT_CLI_PATH="$<TARGET_FILE:ringrt_cli>")
    target_link_libraries(${target} PRIVATE ringrt_tools nlohmann_json::nlohmann_json)
    add_dependencies(${target} ringrt_cli)
  endif()
  set(groups "")
  list(FIND RINGRT_TEST_GROUPS "${target}" at)
  if(at GREATER_EQUAL 0)
    math(EXPR at "${at} + 1")
    list(GET RINGRT_TEST_GROUPS ${at} groups)
  endif()
  set(kernel_opt "RINGRT_KERNEL_OPT=1")
  if(target IN_LIST RINGRT_TEST_KERNELS_AT_O3)
    set(kernel_opt "")
  endif()
  # XDG_CACHE_HOME: the compile cache of test runs stays inside this build tree.
  boost_test_discover_tests(${target} FILE_SUITES ${ARGN} TEST_PREFIX "${prefix}_" LABELS ${label}
    GROUP_DATA_CASES "${groups}" COSTS ${RINGRT_TEST_COSTS} WORKING_DIRECTORY "${PROJECT_BINARY_DIR}/test/${dir}"
    ENVIRONMENT "XDG_CACHE_HOME=${PROJECT_BINARY_DIR}/test-cache" ${kernel_opt} ${RINGRT_TEST_ENVIRONMENT})
endfunction()

file(GLOB_RECURSE RINGRT_TEST_SOURCES CONFIGURE_DEPENDS RELATIVE "${PROJECT_SOURCE_DIR}/test" test/test_*.cpp)
list(FILTER RINGRT_TEST_SOURCES EXCLUDE REGEX "^(support|consumer|mpi)/")  # mpi/: below, under mpirun
set(RINGRT_TEST_FOLDERS "")
foreach(src IN LISTS RINGRT_TEST_SOURCES)
  get_filename_component(dir "${src}" DIRECTORY)
  get_filename_component(stem "${src}" NAME_WE)
  if(NOT dir)
    message(FATAL_ERROR "test/${src}: test files live in a folder under test/ (their program is the folder's)")
  endif()
  string(REPLACE "/" "_" prefix "${dir}")
  if("${prefix}_${stem}" IN_LIST RINGRT_TEST_GROUPS OR "${prefix}_${stem}" IN_LIST RINGRT_TEST_KERNELS_AT_O3)
    ringrt_add_test_program(${prefix}_${stem} ${dir} test/${src})  # a sweep: a program of its own
  else()
    list(APPEND RINGRT_TEST_FOLDERS "${dir}")
    list(APPEND RINGRT_TEST_SOURCES_${prefix} test/${src})
  endif()
endforeach()
list(REMOVE_DUPLICATES RINGRT_TEST_FOLDERS)
foreach(dir IN LISTS RINGRT_TEST_FOLDERS)
  string(REPLACE "/" "_" prefix "${dir}")
  ringrt_add_test_program(${prefix}_tests ${dir} ${RINGRT_TEST_SOURCES_${prefix}})
endforeach()

# nvrtc: the GPU compiler and device tests built again against ringrt_nvidia (cmake/RingrtGpu.cmake), so
# CI compiles every kernel with NVRTC for sm_90 and links the nvidia hip backend with no GPU and no second
# full build (with no GPU the device tests skip). Their own main (not ringrt_test_support's library,
# which links ringrt) and no precompiled header (its HIP defines differ).
if(TARGET ringrt_nvidia)
  # the matrix (grouped, a program of its own) and the rest, as for the amd flavor's folders
  foreach(program IN ITEMS "nvrtc_test_matrix_hiprtc;hiprtc/test_matrix_hiprtc.cpp"
                           "nvrtc_tests;hiprtc/test_hiprtc.cpp;hiprtc/test_stream_kernels.cpp;gpu/test_hip_device.cpp;gpu/test_hip_streams.cpp;gpu/test_hip_collectives.cpp;gpu/test_hip_queue.cpp;gpu/test_hip_async.cpp;gpu/test_hip_graph.cpp;gpu/test_hip_fused.cpp")
    list(POP_FRONT program target)
    list(TRANSFORM program PREPEND "test/")
    add_executable(${target} ${program} test/support/test_main.cpp)
    set_source_files_properties(test/support/test_main.cpp PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    ringrt_unity_batches(${target} ${program})
    target_link_libraries(${target} PRIVATE ringrt_nvidia ringrt_test_flags)
    ringrt_gpu_test_options(${target} PRIVATE nvidia)
    set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/test/nvrtc")
    ringrt_warnings(${target})
    boost_test_discover_tests(${target} FILE_SUITES ${program} TEST_PREFIX "nvrtc_" LABELS nvrtc
      GROUP_DATA_CASES "^(matrix|collective)_kernels_compile$" COSTS ${RINGRT_TEST_COSTS}
      WORKING_DIRECTORY "${PROJECT_BINARY_DIR}/test/nvrtc"
      ENVIRONMENT "XDG_CACHE_HOME=${PROJECT_BINARY_DIR}/test-cache" ${RINGRT_TEST_ENVIRONMENT})
  endforeach()
elseif(RINGRT_GPU_PLATFORM STREQUAL "amd")
  message(STATUS "ringrt: no nvrtc tests: the CUDA toolkit was not found (CUDA_HOME, or nvcc on PATH)")
endif()

# simgpu: the hip backend's tests (test/gpu/) built again against ringrt_simgpu, the simulated GPU runtime
# (runtime/hip/sim/), with two simulated GPUs: every GPU case runs in CI, on host threads. As the nvrtc
# tests: their own main, no precompiled header.
file(GLOB _sim_sources CONFIGURE_DEPENDS RELATIVE "${PROJECT_SOURCE_DIR}" test/gpu/test_*.cpp)
add_executable(simgpu_tests ${_sim_sources} test/support/test_main.cpp)
set_source_files_properties(test/support/test_main.cpp PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
ringrt_unity_batches(simgpu_tests ${_sim_sources})
target_link_libraries(simgpu_tests PRIVATE ringrt_simgpu ringrt_test_flags)
ringrt_gpu_test_options(simgpu_tests PRIVATE sim)
set_target_properties(simgpu_tests PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/test/simgpu")
ringrt_warnings(simgpu_tests)
boost_test_discover_tests(simgpu_tests FILE_SUITES ${_sim_sources} TEST_PREFIX "simgpu_" LABELS simgpu
  COSTS ${RINGRT_TEST_COSTS} WORKING_DIRECTORY "${PROJECT_BINARY_DIR}/test/simgpu"
  ENVIRONMENT "XDG_CACHE_HOME=${PROJECT_BINARY_DIR}/test-cache" RINGRT_SIM_GPUS=2 RINGRT_KERNEL_OPT=1
  ${RINGRT_TEST_ENVIRONMENT})

# The GPU check's programs on the simulated GPUs (label simgpu): ringrt_gpu_floor_sim (scripts/bench/gpu/floor.cpp)
# and ringrt_sim (the `ringrt` program: ringrt_cli's objects, CMakeLists.txt) linked with ringrt_simgpu, run as
# scripts/gpu-check.sh runs them, at small sizes. Each test asserts the exit status and the output (a
# PASS_REGULAR_EXPRESSION alone would ignore the status). Their files go to test/simgpu/check/, where
# simgpu_gpu_ratio reads them (CTest fixtures: running it alone runs them first).
add_executable(ringrt_gpu_floor_sim scripts/bench/gpu/floor.cpp)
target_link_libraries(ringrt_gpu_floor_sim PRIVATE ringrt_simgpu)
ringrt_gpu_client(ringrt_gpu_floor_sim PRIVATE sim)
ringrt_warnings(ringrt_gpu_floor_sim)
add_executable(ringrt_sim $<TARGET_OBJECTS:ringrt_cli_main> $<TARGET_OBJECTS:ringrt_tools_objects>)
set_target_properties(ringrt_sim PROPERTIES LINKER_LANGUAGE CXX)
target_link_libraries(ringrt_sim PRIVATE ringrt_simgpu CLI11::CLI11 yaml-cpp nlohmann_json::nlohmann_json)
set(_check "${PROJECT_BINARY_DIR}/test/simgpu/check")
file(MAKE_DIRECTORY "${_check}")
set(_sim_env "XDG_CACHE_HOME=${PROJECT_BINARY_DIR}/test-cache" RINGRT_KERNEL_OPT=1 ${RINGRT_TEST_ENVIRONMENT})
# the floor on 1 simulated GPU, 4 logical devices: 1 KiB, 64 KiB and 1036 B (a float tail after the
# vectors); every fused result checked (exit 0), a bound, a fused and a fused_graph row per size, times > 0
add_test(NAME simgpu_floor COMMAND bash -c "\"$1\" 1048576 2 4 -- 1024 1036 65536 >\"$2\"; rc=$?; cat \"$2\"; \
test $rc -eq 0 && awk -F, '$1 == \"floor\" && $3 == 4 && $5 > 0 {n[$2]++} END {exit !(n[\"bound\"] == 3 && \
n[\"fused\"] == 3 && n[\"fused_graph\"] == 3)}' \"$2\"" bash $<TARGET_FILE:ringrt_gpu_floor_sim> "${_check}/floor.txt")
set_tests_properties(simgpu_floor PROPERTIES LABELS simgpu TIMEOUT 300 FIXTURES_SETUP simgpu_check
  ENVIRONMENT "${_sim_env};RINGRT_SIM_GPUS=1")
# ringrt_sim_run(<name> <environment> <arguments of `ringrt_sim run configs/gpu.yaml --set backend=hip`>...):
# a test that the run exits 0 with every value right (#wrong in all: 0), timed both ways.
function(ringrt_sim_run name env)
  add_test(NAME simgpu_cli.${name} COMMAND bash -c "out=$(\"$@\" 2>&1); rc=$?; printf '%s\\n' \"$out\"; \
test $rc -eq 0 && printf '%s\\n' \"$out\" | grep -q '^# #wrong in all: 0 OK$'" bash $<TARGET_FILE:ringrt_sim> run
    "${PROJECT_SOURCE_DIR}/configs/gpu.yaml" --set backend=hip --set experiment.timing=both --set experiment.warmup=1
    --set experiment.iters=2 --set "experiment.sizes={min: 1KiB, max: 64KiB, factor: 64}" ${ARGN})
  set_tests_properties(simgpu_cli.${name} PROPERTIES LABELS simgpu TIMEOUT 300 ENVIRONMENT "${_sim_env};${env}")
endfunction()
# the allreduce sweeps of the GPU check: each algorithm on 4 logical devices of 1 simulated GPU, its CSV kept
foreach(algo naive ring all2all auto)
  set(_sets "")
  if(algo STREQUAL "naive")
    set(_sets --set allreduce.ring=0 --set allreduce.all2all=0)
  elseif(algo STREQUAL "ring")
    set(_sets --set allreduce.ring=2 --set allreduce.all2all=0)
  elseif(algo STREQUAL "all2all")
    set(_sets --set allreduce.all2all=2)
  endif()
  ringrt_sim_run(allreduce_${algo} "RINGRT_SIM_GPUS=1;RINGRT_HIP_LOGICAL_DEVICES=4" ${_sets} --csv
                 "${_check}/sweep-${algo}.csv")
  set_tests_properties(simgpu_cli.allreduce_${algo} PROPERTIES FIXTURES_SETUP simgpu_check)
endforeach()
# 2 simulated GPUs, one device each: copies between GPUs (peer access)
ringrt_sim_run(allreduce_2gpus "RINGRT_SIM_GPUS=2" --set devices.count=2)
# every other collective once, with the default algorithm choice
foreach(coll reduce_scatter allgather broadcast reduce alltoall)
  ringrt_sim_run(${coll} "RINGRT_SIM_GPUS=1;RINGRT_HIP_LOGICAL_DEVICES=4" --set experiment.collective=${coll})
endforeach()
# scripts/gpu-ratio.sh on what the tests above wrote: a ratio for every size of every sweep, none missing
add_test(NAME simgpu_gpu_ratio COMMAND bash -c "out=$(\"$1\" \"$2/floor.txt\" \"$2\"/sweep-*.csv); rc=$?; \
printf '%s\\n' \"$out\"; test $rc -eq 0 && printf '%s\\n' \"$out\" | awk 'NR > 1 && NF == 12 && $9 + 0 > 0 && \
$10 + 0 > 0 && $11 + 0 > 0 && $12 + 0 > 0 {n++} END {exit n != 8}'" bash "${PROJECT_SOURCE_DIR}/scripts/gpu-ratio.sh"
  "${_check}")
set_tests_properties(simgpu_gpu_ratio PROPERTIES LABELS simgpu FIXTURES_REQUIRED simgpu_check)

# mpi: ringrt across MPI ranks (runtime/mpi/). Each test is one mpirun (of the test program, of the ringrt
# program, or the fault script's several), RUN_SERIAL where its ranks keep the cores busy. Open MPI as
# found on these machines, through its environment: root allowed, more ranks than cores allowed, no
# binding (at np <= 2 Open MPI binds each rank to one core, and TBB starves), shared memory and self
# transports (4.1 rejects `sm`). RINGRT_RANKS_PER_HOST=1: every rank is a host of its own.
if(RINGRT_WITH_MPI)
  set(RINGRT_MPI_TEST_ENVIRONMENT OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_btl=vader,self
    RINGRT_RANKS_PER_HOST=1 RINGRT_KERNEL_OPT=1 "XDG_CACHE_HOME=${PROJECT_BINARY_DIR}/test-cache"
    # the asan preset: Open MPI keeps process-lifetime allocations in components it dlopens and unloads
    # at MPI_Finalize, so their leak reports have no module to suppress by name; the leak check of
    # ringrt's own code is the rest of the suite's
    "LSAN_OPTIONS=detect_leaks=0"
    ${RINGRT_TEST_ENVIRONMENT})
  add_executable(mpi_test_ranks test/mpi/test_ranks.cpp)
  target_link_libraries(mpi_test_ranks PRIVATE ringrt_test_options ringrt_test_support)
  target_precompile_headers(mpi_test_ranks REUSE_FROM ringrt_test_support)
  set_target_properties(mpi_test_ranks PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/test/mpi")
  ringrt_warnings(mpi_test_ranks)
  foreach(np 2 4)
    add_test(NAME mpi.ranks_${np} COMMAND "${MPIEXEC_EXECUTABLE}" -np ${np} $<TARGET_FILE:mpi_test_ranks>)
  endforeach()
  # ringrt_mpi_cli(<name> <arguments of `ringrt`>...): `mpirun -np 2 ringrt ARGS`, asserting both the exit status
  # (0: every rank ended well) and the footer "# #wrong in all: 0 OK" (a PASS_REGULAR_EXPRESSION alone would
  # ignore the status: a rank crashing after rank 0's footer passed)
  function(ringrt_mpi_cli name)
    add_test(NAME ${name} COMMAND bash -c "out=$(\"$@\" 2>&1); rc=$?; printf '%s\\n' \"$out\"; \
test $rc -eq 0 && printf '%s\\n' \"$out\" | grep -q '^# #wrong in all: 0 OK$'" bash "${MPIEXEC_EXECUTABLE}" -np 2
      $<TARGET_FILE:ringrt_cli> ${ARGN})
  endfunction()
  ringrt_mpi_cli(mpi.cli_run run
    "${PROJECT_SOURCE_DIR}/configs/default.yaml" --set devices.count=2 --set "experiment.counts=[37,4099,300001]"
    --set experiment.warmup=1 --set experiment.iters=2)  # the automatic choice: hierarchical over the ranks (hosts)
  # allreduce.wire bfloat16 across ranks: chunks cross as bfloat16 (MPI transfers too), #wrong against the wire's bound
  ringrt_mpi_cli(mpi.cli_run_wire run
    "${PROJECT_SOURCE_DIR}/configs/default.yaml" --set devices.count=2 --set "experiment.counts=[37,4099,300001]"
    --set experiment.warmup=1 --set experiment.iters=2 --set allreduce.wire=bfloat16)
  # a config written for one process: its groups and reduce leaders apply inside every rank
  ringrt_mpi_cli(mpi.cli_per_rank_groups run
    "${PROJECT_SOURCE_DIR}/configs/hierarchical.yaml" --set "experiment.counts=[37,1000]" --set experiment.warmup=1
    --set experiment.iters=2)
  # devices.count listing the job's devices, in any order
  ringrt_mpi_cli(mpi.cli_job_devices run
    "${PROJECT_SOURCE_DIR}/configs/default.yaml" --set "devices.count=[rank1/CPU:0, rank0/CPU:0, rank0/CPU:1]"
    --set "experiment.counts=[37,300001]" --set experiment.warmup=1 --set experiment.iters=2)
  # FSDP's steps across ranks: allgathers and reduce-scatters between the ranks' devices, checked
  ringrt_mpi_cli(mpi.cli_fsdp run
    "${PROJECT_SOURCE_DIR}/configs/fsdp-gpt2-small.yaml" --set devices.count=2 --set "experiment.buckets=[37,4099,1000]"
    --set experiment.warmup=1 --set experiment.iters=2)
  # --trace under mpirun: every rank writes its own FILE.rank<R>, with its rank's queues and transfers
  set(_trace "${PROJECT_BINARY_DIR}/test/mpi/cli_trace.json")
  add_test(NAME mpi.cli_trace COMMAND bash -c "rm -f ${_trace}.rank* && \"$1\" -np 2 \"$2\" run \"$3\" \
--set devices.count=2 --set experiment.counts=[300001] --set experiment.warmup=1 --set experiment.iters=1 \
--trace ${_trace} && for r in 0 1; do grep -q '\"rank\":'$r ${_trace}.rank$r && \
grep -q 'rank'$r'/CPU:0 mpi' ${_trace}.rank$r || exit 1; done"
    bash "${MPIEXEC_EXECUTABLE}" $<TARGET_FILE:ringrt_cli> "${PROJECT_SOURCE_DIR}/configs/default.yaml")
  # `ringrt regress` under mpirun (examples/user-tests/regress/, 2 devices per rank): every rank runs each
  # experiment, rank 0 records the baselines and then compares (busbw may fall to 1% on this shared machine)
  set(_regress "${PROJECT_BINARY_DIR}/test/mpi/regress-baselines")
  add_test(NAME mpi.cli_regress COMMAND bash -c "rm -rf \"$4\" && \"$1\" -np 2 \"$2\" regress \"$3\" --record \
--baselines \"$4\" --set devices.count=2 && out=$(\"$1\" -np 2 \"$2\" regress \"$3\" --baselines \"$4\" --set \
devices.count=2 --set regress.busbw_tolerance=0.99); rc=$?; printf '%s\\n' \"$out\"; test $rc -eq 0 && \
printf '%s\\n' \"$out\" | grep -q '^# 4 rows: 4 ok, ' && grep -q '\"devices\": 4' \"$4/allreduce.json\""
    bash "${MPIEXEC_EXECUTABLE}" $<TARGET_FILE:ringrt_cli> "${PROJECT_SOURCE_DIR}/examples/user-tests/regress" "${_regress}")
  add_test(NAME mpi.faults COMMAND bash "${PROJECT_SOURCE_DIR}/test/mpi/faults.sh" $<TARGET_FILE:ringrt_cli>
    "${PROJECT_SOURCE_DIR}/configs")
  # `ringrt tune` under mpirun: choices across the ranks (mpi among them) that `ringrt run` then follows
  add_test(NAME mpi.cli_tune COMMAND bash "${PROJECT_SOURCE_DIR}/test/mpi/tune.sh" "${MPIEXEC_EXECUTABLE}"
    $<TARGET_FILE:ringrt_cli> "${PROJECT_SOURCE_DIR}/configs/default.yaml")
  set(_mpi_cli mpi.cli_run mpi.cli_run_wire mpi.cli_per_rank_groups mpi.cli_job_devices mpi.cli_fsdp mpi.cli_tune)
  set_tests_properties(mpi.cli_regress PROPERTIES LABELS mpi TIMEOUT 600 RUN_SERIAL ON
    ENVIRONMENT "${RINGRT_MPI_TEST_ENVIRONMENT}")
  set_tests_properties(mpi.cli_trace PROPERTIES LABELS mpi TIMEOUT 600 ENVIRONMENT "${RINGRT_MPI_TEST_ENVIRONMENT}")
  set_tests_properties(mpi.ranks_2 mpi.ranks_4 ${_mpi_cli} mpi.faults PROPERTIES
    LABELS mpi TIMEOUT 600 ENVIRONMENT "${RINGRT_MPI_TEST_ENVIRONMENT}")
  # the fault script mostly sleeps (watchdogs of 3 s): the other tests may use the cores meanwhile
  set_tests_properties(mpi.ranks_2 mpi.ranks_4 ${_mpi_cli} PROPERTIES RUN_SERIAL ON)
endif()

# install_consumer: install this build into a scratch prefix, then configure, build and run
# test/consumer against it, as a user of find_package(ringrt CONFIG) would.
add_test(NAME install_consumer COMMAND "${CMAKE_COMMAND}"
  "-DBUILD_DIR=${PROJECT_BINARY_DIR}" "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}/test/consumer"
  "-DWORK_DIR=${PROJECT_BINARY_DIR}/install-consumer" "-DGENERATOR=${CMAKE_GENERATOR}"
  "-DCXX_COMPILER=${CMAKE_CXX_COMPILER}" "-DBUILD_TYPE=${CMAKE_BUILD_TYPE}"
  "-DCXX_FLAGS=${CMAKE_CXX_FLAGS}" "-DLINKER_FLAGS=${CMAKE_EXE_LINKER_FLAGS}"
  -P "${PROJECT_SOURCE_DIR}/cmake/InstallConsumerTest.cmake")
set_tests_properties(install_consumer PROPERTIES LABELS integration TIMEOUT 600 COST 6)
# installed_headers: the installed include folder holds ringrt/ alone, each public header compiles alone, and no
# internal name is reachable through them (cmake/InstalledHeadersTest.cmake).
add_test(NAME installed_headers COMMAND "${CMAKE_COMMAND}" "-DBUILD_DIR=${PROJECT_BINARY_DIR}"
  "-DWORK_DIR=${PROJECT_BINARY_DIR}/installed-headers" "-DCXX_COMPILER=${CMAKE_CXX_COMPILER}"
  -P "${PROJECT_SOURCE_DIR}/cmake/InstalledHeadersTest.cmake")
set_tests_properties(installed_headers PROPERTIES LABELS integration TIMEOUT 300)
# install_user_tests: the same with examples/user-tests/, a user's own tests on the testing library
# (ringrt::testing, ringrt_add_boost_tests) and a `ringrt regress` folder, run by its own CTest; the JUnit files
# and the regression summary are checked (RUN=ctest in cmake/InstallConsumerTest.cmake).
add_test(NAME install_user_tests COMMAND "${CMAKE_COMMAND}"
  "-DBUILD_DIR=${PROJECT_BINARY_DIR}" "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}/examples/user-tests"
  "-DWORK_DIR=${PROJECT_BINARY_DIR}/install-user-tests" "-DGENERATOR=${CMAKE_GENERATOR}"
  "-DCXX_COMPILER=${CMAKE_CXX_COMPILER}" "-DBUILD_TYPE=${CMAKE_BUILD_TYPE}"
  "-DCXX_FLAGS=${CMAKE_CXX_FLAGS}" "-DLINKER_FLAGS=${CMAKE_EXE_LINKER_FLAGS}" -DRUN=ctest
  -P "${PROJECT_SOURCE_DIR}/cmake/InstallConsumerTest.cmake")
set_tests_properties(install_user_tests PROPERTIES LABELS integration TIMEOUT 600 COST 10
  ENVIRONMENT "XDG_CACHE_HOME=${PROJECT_BINARY_DIR}/test-cache;${RINGRT_TEST_ENVIRONMENT}")

# ringrt_add_boost_tests' misuse refused at configure time (test/testing/add_boost_tests_misuse.sh)
add_test(NAME ringrt_add_boost_tests_misuse COMMAND bash "${PROJECT_SOURCE_DIR}/test/testing/add_boost_tests_misuse.sh"
  "${PROJECT_SOURCE_DIR}" "${PROJECT_BINARY_DIR}/add-boost-tests-misuse")
set_tests_properties(ringrt_add_boost_tests_misuse PROPERTIES LABELS integration TIMEOUT 300)

# soak_short: 2,000 steps of each soak loop (scripts/soak/soak.cpp): values right, programs built,
# graph nodes, storages and tensor states flat after warm-up (counts only; the full soak prints memory).
add_test(NAME soak_short COMMAND ringrt_soak --steps 2000 --report-every 1000 --warmup 500 --devices 4 --count 64)
set(soak_env "XDG_CACHE_HOME=${PROJECT_BINARY_DIR}/test-cache" RINGRT_KERNEL_OPT=1 ${RINGRT_TEST_ENVIRONMENT})
set_tests_properties(soak_short PROPERTIES LABELS integration ENVIRONMENT "${soak_env}")
# soak_stops_on_sigterm: a soak of far more steps than it gets, sent SIGTERM once it reports, ends after
# the step under way with a line saying so and exit status 143.
add_test(NAME soak_stops_on_sigterm COMMAND bash -c "\"$1\" --steps 100000000 --report-every 100 --devices 2 \
--count 64 --loops ddp > \"$2\" 2>&1 & p=$!; for i in $(seq 300); do grep -q '^ddp' \"$2\" && break; sleep 0.1; done; \
kill -TERM $p; wait $p; rc=$?; cat \"$2\"; test $rc -eq 143 && \
grep -q '^ddp: interrupted by SIGTERM after [0-9]* steps' \"$2\" && grep -q 'soak: stopped by SIGTERM' \"$2\""
  bash $<TARGET_FILE:ringrt_soak> "${PROJECT_BINARY_DIR}/soak_sigterm.log")
# the status and the lines both asserted (a PASS_REGULAR_EXPRESSION would ignore the status)
set_tests_properties(soak_stops_on_sigterm PROPERTIES LABELS integration ENVIRONMENT "${soak_env}" TIMEOUT 120)

# peers_every_form: the benchmark program of scripts/bench-peers.sh on 2 and 3 devices, every form it
# times (each algorithm forced, the automatic choice, in place), at a size with an odd element count
# per chunk; it checks every result against the exact sums and exits 1 on a wrong one.
add_test(NAME peers_every_form COMMAND bash -c "\"$1\" check 2 1 1 naive,ring,all2all,auto,in-place 4100 \
&& \"$1\" check 3 1 1 naive,ring,all2all,auto,in-place 4100" bash $<TARGET_FILE:ringrt_peers>)
set_tests_properties(peers_every_form PROPERTIES LABELS integration ENVIRONMENT "${soak_env}" TIMEOUT 120)

# gpu_ratio_fixture: scripts/gpu-ratio.sh on a fixed floor output and two sweep CSVs (test/scripts/gpu_ratio/:
# a CSV with pipelined times, one without; a size with no floor row, another collective's row, another ndev):
# the table is expected.txt, whose ratios are the CSVs' times over the floor's (50 us / 2 us = 25.00).
set(_fixture "${PROJECT_SOURCE_DIR}/test/scripts/gpu_ratio")
add_test(NAME gpu_ratio_fixture COMMAND bash -c "set -o pipefail; \"$1\" \"$2/floor.txt\" \"$2/sweep-ring.csv\" \
\"$2/sweep-auto.csv\" | diff \"$2/expected.txt\" -" bash "${PROJECT_SOURCE_DIR}/scripts/gpu-ratio.sh" "${_fixture}")
set_tests_properties(gpu_ratio_fixture PROPERTIES LABELS unit)

# lint_file_sizes: no source or header of ringrt over 600 lines (cmake/CheckFileSizes.cmake).
add_test(NAME lint_file_sizes COMMAND "${CMAKE_COMMAND}" "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}" -DMAX_LINES=600
  -P "${PROJECT_SOURCE_DIR}/cmake/CheckFileSizes.cmake")
set_tests_properties(lint_file_sizes PROPERTIES LABELS unit)
# lint_test_functions: no function of the tests (test/, testing/, examples/) over 80 lines, tables aside
# (cmake/CheckTestFunctions.cmake).
add_test(NAME lint_test_functions COMMAND "${CMAKE_COMMAND}" "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}" -DMAX_LINES=80
  -P "${PROJECT_SOURCE_DIR}/cmake/CheckTestFunctions.cmake")
set_tests_properties(lint_test_functions PROPERTIES LABELS unit)

# lint_includes: no include from a lower room to a higher one (cmake/CheckIncludes.cmake; docs/architecture.md);
# lint_includes_fails: the lint fails, naming the file and both rooms, on a tree where core includes the API.
add_test(NAME lint_includes COMMAND "${CMAKE_COMMAND}" "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}"
  -P "${PROJECT_SOURCE_DIR}/cmake/CheckIncludes.cmake")
# (its failure asserted as well as its message)
add_test(NAME lint_includes_fails COMMAND bash -c "out=$(\"$@\" 2>&1); rc=$?; printf '%s\\n' \"$out\"; \
test $rc -ne 0 && printf '%s\\n' \"$out\" | grep -q 'core/value.hpp (core) includes runtime/api/tensor.hpp (runtime/api)'"
  bash "${CMAKE_COMMAND}" "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}/test/lint/lower_includes_higher"
  -P "${PROJECT_SOURCE_DIR}/cmake/CheckIncludes.cmake")
set_tests_properties(lint_includes lint_includes_fails PROPERTIES LABELS unit)

# fuzz_*: the fuzz targets and their short replay runs (cmake/RingrtFuzz.cmake).
include(RingrtFuzz)
