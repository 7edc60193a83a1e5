// The device memory of a BUFFER (executor.hpp DeviceStorage): its blocks, host reads and writes, and
// the work in flight on it (runtime/engine/pending.hpp).
#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <optional>

#include "core/errors.hpp"
#include "runtime/engine/executor.hpp"

namespace ringrt {

namespace {

// A write of at least this many bytes in all to several devices copies to them at once (TBB): one
// thread's memcpy is a fraction of the host's memory bandwidth.
constexpr size_t kConcurrentWriteBytes = size_t{1} << 20;

std::vector<Block> allocate(const DeviceSpec& devices, size_t bytes) {
  if (!devices.tuple() && !devices.single()) throw InternalError("memory for a value without a device");
  std::vector<Block> out;
  for (const auto& name : devices.tuple() ? devices.names() : std::vector<std::string>{devices.name()}) {
    Device& dev = device(name);
    out.push_back({&dev, allocate_after_in_flight(dev, bytes), bytes});
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
  if (!has_pending_.load(std::memory_order_acquire)) return nullptr;  // (the cpu backend: never any)
  std::lock_guard<std::mutex> lock(mu_);
  return pending_;
}

void DeviceStorage::set_pending(std::shared_ptr<const PendingWork> work) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = std::move(work);
  has_pending_.store(pending_ != nullptr, std::memory_order_release);
}

void DeviceStorage::wait_pending() const {
  std::shared_ptr<const PendingWork> work = pending();
  if (!work) return;
  work->wait(watchdog_timeout());
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_ == work) {  // completed: nothing to wait for any more
    pending_.reset();
    has_pending_.store(false, std::memory_order_release);
  }
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
  std::vector<const HostBuffer*> ptrs;
  for (const HostBuffer& h : data) ptrs.push_back(&h);
  write(ptrs);
}

void DeviceStorage::write(const std::vector<const HostBuffer*>& data) {
  if (data.size() != 1 && data.size() != blocks_.size())
    throw InternalError(
        fmt::format("buffer {}: {} host buffers for {} device blocks", id_, data.size(), blocks_.size()));
  for (size_t i = 0; i < blocks_.size(); ++i)
    if (data[data.size() == 1 ? 0 : i]->bytes.size() != blocks_[i].bytes)
      throw InternalError(fmt::format("buffer {}: {} bytes for a block of {} bytes on device {}", id_,
                                      data[data.size() == 1 ? 0 : i]->bytes.size(), blocks_[i].bytes, i));
  // Work in flight that reads or writes the old contents goes first: the copies wait for it on the devices.
  std::vector<Event> before;
  if (std::shared_ptr<const PendingWork> p = pending())
    for (const Event& e : p->tails())
      if (!e.succeeded()) before.push_back(e);
  std::vector<std::optional<Event>> copies(blocks_.size());
  size_t bytes = 0;
  auto copy = [&](size_t i) {
    if (blocks_[i].device->remote_rank() >= 0) return;  // another rank writes its own devices
    const HostBuffer& h = *data[data.size() == 1 ? 0 : i];
    copies[i] = blocks_[i].device->copy_in_async(blocks_[i].ptr, h.bytes.data(), h.bytes.size(), before);
  };
  for (const Block& b : blocks_) bytes += b.bytes;
  if (blocks_.size() > 1 && bytes >= kConcurrentWriteBytes) {  // the devices' copies at once
    tbb::parallel_for(size_t{0}, blocks_.size(), copy);
  } else {
    for (size_t i = 0; i < blocks_.size(); ++i) copy(i);
  }
  std::vector<Event> pending;
  for (const std::optional<Event>& e : copies)
    if (e && !e->succeeded()) pending.push_back(*e);
  if (pending.empty()) return;  // (the cpu backend's copies ran)
  auto work = std::make_shared<PendingWork>(std::move(pending),
                                            fmt::format("a host write of {} bytes to buffer {}", bytes, id_));
  set_pending(work);
  track_in_flight(work);
}

}  // namespace ringrt
