#include "rewrite/canonical.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "core/errors.hpp"
#include "rewrite/interpreter.hpp"
#include "rewrite/node.hpp"

namespace ringrt {

namespace {
// The toposort position of every node, found by binary search: one allocation, not one per node
// (the key is computed on every realize; most graphs are a few nodes).
class Positions {
 public:
  explicit Positions(const std::vector<UOp>& order) {
    pos_.reserve(order.size());
    for (size_t i = 0; i < order.size(); ++i) pos_.emplace_back(order[i].node(), static_cast<uint32_t>(i));
    std::sort(pos_.begin(), pos_.end());
  }
  uint32_t at(const detail::Node* n) const {
    auto it = std::lower_bound(pos_.begin(), pos_.end(), std::pair<const detail::Node*, uint32_t>{n, 0});
    if (it == pos_.end() || it->first != n) throw InternalError("Canonical: a source outside the toposort");
    return it->second;
  }

 private:
  std::vector<std::pair<const detail::Node*, uint32_t>> pos_;
};
}  // namespace

bool is_runtime_scalar(const UOp& c) {
  if (c.op() != Ops::CONST) return false;
  if (const auto* s = std::get_if<ScalarArg>(&c.arg())) return s->slot < 0;
  const double* v = std::get_if<double>(&c.arg());
  return v && is_float(c.dtype()) && std::isfinite(*v) && *v != 0.0 && *v != 1.0;
}

namespace {
// The program parameter `slot` that run-time scalar c becomes (a named variable keeps its name).
ScalarArg parameter_of(const UOp& c, int64_t slot) {
  const auto* named = std::get_if<ScalarArg>(&c.arg());
  return ScalarArg{named ? named->name : std::string(), 0, slot};
}
}  // namespace

UOp with_scalar_parameters(const UOp& root) {
  std::unordered_map<const detail::Node*, UOp> sub;
  for (const UOp& u : root.graph().toposort({root}))
    if (is_runtime_scalar(u)) {
      sub.emplace(u.node(), u.replace(u.src(), parameter_of(u, static_cast<int64_t>(sub.size()))));
    }
  return sub.empty() ? root : substitute(root, sub);
}

Canonical::Canonical(const std::vector<UOp>& roots) {
  if (roots.empty()) return;
  std::vector<UOp> order = roots[0].graph().toposort(roots);
  Positions index(order);
  std::unordered_map<int64_t, int64_t> param;  // buffer id -> parameter, past kFewBuffers buffers
  constexpr size_t kFewBuffers = 16;           // below: a scan of buffers_
  nodes_.reserve(order.size());
  uint64_t h = detail::mix(0, order.size());
  for (const UOp& u : order) {
    Record r{u.op(), u.dtype(), u.arg(), {}};
    if (u.op() == Ops::BUFFER) {
      auto b = std::get<BufferArg>(u.arg());
      int64_t at = 0;
      if (buffers_.size() < kFewBuffers) {
        at = std::find(buffers_.begin(), buffers_.end(), b.id) - buffers_.begin();
      } else {
        if (param.empty())
          for (size_t i = 0; i < buffers_.size(); ++i) param.emplace(buffers_[i], static_cast<int64_t>(i));
        at = param.emplace(b.id, static_cast<int64_t>(buffers_.size())).first->second;
      }
      if (at == static_cast<int64_t>(buffers_.size())) buffers_.push_back(b.id);
      r.arg = BufferArg{at, b.numel};
    } else if (u.op() == Ops::CONST && is_runtime_scalar(u)) {
      r.arg = parameter_of(u, static_cast<int64_t>(scalars_.size()));
      HostBuffer value = const_value(u);
      uint64_t word = 0;
      std::memcpy(&word, value.bytes.data(), value.bytes.size());
      scalars_.push_back(word);
    }
    h = detail::mix(detail::mix(detail::mix(h, static_cast<uint64_t>(r.op)), static_cast<uint64_t>(r.dtype)),
                    detail::hash_arg(r.arg));
    r.src.reserve(u.src().size());
    for (const UOp& s : u.src()) {
      r.src.push_back(index.at(s.node()));
      h = detail::mix(h, r.src.back());
    }
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
