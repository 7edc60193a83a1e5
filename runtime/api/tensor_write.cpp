// Persistent tensors written from the host: Tensor::write, write_shards and allreduce_in_place (see
// their comments in runtime/api/tensor.hpp). The front end checks shapes and splits the host data per
// device; the engine (runtime/engine/host_write.cpp) orders and performs the write.
#include <fmt/format.h>

#include <cstring>

#include "core/errors.hpp"
#include "rewrite/uop.hpp"
#include "runtime/api/internal.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/engine/collect.hpp"
#include "runtime/engine/host_write.hpp"
#include "runtime/engine/realize.hpp"

namespace ringrt {

namespace {

std::string described(DType dtype, const Shape& shape) {
  return fmt::format("{} {}", dtype_name(dtype), shape_str(shape));
}

// Refuses what cannot be written in place from the host: a view (a shrink of another tensor, or a
// lazy movement view such as a permute or an expand, as assign() does) and a tensor with no device.
void check_writable(const TensorState& st, const char* op) {
  if (st.view_base)
    throw ShapeError(fmt::format(
        "{}: the tensor (shape {}) is a shrink of a tensor of shape {}: write the whole tensor, or assign() into "
        "the view",
        op, shape_str(st.uop.shape()), shape_str(st.view_base->uop.shape())));
  if (!st.borrowed && !is_buffer_view(st.uop) && group::movement().contains(st.uop.op()))
    throw ShapeError(
        fmt::format("{}: the tensor (shape {}) is a lazy {} view with no memory of its own; write into the tensor "
                    "it views, or into a contiguous() copy",
                    op, shape_str(st.uop.shape()), op_name(st.uop.op())));
  if (st.uop.device().none())
    throw DeviceError(
        fmt::format("{}: the tensor (shape {}) is on no device (a constant)", op, shape_str(st.uop.shape())));
}

// data's bytes match its shape and dtype.
void check_bytes(const HostBuffer& data, const char* op) {
  if (static_cast<int64_t>(data.bytes.size()) != prod(data.shape) * itemsize(data.dtype))
    throw ShapeError(
        fmt::format("{}: host data of {} holds {} bytes", op, described(data.dtype, data.shape), data.bytes.size()));
}

// The part of data (the whole logical value) on device d of n when it is split along axis.
HostBuffer shard_of(const HostBuffer& data, int axis, int64_t n, int64_t d) {
  Shape local = data.shape;
  auto ax = static_cast<size_t>(axis);
  local[ax] /= n;
  HostBuffer out(data.dtype, local);
  int64_t outer = prod(Shape(data.shape.begin(), data.shape.begin() + axis));
  auto inner = static_cast<size_t>(prod(Shape(data.shape.begin() + axis + 1, data.shape.end())) * itemsize(data.dtype));
  auto rows = static_cast<size_t>(local[ax]), len = static_cast<size_t>(data.shape[ax]);
  for (int64_t o = 0; o < outer; ++o) {
    size_t from = (static_cast<size_t>(o) * len + static_cast<size_t>(d) * rows) * inner;
    size_t to = static_cast<size_t>(o) * rows * inner;
    if (rows * inner > 0) std::memcpy(out.bytes.data() + to, data.bytes.data() + from, rows * inner);
  }
  return out;
}

}  // namespace

Tensor& Tensor::write(const HostBuffer& data) {
  GraphUse use;
  check_writable(*s_, "write");
  if (data.dtype != dtype() || data.shape != shape())
    throw ShapeError(fmt::format("write: host data of {} into a tensor of {}", described(data.dtype, data.shape),
                                 described(dtype(), shape())));
  check_bytes(data, "write");
  std::optional<int> axis = shard_axis();
  if (!axis) {
    write_from_host(s_, {&data});  // the same bytes to every device
    return *this;
  }
  auto n = static_cast<int64_t>(devices().size());
  std::vector<HostBuffer> shards;
  std::vector<const HostBuffer*> ptrs;
  for (int64_t d = 0; d < n; ++d) shards.push_back(shard_of(data, *axis, n, d));
  for (const HostBuffer& h : shards) ptrs.push_back(&h);
  write_from_host(s_, ptrs);
  return *this;
}

Tensor& Tensor::write_shards(const std::vector<HostBuffer>& shards) {
  GraphUse use;
  check_writable(*s_, "write_shards");
  std::vector<std::string> devs = devices();
  if (shards.size() != devs.size())
    throw ShapeError(fmt::format("write_shards: {} host buffers for a tensor of shape {} on {} devices", shards.size(),
                                 shape_str(shape()), devs.size()));
  Shape local = shape();
  if (std::optional<int> axis = shard_axis()) local[static_cast<size_t>(*axis)] /= static_cast<int64_t>(devs.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    if (shards[i].dtype != dtype() || shards[i].shape != local)
      throw ShapeError(fmt::format("write_shards: host buffer {} (for {}) is {}, the local value is {}", i, devs[i],
                                   described(shards[i].dtype, shards[i].shape), described(dtype(), local)));
    check_bytes(shards[i], "write_shards");
  }
  std::vector<const HostBuffer*> ptrs;
  for (const HostBuffer& h : shards) ptrs.push_back(&h);
  write_from_host(s_, ptrs);
  return *this;
}

Tensor& Tensor::allreduce_in_place(ReduceOp rop) {
  GraphUse use;
  Ops op = checked_ir_op("allreduce_in_place", rop);
  check_writable(*s_, "allreduce_in_place");
  if (!uop().device().tuple() || uop().device().count() < 2) return *this;  // one value: its own reduction
  own(s_);  // the allreduce reads the tensor's memory (in place), not a lazy graph computed again
  return assign(derive(uop().allreduce(op, uop().device())));
}

}  // namespace ringrt
