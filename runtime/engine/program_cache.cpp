#include "runtime/engine/program_cache.hpp"

#include <list>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "core/params_internal.hpp"
#include "rewrite/plan/schedule.hpp"

namespace ringrt {

// Members in dependency order: the program and the lowering hold nodes of the graph, so they go first.
struct ProgramRef::Built {
  std::unique_ptr<UOpGraph> graph;
  Lowered lowered;
  std::unique_ptr<Program> program;
};

ProgramRef::ProgramRef(std::shared_ptr<const Built> built, std::vector<int64_t> buffers, std::vector<uint64_t> scalars)
    : built_(std::move(built)), buffers_(std::move(buffers)), scalars_(std::move(scalars)) {}

const Lowered& ProgramRef::lowered() const { return built_->lowered; }

std::shared_ptr<const PendingWork> ProgramRef::run(const std::vector<std::vector<Block>>& outs,
                                                   const StorageLookup& storages, ExecOptions options) const {
  StorageLookup params = [&](int64_t id) -> std::shared_ptr<DeviceStorage> {
    if (id < 0 || static_cast<size_t>(id) >= buffers_.size()) return nullptr;  // the program's scratch
    return storages(buffers_[static_cast<size_t>(id)]);
  };
  if (built_->program->asynchronous()) options.owner = built_;  // (a run may stay in flight)
  options.scalars = scalars_;
  return built_->program->run(outs, params, options);
}

namespace {

struct Entry {
  Canonical key;
  AllreduceSettings settings;
  std::shared_ptr<const ProgramRef::Built> built;
};

// The roots of the last look-up in the global graph, by node id (ids are never reused, and a node's
// graph never changes, so the same ids are the same structure), with the entry found or built for them
// and their buffers: a program run again on the same lazy graph (a step's allreduce of the same
// tensor) skips the Canonical form, a fifth of the host time of a 1 KiB allreduce over 2 devices.
struct LastRoots {
  std::vector<int64_t> ids;
  std::list<Entry>::iterator entry;
  std::vector<int64_t> buffers;
  std::vector<uint64_t> scalars;
  bool valid = false;
};

// Entries most recently used first; `index` finds the entries of a structural hash.
struct ProgramCache {
  std::mutex mu;
  std::list<Entry> lru;
  std::unordered_map<uint64_t, std::vector<std::list<Entry>::iterator>> index;
  LastRoots last;
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
    if (last.valid && last.entry == e) last.valid = false;
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

// The node ids of roots when they are nodes of the global graph (which lives as long as the process);
// nothing otherwise (another graph's ids may repeat after it is gone).
std::optional<std::vector<int64_t>> global_ids(const std::vector<UOp>& roots) {
  std::vector<int64_t> ids;
  for (const UOp& r : roots) {
    if (&r.graph() != &UOpGraph::global()) return std::nullopt;
    ids.push_back(r.id());
  }
  return ids;
}

}  // namespace

ProgramRef program_for(const std::vector<UOp>& roots, const AllreduceSettings& settings) {
  auto& cache = program_cache();
  std::optional<std::vector<int64_t>> ids = global_ids(roots);
  auto remember = [&](std::list<Entry>::iterator e, const std::vector<int64_t>& buffers,
                      const std::vector<uint64_t>& scalars) {
    if (ids) cache.last = {*ids, e, buffers, scalars, true};
  };
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (cache.last.valid && ids && cache.last.ids == *ids && cache.last.entry->settings == settings) {
      cache.lru.splice(cache.lru.begin(), cache.lru, cache.last.entry);
      ++cache.hits;
      return ProgramRef(cache.last.entry->built, cache.last.buffers, cache.last.scalars);
    }
  }
  Canonical key(roots);
  std::vector<int64_t> buffers = key.buffers();
  std::vector<uint64_t> scalars = key.scalars();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (auto e = cache.find(key, settings); e != cache.lru.end()) {
      cache.lru.splice(cache.lru.begin(), cache.lru, e);  // iterators stay valid
      ++cache.hits;
      remember(e, buffers, scalars);
      return ProgramRef(e->built, std::move(buffers), std::move(scalars));
    }
  }
  auto built = std::make_shared<ProgramRef::Built>();
  built->graph = std::make_unique<UOpGraph>();
  std::vector<UOp> own_roots = key.instantiate(*built->graph);
  built->lowered = lower_multi(own_roots, settings);
  built->program = std::make_unique<Program>(plan_schedule(built->lowered.roots), built->lowered.roots);
  std::lock_guard<std::mutex> lock(cache.mu);
  ++cache.misses;
  cache.insert({std::move(key), settings, built}, capacity());
  if (!cache.lru.empty() && cache.lru.front().built == built)
    remember(cache.lru.begin(), buffers, scalars);  // capacity 0: none
  return ProgramRef(std::move(built), std::move(buffers), std::move(scalars));
}

ProgramCacheStats program_cache_stats() {
  auto& cache = program_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  return {cache.hits, cache.misses, cache.evictions, cache.lru.size(), capacity()};
}

}  // namespace ringrt
