# The hip backend's GPU platform (included from the top-level CMakeLists.txt).
#
# runtime/hip/ and codegen/hiprtc_compiler.cpp are one source for two platforms, chosen at configure
# time with RINGRT_GPU_PLATFORM:
#   amd     the HIP runtime and hipRTC (Debian's HIP packages; the default)
#   nvidia  the CUDA runtime and NVRTC (the CUDA toolkit: CUDAToolkit_ROOT, CUDA_HOME, or nvcc on PATH), mapped
#           onto HIP's by runtime/hip/hip_platform.hpp and codegen/rtc_platform.hpp
#   sim     a simulated GPU runtime on host threads under the HIP names (runtime/hip/sim/: streams, events,
#           graphs, kernels built by the host compiler), for testing runtime/hip/ without a GPU; every build
#           with tests adds ringrt_simgpu (ringrt_core's objects + the sim platform objects) and runs the gpu
#           tests on it (label simgpu). Not a platform to configure a build for.
# Those are the GPU platform sources (RINGRT_GPU_SOURCES); every other source is platform-neutral and
# compiled once, into the object library ringrt_core. A build for one platform therefore builds the
# other's platform sources cheaply when its toolkit is present: an amd build with the CUDA toolkit adds
# ringrt_nvidia (ringrt_core's objects + the nvidia platform objects) and its NVRTC tests, so CI compiles
# every kernel with NVRTC without a second full build (cmake/RingrtTests.cmake, label nvrtc).
#
# No platform links the CUDA driver library: the runtime hands out the driver's entry points
# (runtime/hip/hip_platform.hpp), so a binary built for nvidia starts on a machine without a driver and
# finds no device there, like an amd binary without a GPU.

set(RINGRT_GPU_PLATFORM "amd" CACHE STRING "GPU platform of the hip backend: amd (HIP, hipRTC) or nvidia (CUDA, NVRTC)")
set_property(CACHE RINGRT_GPU_PLATFORM PROPERTY STRINGS amd nvidia)
if(NOT RINGRT_GPU_PLATFORM MATCHES "^(amd|nvidia)$")
  message(FATAL_ERROR "RINGRT_GPU_PLATFORM='${RINGRT_GPU_PLATFORM}': expected amd or nvidia")
endif()

# Debian's hip-config.cmake fails unless hipcc is installed; QUIET keeps HIP optional.
# hipRTC lives inside libamdhip64 in ROCm 5.2, so hip::host is all that is needed.
if(RINGRT_GPU_PLATFORM STREQUAL "amd")
  find_package(hip CONFIG QUIET)
endif()
# CMake's FindCUDAToolkit reads CUDAToolkit_ROOT and nvcc on PATH, not CUDA_HOME: map it.
if(NOT DEFINED CUDAToolkit_ROOT AND DEFINED ENV{CUDA_HOME})
  set(CUDAToolkit_ROOT "$ENV{CUDA_HOME}")
endif()
find_package(CUDAToolkit QUIET)  # CUDA::cudart_static, CUDA_nvrtc_LIBRARY
set(RINGRT_GPU_FOUND_amd ${hip_FOUND})
if(CUDAToolkit_FOUND AND CUDA_nvrtc_LIBRARY)
  set(RINGRT_GPU_FOUND_nvidia TRUE)
  message(STATUS "ringrt: CUDA toolkit ${CUDAToolkit_VERSION} at ${CUDAToolkit_BIN_DIR}/.., NVRTC ${CUDA_nvrtc_LIBRARY}")
else()
  set(RINGRT_GPU_FOUND_nvidia FALSE)  # no toolkit, or one without NVRTC
endif()

# The sources (relative to the repository root) that include a platform's headers (`gpu_var`), and the
# simulated runtime's own (`sim_var`, runtime/hip/sim/), taken out of `all_var`.
function(ringrt_split_gpu_sources all_var gpu_var sim_var)
  set(sim ${${all_var}})
  list(FILTER sim INCLUDE REGEX "^runtime/hip/sim/.*\\.cpp$")
  set(gpu ${${all_var}})
  list(FILTER gpu INCLUDE REGEX "^(runtime/hip/[^/]*\\.cpp|codegen/hiprtc_compiler\\.cpp)$")
  set(rest ${${all_var}})
  list(REMOVE_ITEM rest ${gpu} ${sim})
  set(${all_var} ${rest} PARENT_SCOPE)
  set(${gpu_var} ${gpu} PARENT_SCOPE)
  set(${sim_var} ${sim} PARENT_SCOPE)
endfunction()

# Builds `target`'s GPU platform sources for `platform`: the platform's headers, defines and libraries.
# RINGRT_HAVE_HIP is PUBLIC so that tests and users can check `#ifdef RINGRT_HAVE_HIP` (the hip backend
# is built, whichever platform).
function(ringrt_gpu_platform target platform)
  target_compile_definitions(${target} PUBLIC RINGRT_HAVE_HIP=1)
  if(platform STREQUAL "amd")
    target_link_libraries(${target} PRIVATE hip::host)
  elseif(platform STREQUAL "sim")
    target_compile_definitions(${target} PRIVATE RINGRT_GPU_SIM=1)
  else()
    target_compile_definitions(${target} PRIVATE RINGRT_GPU_NVIDIA=1)
    # NVRTC's library file, not the target CUDA::nvrtc: that one links the driver stub (libcuda.so), and
    # a binary that needs libcuda.so.1 does not start where there is no driver.
    target_link_libraries(${target} PRIVATE CUDA::cudart_static "${CUDA_nvrtc_LIBRARY}")
  endif()
endfunction()

# A program that calls the platform's API itself (test/gpu, scripts/bench/gpu/floor.cpp include
# runtime/hip/hip_platform.hpp): its headers, libraries and RINGRT_GPU_NVIDIA. `scope`: INTERFACE for an
# interface library, PRIVATE for an executable.
function(ringrt_gpu_client target scope platform)
  if(platform STREQUAL "amd")
    target_link_libraries(${target} ${scope} hip::host)
  elseif(platform STREQUAL "sim")
    target_compile_definitions(${target} ${scope} RINGRT_GPU_SIM=1)
  else()
    target_link_libraries(${target} ${scope} CUDA::cudart_static)
    target_compile_definitions(${target} ${scope} RINGRT_GPU_NVIDIA=1)
  endif()
endfunction()

# A test program of the GPU backend: a platform client, and the target the GPU compiler tests build for
# (RINGRT_TEST_GPU_ARCH: gfx90a or sm_90; RINGRT_TEST_NVIDIA on nvidia).
function(ringrt_gpu_test_options target scope platform)
  ringrt_gpu_client(${target} ${scope} ${platform})
  if(platform STREQUAL "amd")
    target_compile_definitions(${target} ${scope} RINGRT_TEST_GPU_ARCH="gfx90a")
  elseif(platform STREQUAL "sim")
    target_compile_definitions(${target} ${scope} RINGRT_TEST_SIM=1 RINGRT_TEST_GPU_ARCH="sim")
  else()
    target_compile_definitions(${target} ${scope} RINGRT_TEST_NVIDIA=1 RINGRT_TEST_GPU_ARCH="sm_90")
  endif()
endfunction()
