// The hip backend: one Device "HIP:i" per GPU that the HIP runtime reports, or n logical devices on
// those GPUs (DESIGN.md "Runtime").
// Reference: rocm-examples (HIP_CHECK, the peer-access sequence), tinygrad runtime/ops_hip.py (modules
// from hipRTC code objects, arguments packed into one buffer), ggml-cuda (a queue per device).
// Compiled only when HIP is built (RINGRT_HAVE_HIP); the build lists register_hip_backend among the
// built-in backends, which registers hip_device_names and make_hip_device with the device registry
// (runtime/device/registry.cpp). This header includes no HIP header; the check macros are in hip_check.hpp.
//
// Logical devices. runtime.hip_logical_devices = n > 0 (RINGRT_HIP_LOGICAL_DEVICES) exposes HIP:0 ..
// HIP:n-1 on the GPUs in turn: HIP:i on GPU hip_physical_gpu(i, gpus) = i mod gpus, so every
// multi-device schedule runs on one GPU. A device keeps two numbers: its logical index (its name,
// _device_num's messages, the kernels it compiled) and its GPU ordinal (every hipSetDevice, module load
// and peer-access key). Logical devices on one GPU share nothing but the GPU and its context: each has
// its own streams, helper threads, events, block cache and kernels. The names are fixed at the first
// enumeration (hip_device_names): the tunable is read then, once per process.
//
// Streams and threads. Each device owns a compute stream (kernels), a copy stream (copy_from) and a
// stream for copy_in, all hipStreamNonBlocking, and two helper threads:
//   - the issuer takes queued work in submission order, waits on the host for the work's `after`
//     events, then enqueues it on its stream and records a hipEvent_t after it; host functions
//     (submit) run on the issuer itself, once every earlier piece of work has completed;
//   - the completer waits (hipEventSynchronize) for those hipEvents in order and completes the Events
//     handed out by launch/copy_from (with a DeviceError when the GPU reports one). The pool's events
//     are created with hipEventBlockingSync (CUDA: cudaEventBlockingSync): the completer sleeps until
//     the GPU signals instead of spinning a core per device for as long as the work runs.
// Poisoned devices. A GPU error is sticky (every later call on the faulted device fails, and a queue
// of another device that waits for one of its events on the GPU may never be released), so the first
// error the completer sees poisons the device: the Events of its work still pending fail at once with
// that error (the completer no longer waits for them), work taken by the issuer fails, and push
// refuses new work (launch, copy_from, submit, synchronize) with a DeviceError naming the first error
// (hip_launch::poisoned_message); another device about to wait on a poisoned device's event on its GPU
// fails that task instead. synchronize waits at most runtime.watchdog_s for the queue, then throws
// TimeoutError (a hung kernel or host function); drain is bounded by its timeout.
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
// Timing (for a Trace, runtime/api/trace.hpp, while trace_timing() is on). The pool's hipEvents are
// created without timing (hipEventDisableTiming), so the times of GPU work are host times: its end is
// when the completer saw its event complete, its start the later of when the issuer enqueued it and
// when the work before it on this queue ended (the queue is in order). Exact while the queue is busy;
// work that waits on the GPU for another device's event shows that wait inside its bar, and the
// completer's wake-up (some microseconds) is in every end. Host functions: around the function.
//
// Memory (hip_memory.cpp). allocate uses hipMalloc through a per-device cache: sizes round up to size
// classes (hip_launch::cache_block_size: 256-byte steps below 1 MiB, eight classes per doubling above),
// freed blocks are kept by class and reused, up to hip_launch::device_cache_cap bytes per device (a
// quarter of the GPU's memory, split among its logical devices); a block freed beyond the cap goes back
// to HIP at once (hipFree). On hipErrorOutOfMemory both caches (the blocks and the pinned staging
// buffers) are released once and the allocation retried. Pinned staging buffers (hipHostMalloc) are
// kept by the same size classes up to hip_launch::kPinnedCacheCap bytes per device. Device memory
// needs no pre-faulting. free() returns a block at once, so the caller must have waited for every
// queued use of it. copy_in and copy_out are
// synchronous: copy_in enqueues hipMemcpyAsync on its own stream and waits for that stream (a plain
// hipMemcpy from pageable memory may return before the bytes land, on the legacy stream that the
// non-blocking streams do not wait for); copy_out is a device-to-host hipMemcpy, which returns once
// the bytes are in host memory.
//
// Copies between HIP devices. From a device on the same GPU (itself, or another logical device):
// hipMemcpyAsync device to device on this device's copy stream, ordered after `after` on the GPU, no
// peer access involved. From a device on GPU j: this GPU's peer access to j is decided once per pair of
// GPUs and cached process-wide (hip_memory.hpp peer_access: hipDeviceCanAccessPeer, then
// hipDeviceEnablePeerAccess; access someone else enabled counts but is not ours; any failure is
// logged once and cached as no access), then hipMemcpyPeerAsync on the copy stream. Without peer access
// the bytes go through pinned host memory (hipHostMalloc, cached by size class): GPU j -> host with a
// synchronous hipMemcpy on the issuer, host -> this device with hipMemcpyAsync on the copy stream. From
// a device of another backend (cpu), the bytes come from that device's copy_out into pinned memory,
// then hipMemcpyAsync. A copy of 0 bytes enqueues nothing but still records its event, so its Event
// completes after `after`. can_read_peer (the executor's peer reads) is true for a HIP device on the
// same GPU or on a GPU this one has peer access to (decided, and enabled, by the same cached call).
//
// Kernels. compile() renders the kernel with codegen::render_hip, compiles it with HiprtcCompiler for
// the device's architecture (gcnArchName; sm_XY on NVIDIA: hip_platform.hpp gpu_arch_name) through the
// on-disk cache, loads it with hipModuleLoadData and looks it up with hipModuleGetFunction; the result
// is cached per kernel (name and IR). launch() runs one thread per element: blocks of kBlockSize
// threads, launch_blocks(numel) of them, arguments packed as
// pack_kernel_args says, passed with hipModuleLaunchKernel's `extra` buffer.
//
// Teardown. Shutdown (the destructor, the exit handler) is bounded: work queued but not issued yet
// fails at once (its Event completes with a DeviceError saying the device was shut down; the registry
// drains the queues before, at exit); the issuer finishes its current task (a wait for `after` events
// gives up); the GPU work issued so far is waited for by polling its last event (hipEventQuery). All
// of that within a few seconds (kShutdownWait in hip_device.cpp): past it, a hung kernel or host
// function, shutdown logs that it abandoned work, detaches the threads still busy and leaks the device
// (DeviceOwner, hip_support.hpp: the threads still use it). Otherwise it joins the threads, synchronizes
// its streams (not the GPU: other logical devices may still run there), frees cached blocks and pinned
// buffers, destroys events and streams; the last device of a GPU to go disables the peer access
// enabled from it; errors are logged to stderr and never thrown. The registry never destroys its devices
// (runtime/device/registry.cpp: storages may be freed at any point of exit), and the HIP runtime shuts itself down at
// exit; so the first device registers an exit handler (after HIP is initialized, hence run before HIP's own) that shuts
// every live device down the same way, after which no destructor (device, module, event pool) makes a HIP call: they
// leak instead. Work submitted after a device was shut down is refused with a DeviceError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device/device.hpp"

namespace ringrt {

// The HIP device names, {"HIP:0", ..., "HIP:n-1"}: one per GPU the HIP runtime sees (HIP_VISIBLE_DEVICES
// applies; on NVIDIA, CUDA_VISIBLE_DEVICES), or, when runtime.hip_logical_devices
// (RINGRT_HIP_LOGICAL_DEVICES, rewrite/params.hpp) is n > 0, n logical devices on those GPUs in turn
// (HIP:i on GPU hip_physical_gpu(i, gpus)). Empty when there is no GPU, whatever the tunable: when
// hipGetDeviceCount reports none, or an error that means no GPU (hip_platform.hpp no_gpu_error: no
// device, no driver; on NVIDIA also the toolkit's stub driver).
// Queried once per process and cached: the tunable is read at the first call (of this function, of
// the registry's "HIP" backend or of make_hip_device) and later changes are ignored. Throws DeviceError
// for any other hipGetDeviceCount error, ConfigError for a malformed RINGRT_HIP_LOGICAL_DEVICES (the
// next call tries again). Thread-safe.
std::vector<std::string> hip_device_names();

// The device HIP:index (on GPU hip_physical_gpu(index, GPUs)): its streams and threads are created here.
// Throws DeviceError naming "HIP:index" and the devices and GPUs that exist when index is out of range,
// or the failing HIP call.
std::unique_ptr<Device> make_hip_device(int index);
// Registers the "HIP" backend with the device registry (called by register_builtin_backends).
void register_hip_backend();

// The GPU ordinal of logical HIP device `logical` among `gpus` GPUs: logical mod gpus (the devices take
// the GPUs in turn); -1 when logical < 0 or gpus < 1. Pure.
int hip_physical_gpu(int logical, int gpus);

namespace hip_launch {

constexpr unsigned kBlockSize = 256;  // threads per block of every launch
// HIP's grid size (blocks * threads per dimension) is a 32-bit count, so one launch covers at most
// this many elements (one thread per element).
constexpr int64_t kMaxElements = (int64_t{0xffffffff} / kBlockSize) * kBlockSize;

// Blocks for one thread per element: ceil(numel / kBlockSize); 0 for numel <= 0. Valid for numel up to
// kMaxElements.
int64_t launch_blocks(int64_t numel);

// The source of the kernel that orders a queue after host work where hipStreamWaitValue32 fails
// (hip_queue.hpp SpinWait): rt_gate_wait(const volatile unsigned* word, unsigned value), one thread
// spinning until the word, compared with wrapping as CUDA's GEQ, reaches the value. Its arguments: the
// word's device pointer at 0, the value at 8 (16 bytes packed).
const char* gate_wait_source();

// The kernel-argument buffer of render_hip's signature
//   (T* out, const U0* in0, ..., int dnum, long long n)
// laid out with each argument at its natural alignment, as the kernel ABI expects: the pointers in
// bufs at 0, 8, 16, ...; dnum (4 bytes) next; n at the next multiple of 8; the size rounded up to 8.
std::vector<std::byte> pack_kernel_args(const std::vector<void*>& bufs, int32_t dnum, int64_t n);

// ---- memory caches (hip_memory.cpp; see "Memory" above). Pure.

// The block a cache hands out for a request of `bytes`: below 1 MiB, a multiple of 256 bytes (what
// HIP's allocator aligns to anyway); from 1 MiB on, a multiple of an eighth of the largest power of two
// not above `bytes` (1 MiB, 1.125 MiB, ..., 2 MiB, 2.25 MiB, ...). So at most 1/8 of a block is waste
// (plain powers of two would waste up to half of the GPU's memory), while a run whose sizes vary a
// little (a ragged last shard) still reuses blocks: 8 classes per doubling instead of one per size.
// 0 asks for 256 bytes.
size_t cache_block_size(size_t bytes);
// Whether a cache that keeps `cached` bytes may keep one more freed block of `block` bytes under a cap
// of `cap` bytes (else the block is freed at once).
constexpr bool cache_keeps(size_t cached, size_t block, size_t cap) { return block <= cap && cached <= cap - block; }
// The cap of one device's cache of freed device blocks: a quarter of its GPU's memory (`gpu_bytes`,
// hipDeviceProp_t::totalGlobalMem), shared evenly by the `devices_on_gpu` logical devices there
// (runtime.hip_logical_devices), so the caches of one GPU keep at most a quarter of it together; the
// rest stays free for other processes, other logical devices' allocations and HIP's own use.
size_t device_cache_cap(size_t gpu_bytes, int devices_on_gpu);
// The cap of one device's cache of pinned host staging buffers: pinned memory is host memory the OS
// can neither swap nor move, so a device keeps little of it; a larger staged copy allocates and frees
// its buffer (hipHostMalloc) each time.
inline constexpr size_t kPinnedCacheCap = size_t{256} << 20;

// ---- failure messages of queued work (hip_device.cpp; see "Teardown" and "Streams"). Pure.

// The error of work (`what`, e.g. "launch of E_4") that device `device` refuses or fails because an
// earlier GPU error, `first_error` (hip_error_message's text), left it unusable.
std::string poisoned_message(const std::string& device, const std::string& what, const std::string& first_error);
// The error of work that device `device` never ran because it was shut down first.
std::string shut_down_message(const std::string& device, const std::string& what);

}  // namespace hip_launch

}  // namespace ringrt
