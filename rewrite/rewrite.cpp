#include "rewrite/rewrite.hpp"

#include <fmt/format.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <atomic>

#include "rewrite/errors.hpp"

namespace ringrt {
namespace {

using Memo = std::unordered_map<const detail::Node*, UOp>;

class Rewriter {
 public:
  Rewriter(const UOp& root, const PatternMatcher& pm, const RewriteOptions& opt)
      : pm_(pm),
        opt_(opt),
        order_(root.graph().toposort({root})),
        results_(order_.size()),
        wave_(order_.size()),
        done_(order_.size(), 0) {
    for (size_t i = 0; i < order_.size(); ++i) {
      pos_[order_[i].node()] = i;
      int w = 0;
      for (const auto& s : order_[i].src()) w = std::max(w, wave_[pos_.at(s.node())] + 1);
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
      src.push_back(results_[pos_.at(s.node())]);
      changed = changed || src.back() != s;
    }
    return settle(changed ? node.replace(std::move(src)) : node, memo, wave_[i]);
  }

  // What y is known to rewrite to: from this thread's memo, or from an input node already finished
  // (serial: visited earlier; parallel: in an earlier wave, so reading it is race-free).
  std::optional<UOp> known(const UOp& y, const Memo& memo, int /*wave*/) const {
    if (auto it = memo.find(y.node()); it != memo.end()) return it->second;
    if (auto it = pos_.find(y.node()); it != pos_.end() && done_[it->second]) return results_[it->second];
    return std::nullopt;
  }

  // x's sources are fixpoints; apply rules until none applies.
  UOp settle(UOp x, Memo& memo, int wave) {
    for (size_t n = 0;; ++n) {
      std::optional<UOp> r = pm_.rewrite(x);
      if (!r) break;
      if (n == opt_.max_rewrites_per_node) {
        converged_ = false;
        break;
      }
      ++rewrites_;
      x = full(*r, memo, wave);
    }
    memo[x.node()] = x;
    return x;
  }

  // Rewrite a replacement bottom-up: every node in it not yet known is rebuilt on its sources'
  // results and settled. Iterative post-order with an explicit stack.
  UOp full(const UOp& r, Memo& memo, int wave) {
    if (auto k = known(r, memo, wave)) return *k;
    std::vector<std::pair<UOp, bool>> stack{{r, false}};
    while (!stack.empty()) {
      auto [y, expanded] = stack.back();
      if (known(y, memo, wave)) {
        stack.pop_back();
        continue;
      }
      if (!expanded) {
        stack.back().second = true;
        for (auto it = y.src().rbegin(); it != y.src().rend(); ++it)
          if (!known(*it, memo, wave)) stack.push_back({*it, false});
        continue;
      }
      stack.pop_back();
      std::vector<UOp> src;
      bool changed = false;
      for (const auto& s : y.src()) {
        src.push_back(*known(s, memo, wave));
        changed = changed || src.back() != s;
      }
      memo[y.node()] = settle(changed ? y.replace(std::move(src)) : y, memo, wave);
    }
    return *known(r, memo, wave);
  }

  const PatternMatcher& pm_;
  RewriteOptions opt_;
  std::vector<UOp> order_;
  std::vector<UOp> results_;
  std::vector<int> wave_;
  std::vector<char> done_;  // input node i's result is final
  std::unordered_map<const detail::Node*, size_t> pos_;
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
    throw InternalError(fmt::format("graph_rewrite did not converge within {} rewrites of one node",
                                    options.max_rewrites_per_node));
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
