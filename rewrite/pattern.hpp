// Pattern matching over UOps (reference: tinygrad uop/ops.py UPat, PatternMatcher).
//
// A UPat describes a node: a set of ops, a set of dtypes, ordered source patterns (optionally
// allowing more sources), an arg (exact value or predicate) and a capture name. A PatternMatcher is
// a table of (pattern, callback) rules indexed by the root op; a callback receives the captures and
// returns the replacement, or nothing to decline.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rewrite/uop.hpp"

namespace ringrt {

class UPat {
 public:
  UPat() = default;  // matches anything
  explicit UPat(Ops op) : ops_(OpSet{op}) {}
  explicit UPat(OpSet ops) : ops_(ops) {}

  static UPat var(std::string name) { return UPat().named(std::move(name)); }  // anything, captured
  static UPat any() { return UPat(); }

  UPat named(std::string name) &&;
  UPat named(std::string name) const&;
  UPat dtype(std::vector<DType> dtypes) const;   // dtype must be one of these
  UPat src(std::vector<UPat> src) const;         // exactly these sources, in order
  UPat src_prefix(std::vector<UPat> src) const;  // these first sources, any after (allow_any_len)
  UPat arg(Arg value) const;                     // arg must equal value
  UPat arg_if(std::function<bool(const Arg&)> pred) const;
  UPat early_reject(OpSet ops) const;  // some source must have one of these ops (a cheap pre-check)

  const std::optional<OpSet>& ops() const { return ops_; }
  // Matches u, adding captures; false leaves captures in an unspecified state.
  bool match(const UOp& u, std::vector<std::pair<std::string, UOp>>& captures) const;

 private:
  std::optional<OpSet> ops_;
  std::vector<DType> dtypes_;
  std::optional<std::vector<UPat>> src_;
  bool allow_any_len_ = false;
  std::optional<Arg> arg_;
  std::function<bool(const Arg&)> arg_pred_;
  OpSet early_reject_;
  std::string name_;
};

// The captures of one match, looked up by name.
class Match {
 public:
  explicit Match(std::vector<std::pair<std::string, UOp>> captures) : captures_(std::move(captures)) {}
  const UOp& operator[](const std::string& name) const;  // throws InternalError when absent
  bool has(const std::string& name) const;

 private:
  friend class PatternMatcher;  // hands the capture buffer from rule to rule (no allocation per match)
  std::vector<std::pair<std::string, UOp>> captures_;
};

using RewriteFn = std::function<std::optional<UOp>(const Match&)>;

class PatternMatcher {
 public:
  PatternMatcher() = default;
  PatternMatcher(std::vector<std::pair<UPat, RewriteFn>> rules);

  // The first rule (in table order) whose pattern matches u and whose callback accepts; none if no
  // rule applies. Only rules whose root op set contains u's op are tried.
  std::optional<UOp> rewrite(const UOp& u) const;
  // The rules of this table followed by those of other.
  PatternMatcher operator+(const PatternMatcher& other) const;
  size_t size() const { return rules_.size(); }

 private:
  void index();
  std::vector<std::pair<UPat, RewriteFn>> rules_;
  std::vector<std::vector<size_t>> by_op_;  // op -> rule indices, in table order
};

}  // namespace ringrt
