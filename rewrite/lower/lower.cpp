#include "rewrite/lower/lower.hpp"

#include <fmt/format.h>

#include <cctype>
#include <iostream>

#include "rewrite/errors.hpp"

namespace ringrt {

Lowered lower_multi(const std::vector<UOp>& roots, const AllreduceSettings& settings, const RewriteOptions& options) {
  Lowered out;
  UOp big = sink(roots);
  UOp sharded = graph_rewrite(big, multi_pm(), options);
  AllreduceChoices choices;  // made once here for Lowered::algorithms, the DEBUG line and the lowering
  for (const UOp& u : sharded.graph().toposort({sharded})) {
    if (u.op() == Ops::ALLREDUCE && u.src(0).device().tuple()) {
      std::string algo = allreduce_algorithm(u, settings);
      out.algorithms.push_back(algo);
      choices.emplace(u.node(), algo);
      if (settings.debug >= 2) {
        std::string name = algo;
        for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        // the reduce_scatter form asked for but not given: the groups differ in size (allreduce.cpp)
        bool fallback = algo == "hierarchical" && settings.hierarchical == "reduce_scatter";
        std::cerr << fmt::format("{} ALLREDUCE {}x{} | {}{}\n", name, u.src(0).device().count(), prod(u.shape()),
                                 dtype_name(u.dtype()), fallback ? " | leader form: groups of unequal size" : "");
      }
    }
  }
  UOp lowered = graph_rewrite(sharded, replace_allreduce(settings, std::move(choices)), options);
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
