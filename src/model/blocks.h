// The building blocks shared by the architectures: normalisation, attention over the
// KV cache, feed-forward networks, and the inputs every forward graph reads.
#pragma once

#include <vector>

#include "core/graph.h"
#include "model/hparams.h"

namespace tessera {

/// Per-layer KV cache tensors: one row per cache cell.
struct KvLayer {
  Tensor* k = nullptr;  // [n_embd_kv, n_ctx]
  Tensor* v = nullptr;  // [n_embd_kv, n_ctx]
};

/// Attention of a run of consecutive batch tokens (one sequence, or one set of
/// sequences) over a window of cache cells: the runtime places each sequence's cells
/// close together, so that a token attends over its own sequence's cells, not the
/// whole cache.
struct AttnGroup {
  int64_t n_tokens = 0;  // consecutive batch tokens
  int64_t kv_begin = 0;  // first cache cell of the window
  int64_t n_kv = 0;      // cells in the window
  bool operator==(const AttnGroup&) const = default;
};

/// The inputs of one forward graph; the runtime fills them before each compute.
struct BatchInputs {
  int64_t n_tokens = 0;   // tokens in the batch
  int64_t n_outputs = 0;  // tokens whose logits are wanted
  std::vector<AttnGroup> groups;  // cover the batch's tokens, in order
  Tensor* tokens = nullptr;     // I32 [n_tokens]
  Tensor* positions = nullptr;  // I32 [n_tokens]
  Tensor* kv_slots = nullptr;   // I32 [n_tokens]: the cache cell each token is written to
  Tensor* kq_mask = nullptr;    // F32: per group, [n_kv, n_tokens] (0 where attending is allowed,
                                // -inf not), the groups one after the other
  Tensor* out_ids = nullptr;    // I32 [n_outputs]: batch indices of the wanted tokens
  std::vector<KvLayer> kv;      // one per layer

  /// Elements of kq_mask: sum over the groups of n_kv * n_tokens.
  int64_t mask_size() const;
};

/// Creates the input tensors of `in` (shapes from its counts) as graph inputs.
void create_batch_inputs(Graph& g, BatchInputs& in);

/// RMSNorm(x) * w (+ b when given).
Tensor* rms_norm_block(Graph& g, Tensor* x, Tensor* w, Tensor* b, float eps);
/// LayerNorm(x) * w (+ b when given).
Tensor* layer_norm_block(Graph& g, Tensor* x, Tensor* w, Tensor* b, float eps);

/// Self-attention of projected q [head_dim, n_head, n_tokens], k and v
/// [head_dim, n_head_kv, n_tokens] (already rotated): writes k and v into the cache
/// layer at the batch's slots, attends each group of tokens over its window of cells
/// with its mask, and returns the merged heads [n_embd_q, n_tokens] (before the output
/// projection).
Tensor* attention_block(Graph& g, const HParams& h, const BatchInputs& in, const KvLayer& kv,
                        Tensor* q, Tensor* k, Tensor* v);

/// down(silu(gate x) * up x): the SwiGLU feed-forward of LLaMA-family models.
Tensor* ffn_swiglu(Graph& g, Tensor* x, Tensor* gate, Tensor* up, Tensor* down);

}  // namespace tessera
