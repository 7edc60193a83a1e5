// Host writes into persistent tensors (internal): new values from the host copied into a tensor's own
// device memory in place, the engine part of Tensor::write and Tensor::write_shards
// (runtime/api/tensor_write.cpp). Reference: PyTorch's Tensor.copy_ from a CPU tensor into a
// persistent parameter or gradient bucket; tinygrad's Buffer.copyin into a realized buffer.
//
// Ordering: the write is a write after read like an assignment's (runtime/engine/realize.hpp
// before_write): every live tensor still reading the old contents is realized first, every value
// borrowing the memory gets a copy of its own, then the bytes land: after the work in flight on the old
// contents (runtime/engine/pending.hpp), on the devices; the write is then the storage's pending work.
// No graph node is created.
#pragma once

#include <vector>

#include "core/host_buffer.hpp"
#include "runtime/engine/realize.hpp"

namespace ringrt {

// Writes data into st's memory in place: st is first realized into memory of its own (own(); a
// pending assignment runs, a borrowed value is copied out), then, after before_write, data[i]'s bytes
// are copied into the block of device i (one buffer for every device when data has one element;
// the caller's bytes are read before it returns). Each data[i] must hold exactly one block's bytes
// (prod(local shape) * itemsize; the caller checks shapes and dtypes). The devices' copies run at once
// (Device::copy_in_async, from threads of TBB's pool for 1 MiB and more): on the cpu backend it returns
// once the bytes are in device memory; on GPUs once they are staged (pinned buffers) and queued, and
// whatever reads the tensor waits for them. Throws InternalError for
// a count or size mismatch, what realizing throws (ShapeError, CompileError, DeviceError,
// TimeoutError). Thread-safe: holds realize_mutex() throughout.
void write_from_host(const StatePtr& st, const std::vector<const HostBuffer*>& data);

}  // namespace ringrt
