// The graph of one training micro-batch: `batch` sequences of `n_ctx` tokens through the
// architecture's own forward graph (attending over the batch itself, no KV cache), the
// cross-entropy loss against the next tokens, and (for training, not evaluation) the
// backward graph down to every parameter. Built once, memory-planned once, computed
// every step with new tokens.
#pragma once

#include <memory>

#include "core/graph_alloc.h"
#include "train/backward.h"
#include "train/train_model.h"

namespace tessera::train {

struct TrainGraph {
  int64_t batch = 0;
  int64_t n_ctx = 0;
  Graph graph;
  BatchInputs in;
  Tensor* targets = nullptr;  // I32 [batch * n_ctx]; < 0: not scored
  Tensor* loss = nullptr;     // F32 [1]
  Tensor* seed = nullptr;     // F32 [1]: d loss, the gradients' scale (null: evaluation)
  Gradients grads;            // of TrainModel::params, in order (empty: evaluation)
  AllocPlan plan;
  std::unique_ptr<Buffer> buffer;

  int64_t n_tokens() const { return batch * n_ctx; }
};

/// Builds and places the graph; `backward`: with gradients. Errors: out of memory, or a
/// model the backward pass cannot differentiate.
Result<std::unique_ptr<TrainGraph>> build_train_graph(const TrainModel& m, int64_t batch, int64_t n_ctx,
                                                      bool backward, Backend& backend);

/// Sets the micro-batch's tokens and targets (n_tokens() each, sequence after sequence)
/// and the seed (the weight of this micro-batch's loss in the step's gradient).
void set_micro_batch(TrainGraph& tg, Backend& backend, const int32_t* tokens, const int32_t* targets,
                     float seed = 1.0f);

}  // namespace tessera::train
