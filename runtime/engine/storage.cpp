// The device memory of a BUFFER (executor.hpp DeviceStorage): its blocks, host reads and writes, and
// the work in flight on it (runtime/engine/pending.hpp).
#include <fmt/format.h>

#include "rewrite/errors.hpp"
#include "runtime/engine/executor.hpp"

namespace ringrt {

namespace {
std::vector<Block> allocate(const DeviceSpec& devices, size_t bytes) {
  if (!devices.tuple() && !devices.single()) throw InternalError("memory for a value without a device");
  std::vector<Block> out;
  for (const auto& name : devices.tuple() ? devices.names() : std::vector<std::string>{devices.name()}) {
    Device& dev = device(name);
    out.push_back({&dev, dev.allocate(bytes), bytes});
  }
  return out;
}
}  // namespace

DeviceStorage::DeviceStorage(int64_t id, const DeviceSpec& devices, DType dtype, int64_t numel)
    : id_(id), dtype_(dtype), numel_(numel), blocks_(allocate(devices, static_cast<size_t>(numel * itemsize(dtype)))) {}

DeviceStorage::~DeviceStorage() {
  if (pending_ && !pending_->done()) {  // work in flight still uses the blocks: freed once it completed
    drain_devices_at_exit();
    pending_->when_done([blocks = std::move(blocks_)] {
      for (const Block& b : blocks) b.device->free(b.ptr, b.bytes);
    });
    return;
  }
  for (const Block& b : blocks_) b.device->free(b.ptr, b.bytes);
}

std::shared_ptr<const PendingWork> DeviceStorage::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_;
}

void DeviceStorage::set_pending(std::shared_ptr<const PendingWork> work) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = std::move(work);
}

void DeviceStorage::wait_pending() const {
  std::shared_ptr<const PendingWork> work = pending();
  if (!work) return;
  work->wait(watchdog_timeout());
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_ == work) pending_.reset();  // completed: nothing to wait for any more
}

std::vector<HostBuffer> DeviceStorage::to_host(bool remote_as_zeros) const {
  wait_pending();
  std::vector<HostBuffer> out;
  for (const Block& b : blocks_) {
    HostBuffer h(dtype_, {numel_});
    if (!remote_as_zeros || b.device->remote_rank() < 0) b.device->copy_out(h.bytes.data(), b.ptr, h.bytes.size());
    out.push_back(std::move(h));
  }
  return out;
}

void DeviceStorage::read(size_t b, int64_t first, HostBuffer& out) const {
  if (b >= blocks_.size() || first < 0 || out.numel() > numel_ - first || out.dtype != dtype_)
    throw InternalError(
        fmt::format("DeviceStorage::read: elements [{}, {}) of block {} of buffer {} ({} blocks "
                    "of {} {})",
                    first, first + out.numel(), b, id_, blocks_.size(), numel_, dtype_name(dtype_)));
  wait_pending();
  const Block& block = blocks_[b];
  if (block.device->remote_rank() >= 0)
    throw DeviceError(fmt::format("buffer {}: device {} is on rank {}, not this one", id_, block.device->name(),
                                  block.device->remote_rank()));
  block.device->copy_out(out.bytes.data(), static_cast<const char*>(block.ptr) + first * itemsize(dtype_),
                         out.bytes.size());
}

void DeviceStorage::from_host(const std::vector<HostBuffer>& data) {
  wait_pending();
  for (size_t d = 0; d < blocks_.size(); ++d) {
    const HostBuffer& h = data.at(data.size() == 1 ? 0 : d);
    if (h.bytes.size() != blocks_[d].bytes) throw InternalError("DeviceStorage::from_host: size mismatch");
    if (blocks_[d].device->remote_rank() >= 0) continue;  // another rank writes its own devices
    blocks_[d].device->copy_in(blocks_[d].ptr, h.bytes.data(), h.bytes.size());
  }
}

}  // namespace ringrt
