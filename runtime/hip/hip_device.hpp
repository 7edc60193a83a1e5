// The hip backend: one Device "HIP:i" per GPU that the HIP runtime reports (DESIGN.md "Runtime").
// Reference: rocm-examples (HIP_CHECK, the peer-access sequence), tinygrad runtime/ops_hip.py (modules
// from hipRTC code objects, arguments packed into one buffer), ggml-cuda (a queue per device).
// Compiled only when HIP is built (RINGRT_HAVE_HIP); the build lists register_hip_backend among the
// built-in backends, which registers hip_device_names and make_hip_device with the device registry
// (runtime/device/registry.cpp). This header includes no HIP header; the check macros are in hip_check.hpp.
//
// Streams and threads. Each device owns a compute stream (kernels) and a copy stream (copy_from), both
// hipStreamNonBlocking, and two helper threads:
//   - the issuer takes queued work in submission order, waits on the host for the work's `after`
//     events, then enqueues it on its stream and records a hipEvent_t after it; host functions
//     (submit) run on the issuer itself, once every earlier piece of work has completed;
//   - the completer waits (hipEventSynchronize) for those hipEvents in order and completes the Events
//     handed out by launch/copy_from (with a DeviceError when the GPU reports one).
// The Device contract is one in-order queue per device, so work on the two streams is chained: when
// consecutive work lands on different streams, the later one hipStreamWaitEvent()s the earlier one's
// event. Callers of launch/copy_from/submit never block.
//
// Waiting for `after`. Once GPU work is enqueued, its Event carries the hipEvent recorded after it
// (Event::native(), a HipNative). For each `after` event the issuer waits until it is done or carries
// one; then an event of earlier work on this same device needs nothing (the queue is in order), one
// of another HIP device becomes a hipStreamWaitEvent on the stream the work goes to (the GPU orders
// them, the host does not wait), and any other event (host work, another backend) is waited for on
// the host. Host functions, copies from another backend and copies staged through the host wait for
// all of `after` on the host, because they read their source there. A recorded hipEvent returns to
// the device's pool only when the last Event holding it is gone, so it is never recorded again while
// another queue may still wait on it. An error of an `after` event fails the work that waits for it
// when it is known at issue time; a GPU fault in work waited for on the GPU shows in that work's own
// Event (and usually in all later work, as HIP errors of a faulted device are sticky).
//
// Memory. allocate uses hipMalloc through a per-device cache: sizes round up to 256 bytes, freed blocks
// are kept by size and reused; on hipErrorOutOfMemory the cache is released once and the allocation
// retried. Device memory needs no pre-faulting. free() returns a block to the cache at once, so the
// caller must have waited for every queued use of it.
//
// Peer copies. copy_from(HIP:j) enables peer access from this device to j once per pair
// (hipDeviceCanAccessPeer, hipDeviceEnablePeerAccess; already enabled is fine) and copies with
// hipMemcpyPeerAsync on this device's copy stream. Without peer access the bytes go through pinned
// host memory (hipHostMalloc, cached by size): device j -> host with a synchronous hipMemcpy on the
// issuer, host -> this device with hipMemcpyAsync on the copy stream. From a device of another backend
// (cpu), the bytes come from that device's copy_out into pinned memory, then hipMemcpyAsync.
//
// Kernels. compile() renders the kernel with codegen::render_hip, compiles it with HiprtcCompiler for
// the device's architecture (gcnArchName; sm_XY on NVIDIA: hip_platform.hpp gpu_arch_name) through the
// on-disk cache, loads it with hipModuleLoadData and looks it up with hipModuleGetFunction; the result
// is cached per kernel (name and IR). launch() runs one thread per element: blocks of kBlockSize
// threads, launch_blocks(numel) of them, arguments packed as
// pack_kernel_args says, passed with hipModuleLaunchKernel's `extra` buffer.
//
// Teardown. The destructor drains the queue, synchronizes the device, then frees cached blocks and
// pinned buffers, destroys events and streams and disables the peer access it enabled; errors are
// logged to stderr and never thrown. The registry never destroys its devices (runtime/device/registry.cpp:
// storages may be freed at any point of exit), and the HIP runtime shuts itself down at exit; so the
// first device registers an exit handler
// (after HIP is initialized, hence run before HIP's own) that shuts every live device down the same
// way, after which no destructor (device, module, event pool) makes a HIP call: they leak instead.
// Work submitted after a device was shut down is refused with a DeviceError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device/device.hpp"

namespace ringrt {

// {"HIP:0", ..., "HIP:n-1"} for the n GPUs the HIP runtime sees (HIP_VISIBLE_DEVICES applies; on
// NVIDIA, CUDA_VISIBLE_DEVICES); empty when there is none, when hipGetDeviceCount reports
// hipErrorNoDevice or hipErrorInsufficientDriver.
// Queried once per process and cached. Throws DeviceError only for any other hipGetDeviceCount error.
// Thread-safe.
std::vector<std::string> hip_device_names();

// The device HIP:index: its streams and threads are created here. Throws DeviceError naming "HIP:index"
// and the GPUs that exist when index is out of range, or the failing HIP call.
std::unique_ptr<Device> make_hip_device(int index);
// Registers the "HIP" backend with the device registry (called by register_builtin_backends).
void register_hip_backend();

namespace hip_launch {

constexpr unsigned kBlockSize = 256;  // threads per block of every launch
// HIP's grid size (blocks * threads per dimension) is a 32-bit count, so one launch covers at most
// this many elements (one thread per element).
constexpr int64_t kMaxElements = (int64_t{0xffffffff} / kBlockSize) * kBlockSize;

// Blocks for one thread per element: ceil(numel / kBlockSize); 0 for numel <= 0. Valid for numel up to
// kMaxElements.
int64_t launch_blocks(int64_t numel);

// The kernel-argument buffer of render_hip's signature
//   (T* out, const U0* in0, ..., int dnum, long long n)
// laid out with each argument at its natural alignment, as the kernel ABI expects: the pointers in
// bufs at 0, 8, 16, ...; dnum (4 bytes) next; n at the next multiple of 8; the size rounded up to 8.
std::vector<std::byte> pack_kernel_args(const std::vector<void*>& bufs, int32_t dnum, int64_t n);

}  // namespace hip_launch

}  // namespace ringrt
