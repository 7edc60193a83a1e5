// Lifetimes in the global graph (internal). The Tensor front end builds in UOpGraph::global(); a node
// lives while a live tensor's graph (or an assignment a live graph still holds) reaches it, and is
// collected after that (mark and sweep, UOpGraph::collect), so a training loop that builds a few
// nodes per step keeps a graph of constant size.
//
// Collecting must not run while any thread holds handles to nodes no tensor keeps yet (a builder
// between making a node and wrapping it in a tensor, a realize in progress). Every such section is a
// GraphUse; a collection runs only when no thread is inside one.
#pragma once

#include <cstddef>

namespace ringrt {

// A section of code that holds handles into the global graph: collections wait until it ends.
// Reentrant on one thread; cheap (one shared lock for the outermost section of a thread). The end of
// an outermost section calls collect_garbage(), so every Tensor call (a build, a write, a realize)
// may collect: a loop that never realizes stays bounded too.
class GraphUse {
 public:
  GraphUse();
  ~GraphUse();
  GraphUse(const GraphUse&) = delete;
  GraphUse& operator=(const GraphUse&) = delete;
};

// Collects the global graph when it has grown to twice its size after the last collection (plus
// 4096 nodes; every time with force), if this thread is inside no GraphUse and no other thread is
// inside one now (else it is left for a later call). Also drops the engine's records of dead
// tensors, storages and assignments. Returns the nodes removed.
size_t collect_garbage(bool force = false);

}  // namespace ringrt
