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

/// The inputs of one forward graph; the runtime fills them before each compute.
struct BatchInputs {
  int64_t n_tokens = 0;   // tokens in the batch
  int64_t n_kv = 0;       // cache cells attended to (a prefix of the cache)
  int64_t n_outputs = 0;  // tokens whose logits are wanted
  Tensor* tokens = nullptr;     // I32 [n_tokens]
  Tensor* positions = nullptr;  // I32 [n_tokens]
  Tensor* kv_slots = nullptr;   // I32 [n_tokens]: the cache cell each token is written to
  Tensor* kq_mask = nullptr;    // F32 [n_kv, n_tokens]: 0 where attending is allowed, -inf not
  Tensor* out_ids = nullptr;    // I32 [n_outputs]: batch indices of the wanted tokens
  std::vector<KvLayer> kv;      // one per layer
};

/// Creates the input tensors of `in` (shapes from its counts) as graph inputs.
void create_batch_inputs(Graph& g, BatchInputs& in);

/// RMSNorm(x) * w (+ b when given).
Tensor* rms_norm_block(Graph& g, Tensor* x, Tensor* w, Tensor* b, float eps);
/// LayerNorm(x) * w (+ b when given).
Tensor* layer_norm_block(Graph& g, Tensor* x, Tensor* w, Tensor* b, float eps);

/// Self-attention of projected q [head_dim, n_head, n_tokens], k and v
/// [head_dim, n_head_kv, n_tokens] (already rotated): writes k and v into the cache
/// layer at the batch's slots, attends over the first n_kv cells with the mask, and
/// returns the merged heads [n_embd_q, n_tokens] (before the output projection).
Tensor* attention_block(Graph& g, const HParams& h, const BatchInputs& in, const KvLayer& kv,
                        Tensor* q, Tensor* k, Tensor* v);

/// down(silu(gate x) * up x): the SwiGLU feed-forward of LLaMA-family models.
Tensor* ffn_swiglu(Graph& g, Tensor* x, Tensor* gate, Tensor* up, Tensor* down);

}  // namespace tessera
