#include "rewrite/rewrite.hpp"

#include <fmt/format.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RINGRT_CPU_RELAX() _mm_pause()
#else
#define RINGRT_CPU_RELAX() ((void)0)
#endif
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "rewrite/node_map.hpp"

namespace ringrt {
namespace {

using Memo = NodeMap<UOp>;  // flat: known() looks it up for every node visited

enum Stage { kVisit, kRewrite, kLink };
struct Frame {
  UOp y;
  Stage stage;
  size_t steps;  // rewrites that led to y
  UOp link;      // kLink: the replacement whose result y takes
};
// One thread's working memory, kept from node to node (nothing allocated per node), and from one
// rewrite to the next: a lowering runs several rewrites of a few thousand nodes each, and fresh memos
// spent a quarter of it growing (zeroing new pages). A thread keeps a few, up to kKeepSlots each.
struct Scratch {
  Memo memo;  // nodes reached by this thread that are no input node -> their results
  std::vector<Frame> stack;
  std::vector<size_t> deferred;  // parallel driver: nodes of this block whose sources another thread has
};

class ScratchLease {
 public:
  ScratchLease() {
    if (spare().empty()) {
      s_ = std::make_unique<Scratch>();
    } else {
      s_ = std::move(spare().back());
      spare().pop_back();
    }
  }
  ~ScratchLease() {
    if (s_->memo.capacity() > kKeepSlots || spare().size() >= 4) return;
    s_->memo.clear();
    s_->stack.clear();
    s_->deferred.clear();
    spare().push_back(std::move(s_));
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  Scratch& operator*() { return *s_; }

 private:
  static constexpr size_t kKeepSlots = size_t{1} << 16;  // 1 MiB of memo
  static std::vector<std::unique_ptr<Scratch>>& spare() {
    thread_local std::vector<std::unique_ptr<Scratch>> s;
    return s;
  }
  std::unique_ptr<Scratch> s_;
};

class Rewriter {
 public:
  Rewriter(const UOp& root, const PatternMatcher& pm, const RewriteOptions& opt) : pm_(pm), opt_(opt) {
    number(root);
    results_.resize(order_.size());
    done_ = std::make_unique<std::atomic<char>[]>(order_.size());
  }

  RewriteResult run() {
    bool parallel = opt_.driver == RewriteDriver::parallel ||
                    (opt_.driver == RewriteDriver::automatic && order_.size() >= opt_.parallel_min_nodes);
    if (parallel) {
      run_parallel();
    } else {
      ScratchLease lease;
      for (size_t i = 0; i < order_.size(); ++i) {
        results_[i] = rewrite_input(i, *lease);
        done_[i].store(1, std::memory_order_release);
      }
    }
    RewriteResult out;
    out.root = results_.back();
    if (opt_.map) {
      out.map.reserve(order_.size());
      for (size_t i = 0; i < order_.size(); ++i) out.map.emplace(order_[i], results_[i]);
    }
    out.converged = converged_.load();
    out.rewrites = rewrites_.load();
    return out;
  }

 private:
  // Numbers the input nodes in the order of UOpGraph::toposort (depth-first over sources in order,
  // each node after its sources) and keeps each one's source positions in one flat array, in one walk
  // with one hash table: the drivers never hash a node to find an input's sources. A node's source
  // positions are collected on a stack as in evaluating postfix: an emitted node takes its sources'
  // positions off the top and leaves its own.
  void number(const UOp& root) {
    constexpr size_t kOpen = ~size_t{0};                                          // reached, not yet emitted
    std::vector<std::pair<const detail::Node*, size_t>> stack{{root.node(), 0}};  // (node, next source)
    std::vector<size_t> operands;
    pos_.insert(root.node(), kOpen);
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      const std::vector<UOp>& src = UOp(n).src();
      if (next < src.size()) {
        const detail::Node* s = src[next++].node();
        auto [p, added] = pos_.insert(s, kOpen);
        if (added) {
          stack.push_back({s, 0});
        } else {
          operands.push_back(*p);  // emitted already: the graph has no cycle
        }
        continue;
      }
      size_t i = order_.size();
      order_.push_back(UOp(n));
      src_begin_.push_back(src_pos_.size());
      src_pos_.insert(src_pos_.end(), operands.end() - static_cast<std::ptrdiff_t>(src.size()), operands.end());
      operands.resize(operands.size() - src.size());
      operands.push_back(i);
      *pos_.find(n) = i;
      stack.pop_back();
    }
    src_begin_.push_back(src_pos_.size());
  }

  // Threads take blocks of kBlock input nodes in topological order (an atomic counter) and rewrite
  // each block in order, so a thread walks the graph as the serial driver does (a node's sources were
  // mostly just made, and are in cache; a driver by topological waves, tried before, jumped from chain
  // to chain and lost to the serial one at every size). A node with a source another thread still has
  // in hand is set aside, and the block's other nodes go on: in depth-first order the next block
  // mostly starts with the rest of the chain this block ends in, and waiting for it made the threads
  // take turns (at 2 threads the driver was no faster than the serial one). The set-aside nodes are
  // done after the rest of the block, in order, waiting where they must. That cannot deadlock: blocks
  // are taken in order and finished before the next, and a node waits only for earlier nodes, so the
  // earliest unfinished block's thread can always go on. Each thread's work is isolated, so a rule
  // that runs a nested parallel rewrite cannot make this thread pick up another block while its own
  // is half done.
  static constexpr size_t kBlock = 256;

  void run_parallel() {
    std::atomic<size_t> next_block{0};
    const size_t n = order_.size();
    std::atomic<bool> failed{false};  // a rule threw: the others stop waiting (the node never finishes)
    auto finish = [&](size_t i, Scratch& scratch) {
      results_[i] = rewrite_input(i, scratch);
      done_[i].store(1, std::memory_order_release);
    };
    // Each worker counts itself out (release) and this thread reads the count after the join, or when
    // an exception leaves (acquire): the join inside TBB is invisible to ThreadSanitizer (libtbb is
    // not instrumented), which otherwise reports this thread's reads of results_ and the free of
    // done_ as races with the workers' writes.
    std::atomic<int> left{0};
    struct Join {
      std::atomic<int>& left;
      ~Join() { (void)left.load(std::memory_order_acquire); }
    } join{left};
    auto worker = [&]() {
      struct Leave {
        std::atomic<int>& left;
        ~Leave() { left.fetch_add(1, std::memory_order_release); }
      } leave{left};
      ScratchLease lease;  // this thread's: a worker runs on one thread from start to end
      Scratch& scratch = *lease;
      try {
        for (size_t lo = next_block++ * kBlock; lo < n; lo = next_block++ * kBlock) {
          scratch.deferred.clear();
          for (size_t i = lo; i < std::min(n, lo + kBlock); ++i) {
            if (sources_done(i)) {
              finish(i, scratch);
            } else {
              scratch.deferred.push_back(i);
            }
          }
          for (size_t i : scratch.deferred) {
            for (size_t k = src_begin_[i]; k < src_begin_[i + 1]; ++k)
              if (!wait_done(src_pos_[k], failed)) return;
            finish(i, scratch);
          }
        }
      } catch (...) {
        failed = true;
        throw;  // parallel_for passes it on
      }
    };
    int threads = opt_.threads > 0 ? opt_.threads : tbb::this_task_arena::max_concurrency();
    auto body = [&]() { tbb::parallel_for(0, threads, 1, [&](int) { tbb::this_task_arena::isolate(worker); }); };
    if (opt_.threads > 0) {
      tbb::task_arena arena(opt_.threads);
      arena.execute(body);
    } else {
      body();
    }
  }

  bool sources_done(size_t i) const {
    for (size_t k = src_begin_[i]; k < src_begin_[i + 1]; ++k)
      if (!done_[src_pos_[k]].load(std::memory_order_acquire)) return false;
    return true;
  }

  // Spins briefly, then yields, until input node p is finished (another thread has it in hand); false
  // when a rule threw on some thread instead.
  bool wait_done(size_t p, const std::atomic<bool>& failed) const {
    for (int spin = 0; !done_[p].load(std::memory_order_acquire); ++spin) {
      if (failed.load(std::memory_order_relaxed)) return false;
      if (spin < 64) {
        RINGRT_CPU_RELAX();
      } else {
        std::this_thread::yield();
      }
    }
    return true;
  }

  // Input node i: its sources are finished, so rebuild it on their results and settle it. The common
  // case, no rule applies, costs one rule look-up and no memo traffic: the sources are fixpoints, so
  // the rebuilt node is one too. A changed node is remembered (an input node is known by position).
  UOp rewrite_input(size_t i, Scratch& scratch) {
    const UOp& node = order_[i];
    const std::vector<UOp>& old = node.src();
    const size_t* sp = src_pos_.data() + src_begin_[i];
    bool changed = false;
    for (size_t j = 0; j < old.size(); ++j) changed = changed || results_[sp[j]] != old[j];
    UOp x = node;
    if (changed) {
      std::vector<UOp> src(old.size());
      for (size_t j = 0; j < old.size(); ++j) src[j] = results_[sp[j]];
      x = node.replace(std::move(src));
    }
    std::optional<UOp> next = pm_.rewrite(x);
    if (!next || opt_.max_rewrites_per_node == 0) {
      if (next) converged_ = false;
      if (changed) scratch.memo.insert(x.node(), x);
      return x;
    }
    // A rule applied: settle the replacement bottom-up. Its nodes may reach this node's sources'
    // results, which are fixpoints: say so, as they need not be input nodes.
    for (size_t j = 0; j < old.size(); ++j) scratch.memo.insert(results_[sp[j]].node(), results_[sp[j]]);
    ++rewrites_;
    scratch.stack.assign({{x, kLink, 0, *next}, {*next, kVisit, 1, {}}});
    settle(scratch);
    return *known(x, scratch.memo);
  }

  // What y is known to rewrite to: from this thread's memo, or from an input node already finished
  // (serial: visited earlier; parallel: by any thread, published by done_).
  std::optional<UOp> known(const UOp& y, const Memo& memo) const {
    if (const UOp* m = memo.find(y.node())) return *m;
    if (const size_t* p = pos_.find(y.node()); p && done_[*p].load(std::memory_order_acquire)) return results_[*p];
    return std::nullopt;
  }

  // Runs the frames on scratch.stack to the end, bottom-up and without recursion: a node's sources
  // first (kVisit), then its rules (kRewrite); a rule's replacement gets a frame of its own, and the
  // rewritten node takes the replacement's result (kLink). A chain of rewrites of one node counts its
  // steps; at max_rewrites_per_node the node keeps its last form and the run is not converged.
  void settle(Scratch& scratch) {
    Memo& memo = scratch.memo;
    std::vector<Frame>& stack = scratch.stack;
    while (!stack.empty()) {
      Frame f = stack.back();
      stack.pop_back();
      if (f.stage == kLink) {
        memo[f.y.node()] = *known(f.link, memo);
        continue;
      }
      if (known(f.y, memo)) continue;
      if (f.stage == kVisit) {
        stack.push_back({f.y, kRewrite, f.steps, {}});
        for (auto it = f.y.src().rbegin(); it != f.y.src().rend(); ++it)
          if (!known(*it, memo)) stack.push_back({*it, kVisit, 0, {}});
        continue;
      }
      std::vector<UOp> src;
      bool changed = false;
      for (const auto& s : f.y.src()) {
        src.push_back(*known(s, memo));
        changed = changed || src.back() != s;
      }
      UOp x = changed ? f.y.replace(std::move(src)) : f.y;
      std::optional<UOp> next = pm_.rewrite(x);
      if (next && f.steps == opt_.max_rewrites_per_node) {
        converged_ = false;
        next.reset();
      }
      if (!next) {
        memo[x.node()] = x;
        memo[f.y.node()] = x;
        continue;
      }
      ++rewrites_;
      stack.push_back({f.y, kLink, f.steps, *next});
      stack.push_back({*next, kVisit, f.steps + 1, {}});
    }
  }

  const PatternMatcher& pm_;
  RewriteOptions opt_;
  std::vector<UOp> order_;
  std::vector<UOp> results_;
  // Input node i's result is final. Written once per node (release) after results_[i]; read (acquire)
  // before results_[i] by any thread.
  std::unique_ptr<std::atomic<char>[]> done_;
  std::vector<size_t> src_begin_;  // input i's sources are at src_pos_[src_begin_[i] .. src_begin_[i + 1]]
  std::vector<size_t> src_pos_;    // order positions of the inputs' sources
  NodeMap<size_t> pos_{1024};      // read by every thread of the parallel driver (never written then)
  std::atomic<bool> converged_{true};
  std::atomic<size_t> rewrites_{0};
};

}  // namespace

RewriteResult rewrite_graph(const UOp& root, const PatternMatcher& pm, const RewriteOptions& options) {
  return Rewriter(root, pm, options).run();
}

UOp graph_rewrite(const UOp& root, const PatternMatcher& pm, const RewriteOptions& options) {
  RewriteOptions without_map = options;
  without_map.map = false;
  RewriteResult r = rewrite_graph(root, pm, without_map);
  if (!r.converged)
    throw InternalError(
        fmt::format("graph_rewrite did not converge within {} rewrites of one node", options.max_rewrites_per_node));
  return r.root;
}

UOpMap graph_rewrite_map(const UOp& root, const PatternMatcher& pm, const RewriteOptions& options) {
  RewriteOptions with_map = options;
  with_map.map = true;
  RewriteResult r = rewrite_graph(root, pm, with_map);
  if (!r.converged)
    throw InternalError(fmt::format("graph_rewrite_map did not converge within {} rewrites of one node",
                                    options.max_rewrites_per_node));
  return std::move(r.map);
}

}  // namespace ringrt
