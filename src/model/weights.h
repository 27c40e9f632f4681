// The weights of a model, and the declarative list each architecture gives of them.
//
// An architecture lists its tensors once (name, where it goes, shape in terms of the
// hyper-parameters, required or optional); one visitor over that list loads, checks
// shapes and types, and prints. Which tensors a file has is its block variant
// (variant.h), decided once at load and kept in ModelWeights::variant: the blocks follow
// it, and the fields it does not use stay null.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/graph.h"
#include "model/hparams.h"
#include "model/variant.h"
#include "tessera/gguf.h"

namespace tessera {

/// A LoRA adapter's low-rank update of one weight W [n_in, n_out]: W x + scale * b (a x),
/// with a [n_in, r] and b [r, n_out] (GGUF's <name>.lora_a / .lora_b).
struct LoraDelta {
  const Tensor* target = nullptr;  // the weight it updates
  Tensor* a = nullptr;
  Tensor* b = nullptr;
  int adapter = 0;     // which adapter it comes from (ModelParams::adapters order)
  float alpha = 0.0f;  // the adapter's adapter.lora.alpha (0: none)
  float scale = 1.0f;  // scale_for(the user's scale at load)

  /// The factor of b (a x) for a user's scale: scale * alpha / r, or the scale alone when
  /// alpha is 0. Load and run time both compute it here, in this order, so that a scale
  /// set at run time gives the same bits as the same scale given at load.
  float scale_for(float user_scale) const {
    return alpha != 0 ? user_scale * alpha / float(a->ne[1]) : user_scale;
  }
};

struct LayerWeights {
  Tensor* attn_norm = nullptr;      // [n_embd]
  Tensor* attn_norm_b = nullptr;    // [n_embd]
  Tensor* attn_norm_2 = nullptr;    // [n_embd] (Falcon-40B: a second norm, for the FFN)
  Tensor* attn_norm_2_b = nullptr;  // [n_embd]
  Tensor* wq = nullptr;             // [n_embd, n_embd_q]
  Tensor* wk = nullptr;             // [n_embd, n_embd_kv]
  Tensor* wv = nullptr;             // [n_embd, n_embd_kv]
  Tensor* bq = nullptr;             // [n_embd_q]
  Tensor* bk = nullptr;             // [n_embd_kv]
  Tensor* bv = nullptr;             // [n_embd_kv]
  Tensor* bqkv = nullptr;           // [n_embd_q + 2 n_embd_kv] (files with a fused attn_qkv)
  Tensor* attn_q_norm = nullptr;    // [head_dim]: per-head norm of q (Persimmon); [n_embd_q]
                                    // when the variant's is whole (qk_norm_whole); k's alike
  Tensor* attn_q_norm_b = nullptr;  // [head_dim]
  Tensor* attn_k_norm = nullptr;    // [head_dim]
  Tensor* attn_k_norm_b = nullptr;  // [head_dim]
  // Multi-head latent attention (variant.h: mla).
  Tensor* wq_a = nullptr;            // [n_embd, n_lora_q]: attn_q_a (q_lora)
  Tensor* attn_q_a_norm = nullptr;   // [n_lora_q]
  Tensor* wq_b = nullptr;            // [n_lora_q, n_embd_q]
  Tensor* wkv_a_mqa = nullptr;       // [n_embd, n_lora_kv + n_rot]: rows [c | k_pe]
  Tensor* attn_kv_a_norm = nullptr;  // [n_lora_kv]
  Tensor* wkv_b = nullptr;           // [n_lora_kv, n_head (head_dim - n_rot + head_dim_v)]:
                                     // per head, k_nope's rows then v's
  Tensor* wo = nullptr;             // [n_embd_q, n_embd] ([n_head head_dim_v, n_embd] with MLA)
  Tensor* bo = nullptr;             // [n_embd]
  Tensor* post_attn_norm = nullptr; // [n_embd]: norm of the attention's output (Gemma 2)
  Tensor* post_ffn_norm = nullptr;  // [n_embd]: norm of the FFN's output
  Tensor* ffn_norm = nullptr;       // [n_embd]
  Tensor* ffn_norm_b = nullptr;     // [n_embd]
  Tensor* ffn_gate = nullptr;       // [n_embd, n_ff]
  Tensor* ffn_up = nullptr;         // [n_embd, n_ff]
  Tensor* ffn_up_b = nullptr;       // [n_ff]
  Tensor* ffn_down = nullptr;       // [n_ff, n_embd]
  Tensor* ffn_down_b = nullptr;     // [n_embd]
  // Mixture of experts (variant.h: moe): the router, the experts stacked along dim 2, and
  // the shared experts.
  Tensor* ffn_gate_inp = nullptr;        // [n_embd, n_expert], F32
  Tensor* ffn_gate_exps = nullptr;       // [n_embd, n_ff_exp, n_expert]
  Tensor* ffn_up_exps = nullptr;         // [n_embd, n_ff_exp, n_expert]
  Tensor* ffn_down_exps = nullptr;       // [n_ff_exp, n_embd, n_expert]
  Tensor* ffn_gate_inp_shexp = nullptr;  // [n_embd, 1]: the shared experts' gate
  Tensor* ffn_gate_shexp = nullptr;      // [n_embd, n_ff_shexp]
  Tensor* ffn_up_shexp = nullptr;        // [n_embd, n_ff_shexp]
  Tensor* ffn_down_shexp = nullptr;      // [n_ff_shexp, n_embd]
  Tensor* attn_out_norm = nullptr;     // [n_embd]: post-norm after the attention (BERT)
  Tensor* attn_out_norm_b = nullptr;   // [n_embd]
  Tensor* layer_out_norm = nullptr;    // [n_embd]: post-norm after the feed-forward (BERT)
  Tensor* layer_out_norm_b = nullptr;  // [n_embd]
  // Fused projections: either in the file (attn_qkv.weight; Phi-3's ffn_up.weight with the
  // gate's rows first), or set at load (fuse_weights.h) when the parts lie back to back as
  // one repacked matrix, sharing the parts' memory; else null.
  Tensor* wqkv = nullptr;         // [n_embd, n_embd_q + 2 n_embd_kv]: rows of wq, wk, wv
  Tensor* ffn_gate_up = nullptr;  // [n_embd, 2 n_ff]: rows of ffn_gate, then ffn_up
  // Adapters applied at run time, as extra matmuls (blocks.h: project); none are fused at
  // load in a layer that has any.
  std::vector<LoraDelta> lora;
};

struct ModelWeights {
  Tensor* token_embd = nullptr;        // [n_embd, n_vocab]
  Tensor* token_embd_norm = nullptr;   // [n_embd] (BLOOM: a norm of the embeddings)
  Tensor* token_embd_norm_b = nullptr; // [n_embd]
  Tensor* position_embd = nullptr;     // [n_embd, n_ctx_train]: learned absolute positions
  Tensor* token_types = nullptr;       // [n_embd, n_token_types]: token type embeddings (BERT)
  Tensor* rope_freqs = nullptr;        // [n_rot / 2]: divisors of the RoPE frequencies
  Tensor* rope_factors_long = nullptr;  // [n_rot / 2]: LongRoPE's divisors past n_ctx_orig
  Tensor* rope_factors_short = nullptr; // [n_rot / 2]: up to it
  Tensor* output_norm = nullptr;       // [n_embd]
  Tensor* output_norm_b = nullptr;     // [n_embd]
  Tensor* output = nullptr;            // [n_embd, n_vocab]; null when tied to token_embd
  Tensor* cls = nullptr;               // [n_embd, n_embd]: a reranker's head (BlockVariant::rank_head)
  Tensor* cls_b = nullptr;             // [n_embd]
  Tensor* cls_out = nullptr;           // [n_embd, 1]: its score projection (rank_out)
  Tensor* cls_out_b = nullptr;         // [1]
  std::vector<LayerWeights> layers;
  /// The block variant this model's file chose (no Either left): what the blocks build.
  BlockVariant variant;
};

/// Calls fn on every tensor of a layer (fused projections and adapter tensors too),
/// null fields skipped.
void for_each_tensor(const LayerWeights& l, const std::function<void(Tensor*)>& fn);

using ShapeFn = Shape (*)(const HParams& h);

/// One entry of an architecture's tensor list. Exactly one of `model_field` and
/// `layer_field` is set; a layer entry's name has "{}" where the layer index goes.
struct WeightSpec {
  const char* name;
  Tensor* ModelWeights::*model_field = nullptr;
  Tensor* LayerWeights::*layer_field = nullptr;
  ShapeFn shape;
  bool required = true;
  /// A product's weight that may have one row (so one dim): any matrix type, where other
  /// one-dim weights (norms, biases) must be F32.
  bool matrix = false;
};

/// Helpers that read like a table: global("output.weight", &ModelWeights::output, ...).
constexpr WeightSpec global(const char* name, Tensor* ModelWeights::*field, ShapeFn shape,
                            bool required = true, bool matrix = false) {
  return WeightSpec{name, field, nullptr, shape, required, matrix};
}
constexpr WeightSpec per_layer(const char* name, Tensor* LayerWeights::*field, ShapeFn shape,
                               bool required = true, bool matrix = false) {
  return WeightSpec{name, nullptr, field, shape, required, matrix};
}

/// The GGUF name of a spec for layer `il` ("blk.{}.attn_q.weight" -> "blk.3.attn_q.weight").
std::string weight_name(const WeightSpec& spec, int64_t il);

/// Calls fn(spec, name, layer) for every tensor the list declares, layer entries once per layer
/// (layer = -1 for global entries).
void for_each_weight(std::span<const WeightSpec> specs, const HParams& h,
                     const std::function<void(const WeightSpec&, const std::string&, int64_t)>& fn);

struct Arch;

/// Decides the block variant `file` chose (decide_variant), then creates a tensor in
/// `arena` for each tensor of that variant, pointing at the file's data. Checks every
/// shape against the list; refuses a missing tensor, one the decided variant does not
/// use, and one the architecture does not declare, each by name.
Result<ModelWeights> load_weights(const gguf::File& file, const Arch& arch, const HParams& h,
                                  TensorArena& arena);

}  // namespace tessera
