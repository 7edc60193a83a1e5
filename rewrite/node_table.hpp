// The hash-consing table of a UOpGraph (internal to rewrite/uop.cpp): structural hash -> nodes. 64
// shards chosen by the hash's top bits, each an open-addressing array of (hash, node) under a
// reader-writer spin lock (tbb::spin_rw_mutex: one atomic operation to take and one to drop for a reader;
// std::shared_mutex's pthread rwlock cost 7% of lowering a ring over 8 devices, where a look-up holds
// it for a few dozen nanoseconds): a look-up reads one slot run and the node it finds, where TBB's
// concurrent_unordered_multimap (used before) walked a linked list of separately allocated entries
// (a fifth of planning a ring over 256 devices). Look-ups may run on many threads at once (the
// parallel rewrite driver); inserts and erases take the shard's lock exclusively.
#pragma once

#include <tbb/spin_rw_mutex.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ringrt {

namespace detail {
struct Node;
}  // namespace detail

class NodeTable {
 public:
  // The node with hash h for which same(node) holds, or null.
  template <class Same>
  const detail::Node* find(uint64_t h, Same&& same) const {
    const Shard& s = shard(h);
    tbb::spin_rw_mutex::scoped_lock lock(s.mu, /*write=*/false);
    if (s.slots.empty()) return nullptr;
    size_t mask = s.slots.size() - 1;
    for (size_t i = start(h, mask);; i = (i + 1) & mask) {
      const Slot& e = s.slots[i];
      if (!e.node) return nullptr;
      if (e.node != tomb() && e.hash == h && same(e.node)) return e.node;
    }
  }

  void insert(uint64_t h, const detail::Node* n) {
    Shard& s = shard(h);
    tbb::spin_rw_mutex::scoped_lock lock(s.mu, /*write=*/true);
    if (2 * (s.live + s.tombs + 1) > s.slots.size()) rebuild(s, s.live + 1);
    size_t mask = s.slots.size() - 1;
    size_t i = start(h, mask);
    while (s.slots[i].node && s.slots[i].node != tomb()) i = (i + 1) & mask;
    if (s.slots[i].node == tomb()) --s.tombs;
    s.slots[i] = {h, n};
    ++s.live;
  }

  // Removes n (inserted with hash h); nothing when it is not there.
  void erase(uint64_t h, const detail::Node* n) {
    Shard& s = shard(h);
    tbb::spin_rw_mutex::scoped_lock lock(s.mu, /*write=*/true);
    if (s.slots.empty()) return;
    size_t mask = s.slots.size() - 1;
    for (size_t i = start(h, mask); s.slots[i].node; i = (i + 1) & mask)
      if (s.slots[i].node == n) {
        s.slots[i].node = tomb();
        --s.live;
        ++s.tombs;
        return;
      }
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    const detail::Node* node = nullptr;  // null: empty; tomb(): erased (probes go on past it)
  };
  struct alignas(64) Shard {  // a cache line each: threads on different shards do not share one
    mutable tbb::spin_rw_mutex mu;
    std::vector<Slot> slots;  // a power of two in size, at most half used (live and erased)
    size_t live = 0, tombs = 0;
  };

  static const detail::Node* tomb() { return reinterpret_cast<const detail::Node*>(uintptr_t{1}); }
  static size_t start(uint64_t h, size_t mask) { return static_cast<size_t>(h ^ (h >> 29)) & mask; }
  Shard& shard(uint64_t h) { return shards_[h >> 58]; }
  const Shard& shard(uint64_t h) const { return shards_[h >> 58]; }

  // Re-lays s out for `need` live entries, dropping the erased ones.
  static void rebuild(Shard& s, size_t need) {
    size_t cap = 16;
    while (cap < 4 * need) cap *= 2;  // a quarter full after a rebuild
    std::vector<Slot> old(cap);
    old.swap(s.slots);
    s.tombs = 0;
    size_t mask = cap - 1;
    for (const Slot& e : old) {
      if (!e.node || e.node == tomb()) continue;
      size_t i = start(e.hash, mask);
      while (s.slots[i].node) i = (i + 1) & mask;
      s.slots[i] = e;
    }
  }

  std::array<Shard, 64> shards_;
};

}  // namespace ringrt
