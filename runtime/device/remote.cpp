// RemoteDevice (runtime/device/remote.hpp) and cluster() (runtime/device/cluster.hpp).
#include "runtime/device/remote.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/interrupt.hpp"
#include "core/params_internal.hpp"
#include "runtime/device/cluster.hpp"

namespace ringrt {

namespace {

[[noreturn]] void not_here(const std::string& name, int rank, const char* what) {
  int me = cluster() ? cluster()->info().rank : 0;
  throw DeviceError(
      fmt::format("{}: {} is a device of rank {}, not of this rank ({}); each rank reads and writes "
                  "only its own devices' values (Tensor::local_shards)",
                  what, name, rank, me));
}
}  // namespace

void RemoteDevice::copy_in(void*, const void*, size_t) { not_here(name_, rank_, "copy_in"); }
void RemoteDevice::copy_out(void*, const void*, size_t) { not_here(name_, rank_, "copy_out"); }
std::shared_ptr<CompiledKernel> RemoteDevice::compile(const codegen::Kernel&) {
  throw InternalError(fmt::format("compile for {}: rank {} compiles its own kernels", name_, rank_));
}

// ---- the cluster

namespace {
struct ClusterSlot {
  std::mutex mu;
  std::unique_ptr<Cluster> (*factory)() = nullptr;
  std::unique_ptr<Cluster> cluster;
  bool started = false;
  std::exception_ptr error;  // of the start: rethrown by every later call
};
ClusterSlot& slot() {
  static auto* s = new ClusterSlot;  // never destroyed: devices and exit handlers use it to the end
  return *s;
}
}  // namespace

void register_cluster_factory(std::unique_ptr<Cluster> (*factory)()) {
  std::lock_guard<std::mutex> lock(slot().mu);
  slot().factory = factory;
}

Event Cluster::collective(Device& on, const CollectiveCall& call, std::vector<Event> after) {
  (void)after;
  throw InternalError(
      fmt::format("MPI's {} on {}: this cluster runs no collectives", collective_name(call.collective), on.name()));
}

void register_builtin_backends_once();  // registry.cpp: the generated registrations (the factory among them)

bool wait_across_ranks(const Event& e, std::chrono::steady_clock::time_point deadline) {
  constexpr auto kSpin = std::chrono::microseconds(2000), kBackoff = std::chrono::microseconds(50);
  using Clock = std::chrono::steady_clock;
  Cluster* c = cluster();
  auto spin_until = Clock::now() + kSpin;
  for (;;) {
    bool moved = c && c->progress();
    if (e.wait_for(std::chrono::milliseconds(0))) return true;
    auto now = Clock::now();
    if (now >= deadline) return false;
    if (int sig = interrupt_signal(); sig != 0)
      throw Interrupted(fmt::format("stopped by signal {} while a run across ranks was in flight", sig));
    if (moved) spin_until = now + kSpin;
    if (now < spin_until)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(kBackoff);
  }
}

void settle_across_ranks(const std::vector<Event>& after, std::chrono::steady_clock::time_point deadline) noexcept {
  for (const Event& e : after) {
    if (e.done()) continue;
    try {
      if (!wait_across_ranks(e, deadline)) return;
    } catch (...) {  // an error or a stop: the run's wait reports it
      return;
    }
  }
}

Cluster* cluster() {
  register_builtin_backends_once();
  auto& s = slot();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.started) {
    s.started = true;
    try {
      if (s.factory) s.cluster = s.factory();
    } catch (...) {
      s.error = std::current_exception();
    }
  }
  if (s.error) std::rethrow_exception(s.error);
  return s.cluster.get();
}

const RankInfo& rank_info() {
  static const RankInfo kOneProcess{0, 1, 0, 1, {0}, "", {""}};
  Cluster* c = cluster();
  return c ? c->info() : kOneProcess;
}

std::vector<std::string> global_devices(const std::vector<std::string>& local) {
  Cluster* c = cluster();
  if (!c) return local;
  for (const std::string& name : local)
    if (!parse_device_name(name))
      throw DeviceError(fmt::format("global_devices: '{}' is not a local device name like CPU:0", name));
  std::string mine;
  for (const std::string& name : local) mine += name + "\n";
  std::vector<std::string> all =
      c->allgather("gathering every rank's devices (global_devices)", mine, watchdog_timeout());
  std::vector<std::string> out;
  for (size_t r = 0; r < all.size(); ++r)
    for (size_t start = 0, end; (end = all[r].find('\n', start)) != std::string::npos; start = end + 1)
      out.push_back(fmt::format("rank{}/{}", r, all[r].substr(start, end - start)));
  return out;
}

bool is_local_device(const std::string& name) { return device(name).remote_rank() < 0; }

int64_t sum_over_ranks(int64_t value) {
  Cluster* c = cluster();
  if (!c) return value;
  int64_t sum = 0;
  for (const std::string& v :
       c->allgather("summing a value over the ranks (sum_over_ranks)", std::to_string(value), watchdog_timeout()))
    sum += std::stoll(v);
  return sum;
}

double max_over_ranks(double value) {
  Cluster* c = cluster();
  if (!c) return value;
  double out = -std::numeric_limits<double>::infinity();
  for (const std::string& v : c->allgather("the largest value over the ranks (max_over_ranks)",
                                           fmt::format("{:a}", value), watchdog_timeout())) {
    double x = std::strtod(v.c_str(), nullptr);  // hexadecimal: the value exactly
    if (std::isnan(x)) return x;
    out = std::max(out, x);
  }
  return out;
}

void abort_ranks(int status) {
  Cluster* c = nullptr;
  try {
    c = cluster();
  } catch (const std::exception&) {  // MPI did not start: this process ends alone
  }
  if (c) c->abort(status);
  std::fflush(nullptr);
  std::_Exit(status);  // no exit handlers: a thread may still wait inside MPI_Init
}

}  // namespace ringrt
