#include "runtime/device.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <condition_variable>
#include <map>
#include <mutex>

#include "rewrite/errors.hpp"
#include "rewrite/settings.hpp"
#include "runtime/cpu/cpu_device.hpp"
#if defined(RINGRT_HAVE_HIP) && __has_include("runtime/hip/hip_device.hpp")
#define RINGRT_HIP_DEVICES 1
#include "runtime/hip/hip_device.hpp"
#endif

namespace ringrt {

// ---------------------------------------------------------------------------------------------
// events

struct Event::State {
  mutable std::mutex mu;
  mutable std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  std::shared_ptr<const Native> native;
  std::vector<std::function<void()>> on_done;  // run by set_done
};

Event::Event() : s_(std::make_shared<State>()) {}

namespace {
void run_noexcept(const std::function<void()>& fn) noexcept { fn(); }  // a throw ends the process
}  // namespace

bool Event::done() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->done;
}

bool Event::wait_for(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(s_->mu);
  if (!s_->cv.wait_for(lock, timeout, [&] { return s_->done; })) return false;
  if (s_->error) std::rethrow_exception(s_->error);
  return true;
}

void Event::set_done(std::exception_ptr error) const {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->done = true;
    s_->error = error;
    callbacks.swap(s_->on_done);
  }
  s_->cv.notify_all();
  for (auto& fn : callbacks) run_noexcept(fn);
}

void Event::on_done(std::function<void()> fn) const {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (!s_->done) {
      s_->on_done.push_back(std::move(fn));
      return;
    }
  }
  run_noexcept(fn);
}

void Event::set_native(std::shared_ptr<const Native> native) const {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->native = std::move(native);
  }
  s_->cv.notify_all();
}

std::shared_ptr<const Event::Native> Event::native() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->native;
}

bool Event::wait_ready(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(s_->mu);
  return s_->cv.wait_for(lock, timeout, [&] { return s_->done || s_->native; });
}

// ---------------------------------------------------------------------------------------------
// the registry

namespace {
struct Registry {
  std::mutex mu;
  int cpu_count = 4;
  std::map<std::string, std::unique_ptr<Device>> devices;
};
Registry& registry() {
  static Registry r;
  return r;
}

std::vector<std::string> existing(int cpu_count) {
  std::vector<std::string> names;
  for (int i = 0; i < cpu_count; ++i) names.push_back(fmt::format("CPU:{}", i));
#ifdef RINGRT_HIP_DEVICES
  for (const auto& n : hip_device_names()) names.push_back(n);
#endif
  return names;
}

}  // namespace

void set_cpu_device_count(int n) {
  if (n < 1) throw DeviceError(fmt::format("the cpu backend needs at least one device, got {}", n));
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.cpu_count = std::max(r.cpu_count, n);
}

Device& device(const std::string& name) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (auto it = r.devices.find(name); it != r.devices.end()) return *it->second;
  auto parsed = parse_device_name(name);  // (kind, index)
  std::unique_ptr<Device> dev;
  if (parsed && parsed->first == "CPU" && parsed->second < r.cpu_count) dev = make_cpu_device(name);
#ifdef RINGRT_HIP_DEVICES
  if (parsed && parsed->first == "HIP" && parsed->second < static_cast<int>(hip_device_names().size()))
    dev = make_hip_device(parsed->second);
#endif
  if (!dev)
    throw DeviceError(
        fmt::format("unknown device '{}'; the devices are {}", name, fmt::join(existing(r.cpu_count), ", ")));
  return *r.devices.emplace(name, std::move(dev)).first->second;
}

MemoryStats memory_stats(const std::string& name) { return device(name).memory_stats(); }
void reset_peak_memory(const std::string& name) { device(name).reset_peak_memory(); }

}  // namespace ringrt
