#include "rewrite/rewrite.hpp"

#include <fmt/format.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <atomic>

#include "rewrite/errors.hpp"
#include "rewrite/node_map.hpp"

namespace ringrt {
namespace {

using Memo = NodeMap<UOp>;  // flat: known() looks it up for every node visited

class Rewriter {
 public:
  Rewriter(const UOp& root, const PatternMatcher& pm, const RewriteOptions& opt)
      : pm_(pm),
        opt_(opt),
        order_(root.graph().toposort({root})),
        results_(order_.size()),
        wave_(order_.size()),
        done_(order_.size(), 0),
        pos_(order_.size()) {
    for (size_t i = 0; i < order_.size(); ++i) {
      pos_[order_[i].node()] = i;
      int w = 0;
      for (const auto& s : order_[i].src()) w = std::max(w, wave_[*pos_.find(s.node())] + 1);
      wave_[i] = w;
    }
  }

  RewriteResult run() {
    bool parallel = opt_.driver == RewriteDriver::parallel ||
                    (opt_.driver == RewriteDriver::automatic && order_.size() >= opt_.parallel_min_nodes);
    if (parallel) {
      run_parallel();
    } else {
      Memo memo;
      for (size_t i = 0; i < order_.size(); ++i) {
        results_[i] = rewrite_input(i, memo);
        done_[i] = 1;
      }
    }
    RewriteResult out;
    out.root = results_.back();
    for (size_t i = 0; i < order_.size(); ++i) out.map.emplace(order_[i], results_[i]);
    out.converged = converged_.load();
    out.rewrites = rewrites_.load();
    return out;
  }

 private:
  void run_parallel() {
    std::vector<std::vector<size_t>> waves;
    for (size_t i = 0; i < order_.size(); ++i) {
      if (static_cast<size_t>(wave_[i]) >= waves.size()) waves.resize(static_cast<size_t>(wave_[i]) + 1);
      waves[static_cast<size_t>(wave_[i])].push_back(i);
    }
    tbb::enumerable_thread_specific<Memo> memos;
    auto body = [&]() {
      for (const auto& wave : waves) {
        tbb::parallel_for(tbb::blocked_range<size_t>(0, wave.size(), 64), [&](const tbb::blocked_range<size_t>& r) {
          Memo& memo = memos.local();
          for (size_t k = r.begin(); k != r.end(); ++k) results_[wave[k]] = rewrite_input(wave[k], memo);
        });
        for (size_t i : wave) done_[i] = 1;  // published between waves, so later reads are race-free
      }
    };
    if (opt_.threads > 0) {
      tbb::task_arena arena(opt_.threads);
      arena.execute(body);
    } else {
      body();
    }
  }

  // Input node i: its sources are finished, so rebuild it on their results and settle it.
  UOp rewrite_input(size_t i, Memo& memo) {
    const UOp& node = order_[i];
    std::vector<UOp> src;
    bool changed = false;
    for (const auto& s : node.src()) {
      src.push_back(results_[*pos_.find(s.node())]);
      memo.insert(src.back().node(), src.back());  // a finished result is a fixpoint
      changed = changed || src.back() != s;
    }
    return full(changed ? node.replace(std::move(src)) : node, memo);
  }

  // What y is known to rewrite to: from this thread's memo, or from an input node already finished
  // (serial: visited earlier; parallel: in an earlier wave, so reading it is race-free).
  std::optional<UOp> known(const UOp& y, const Memo& memo) const {
    if (const UOp* m = memo.find(y.node())) return *m;
    if (const size_t* p = pos_.find(y.node()); p && done_[*p]) return results_[*p];
    return std::nullopt;
  }

  // Rewrites r to a fixpoint, bottom-up, with an explicit stack and no recursion: a node's sources
  // first (kVisit), then its rules (kRewrite); a rule's replacement gets a frame of its own, and the
  // rewritten node takes the replacement's result (kLink). A chain of rewrites of one node counts its
  // steps; at max_rewrites_per_node the node keeps its last form and the run is not converged.
  UOp full(const UOp& r, Memo& memo) {
    if (auto k = known(r, memo)) return *k;
    enum Stage { kVisit, kRewrite, kLink };
    struct Frame {
      UOp y;
      Stage stage;
      size_t steps;  // rewrites that led to y
      UOp link;      // kLink: the replacement whose result y takes
    };
    std::vector<Frame> stack{{r, kVisit, 0, {}}};
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
    return *known(r, memo);
  }

  const PatternMatcher& pm_;
  RewriteOptions opt_;
  std::vector<UOp> order_;
  std::vector<UOp> results_;
  std::vector<int> wave_;
  std::vector<char> done_;  // input node i's result is final
  NodeMap<size_t> pos_;     // read by every thread of the parallel driver (never written then)
  std::atomic<bool> converged_{true};
  std::atomic<size_t> rewrites_{0};
};

}  // namespace

RewriteResult rewrite_graph(const UOp& root, const PatternMatcher& pm, const RewriteOptions& options) {
  return Rewriter(root, pm, options).run();
}

UOp graph_rewrite(const UOp& root, const PatternMatcher& pm, const RewriteOptions& options) {
  RewriteResult r = rewrite_graph(root, pm, options);
  if (!r.converged)
    throw InternalError(
        fmt::format("graph_rewrite did not converge within {} rewrites of one node", options.max_rewrites_per_node));
  return r.root;
}

UOpMap graph_rewrite_map(const UOp& root, const PatternMatcher& pm, const RewriteOptions& options) {
  RewriteResult r = rewrite_graph(root, pm, options);
  if (!r.converged)
    throw InternalError(fmt::format("graph_rewrite_map did not converge within {} rewrites of one node",
                                    options.max_rewrites_per_node));
  return std::move(r.map);
}

}  // namespace ringrt
