#include "rewrite/pattern.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace ringrt {

UPat UPat::named(std::string name) && {
  name_ = std::move(name);
  return std::move(*this);
}
UPat UPat::named(std::string name) const& { return UPat(*this).named(std::move(name)); }
UPat UPat::dtype(std::vector<DType> dtypes) const {
  UPat p = *this;
  p.dtypes_ = std::move(dtypes);
  return p;
}
UPat UPat::src(std::vector<UPat> src) const {
  UPat p = *this;
  p.src_ = std::move(src);
  p.allow_any_len_ = false;
  return p;
}
UPat UPat::src_prefix(std::vector<UPat> src) const {
  UPat p = this->src(std::move(src));
  p.allow_any_len_ = true;
  return p;
}
UPat UPat::arg(Arg value) const {
  UPat p = *this;
  p.arg_ = std::move(value);
  return p;
}
UPat UPat::arg_if(std::function<bool(const Arg&)> pred) const {
  UPat p = *this;
  p.arg_pred_ = std::move(pred);
  return p;
}
UPat UPat::early_reject(OpSet ops) const {
  UPat p = *this;
  p.early_reject_ = ops;
  return p;
}

bool UPat::match(const UOp& u, std::vector<std::pair<std::string, UOp>>& captures) const {
  if (ops_ && !ops_->contains(u.op())) return false;
  if (!dtypes_.empty() && std::find(dtypes_.begin(), dtypes_.end(), u.dtype()) == dtypes_.end()) return false;
  if (arg_ && !(*arg_ == u.arg())) return false;
  if (arg_pred_ && !arg_pred_(u.arg())) return false;
  if (!early_reject_.empty() &&
      std::none_of(u.src().begin(), u.src().end(), [&](const UOp& s) { return early_reject_.contains(s.op()); }))
    return false;
  if (!name_.empty()) {
    // a name captured twice must name the same node
    for (const auto& [n, v] : captures)
      if (n == name_ && v != u) return false;
    captures.emplace_back(name_, u);
  }
  if (src_) {
    if (allow_any_len_ ? u.src().size() < src_->size() : u.src().size() != src_->size()) return false;
    for (size_t i = 0; i < src_->size(); ++i)
      if (!(*src_)[i].match(u.src()[i], captures)) return false;
  }
  return true;
}

const UOp& Match::operator[](const std::string& name) const {
  for (const auto& [n, v] : captures_)
    if (n == name) return v;
  throw InternalError("pattern has no capture named '" + name + "'");
}
bool Match::has(const std::string& name) const {
  return std::any_of(captures_.begin(), captures_.end(), [&](const auto& c) { return c.first == name; });
}

PatternMatcher::PatternMatcher(std::vector<std::pair<UPat, RewriteFn>> rules) : rules_(std::move(rules)) { index(); }

void PatternMatcher::index() {
  by_op_.assign(kNumOps, {});
  for (size_t i = 0; i < rules_.size(); ++i) {
    OpSet ops = rules_[i].first.ops().value_or(OpSet::all());
    ops.for_each([&](Ops op) { by_op_[static_cast<size_t>(op)].push_back(i); });
  }
}

std::optional<UOp> PatternMatcher::rewrite(const UOp& u) const {
  if (by_op_.empty()) return std::nullopt;
  const std::vector<size_t>& rules = by_op_[static_cast<size_t>(u.op())];
  if (rules.empty()) return std::nullopt;
  // This thread's spare capture buffers: one is taken for this call and given back after, so matching
  // allocates nothing once a buffer has grown (a callback that rewrites takes a buffer of its own).
  thread_local std::vector<std::vector<std::pair<std::string, UOp>>> spare;
  Match m({});
  if (!spare.empty()) {
    m.captures_ = std::move(spare.back());
    spare.pop_back();
  }
  std::optional<UOp> out;
  for (size_t i : rules) {
    m.captures_.clear();
    if (!rules_[i].first.match(u, m.captures_)) continue;
    if ((out = rules_[i].second(m))) break;
  }
  m.captures_.clear();
  spare.push_back(std::move(m.captures_));
  return out;
}

PatternMatcher PatternMatcher::operator+(const PatternMatcher& other) const {
  auto rules = rules_;
  rules.insert(rules.end(), other.rules_.begin(), other.rules_.end());
  return PatternMatcher(std::move(rules));
}

}  // namespace ringrt
