// What a CUDA graph recorded from a compute depends on: every node's op, parameters,
// shape, strides and addresses (its own and its sources'), and the scratch pool's
// generation. Equal keys: the recorded launches are exactly what a fresh compute would
// launch, so the recording is replayed.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"

namespace tessera::cuda {

struct GraphKey {
  std::vector<uint64_t> words;
  bool operator==(const GraphKey& o) const { return words == o.words; }
};

GraphKey graph_key(const Graph& graph, uint64_t scratch_generation);

}  // namespace tessera::cuda
