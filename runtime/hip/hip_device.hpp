// The hip backend: one Device "HIP:i" per GPU that the HIP runtime reports, or n logical devices on
// those GPUs (docs/gpu-path.md).
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
// its own streams, completer, events, block cache and kernels. The names are fixed at the first
// enumeration (hip_device_names): the tunable is read then, once per process.
//
// Queue (hip_queue.hpp; docs/gpu-path.md gives the whole GPU path). Each device owns one stream for its
// queued work (hipStreamNonBlocking), one for copy_in, and one helper thread, the completer. Work is
// enqueued on the stream by the thread that submits it, at once: no hand-off, and the caller never
// waits for the GPU. For each `after` event: nothing for this device's own work (the stream is in order)
// or for done events; hipStreamWaitEvent for another HIP device's GPU work; a wait for the gate value of
// another HIP device's host work (hipStreamWaitValue32 on its gate word, mapped pinned memory; where
// that call fails, a one-thread kernel that spins on the word: hip_launch::gate_wait_source); and for
// any other event (another backend's work, an MPI transfer) host work of this queue that waits for it on
// the host and then opens this queue's gate, which the stream waits for. A hipEvent is recorded after
// every piece of GPU work and attached to its Event (Event::native(), a HipNative) at once.
// Completion. Waiters poll the device themselves (HipNative::poll: hipEventQuery; Event::wait_for spins
// briefly, then sleeps in growing slices): the executor waits once per device queue, for the last event
// of a run. The completer completes the Events in order, in batches (one hipEventSynchronize, blocking
// sync, for the last of the GPU work before the next host work), runs their callbacks (freed memory,
// returned staging buffers), and runs host work (submit's functions, the waits above, the host half of
// staged copies) in queue order, each after every earlier piece of this queue's work and its `after`,
// then opens its gate.
// Errors. The errors of host work, and of other devices' work waited for on the GPU, are the errors of
// the GPU work that waited for them (it runs, but its Event fails); an `after` that failed already fails
// the work without enqueueing it. Poisoned devices: a GPU error is sticky (every later call on the
// faulted device fails), so the first error the completer sees poisons the device: the Events of its
// work still pending fail at once with that error, new work (launch, copy_from, submit, synchronize) is
// refused with a DeviceError naming the first error (hip_launch::poisoned_message), and another device
// about to wait on a poisoned device's work on its GPU fails that work instead. synchronize waits at
// most runtime.watchdog_s for a marker through the queue, then throws TimeoutError; drain is bounded by
// its timeout.
//
// Timing (for a Trace, runtime/api/trace.hpp, while trace_timing() is on, and for markers,
// Device::marker). The GPU work's events are timing events then, with one recorded before the work:
// its times are the device's (hipEventElapsedTime from a base event whose host time is taken once per
// queue), so a bar on a trace is the work itself, after its waits.
//
// Graphs (hip_graph.hpp). make_graph() gives a DeviceGraph launched on this device's queue as one piece
// of GPU work (runtime/engine/graph_run.cpp records a program's run into one).
//
// Memory (hip_memory.cpp). allocate uses hipMalloc through a per-device cache: sizes round up to size
// classes (hip_launch::cache_block_size: 256-byte steps below 1 MiB, eight classes per doubling above),
// freed blocks are kept by class and reused, up to hip_launch::device_cache_cap bytes per device (a
// quarter of the GPU's memory, split among its logical devices); a block freed beyond the cap goes back
// to HIP at once (hipFree). On hipErrorOutOfMemory both caches (the blocks and the pinned staging
// buffers) are released once and the allocation retried. Pinned staging buffers (hipHostMalloc) are
// kept by the same size classes up to hip_launch::kPinnedCacheCap bytes per device. Device memory
// needs no pre-faulting. free() returns a block at once, so the caller must have waited for every
// queued use of it (the engine frees a block only once the work using it completed: pending.hpp).
// copy_in and copy_out are synchronous: copy_in enqueues hipMemcpyAsync on its own stream and waits for
// that stream (a plain hipMemcpy from pageable memory may return before the bytes land, on the legacy
// stream that the non-blocking streams do not wait for); copy_out is a device-to-host hipMemcpy, which
// returns once the bytes are in host memory. copy_in_async (host writes) copies the bytes into pinned
// buffers in 4 MiB chunks on the calling thread and queues each chunk's DMA on the stream (at most 16
// chunks in flight per call), so the DMA of one overlaps the copy of the next.
//
// Copies between HIP devices. From a device on the same GPU (itself, or another logical device):
// hipMemcpyAsync device to device on this device's stream, ordered after `after` on the GPU, no peer
// access involved. From a device on GPU j: this GPU's peer access to j is decided once per pair of GPUs
// and cached process-wide (hip_memory.hpp peer_access: hipDeviceCanAccessPeer, then
// hipDeviceEnablePeerAccess; access someone else enabled counts but is not ours; any failure is logged
// once and cached as no access), then hipMemcpyPeerAsync on the stream. Without peer access the bytes go
// through pinned host memory (PinnedPool::lease): host work of the queue copies GPU j -> host (a
// synchronous hipMemcpy, after `after`, on the host), and the GPU part behind its gate copies host ->
// this device. From a device of another backend (cpu), the host part is that device's copy_out into the
// pinned buffer. A copy of 0 bytes enqueues nothing but still records its event, so its Event
// completes after `after`. can_read_peer (the executor's peer reads) is true for a HIP device on the
// same GPU or on a GPU this one has peer access to (decided, and enabled, by the same cached call).
//
// Kernels. compile() renders the kernel with codegen::render_hip, compiles it with HiprtcCompiler for
// the device's architecture (gcnArchName; sm_XY on NVIDIA: hip_platform.hpp gpu_arch_name) through the
// on-disk cache, loads it with hipModuleLoadData and looks it up with hipModuleGetFunction; the result
// is cached per kernel (name and IR). launch() runs blocks of kBlockSize threads, launch_blocks of them
// (at most kBlocksPerMultiprocessor per multiprocessor, hipDeviceProp_t::multiProcessorCount, read once
// per device: the kernels loop over the rest), arguments packed as pack_kernel_args says, passed with
// hipModuleLaunchKernel's `extra` buffer.
//
// Teardown. Shutdown (the destructor, the exit handler) is bounded (HipQueue::stop): new work is
// refused; host work not started yet fails at once (its Event completes with a DeviceError saying the
// device was shut down; the registry drains the queues before, at exit), and so does the GPU work queued
// after it (its gate opens: it may still run, its resources are kept until the stream is idle); the rest
// completes. All of that within a few seconds (kShutdownWait in hip_device.cpp): past it, a hung kernel
// or host function, shutdown logs that it abandoned work, detaches the completer and leaks the device
// (DeviceOwner, hip_support.hpp: the completer still uses it). Otherwise it joins the completer,
// synchronizes its streams (not the GPU: other logical devices may still run there), frees cached blocks
// and pinned buffers, destroys events and streams (the stopped queue stays, refusing work: exit handlers
// may still drain the device); the last device of a GPU to go disables the peer access
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
// (RINGRT_HIP_LOGICAL_DEVICES, core/params.hpp) is n > 0, n logical devices on those GPUs in turn
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
// Blocks per multiprocessor of a full grid: 8 x 256 = 2048 threads, the most an H100/H200 SM holds (a
// CDNA CU holds 2560), so every multiprocessor is full and each thread of a large launch loops over
// several elements (render_hip's grid-stride loops), as scripts/bench/gpu/floor.cpp's floor kernel.
constexpr unsigned kBlocksPerMultiprocessor = 8;

// Blocks of a launch over numel elements, `lanes` per thread and iteration (codegen::hip_vector_lanes),
// on a GPU of `multiprocessors`: one iteration per thread, ceil(ceil(numel / lanes) / kBlockSize), but at
// most kBlocksPerMultiprocessor per multiprocessor (at least 1); 0 for numel <= 0.
int64_t launch_blocks(int64_t numel, int lanes, int multiprocessors);

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
