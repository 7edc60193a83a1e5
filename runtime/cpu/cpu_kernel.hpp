// The cpu backend's kernels as its devices run them (internal to runtime/cpu): the compiled kernel, the
// choice of its streaming entry, the split of a range across TBB workers, and a fused collective's steps
// on one device (cpu_collective.cpp; rewrite/collective.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "codegen/compiler.hpp"
#include "runtime/device/device.hpp"

namespace ringrt::cpu_detail {

struct CpuKernel : CompiledKernel {
  codegen::Kernel k;
  codegen::HostKernel host;
  const codegen::Kernel& kernel() const override { return k; }
};

// memcpy, and nothing for 0 bytes: an empty tensor's buffer (or a host vector's data()) may be null,
// and memcpy with a null pointer is undefined even for 0 bytes (UBSan reports it).
void copy_bytes(void* dst, const void* src, size_t bytes);
// The bytes of one output of a launch of ck (its result; each peer output is as large).
size_t output_bytes(const CpuKernel& ck);
// Whether a launch of ck on bufs takes its streaming entry (HostKernel::stream; cpu_collective.cpp).
bool streams(const CpuKernel& ck, const std::vector<void*>& bufs, size_t out_bytes);
// The elements of a kernel's range per piece that TBB runs (runtime_params().kernel_split).
inline int64_t split_grain(int64_t numel) { return numel / 64 > 4096 ? numel / 64 : 4096; }

// Step i of launch l, which is no barrier, over elements [begin, end) of its range (offsets from the
// step's first element), on the calling thread.
void run_collective_step(const CollectiveLaunch& l, size_t i, size_t itemsize, int64_t begin, int64_t end);
// Launch l's steps on the calling thread (its device's queue thread), each step's range split across
// TBB workers as a kernel's is, the barriers on call.barrier (waiting at most `timeout`). A step that
// throws breaks the barrier, so the other devices stop waiting for this one (they fail with DeviceError).
void run_collective(const CollectiveLaunch& l, const CollectiveCall& call, std::chrono::milliseconds timeout);

}  // namespace ringrt::cpu_detail
