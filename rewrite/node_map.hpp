// Flat hash maps keyed by node (internal to rewrite/): one array of keys and one of values, open
// addressing with linear probing, no erase. Planning walks every node of graphs of millions of nodes
// several times (toposort, the planner's marks); std::unordered_map spent a heap allocation and a
// pointer chase per node there (a third of planning a ring over 256 devices went to the allocator and
// the node-based tables). Not thread-safe; keys are node addresses, never null; V is no bool (a
// std::vector<bool> hands out no references: use char).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ringrt {

namespace detail {
struct Node;
}  // namespace detail

template <class V>
class NodeMap {
 public:
  explicit NodeMap(size_t expected = 0) { grow(expected); }

  // The value of k, default-constructed when k is new.
  V& operator[](const detail::Node* k) { return vals_[slot_for_insert(k).first]; }
  // Adds k with v unless k is there; returns its value and whether it was added.
  std::pair<V*, bool> insert(const detail::Node* k, V v = V()) {
    auto [i, added] = slot_for_insert(k);
    if (added) vals_[i] = std::move(v);
    return {&vals_[i], added};
  }
  V* find(const detail::Node* k) {
    size_t i = slot(k);
    return keys_[i] ? &vals_[i] : nullptr;
  }
  const V* find(const detail::Node* k) const { return const_cast<NodeMap*>(this)->find(k); }
  bool contains(const detail::Node* k) const { return keys_[slot(k)] != nullptr; }
  size_t size() const { return size_; }
  size_t capacity() const { return keys_.size(); }
  // Empties the map and keeps its slots (values stay until overwritten; V must not own much).
  void clear() {
    if (size_ == 0) return;
    std::fill(keys_.begin(), keys_.end(), nullptr);
    size_ = 0;
  }

 private:
  size_t hash(const detail::Node* k) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(k) >> 3) * 0x9e3779b97f4a7c15ull) >> shift_;
  }
  // The slot holding k, or the empty slot where it would go.
  size_t slot(const detail::Node* k) const {
    size_t mask = keys_.size() - 1;
    for (size_t i = hash(k);; i = (i + 1) & mask)
      if (keys_[i] == k || !keys_[i]) return i;
  }
  std::pair<size_t, bool> slot_for_insert(const detail::Node* k) {
    size_t i = slot(k);
    if (keys_[i]) return {i, false};
    if (2 * (size_ + 1) > keys_.size()) {  // at most half full: probes stay short
      grow(size_ + 1);
      i = slot(k);
    }
    keys_[i] = k;
    ++size_;
    return {i, true};
  }
  void grow(size_t expected) {
    size_t cap = 16;
    int bits = 4;
    while (cap < 2 * expected) {
      cap *= 2;
      ++bits;
    }
    if (cap <= keys_.size()) return;
    std::vector<const detail::Node*> keys(cap, nullptr);
    std::vector<V> vals(cap);
    keys.swap(keys_);
    vals.swap(vals_);
    shift_ = 64 - bits;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!keys[i]) continue;
      size_t j = slot(keys[i]);
      keys_[j] = keys[i];
      vals_[j] = std::move(vals[i]);
    }
  }

  std::vector<const detail::Node*> keys_;
  std::vector<V> vals_;
  size_t size_ = 0;
  int shift_ = 60;
};

// A set of nodes: insert() says whether the node was new.
class NodeSet {
 public:
  explicit NodeSet(size_t expected = 0) : map_(expected) {}
  bool insert(const detail::Node* k) { return map_.insert(k).second; }
  bool contains(const detail::Node* k) const { return map_.contains(k); }
  size_t count(const detail::Node* k) const { return contains(k) ? 1 : 0; }
  size_t size() const { return map_.size(); }

 private:
  NodeMap<char> map_;
};

}  // namespace ringrt
