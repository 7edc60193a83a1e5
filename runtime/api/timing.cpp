// Waiting for and timing the work queued on the devices: synchronize() and DeviceClock
// (runtime/api/tensor.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <optional>

#include "core/errors.hpp"
#include "core/params_internal.hpp"
#include "runtime/api/tensor.hpp"
#include "runtime/device/device.hpp"
#include "runtime/engine/pending.hpp"

namespace ringrt {

void synchronize() { wait_in_flight(watchdog_timeout()); }

struct DeviceClock::Marks {
  std::vector<std::pair<Device*, Event>> starts;
};

DeviceClock::DeviceClock(const std::vector<std::string>& devices) : marks_(std::make_unique<Marks>()) {
  for (const std::string& name : devices) {
    Device& dev = device(name);
    marks_->starts.emplace_back(&dev, dev.marker());
  }
}

DeviceClock::~DeviceClock() = default;

double DeviceClock::stop() {
  std::vector<Event> ends;
  for (auto& [dev, start] : marks_->starts) ends.push_back(dev->marker());
  double longest = 0;
  for (size_t i = 0; i < ends.size(); ++i) {
    const Event& start = marks_->starts[i].second;
    for (const Event* e : std::initializer_list<const Event*>{&start, &ends[i]})
      if (!e->wait_for(watchdog_timeout()))
        throw TimeoutError(fmt::format("DeviceClock: {}'s marker did not complete within runtime.watchdog_s",
                                       marks_->starts[i].first->name()));
    std::optional<Event::Times> a = start.times(), b = ends[i].times();
    if (!a || !b) throw InternalError("DeviceClock: a device marker has no time");
    longest = std::max(longest, std::chrono::duration<double>(b->end - a->end).count());
  }
  return longest;
}

}  // namespace ringrt
