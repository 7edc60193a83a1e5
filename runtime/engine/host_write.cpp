#include "runtime/engine/host_write.hpp"

#include <fmt/format.h>

#include <mutex>

#include "core/errors.hpp"
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
  storage->write(data);  // after the work in flight on the old contents, on the devices
}

}  // namespace ringrt
