#include "runtime/engine/host_write.hpp"

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <mutex>
#include <optional>

#include "rewrite/errors.hpp"
#include "runtime/engine/collect.hpp"

namespace ringrt {

namespace {
// A write of at least this many bytes in all to several devices copies to them at once (TBB): one
// thread's memcpy is a fraction of the host's memory bandwidth.
constexpr size_t kConcurrentWriteBytes = size_t{1} << 20;
}  // namespace

void write_from_host(const StatePtr& st, const std::vector<const HostBuffer*>& data) {
  GraphUse use;
  std::lock_guard<std::recursive_mutex> lock(realize_mutex());
  own(st);  // memory of its own: the write never reaches a lender, a pending assignment has run
  if (st->borrowed || !is_buffer_view(st->uop))
    throw InternalError("write: the tensor has no memory of its own after own(): " + st->uop.to_string());
  int64_t id = buffer_id_of(st->uop);
  before_write(st, id);  // readers of the old contents realized, borrowers copied out
  std::shared_ptr<DeviceStorage> storage = find_storage(id);
  if (!storage) throw InternalError(fmt::format("write: no storage for buffer {}", id));
  const std::vector<Block>& blocks = storage->blocks();
  if (data.size() != 1 && data.size() != blocks.size())
    throw InternalError(fmt::format("write: {} host buffers for {} device blocks", data.size(), blocks.size()));
  for (size_t i = 0; i < data.size(); ++i)
    if (data[i]->bytes.size() != blocks[i].bytes)
      throw InternalError(fmt::format("write: {} bytes for a block of {} bytes on device {}", data[i]->bytes.size(),
                                      blocks[i].bytes, i));
  // Work in flight that reads or writes the old contents goes first: the copies wait for it on the devices.
  std::vector<Event> before;
  if (std::shared_ptr<const PendingWork> p = storage->pending())
    for (const Event& e : p->tails())
      if (!e.succeeded()) before.push_back(e);
  std::vector<std::optional<Event>> copies(blocks.size());
  size_t bytes = 0;
  auto copy = [&](size_t i) {
    if (blocks[i].device->remote_rank() >= 0) return;  // another rank writes its own devices
    const HostBuffer& h = *data[data.size() == 1 ? 0 : i];
    copies[i] = blocks[i].device->copy_in_async(blocks[i].ptr, h.bytes.data(), h.bytes.size(), before);
  };
  for (const Block& b : blocks) bytes += b.bytes;
  if (blocks.size() > 1 && bytes >= kConcurrentWriteBytes) {  // the devices' copies at once
    tbb::parallel_for(size_t{0}, blocks.size(), copy);
  } else {
    for (size_t i = 0; i < blocks.size(); ++i) copy(i);
  }
  std::vector<Event> pending;
  for (const std::optional<Event>& e : copies)
    if (e && !e->succeeded()) pending.push_back(*e);
  if (pending.empty()) return;  // (the cpu backend's copies ran)
  auto work = std::make_shared<PendingWork>(std::move(pending),
                                            fmt::format("a host write of {} bytes to buffer {}", bytes, storage->id()));
  storage->set_pending(work);
  track_in_flight(work);
}

}  // namespace ringrt
