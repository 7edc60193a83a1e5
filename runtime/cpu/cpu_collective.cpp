// A fused collective's steps on one cpu device (cpu_kernel.hpp; the steps: rewrite/collective.hpp), and
// the kernel helpers they share with the cpu device (cpu_device.cpp).
#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <cstring>

#include "core/params_internal.hpp"
#include "runtime/cpu/cpu_kernel.hpp"

namespace ringrt::cpu_detail {

void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes != 0) std::memcpy(dst, src, bytes);
}

size_t output_bytes(const CpuKernel& ck) {
  return static_cast<size_t>(ck.k.numel) * static_cast<size_t>(itemsize(ck.k.dtype));
}

// Whether a launch of ck on bufs takes its streaming entry (HostKernel::stream): when its outputs
// together take at least runtime_params().stream_bytes and none overlaps an input. Out of place, a store
// streamed past the cache skips the read of its line a plain store first makes (a third of an
// out-of-place reduce's memory traffic: N=4, 64 MiB, 0.70x the all2all's time); in place the line was
// just read into the cache, and streaming it out only costs (the in-place GPT-2 step: about 1.2x).
bool streams(const CpuKernel& ck, const std::vector<void*>& bufs, size_t out_bytes) {
  int64_t at = runtime_params().stream_bytes;
  size_t outputs = 1 + static_cast<size_t>(ck.k.peer_outputs);
  if (!ck.host.stream || at <= 0 || out_bytes * outputs < static_cast<size_t>(at)) return false;
  auto overlap = [](const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
    auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
    return x < y + b_bytes && y < x + a_bytes;
  };
  for (size_t o = 0; o < outputs; ++o) {
    const void* out = bufs.at(o == 0 ? 0 : ck.k.inputs.size() + o);
    for (size_t i = 0; i < ck.k.inputs.size(); ++i) {
      const codegen::KernelInput& in = ck.k.inputs[i];
      if (overlap(out, out_bytes, bufs.at(1 + i),
                  static_cast<size_t>(in.numel) * static_cast<size_t>(itemsize(in.dtype))))
        return false;
    }
  }
  return true;
}

void run_collective_step(const CollectiveLaunch& l, size_t i, size_t itemsize, int64_t begin, int64_t end) {
  const FusedStep& s = l.steps[i];
  auto at = [&](void* p, int64_t elements) {
    return static_cast<char*>(p) + static_cast<size_t>(s.begin + elements) * itemsize;
  };
  size_t bytes = static_cast<size_t>(end - begin) * itemsize;
  char* out = at(l.outputs[static_cast<size_t>(l.rank)], begin);
  switch (s.kind) {
    case FusedStep::Kind::combine: {  // streamed past the cache as a kernel's launch is (streams)
      std::vector<void*> bufs = combine_buffers(l, s, itemsize);
      const auto& ck = static_cast<const CpuKernel&>(*l.combines.at(i));
      (streams(ck, bufs, output_bytes(ck)) ? ck.host.stream : ck.host.fn)(bufs.data(), l.rank, begin, end);
      return;
    }
    case FusedStep::Kind::gather: {
      const auto& from = s.from_input ? l.inputs : l.outputs;
      char* to = static_cast<char*>(l.outputs[static_cast<size_t>(l.rank)]) +
                 static_cast<size_t>(s.begin - s.out_shift + begin) * itemsize;
      return copy_bytes(to, at(from.at(static_cast<size_t>(s.peer)), begin), bytes);
    }
    case FusedStep::Kind::publish:
      return copy_bytes(out, at(l.scratch(), begin), bytes);
    case FusedStep::Kind::barrier:
      return;
  }
}

void run_collective(const CollectiveLaunch& l, const CollectiveCall& call, std::chrono::milliseconds timeout) {
  uint64_t barrier = call.base;
  const std::string who = fmt::format("{} on {}", call.name, l.device->name());
  try {
    for (size_t i = 0; i < l.steps.size(); ++i) {
      const FusedStep& s = l.steps[i];
      if (s.kind == FusedStep::Kind::barrier) {
        call.barrier->arrive_and_wait(barrier++, timeout, who);
        continue;
      }
      for (const FusedWait& w : s.waits)
        if (w.device >= 0)
          call.barrier->wait_signals(w.device, call.signal_base + static_cast<uint64_t>(w.count), timeout, who);
      int64_t n = s.end - s.begin, grain = split_grain(n);
      if (n == 0) {  // (a ring's empty slice)
      } else if (!runtime_params().kernel_split || n <= grain) {
        run_collective_step(l, i, call.itemsize, 0, n);
      } else {
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, grain), [&](const tbb::blocked_range<int64_t>& r) {
          run_collective_step(l, i, call.itemsize, r.begin(), r.end());
        });
      }
      if (s.signal) call.barrier->signal(l.rank);
    }
  } catch (...) {
    call.barrier->abort();
    throw;
  }
}

}  // namespace ringrt::cpu_detail
