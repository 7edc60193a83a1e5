// A graph's structure with its buffers replaced by parameters: the key under which the program
// cache shares one compiled program between graphs that differ only in which buffers they read and
// write (a training loop's fresh data every step). Reference: tinygrad engine/schedule.py, whose
// schedule cache keys the graph with every BUFFER replaced by a PARAM.
#pragma once

#include <cstdint>
#include <vector>

#include "rewrite/uop.hpp"

namespace ringrt {

class Canonical {
 public:
  // The structure of everything reachable from roots (in toposort order), BUFFER i of its first
  // appearance recorded as parameter i (its numel kept) and its id in buffers().
  explicit Canonical(const std::vector<UOp>& roots);

  // Equal structure: the same ops, dtypes, args (buffers as parameters) and sources, node for node.
  bool same_structure(const Canonical& o) const;
  uint64_t hash() const { return hash_; }
  // The buffer id behind each parameter, in parameter order.
  const std::vector<int64_t>& buffers() const { return buffers_; }
  size_t size() const { return nodes_.size(); }

  // The graph rebuilt in `into`, a fresh graph: parameter i becomes a BUFFER with id i (into's first
  // buffer ids, so ids the rules allocate later never collide). Returns the roots, in order.
  std::vector<UOp> instantiate(UOpGraph& into) const;

 private:
  struct Record {
    Ops op;
    DType dtype;
    Arg arg;  // a BUFFER's id replaced by its parameter index
    std::vector<uint32_t> src;
  };
  std::vector<Record> nodes_;
  std::vector<uint32_t> roots_;
  std::vector<int64_t> buffers_;
  uint64_t hash_ = 0;
};

}  // namespace ringrt
