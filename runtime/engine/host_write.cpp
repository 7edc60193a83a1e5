#include "runtime/engine/host_write.hpp"

#include <fmt/format.h>

#include <mutex>

#include "rewrite/errors.hpp"
#include "runtime/engine/collect.hpp"

namespace ringrt {

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
  for (size_t i = 0; i < blocks.size(); ++i) {           // synchronous copies (Device::copy_in)
    if (blocks[i].device->remote_rank() >= 0) continue;  // another rank writes its own devices
    const HostBuffer& h = *data[data.size() == 1 ? 0 : i];
    blocks[i].device->copy_in(blocks[i].ptr, h.bytes.data(), h.bytes.size());
  }
}

}  // namespace ringrt
