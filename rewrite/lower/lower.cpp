#include "rewrite/lower/lower.hpp"

#include <fmt/format.h>

#include <cctype>
#include <iostream>
#include <memory>

#include "core/errors.hpp"

namespace ringrt {

namespace {
// "RING REDUCE_SCATTER 4x400 | float32": algorithm and collective upper case, devices x elements per device.
std::string debug_line(Algorithm algorithm, Collective collective, const UOp& u, const std::string& tail = "") {
  std::string algo(algorithm_name(algorithm)), kind(collective_name(collective));
  for (std::string* w : {&algo, &kind})
    for (char& c : *w) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const UOp& x = u.src(0);
  size_t n = u.op() == Ops::COPY ? u.device().count() : x.device().count();
  return fmt::format("{} {} {}x{} | {}{}\n", algo, kind, n, prod(u.op() == Ops::COPY ? u.shape() : x.shape()),
                     dtype_name(u.dtype()), tail);
}
}  // namespace

Lowered lower_multi(const std::vector<UOp>& roots, const AllreduceSettings& settings, const RewriteOptions& options) {
  Lowered out;
  UOp big = sink(roots);
  UOp sharded = graph_rewrite(big, multi_pm(), options);
  AllreduceChoices choices;  // made once here for Lowered::algorithms, the DEBUG line and the lowering
  auto readers = std::make_shared<const Readers>(readers_of(sharded));
  for (const UOp& u : sharded.graph().toposort({sharded})) {
    if (u.op() == Ops::ALLREDUCE || u.op() == Ops::COPY)
      if (std::optional<CollectiveUse> use = collective_of(u, *readers, settings)) {
        // one per ALLREDUCE node, and per broadcast of one device of a tuple (a COPY with a source index)
        if (u.op() == Ops::ALLREDUCE || std::holds_alternative<int64_t>(u.arg()))
          out.algorithms.push_back(use->algorithm);
        if (settings.debug >= 2) std::cerr << debug_line(use->algorithm, use->kind, u);
        continue;
      }
    if (u.op() == Ops::ALLREDUCE && u.src(0).device().tuple()) {
      Algorithm algo = allreduce_algorithm(u, settings);
      out.algorithms.push_back(algo);
      const std::vector<UOp>* by = readers->count(u.node()) ? &readers->at(u.node()) : nullptr;
      bool into_source = by && by->size() == 1 && by->front().op() == Ops::ASSIGN && by->front().src(0) == u.src(0);
      choices.emplace(u.node(), AllreduceChoice{algo, into_source});
      if (settings.debug >= 2) {
        // the reduce_scatter form asked for but not given: the groups differ in size (allreduce.cpp)
        bool fallback = algo == Algorithm::hierarchical && settings.hierarchical == "reduce_scatter";
        std::string tail = fallback ? " | leader form: groups of unequal size" : "";
        // a reduce-scatter or allgather the hierarchical collectives cannot serve (collectives.cpp)
        if (std::optional<std::string> why = hierarchical_fallback(u, *readers, settings)) tail += " | " + *why;
        std::cerr << debug_line(algo, Collective::allreduce, u, tail);
      }
    }
  }
  UOp collected = graph_rewrite(sharded, collectives_pm(settings, readers), options);
  UOp lowered = graph_rewrite(collected, replace_allreduce(settings, std::move(choices)), options);
  for (const UOp& r : lowered.src()) {
    bool is_multi = r.op() == Ops::MULTI;
    out.roots.push_back(is_multi ? r.src(0) : r);
    out.axes.push_back(is_multi ? r.axis() : std::nullopt);
  }
  for (const UOp& u : lowered.graph().toposort(out.roots))
    for (const UOp& s : u.src())
      if (s.op() == Ops::MULTI)
        throw ShapeError(fmt::format("{}: no multi-device rule for this op on a sharded tensor (shape {}, axis {})",
                                     op_name(u.op()), shape_str(s.shape()),
                                     s.axis() ? std::to_string(*s.axis()) : "none"));
  return out;
}

}  // namespace ringrt
