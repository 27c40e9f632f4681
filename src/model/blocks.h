// The building blocks shared by the architectures: normalisation, attention over the
// KV cache, feed-forward networks, and the inputs every forward graph reads.
#pragma once

#include <vector>

#include "core/graph.h"
#include "model/hparams.h"
#include "model/weights.h"

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

/// A layer's query, key and value projections.
struct QkvProjections {
  Tensor* q = nullptr;  // [head_dim, n_head, n_tokens]
  Tensor* k = nullptr;  // [head_dim, n_head_kv, n_tokens]
  Tensor* v = nullptr;  // [head_dim, n_head_kv, n_tokens]
};

/// wq x, wk x, wv x for x [n_embd, n_tokens], split into heads. With l.wqkv, one mul_mat
/// [n_embd_q + 2 n_embd_kv, n_tokens] whose rows q, k and v are strided views of (each
/// token's heads dense, tokens one fused row apart); else three mul_mats, reshaped.
QkvProjections qkv_projections(Graph& g, const HParams& h, const LayerWeights& l, Tensor* x);

/// Self-attention of projected q [head_dim, n_head, n_tokens], k and v
/// [head_dim, n_head_kv, n_tokens] (k and q already rotated; each token's heads dense,
/// tokens at any stride, e.g. views of a fused projection): writes k and v into the
/// cache layer at the batch's slots, attends each group of tokens over its window of
/// cells with its mask, and returns the merged heads [n_embd_q, n_tokens] (before the
/// output projection).
Tensor* attention_block(Graph& g, const HParams& h, const BatchInputs& in, const KvLayer& kv,
                        Tensor* q, Tensor* k, Tensor* v);

/// down(silu(gate x) * up x): the SwiGLU feed-forward of LLaMA-family models. With
/// `gate_up` (gate's rows then up's as one matrix: LayerWeights::ffn_gate_up), gate x and
/// up x are two strided views of one mul_mat (gate and up then only give the shapes).
Tensor* ffn_swiglu(Graph& g, Tensor* x, Tensor* gate, Tensor* up, Tensor* down,
                   Tensor* gate_up = nullptr);

}  // namespace tessera
