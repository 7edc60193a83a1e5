// Fused collectives on the device side (runtime/device/device.hpp CollectiveBarrier, launch_collective;
// the algorithms: rewrite/collective.hpp).
#include <fmt/format.h>

#include <thread>

#include "core/errors.hpp"
#include "runtime/device/device.hpp"

namespace ringrt {

// Spins a few microseconds first: the devices of a collective usually arrive within that of each other,
// and a sleep and wake-up costs tens. Then sleeps until the last arrival wakes it, or the timeout.
void CollectiveBarrier::arrive_and_wait(uint64_t index, std::chrono::milliseconds timeout, const std::string& who) {
  if (broken()) throw DeviceError(who + ": an earlier call of this collective failed on another device");
  const uint64_t target = static_cast<uint64_t>(ndev_) * (index + 1);
  uint64_t now = arrived_.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (now >= target) {
    if (now == target) {  // the last arrival: wake the sleepers (under the lock: none misses it)
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    }
    return;
  }
  auto reached = [&] { return arrived_.load(std::memory_order_acquire) >= target || broken(); };
  for (int spin = 0; spin < 256; ++spin) {
    if (reached()) break;
    std::this_thread::yield();
  }
  if (!reached()) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, reached)) {
      broken_.store(true, std::memory_order_release);
      cv_.notify_all();
      lock.unlock();
      throw TimeoutError(fmt::format("{}: not every device reached barrier {} within {} ms ({} of {} arrived)", who,
                                     index, timeout.count(), arrived_.load() - static_cast<uint64_t>(ndev_) * index,
                                     ndev_));
    }
  }
  if (arrived_.load(std::memory_order_acquire) < target)
    throw DeviceError(who + ": a device of this collective failed at a barrier");
}

void CollectiveBarrier::pass(int64_t barriers, int64_t signals) {
  arrived_.fetch_add(static_cast<uint64_t>(ndev_) * static_cast<uint64_t>(barriers), std::memory_order_acq_rel);
  for (std::atomic<uint64_t>& f : flags_) f.fetch_add(static_cast<uint64_t>(signals), std::memory_order_acq_rel);
}

// seq_cst on the flag and on sleepers_: either the signal sees a sleeper (and wakes it under the lock,
// which the sleeper holds from its count to its wait) or the sleeper's check sees the signal.
void CollectiveBarrier::signal(int64_t d) {
  flags_.at(static_cast<size_t>(d)).fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
}

void CollectiveBarrier::wait_signals(int64_t peer, uint64_t target, std::chrono::milliseconds timeout,
                                     const std::string& who) {
  std::atomic<uint64_t>& flag = flags_.at(static_cast<size_t>(peer));
  auto reached = [&] { return flag.load(std::memory_order_seq_cst) >= target || broken(); };
  for (int spin = 0; spin < 256 && !reached(); ++spin) std::this_thread::yield();
  if (!reached()) {
    std::unique_lock<std::mutex> lock(mu_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    bool ok = cv_.wait_for(lock, timeout, reached);
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    if (!ok) {
      broken_.store(true, std::memory_order_release);
      cv_.notify_all();
      lock.unlock();
      throw TimeoutError(fmt::format("{}: device {} of the collective did not signal step {} within {} ms", who, peer,
                                     target, timeout.count()));
    }
  }
  if (flag.load(std::memory_order_acquire) < target)
    throw DeviceError(who + ": a device of this collective failed before a step this one waits for");
}

void CollectiveBarrier::abort() {
  std::lock_guard<std::mutex> lock(mu_);
  broken_.store(true, std::memory_order_release);
  cv_.notify_all();
}

std::vector<void*> combine_buffers(const CollectiveLaunch& l, const FusedStep& s, size_t itemsize) {
  auto at = [&](void* p) {
    return static_cast<void*>(static_cast<char*>(p) + static_cast<size_t>(s.begin) * itemsize);
  };
  auto rank = static_cast<size_t>(l.rank), n = l.outputs.size();
  void* out = static_cast<char*>(l.outputs.at(rank)) + static_cast<size_t>(s.begin - s.out_shift) * itemsize;
  std::vector<void*> bufs{s.to_scratch ? at(l.scratch()) : out};
  if (s.ring()) {  // peer's op own
    auto peer = static_cast<size_t>(s.peer);
    bufs.push_back(at(s.from_input ? l.inputs.at(peer) : s.from_scratch ? l.scratches.at(peer) : l.outputs.at(peer)));
    bufs.push_back(at(l.inputs.at(rank)));
    return bufs;
  }
  for (void* in : l.inputs) bufs.push_back(at(in));
  if (s.all_outputs)
    for (size_t k = 1; k < n; ++k) bufs.push_back(at(l.outputs[(rank + k) % n]));
  return bufs;
}

void* CollectiveBarrier::device_word(const std::function<std::shared_ptr<void>()>& make) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!word_) word_ = make();
  return word_.get();
}

// Step by step from outside, phase by phase (fused_phase_end): every device's steps up to a barrier or a
// step that waits for peers' signals, each after the steps before it on its device's in-order queue, the
// first after `after`; the phase's end is the events of every device's steps in it, which the next
// phase's steps wait for (so a ring's step waits for more than its peer's signal: every device's step before it).
std::vector<Event> Device::launch_collective(std::vector<CollectiveLaunch> launches, const CollectiveCall& call,
                                             const std::vector<Event>& after) {
  size_t n = launches.size();
  std::vector<size_t> at(n, 0);                   // per device: its next step
  std::vector<std::vector<Event>> last(n);        // per device: its steps' events since the last barrier
  std::vector<Event> before = after;              // what the next steps wait for
  auto offset = [&](void* p, int64_t elements) {  // p + elements
    return static_cast<void*>(static_cast<char*>(p) + static_cast<size_t>(elements) * call.itemsize);
  };
  for (;;) {
    bool more = false;
    for (size_t d = 0; d < n; ++d) {
      CollectiveLaunch& l = launches[d];
      for (size_t from = at[d]; !fused_phase_end(l.steps, from, at[d]); ++at[d]) {
        const FusedStep& s = l.steps[at[d]];
        size_t bytes = static_cast<size_t>(s.end - s.begin) * call.itemsize;
        void* out = offset(l.outputs[static_cast<size_t>(l.rank)], s.begin);
        switch (s.kind) {
          case FusedStep::Kind::combine:
            if (s.begin == s.end) break;  // (a ring's empty slice: its signal is the phase's order)
            last[d].push_back(
                l.device->launch(*l.combines.at(at[d]), combine_buffers(l, s, call.itemsize), l.rank, before));
            break;
          case FusedStep::Kind::gather: {
            Device& peer = *launches.at(static_cast<size_t>(s.peer)).device;
            const auto& from = s.from_input ? l.inputs : l.outputs;
            void* to = offset(l.outputs[static_cast<size_t>(l.rank)], s.begin - s.out_shift);
            last[d].push_back(
                l.device->copy_from(peer, offset(from[static_cast<size_t>(s.peer)], s.begin), to, bytes, before));
            break;
          }
          case FusedStep::Kind::publish:
            last[d].push_back(l.device->copy_from(*l.device, offset(l.scratch(), s.begin), out, bytes, before));
            break;
          case FusedStep::Kind::barrier:
            break;
        }
      }
      more = more || at[d] < l.steps.size();
    }
    if (!more) break;
    before.clear();  // the barrier: every device's steps so far
    for (size_t d = 0; d < n; ++d) {
      for (const Event& e : last[d]) before.push_back(e);
      last[d].clear();
      if (at[d] < launches[d].steps.size() && launches[d].steps[at[d]].kind == FusedStep::Kind::barrier)
        ++at[d];  // past its barrier
    }
  }
  // each device's event: its last step's, or, with no step since the last barrier, that barrier's
  std::vector<Event> out;
  for (size_t d = 0; d < n; ++d) {
    if (!last[d].empty()) {
      out.push_back(last[d].back());
    } else {
      out.push_back(launches[d].device->submit([] {}, before));
    }
  }
  return out;
}

}  // namespace ringrt
