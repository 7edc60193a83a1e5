// The collectives of the Tensor front end: reduce_scatter, allgather, broadcast, reduce_to, alltoall (see
// their comments in runtime/api/tensor.hpp). Each is built on the per-device values from IR the multi rules
// already use, so the interpreter and shape inference need nothing new, and rewrite/rules/collectives.cpp
// recognizes and lowers it:
// - reduce_scatter: an ALLREDUCE onto the tuple whose only reader takes each device's own part (a
//   shard_local of it), the scatter axis first so that the part is a flat range of the buffer
// - allgather: shard(devices(), nullopt), the ALLREDUCE of the zero-padded shards
// - alltoall: the same allgather of the shards split (1, n, c) along the shard axis, each device reading
//   its own chunk j of every shard (a shard_local along the chunk axis)
// - broadcast: a COPY from the root to the tuple; reduce_to: an ALLREDUCE onto the root
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "core/errors.hpp"
#include "rewrite/uop.hpp"
#include "runtime/api/internal.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/device/device.hpp"
#include "runtime/engine/collect.hpp"

namespace ringrt {

namespace {

std::string described(const Tensor& t) {
  std::vector<std::string> devs = t.devices();
  return fmt::format("shape {} {}, on ({}){}", shape_str(t.shape()), dtype_name(t.dtype()), fmt::join(devs, ", "),
                     t.shard_axis() ? fmt::format(" sharded on axis {}", *t.shard_axis()) : std::string(" replicated"));
}

// The tensor's shard axis, or ShapeError naming op when it is not sharded.
int sharded_axis(const char* op, const Tensor& t) {
  if (!t.shard_axis())
    throw ShapeError(fmt::format("{}: the tensor is not sharded ({}): shard it first", op, described(t)));
  return *t.shard_axis();
}

}  // namespace

Tensor Tensor::on_tuple(const char* op) const {
  if (!uop().device().tuple())
    throw DeviceError(fmt::format("{}: the tensor (shape {}) is on {}, not on a device tuple", op, shape_str(shape()),
                                  uop().device().none() ? std::string("no device") : uop().device().to_string()));
  Tensor t = *this;
  if (t.uop().op() != Ops::MULTI && t.uop().logical()) t.realize();  // need the per-device values
  return t;
}

Tensor Tensor::reduce_scatter(ReduceOp rop, int axis) const {
  GraphUse use;
  Ops op = checked_ir_op("reduce_scatter", rop);
  Tensor t = on_tuple("reduce_scatter");
  sharded_axis("reduce_scatter", t);
  UOp local = t.uop().src(0);
  const Shape& L = local.shape();
  int rank = static_cast<int>(L.size()), n = static_cast<int>(local.device().count());
  if (axis < -rank || axis >= rank)
    throw ShapeError(fmt::format("reduce_scatter: axis {} out of range for the local shape {} ({})", axis, shape_str(L),
                                 described(t)));
  int ax = axis < 0 ? axis + rank : axis;
  if (L[static_cast<size_t>(ax)] % n != 0)
    throw ShapeError(
        fmt::format("reduce_scatter: axis {} of the local shape {} has length {}, not a multiple of {} "
                    "devices ({})",
                    ax, shape_str(L), L[static_cast<size_t>(ax)], n, described(t)));
  // the scatter axis first: each device's part is then a flat range of the reduced buffer
  std::vector<int64_t> order(L.size()), back(L.size());
  std::iota(order.begin(), order.end(), 0);
  std::rotate(order.begin(), order.begin() + ax, order.begin() + ax + 1);
  for (size_t i = 0; i < order.size(); ++i) back[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  UOp front = ax == 0 ? local : local.permute(order);
  UOp part = front.allreduce(op, local.device()).shard_local(0);
  return t.derive((ax == 0 ? part : part.permute(back)).multi(ax));
}

Tensor Tensor::allgather() const {
  GraphUse use;
  on_tuple("allgather");
  return shard_axis() ? shard(devices(), std::nullopt) : *this;
}

Tensor Tensor::alltoall() const {
  GraphUse use;
  Tensor t = on_tuple("alltoall");
  int s = sharded_axis("alltoall", t);
  UOp local = t.uop().src(0);
  const Shape& L = local.shape();
  int64_t n = static_cast<int64_t>(local.device().count()), len = L[static_cast<size_t>(s)];
  if (len % n != 0)
    throw ShapeError(
        fmt::format("alltoall: the local length {} along the shard axis {} is not a multiple of {} "
                    "devices ({})",
                    len, s, n, described(t)));
  // (.., 1, n, c, ..): the source's slot (padded into place), then the chunks of its shard
  Shape split(L.begin(), L.begin() + s);
  for (int64_t e : {int64_t{1}, n, len / n}) split.push_back(e);
  split.insert(split.end(), L.begin() + s + 1, L.end());
  UOp gathered = local.reshape(split).unshard_local(s).allreduce(Ops::ADD, local.device());
  return t.derive(gathered.shard_local(s + 1).reshape(L).multi(s));
}

Tensor Tensor::broadcast(int root, const std::vector<std::string>& devices) const {
  GraphUse use;
  if (devices.empty()) throw DeviceError("broadcast: no devices given");
  for (const auto& d : devices) ringrt::device(d);
  if (std::set<std::string>(devices.begin(), devices.end()).size() != devices.size())
    throw DeviceError(fmt::format("broadcast: devices repeat in ({})", fmt::join(devices, ", ")));
  if (root < 0 || static_cast<size_t>(root) >= devices.size())
    throw DeviceError(fmt::format("broadcast: root {} is outside the device tuple ({}) of {} devices", root,
                                  fmt::join(devices, ", "), devices.size()));
  const std::string& from = devices[static_cast<size_t>(root)];
  DeviceSpec to{DeviceTuple(devices)};
  const DeviceSpec& at = uop().device();
  if (at.single()) {
    if (at.name() != from)
      throw DeviceError(fmt::format("broadcast: the tensor (shape {}) is on {}, not on the root {} (index {} of ({}))",
                                    shape_str(shape()), at.name(), from, root, fmt::join(devices, ", ")));
    return derive(uop().copy_to_device(to));
  }
  Tensor t = on_tuple("broadcast");
  if (t.devices() != devices)
    throw DeviceError(fmt::format("broadcast: the tensor is on ({}), not on the tuple ({}) it is broadcast to",
                                  fmt::join(t.devices(), ", "), fmt::join(devices, ", ")));
  UOp local = t.uop().op() == Ops::MULTI ? t.uop().src(0) : t.uop();
  return t.derive(local.copy_to_device(to, root));
}

Tensor Tensor::reduce_to(int root, ReduceOp rop) const {
  GraphUse use;
  Ops op = checked_ir_op("reduce_to", rop);
  Tensor t = on_tuple("reduce_to");
  std::vector<std::string> devs = t.devices();
  if (root < 0 || static_cast<size_t>(root) >= devs.size())
    throw DeviceError(fmt::format("reduce_to: root {} is outside the device tuple ({}) of {} devices", root,
                                  fmt::join(devs, ", "), devs.size()));
  UOp local = t.uop().op() == Ops::MULTI ? t.uop().src(0) : t.uop();
  return t.derive(local.allreduce(op, DeviceSpec(devs[static_cast<size_t>(root)])));
}

}  // namespace ringrt
