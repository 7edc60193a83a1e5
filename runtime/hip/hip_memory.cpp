// The hip backend's memory and peer access (see hip_memory.hpp and hip_device.hpp "Memory", "Peer copies").
#include "runtime/hip/hip_memory.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <utility>

#include "core/errors.hpp"
#include "runtime/hip/hip_check.hpp"
#include "runtime/hip/hip_device.hpp"
#include "runtime/hip/hip_support.hpp"

namespace ringrt::hip_detail {

namespace {

// A kept block of size class `block` from `kept`, or null; `cached` (the bytes kept) drops by it.
void* take_kept(std::map<size_t, std::vector<void*>>& kept, size_t block, size_t& cached) {
  auto it = kept.find(block);
  if (it == kept.end() || it->second.empty()) return nullptr;
  void* p = it->second.back();
  it->second.pop_back();
  cached -= block;
  return p;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// device memory

void BlockCache::set_cap(size_t cap) {
  std::lock_guard<std::mutex> lock(mu_);
  cap_ = cap;
}

void* BlockCache::allocate(size_t bytes) {
  size_t block = hip_launch::cache_block_size(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (void* p = take_kept(free_blocks_, block, cached_)) {
      memory_.allocated(bytes, block);
      return p;
    }
  }
  DeviceGuard guard(gpu_, name_);
  void* p = nullptr;
  hipError_t rc = hipMalloc(&p, block);
  std::string retried;
  if (rc == hipErrorOutOfMemory) {
    (void)hipGetLastError();
    // Give both caches back to HIP and try once more: pinned buffers are not device memory, but on a
    // GPU that shares the host's memory (an APU) or under a driver that counts them, they compete.
    size_t released = release(), pinned = pinned_.release();
    retried = fmt::format(", retried after releasing {} cached bytes and {} pinned bytes", released, pinned);
    rc = hipMalloc(&p, block);
  }
  if (rc != hipSuccess)
    throw DeviceError(fmt::format("{} (allocating {} bytes{})",
                                  hip_error_message(name_, "hipMalloc(&p, block)", rc, __FILE__, __LINE__), bytes,
                                  retried));
  memory_.allocated(bytes, 0);
  return p;
}

void BlockCache::free(void* ptr, size_t bytes) {
  if (!ptr) return;
  size_t block = hip_launch::cache_block_size(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (hip_launch::cache_keeps(cached_, block, cap_)) {
      free_blocks_[block].push_back(ptr);
      cached_ += block;
      memory_.freed(bytes, block);
      return;
    }
  }
  memory_.freed(bytes, 0);  // over the cap: back to HIP now
  if (g_hip_gone) return;   // after the exit handler: the HIP runtime may be gone, leak instead
  try {
    DeviceGuard guard(gpu_, name_);
    RINGRT_HIP_LOG(name_, hipFree(ptr));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringrt: %s; a block of %zu bytes leaks\n", e.what(), block);
  }
}

size_t BlockCache::release() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  size_t total = 0;
  for (auto& [bytes, blocks] : free_blocks_) {
    for (void* p : blocks) RINGRT_HIP_LOG(name_, hipFree(p));
    total += bytes * blocks.size();
  }
  free_blocks_.clear();
  cached_ = 0;
  memory_.released(total);
  return total;
}

// ---------------------------------------------------------------------------------------------
// pinned host buffers

void* PinnedPool::take(size_t bytes) {
  size_t block = hip_launch::cache_block_size(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (void* p = take_kept(pinned_, block, cached_)) return p;
  }
  void* p = nullptr;
  hipError_t rc = hipHostMalloc(&p, block, hipHostMallocDefault);
  if (rc == hipErrorOutOfMemory) {  // free what is kept and try once more
    (void)hipGetLastError();
    (void)release();
    rc = hipHostMalloc(&p, block, hipHostMallocDefault);
  }
  if (rc != hipSuccess)
    throw DeviceError(fmt::format(
        "{} (a staging buffer of {} bytes)",
        hip_error_message(name_, "hipHostMalloc(&p, block, hipHostMallocDefault)", rc, __FILE__, __LINE__), bytes));
  return p;
}

void PinnedPool::give(size_t bytes, void* p) noexcept {
  size_t block = hip_launch::cache_block_size(bytes);
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (hip_launch::cache_keeps(cached_, block, hip_launch::kPinnedCacheCap)) {
      pinned_[block].push_back(p);
      cached_ += block;
      return;
    }
  } catch (...) {  // no memory for the map's node: free the buffer instead
  }
  if (!g_hip_gone) RINGRT_HIP_LOG(name_, hipHostFree(p));
}

size_t PinnedPool::release() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  size_t total = 0;
  for (auto& [bytes, buffers] : pinned_) {
    for (void* p : buffers) RINGRT_HIP_LOG(name_, hipHostFree(p));
    total += bytes * buffers.size();
  }
  pinned_.clear();
  cached_ = 0;
  return total;
}

std::shared_ptr<void> PinnedPool::lease(size_t bytes, std::shared_ptr<const std::atomic<bool>> poisoned) {
  void* p = take(bytes);
  return std::shared_ptr<void>(p, [this, bytes, poisoned = std::move(poisoned)](void* q) {
    if (!poisoned->load()) give(bytes, q);
  });
}

// ---------------------------------------------------------------------------------------------
// peer access

namespace {

struct PeerState {
  bool access = false;  // gpu may read peer's memory
  bool ours = false;    // enabled by peer_access (disabled when the GPU's last device goes)
};
// (gpu, peer) -> the decision; the live HIP devices per GPU.
struct PeerTable {
  std::mutex mu;
  std::map<std::pair<int, int>, PeerState> access;
  std::map<int, int> users;
};
PeerTable& peer_table() {
  static auto* t = new PeerTable;  // never destroyed: devices may go after static destructors ran
  return *t;
}

// Logs the failure of a peer-access call (once per pair: its outcome is cached) and clears it.
void log_peer_failure(const std::string& name, const char* call, hipError_t rc, int peer) {
  (void)hipGetLastError();  // leave no sticky error behind for the next call
  std::string msg = fmt::format("ringrt: {}; copies from GPU {} go through host memory\n",
                                hip_error_message(name, call, rc, __FILE__, __LINE__), peer);
  std::fputs(msg.c_str(), stderr);
}

// The decision for (gpu, peer), made with gpu current on this thread.
PeerState decide_peer_access(int gpu, int peer, const std::string& name) {
  int can = 0;
  hipError_t rc = hipDeviceCanAccessPeer(&can, gpu, peer);
  if (rc != hipSuccess) {
    log_peer_failure(name, "hipDeviceCanAccessPeer(&can, gpu, peer)", rc, peer);
    return {};
  }
  if (!can) return {};
  rc = hipDeviceEnablePeerAccess(peer, 0);
  if (rc == hipSuccess) return {true, true};
  if (rc == hipErrorPeerAccessAlreadyEnabled) {  // enabled by someone else in this process: not ours
    (void)hipGetLastError();
    return {true, false};
  }
  log_peer_failure(name, "hipDeviceEnablePeerAccess(peer, 0)", rc, peer);
  return {};
}

}  // namespace

bool peer_access(int gpu, int peer, const std::string& name) {
  if (gpu == peer) return true;
  auto& table = peer_table();
  std::lock_guard<std::mutex> lock(table.mu);
  if (auto it = table.access.find({gpu, peer}); it != table.access.end()) return it->second.access;
  PeerState state;
  try {
    DeviceGuard guard(gpu, name);
    state = decide_peer_access(gpu, peer, name);
  } catch (const DeviceError& e) {  // hipSetDevice failed: no access, said once
    (void)hipGetLastError();
    std::fprintf(stderr, "ringrt: %s; copies from GPU %d go through host memory\n", e.what(), peer);
  }
  table.access[{gpu, peer}] = state;
  return state.access;
}

void gpu_user_added(int gpu) {
  auto& table = peer_table();
  std::lock_guard<std::mutex> lock(table.mu);
  ++table.users[gpu];
}

void gpu_user_gone(int gpu, const std::string& name) noexcept {
  auto& table = peer_table();
  std::lock_guard<std::mutex> lock(table.mu);
  if (--table.users[gpu] > 0) return;
  table.users.erase(gpu);
  try {
    DeviceGuard guard(gpu, name);
    for (auto it = table.access.begin(); it != table.access.end();) {
      if (it->first.first != gpu) {
        ++it;
        continue;
      }
      if (it->second.ours) RINGRT_HIP_LOG(name, hipDeviceDisablePeerAccess(it->first.second));
      it = table.access.erase(it);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringrt: %s: peer access not disabled: %s\n", name.c_str(), e.what());
  }
}

}  // namespace ringrt::hip_detail
