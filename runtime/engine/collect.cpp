#include "runtime/engine/collect.hpp"

#include <atomic>
#include <mutex>
#include <shared_mutex>

#include "rewrite/uop.hpp"
#include "runtime/engine/realize.hpp"

namespace ringrt {

namespace {

std::shared_mutex& users() {
  static std::shared_mutex mu;
  return mu;
}
thread_local int depth = 0;  // GraphUse sections open on this thread

struct Collections {
  std::mutex mu;
  std::atomic<size_t> next{4096};  // alive nodes at which the next collection runs
};
Collections& collections() {
  static Collections c;
  return c;
}

}  // namespace

GraphUse::GraphUse() {
  if (depth++ == 0) users().lock_shared();
}

GraphUse::~GraphUse() {
  if (--depth != 0) return;
  users().unlock_shared();
  try {
    collect_garbage();  // the end of an outermost section: collect when the graph has grown enough
  } catch (...) {       // (out of memory): left for a later section
  }
}

size_t collect_garbage(bool force) {
  if (depth != 0) return 0;
  UOpGraph& g = UOpGraph::global();
  auto& c = collections();
  if (!force && g.alive() < c.next.load(std::memory_order_relaxed)) return 0;  // the common case: no lock
  std::lock_guard<std::mutex> once(c.mu);
  std::unique_lock<std::shared_mutex> alone(users(), std::try_to_lock);
  if (!alone.owns_lock()) return 0;  // a thread is building or realizing: later
  size_t removed = g.collect(engine_roots());
  size_t alive = g.alive();
  c.next.store(2 * alive + 4096, std::memory_order_relaxed);
  return removed;
}

}  // namespace ringrt
