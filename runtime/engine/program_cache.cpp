#include "runtime/engine/program_cache.hpp"

#include <algorithm>
#include <list>
#include <mutex>
#include <unordered_map>

#include "rewrite/plan/schedule.hpp"

namespace ringrt {

namespace {

struct Entry {
  const detail::Node* key;
  AllreduceSettings settings;
  Lowered lowered;
  std::shared_ptr<Program> program;
};

// Entries most recently used first; `index` finds a key's entries (one per settings used with it).
// Graph nodes are never freed, so a node's address is a stable key.
struct ProgramCache {
  std::mutex mu;
  std::list<Entry> lru;
  std::unordered_map<const detail::Node*, std::vector<std::list<Entry>::iterator>> index;
  size_t builds = 0;

  std::list<Entry>::iterator find(const detail::Node* key, const AllreduceSettings& settings) {
    auto it = index.find(key);
    if (it == index.end()) return lru.end();
    for (auto e : it->second)
      if (e->settings == settings) return e;
    return lru.end();
  }

  void insert(Entry entry) {
    if (auto old = find(entry.key, entry.settings); old != lru.end()) erase(old);
    lru.push_front(std::move(entry));
    index[lru.front().key].push_back(lru.begin());
    while (lru.size() > kProgramCacheCapacity) erase(std::prev(lru.end()));
  }

  void erase(std::list<Entry>::iterator e) {
    auto& v = index[e->key];
    v.erase(std::find(v.begin(), v.end(), e));
    if (v.empty()) index.erase(e->key);
    lru.erase(e);
  }
};

ProgramCache& program_cache() {
  static ProgramCache c;
  return c;
}

}  // namespace

std::pair<std::shared_ptr<Program>, Lowered> program_for(const std::vector<UOp>& roots,
                                                         const AllreduceSettings& settings) {
  UOp key = roots.size() == 1 ? roots[0] : sink(roots);
  auto& cache = program_cache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (auto e = cache.find(key.node(), settings); e != cache.lru.end()) {
      cache.lru.splice(cache.lru.begin(), cache.lru, e);  // iterators stay valid
      return {e->program, e->lowered};
    }
  }
  Lowered low = lower_multi(roots, settings);
  auto program = std::make_shared<Program>(plan_schedule(low.roots), low.roots);
  std::lock_guard<std::mutex> lock(cache.mu);
  cache.insert({key.node(), settings, low, program});
  ++cache.builds;
  return {program, low};
}

size_t programs_built() {
  auto& cache = program_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  return cache.builds;
}

}  // namespace ringrt
