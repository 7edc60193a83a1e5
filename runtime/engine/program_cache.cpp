#include "runtime/engine/program_cache.hpp"

#include <list>
#include <mutex>
#include <unordered_map>

#include "rewrite/params.hpp"
#include "rewrite/plan/schedule.hpp"

namespace ringrt {

// Members in dependency order: the program and the lowering hold nodes of the graph, so they go first.
struct ProgramRef::Built {
  std::unique_ptr<UOpGraph> graph;
  Lowered lowered;
  std::unique_ptr<Program> program;
};

ProgramRef::ProgramRef(std::shared_ptr<const Built> built, std::vector<int64_t> buffers)
    : built_(std::move(built)), buffers_(std::move(buffers)) {}

const Lowered& ProgramRef::lowered() const { return built_->lowered; }

void ProgramRef::run(const std::vector<std::vector<Block>>& outs, const StorageLookup& storages,
                     const ExecOptions& options) const {
  StorageLookup params = [&](int64_t id) -> std::shared_ptr<DeviceStorage> {
    if (id < 0 || static_cast<size_t>(id) >= buffers_.size()) return nullptr;  // the program's scratch
    return storages(buffers_[static_cast<size_t>(id)]);
  };
  built_->program->run(outs, params, options);
}

namespace {

struct Entry {
  Canonical key;
  AllreduceSettings settings;
  std::shared_ptr<const ProgramRef::Built> built;
};

// Entries most recently used first; `index` finds the entries of a structural hash.
struct ProgramCache {
  std::mutex mu;
  std::list<Entry> lru;
  std::unordered_map<uint64_t, std::vector<std::list<Entry>::iterator>> index;
  size_t hits = 0, misses = 0, evictions = 0;

  std::list<Entry>::iterator find(const Canonical& key, const AllreduceSettings& settings) {
    auto it = index.find(key.hash());
    if (it == index.end()) return lru.end();
    for (auto e : it->second)
      if (e->settings == settings && e->key.same_structure(key)) return e;
    return lru.end();
  }

  void insert(Entry entry, size_t capacity) {
    if (auto old = find(entry.key, entry.settings); old != lru.end()) erase(old);
    lru.push_front(std::move(entry));
    index[lru.front().key.hash()].push_back(lru.begin());
    while (lru.size() > capacity) {
      erase(std::prev(lru.end()));
      ++evictions;
    }
  }

  void erase(std::list<Entry>::iterator e) {
    auto& v = index[e->key.hash()];
    v.erase(std::find(v.begin(), v.end(), e));
    if (v.empty()) index.erase(e->key.hash());
    lru.erase(e);
  }
};

ProgramCache& program_cache() {
  static ProgramCache c;
  return c;
}

size_t capacity() { return static_cast<size_t>(current_runtime_params().program_cache); }

}  // namespace

ProgramRef program_for(const std::vector<UOp>& roots, const AllreduceSettings& settings) {
  Canonical key(roots);
  auto& cache = program_cache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (auto e = cache.find(key, settings); e != cache.lru.end()) {
      cache.lru.splice(cache.lru.begin(), cache.lru, e);  // iterators stay valid
      ++cache.hits;
      return ProgramRef(e->built, key.buffers());
    }
  }
  auto built = std::make_shared<ProgramRef::Built>();
  built->graph = std::make_unique<UOpGraph>();
  std::vector<UOp> own_roots = key.instantiate(*built->graph);
  built->lowered = lower_multi(own_roots, settings);
  built->program = std::make_unique<Program>(plan_schedule(built->lowered.roots), built->lowered.roots);
  std::vector<int64_t> buffers = key.buffers();
  std::lock_guard<std::mutex> lock(cache.mu);
  ++cache.misses;
  cache.insert({std::move(key), settings, built}, capacity());
  return ProgramRef(std::move(built), std::move(buffers));
}

ProgramCacheStats program_cache_stats() {
  auto& cache = program_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  return {cache.hits, cache.misses, cache.evictions, cache.lru.size(), capacity()};
}

}  // namespace ringrt
