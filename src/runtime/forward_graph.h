// Forward graphs of a context, built once per batch shape (n_tokens, n_outputs, and the
// attention groups: tokens per group and each group's window of cache cells) and kept
// in a small most-recently-used cache: continuous batching alternates between a few
// shapes (prompt batches, one-token-per-sequence steps; windows grow in steps of
// KvCache::kPad cells), and each of them is built and memory-planned only once. All graphs share one compute buffer (one graph runs at
// a time); when a larger graph grows the buffer, the others are placed again on use.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "core/graph_alloc.h"
#include "model/model_impl.h"

namespace tessera {

struct ForwardShape {
  int64_t n_tokens = 0;
  int64_t n_outputs = 0;
  std::vector<AttnGroup> groups;
  bool operator==(const ForwardShape&) const = default;
};

/// A built and memory-planned forward graph for one batch shape.
struct ForwardGraph {
  ForwardShape shape;
  Graph graph;
  BatchInputs in;
  Tensor* logits = nullptr;      // [n_vocab, n_outputs]
  Tensor* embeddings = nullptr;  // [n_embd, n_outputs] after the output norm; null unless asked
  AllocPlan plan;
  uint64_t placed_in = 0;        // buffer generation the plan was applied to
};

class ForwardGraphCache {
 public:
  /// `embeddings`: keep the final hidden state of the output tokens as a graph output.
  ForwardGraphCache(const detail::ModelImpl& m, Backend& backend, bool embeddings)
      : m_(m), backend_(backend), embeddings_(embeddings) {}

  /// The graph for `shape` over the cache layers `kv`, placed in the compute buffer.
  ForwardGraph& get(const ForwardShape& shape, const std::vector<KvLayer>& kv);
  /// Number of graphs built so far (a cache miss each).
  int64_t n_built() const { return n_built_; }

  static constexpr size_t kCapacity = 6;

 private:
  std::unique_ptr<ForwardGraph> build(const ForwardShape& shape, const std::vector<KvLayer>& kv);
  void place(ForwardGraph& fg);

  const detail::ModelImpl& m_;
  Backend& backend_;
  bool embeddings_;
  std::vector<std::unique_ptr<ForwardGraph>> graphs_;  // most recently used first
  std::unique_ptr<Buffer> buffer_;
  uint64_t generation_ = 0;  // bumped whenever buffer_ is reallocated
  int64_t n_built_ = 0;
};

}  // namespace tessera
