// Forward graphs of a context, built once per batch shape (n_tokens, n_outputs, and the
// attention groups: tokens per group and each group's window of cache cells) and kept
// in a small most-recently-used cache: continuous batching alternates between a few
// shapes (prompt batches, one-token-per-sequence steps; windows grow in steps of
// KvCache::kPad cells), and each of them is built and planned (by the scheduler: splits
// and memory) only once. All graphs share the scheduler's compute buffers (one graph runs
// at a time); when a larger graph grows a buffer, the others are placed again on use.
#pragma once

#include <memory>
#include <vector>

#include "backend/scheduler.h"
#include "model/model_impl.h"
#include "runtime/matmul_observer.h"

namespace tessera {

struct ForwardShape {
  int64_t n_tokens = 0;
  int64_t n_outputs = 0;
  std::vector<AttnGroup> groups;
  // The adapters' user scales the graph is built with (empty without adapters). Part of
  // the key rather than a reason to drop the cache: a server alternates between the
  // scale sets of its clients step by step, and keyed graphs are built once per set
  // instead of at every switch; a graph built with other scales never matches.
  std::vector<float> adapter_scales;
  bool operator==(const ForwardShape&) const = default;
};

/// A built and memory-planned forward graph for one batch shape.
struct ForwardGraph {
  ForwardShape shape;
  Graph graph;
  BatchInputs in;
  Tensor* logits = nullptr;      // [n_vocab, n_outputs]; null for an encoder
  Tensor* embeddings = nullptr;  // [n_embd, n_outputs] after the output norm; null unless asked
  std::vector<ObservedMatmul> observed;  // products of weights whose inputs are kept (observing contexts)
  std::unique_ptr<SchedGraph> plan;  // splits, copies and memory
};

class ForwardGraphCache {
 public:
  /// `h`: the hyper-parameters the graphs are built with (the model's, with the context's
  /// RoPE scaling); it must outlive the cache.
  /// `embeddings`: keep the final hidden state of the output tokens as a graph output.
  /// `n_ctx_per_seq`: the context's cells per sequence (BatchInputs::n_ctx_per_seq).
  /// `observe`: keep the inputs of the products of weights (ForwardGraph::observed).
  ForwardGraphCache(const detail::ModelImpl& m, const HParams& h, Scheduler& sched, bool embeddings,
                    int64_t n_ctx_per_seq, bool observe = false)
      : m_(m),
        h_(h),
        sched_(sched),
        embeddings_(embeddings),
        observe_(observe),
        n_ctx_per_seq_(n_ctx_per_seq),
        capacity_(m.info.adapters.empty() ? kCapacity : 2 * kCapacity) {}

  /// The graph for `shape` over the cache layers `kv`, placed in the compute buffers.
  ForwardGraph& get(const ForwardShape& shape, const std::vector<KvLayer>& kv);
  /// Number of graphs built so far (a cache miss each).
  int64_t n_built() const { return n_built_; }

  /// Graphs kept (twice as many with adapters: the shapes of two scale sets).
  static constexpr size_t kCapacity = 6;

 private:
  std::unique_ptr<ForwardGraph> build(const ForwardShape& shape, const std::vector<KvLayer>& kv);

  const detail::ModelImpl& m_;
  const HParams& h_;
  Scheduler& sched_;
  bool embeddings_;
  bool observe_;
  int64_t n_ctx_per_seq_;
  size_t capacity_;
  std::vector<std::unique_ptr<ForwardGraph>> graphs_;  // most recently used first
  int64_t n_built_ = 0;
};

}  // namespace tessera
