// The graph allocator: plans one buffer for a graph's intermediate tensors.
//
// plan() walks the nodes in execution order. A tensor gets memory when it is
// produced and gives it back after its last consumer has run; an elementwise op whose
// input dies at that op writes in place over it; views own nothing and point into
// their source. Leafs without memory (the graph's inputs) and nodes nobody consumes
// (its outputs) live for the whole compute. The plan is a list of offsets and the
// buffer size: measure once, allocate once, reuse for every compute of the graph.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "core/graph.h"

namespace tessera {

struct AllocPlan {
  size_t size = 0;                                   // bytes the buffer needs
  std::vector<std::pair<Tensor*, size_t>> offsets;   // tensors that own memory
  size_t sum_of_tensors = 0;                         // what one buffer per tensor would take
};

/// Plans memory for every tensor of `graph` that has none yet (data == nullptr).
AllocPlan plan_graph_memory(const Graph& graph, size_t alignment);

/// Whether `node` may write its result over its first source (same size, elementwise).
bool op_can_run_in_place(const Tensor* node);

}  // namespace tessera
