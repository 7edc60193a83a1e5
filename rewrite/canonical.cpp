#include "rewrite/canonical.hpp"

#include <unordered_map>

#include "rewrite/errors.hpp"
#include "rewrite/node.hpp"

namespace ringrt {

Canonical::Canonical(const std::vector<UOp>& roots) {
  if (roots.empty()) return;
  std::vector<UOp> order = roots[0].graph().toposort(roots);
  std::unordered_map<const detail::Node*, uint32_t> index;
  std::unordered_map<int64_t, int64_t> param;  // buffer id -> parameter
  index.reserve(order.size());
  nodes_.reserve(order.size());
  uint64_t h = detail::mix(0, order.size());
  for (const UOp& u : order) {
    Record r{u.op(), u.dtype(), u.arg(), {}};
    if (u.op() == Ops::BUFFER) {
      auto b = std::get<BufferArg>(u.arg());
      auto [it, fresh] = param.emplace(b.id, static_cast<int64_t>(buffers_.size()));
      if (fresh) buffers_.push_back(b.id);
      r.arg = BufferArg{it->second, b.numel};
    }
    h = detail::mix(detail::mix(detail::mix(h, static_cast<uint64_t>(r.op)), static_cast<uint64_t>(r.dtype)),
                    detail::hash_arg(r.arg));
    for (const UOp& s : u.src()) {
      r.src.push_back(index.at(s.node()));
      h = detail::mix(h, r.src.back());
    }
    index.emplace(u.node(), static_cast<uint32_t>(nodes_.size()));
    nodes_.push_back(std::move(r));
  }
  for (const UOp& root : roots) {
    roots_.push_back(index.at(root.node()));
    h = detail::mix(h, roots_.back());
  }
  hash_ = h;
}

bool Canonical::same_structure(const Canonical& o) const {
  if (hash_ != o.hash_ || nodes_.size() != o.nodes_.size() || roots_ != o.roots_) return false;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Record &a = nodes_[i], &b = o.nodes_[i];
    if (a.op != b.op || a.dtype != b.dtype || a.src != b.src || !detail::same_arg(a.arg, b.arg)) return false;
  }
  return true;
}

std::vector<UOp> Canonical::instantiate(UOpGraph& into) const {
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (into.new_buffer_id() != static_cast<int64_t>(i)) throw InternalError("instantiate: the graph is not fresh");
  std::vector<UOp> made;
  made.reserve(nodes_.size());
  for (const Record& r : nodes_) {
    std::vector<UOp> src;
    src.reserve(r.src.size());
    for (uint32_t s : r.src) src.push_back(made.at(s));
    made.push_back(into.make(r.op, r.dtype, std::move(src), r.arg));
  }
  std::vector<UOp> out;
  for (uint32_t r : roots_) out.push_back(made.at(r));
  return out;
}

}  // namespace ringrt
