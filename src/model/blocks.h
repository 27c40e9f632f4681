// The building blocks shared by the architectures: normalisation, attention over the
// KV cache, feed-forward networks, and the inputs every forward graph reads. The blocks
// follow the model's decided variant (ModelWeights::variant): which biases, norms and
// projections a layer has is read there, and a weight it names must be loaded (CHECK).
#pragma once

#include <vector>

#include "core/graph.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace tessera {

/// Per-layer KV cache tensors: one row per cache cell. Null (training): the batch's own
/// keys and values are attended, cell c being batch token c.
struct KvLayer {
  Tensor* k = nullptr;  // [n_embd_kv, n_ctx]
  Tensor* v = nullptr;  // [n_embd_v, n_ctx]
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
  /// Models whose layers differ in their window (HParams::mixed_swa, Gemma 2): kq_mask is
  /// then the plain causal mask and kq_mask_swa (kq_mask's shape) the sliding window's.
  bool swa_mask = false;
  Tensor* kq_mask_swa = nullptr;
  /// The context's cells per sequence (n_ctx / n_seq_max; training: its window): LongRoPE
  /// picks its factors by it. 0: unknown, the short factors.
  int64_t n_ctx_per_seq = 0;
  Tensor* out_ids = nullptr;    // I32 [n_outputs]: batch indices of the wanted tokens
  std::vector<KvLayer> kv;      // one per layer

  /// Elements of kq_mask: sum over the groups of n_kv * n_tokens.
  int64_t mask_size() const;
};

/// Creates the input tensors of `in` (shapes from its counts) as graph inputs.
void create_batch_inputs(Graph& g, BatchInputs& in);

/// t, a weight of the model's decided variant: the loader loaded it (an invariant, CHECKed).
Tensor* loaded_weight(Tensor* t);

/// w x (mul_mat), plus the layer's LoRA updates of w: scale * b (a x) for each.
Tensor* project(Graph& g, const LayerWeights& l, Tensor* w, Tensor* x);

/// RMSNorm(x) * w (+ b when given).
Tensor* rms_norm_block(Graph& g, Tensor* x, Tensor* w, Tensor* b, float eps);
/// LayerNorm(x) * w (+ b when given).
Tensor* layer_norm_block(Graph& g, Tensor* x, Tensor* w, Tensor* b, float eps);

/// The token embeddings of the batch [n_embd, n_tokens], plus row 0 of token_types when
/// the variant has them, plus the learned position embeddings at the tokens' positions
/// when the variant's positions are learned. Every
/// build starts here: it CHECKs that w.variant is decided.
Tensor* input_embeddings(Graph& g, const ModelWeights& w, const BatchInputs& in);

/// A layer's query, key and value projections.
struct QkvProjections {
  Tensor* q = nullptr;  // [head_dim, n_head, n_tokens]
  Tensor* k = nullptr;  // [head_dim, n_head_kv, n_tokens]
  Tensor* v = nullptr;  // [head_dim_v, n_head_kv, n_tokens]
};

/// wq x, wk x, wv x for x [n_embd, n_tokens], split into heads, with their biases (bq,
/// bk, bv or a fused bqkv) when v.qkv_bias says so, clamped to +-h.clamp_kqv when set.
/// A fused layout (v.qkv Fused), or separate parts that fuse_weights.h joined at load
/// (l.wqkv set: the same product, one matrix), is one mul_mat [n_embd_q + 2 n_embd_kv,
/// n_tokens] whose rows q, k and v are strided views (each token's heads dense, tokens
/// one fused row apart); else three mul_mats, reshaped.
QkvProjections qkv_projections(Graph& g, const HParams& h, const BlockVariant& v, const LayerWeights& l,
                               Tensor* x);

/// Multi-head latent attention's q, k and v (v.mla; mla_block.cpp): q [head_dim, n_head,
/// n_tokens] from attn_q (or attn_q_a, its norm, attn_q_b), k [head_dim, n_head, n_tokens]
/// from the latent attn_kv_a_mqa x (its c normed by attn_kv_a_norm and expanded by
/// attn_kv_b; its k_pe shared by the heads), v [head_dim_v, n_head, n_tokens] dense. The
/// rotated part of each q and k head comes first ([q_pe | q_nope], [k_pe | k_nope];
/// n_rot dims), not yet rotated.
QkvProjections mla_projections(Graph& g, const HParams& h, const BlockVariant& v, const LayerWeights& l,
                               Tensor* x);

/// The divisors of the RoPE frequencies: w.rope_freqs when the variant has them; LongRoPE's
/// long factors when n_ctx_per_seq > h.n_ctx_orig, else its short ones (as the reference's
/// build_rope_factors); else null.
Tensor* rope_factors(const HParams& h, const ModelWeights& w, int64_t n_ctx_per_seq);

/// RoPE of t [head_dim, n_heads, n_tokens] at the batch's positions, as the model
/// rotates: h.n_rot dims, h.rope_mode, base and scale, rope_factors, h.rope_yarn().
Tensor* rope_block(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in,
                   Tensor* t);

/// The whole-vector q/k norms (v.qk_norm_whole: OLMo2, OLMoE): q and k each normed over
/// all their heads together (l.attn_q_norm [n_embd_q], l.attn_k_norm [n_embd_kv]), as
/// heads again; p unchanged when the variant has none.
QkvProjections whole_qk_norm(Graph& g, const HParams& h, const BlockVariant& v, const LayerWeights& l,
                             const QkvProjections& p);

/// The mask layer il attends with: in.kq_mask_swa for a windowed layer of a model whose
/// layers differ (h.mixed_swa()), else in.kq_mask (il < 0: the model must not differ).
Tensor* layer_mask(const HParams& h, const BatchInputs& in, int64_t il);

/// Self-attention of projected q [head_dim, n_head, n_tokens], k [head_dim, n_head_kv,
/// n_tokens] and v [head_dim_v, n_head_kv, n_tokens] (k and q already rotated where the model rotates;
/// each token's heads dense, tokens at any stride, e.g. views of a fused projection):
/// writes k and v into the cache layer at the batch's slots, attends each group of
/// tokens over its window of cells with its mask (scaled by the heads' ALiBi slopes when
/// h.positions is Alibi), and returns the merged heads [head_dim_v n_head, n_tokens]
/// (before the output projection). Scores are scaled by h.kq_scale() and soft-capped by
/// h.attn_softcap; the mask is layer_mask(h, in, il).
Tensor* attention_block(Graph& g, const HParams& h, const BatchInputs& in, const KvLayer& kv,
                        Tensor* q, Tensor* k, Tensor* v, int64_t il = -1);

/// wo attn (+ bo when v.out_bias says so).
Tensor* attn_output(Graph& g, const BlockVariant& v, const LayerWeights& l, Tensor* attn);

/// The feed-forward network of a layer, as v.ffn says. Gated: down(act(gate x) * up x),
/// with one product for gate and up when the file has them in one matrix (GatedFused) or
/// fuse_weights.h joined them at load (l.ffn_gate_up). Plain: down(act(up x + b_up)), the
/// bias when v.up_bias says so. Then + b_down when v.down_bias says so.
Tensor* ffn_block(Graph& g, Tensor* x, const BlockVariant& v, const LayerWeights& l);

/// The mixture-of-experts feed-forward of a layer whose variant has experts (v.moe), for
/// x [n_embd, n_tokens]: the router ffn_gate_inp picks h.n_expert_used experts per token
/// (softmax or sigmoid of its logits as h.expert_gating says, the top ones), weighted by
/// their probabilities, divided by the chosen ones' sum when h.expert_weights_norm,
/// scaled by h.expert_weights_scale when set; the sum of the chosen experts' SwiGLU
/// (ffn_{gate,up,down}_exps, mul_mat_id) so weighted, plus the shared experts as
/// v.shared_experts says.
Tensor* moe_ffn_block(Graph& g, const HParams& h, const BlockVariant& v, const LayerWeights& l, Tensor* x);

/// A layer's feed-forward as its variant says: moe_ffn_block with experts, else ffn_block.
/// v: the layer's own variant (variant_check.h: layer_variant).
Tensor* feed_forward(Graph& g, const HParams& h, const BlockVariant& v, const LayerWeights& l, Tensor* x);

/// norm(x) * w (+ b when v.norm_bias says so), of v.norm, with the model's epsilon for it.
Tensor* norm_block(Graph& g, const HParams& h, const BlockVariant& v, Tensor* x, Tensor* w, Tensor* b);

/// Layer `il` in the shape most architectures share, on the residual stream x: the
/// attention reads norm(x) (attn_norm; x itself without pre-norms), with q and k normed
/// whole (whole_qk_norm), or from mla_projections with MLA, and rotated when the
/// positions are RoPE; the feed-forward reads
/// norm(.) (ffn_norm). Sequential (x += attn, then x += ffn of the new x), or with a
/// parallel residual both read the layer's input: x + attn(norm1 x) + ffn(norm2 x), the FFN
/// reading norm1 x when the variant has no ffn_norm (Command-R). With post-norms each
/// output is normed before it joins the residual, and each is scaled by
/// h.residual_scale. All as w.variant says.
Tensor* decoder_layer(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in,
                      int64_t il, Tensor* x);

/// Post-norm layer `il` (v.post_norm; BERT): x = norm(attn(x) + x) (attn_output_norm), then
/// norm(ffn(x) + x) (layer_output_norm); q and k rotated when the positions are RoPE.
Tensor* post_norm_layer(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in,
                        int64_t il, Tensor* x);

/// An encoder's whole build after its input embeddings x (a variant without logits): the
/// embedding norm when the variant has one, every layer as post_norm_layer, then the final
/// hidden states [n_embd, n_outputs] of the output tokens (no final norm). The runtime
/// reads them as the embeddings; there are no logits.
Tensor* encoder_stack(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in, Tensor* x);

/// The end of a build: the rows of the output tokens, the output norm (output_norm,
/// output_norm_b), and their logits (logits_block), scaled by h.logit_scale and
/// soft-capped by h.final_softcap.
Tensor* output_logits(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in,
                      Tensor* x);

/// Every layer as decoder_layer, on the input embeddings x, then output_logits: the whole
/// build of most architectures.
Tensor* decoder_stack(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in,
                      Tensor* x);

/// The logits [n_vocab, n_outputs] of the final hidden states x [n_embd, n_outputs]:
/// output x, or token_embd x when the variant ties the output. (The runtime reads the
/// hidden states as this mul_mat's second source.)
Tensor* logits_block(Graph& g, const ModelWeights& w, Tensor* x);

/// The output projection under a build's logits: logits itself, or the mul_mat beneath
/// the scales and soft caps applied to it (the runtime reads its hidden states).
const Tensor* logits_product(const Tensor* logits);

/// The token embeddings of a build, times h.embd_scale (Granite) when it is not 1.
Tensor* scaled_embeddings(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in);

}  // namespace tessera
