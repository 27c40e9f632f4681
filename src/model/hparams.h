// Hyper-parameters of a model, read from the `<arch>.*` keys of a GGUF file.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "core/op.h"
#include "tessera/gguf.h"
#include "tessera/status.h"

namespace tessera {

/// How a model's tokens know their positions (set by the architecture: Arch::configure).
enum class PositionKind : uint8_t {
  Rope,     // rotary embeddings of q and k: a cache shift rotates the stored keys
  Alibi,    // a per-head linear bias on distances (the mask): a shift only moves cells
  Learned,  // an absolute position embedding added to the input: no shift, and no
            // position at or past n_ctx_train
};

/// RoPE scaling, <arch>.rope.scaling.type (absent: linear, as the reference reads it).
enum class RopeScaling : uint8_t {
  None,      // no frequency scaling, whatever rope.scaling.factor says
  Linear,    // frequencies times 1 / rope.scaling.factor
  Yarn,      // YaRN: the linear frequencies ramped into the unscaled ones (RopeYarn)
  LongRope,  // as linear; the LongRoPE factor tensors do the rest (Phi-3)
};

/// How a mixture-of-experts router turns its logits into expert probabilities.
enum class ExpertGating : uint8_t { Softmax, Sigmoid };

struct HParams {
  std::string arch;        // general.architecture
  int64_t n_vocab = 0;     // tokenizer.ggml.tokens length (or <arch>.vocab_size)
  int64_t n_ctx_train = 0; // <arch>.context_length
  int64_t n_embd = 0;      // <arch>.embedding_length
  int64_t n_layer = 0;     // <arch>.block_count
  int64_t n_ff = 0;        // <arch>.feed_forward_length
  int64_t n_head = 0;      // <arch>.attention.head_count
  int64_t n_head_kv = 0;   // <arch>.attention.head_count_kv (default n_head)
  int64_t head_dim = 0;    // <arch>.attention.key_length (default n_embd / n_head)
  int64_t head_dim_v = 0;  // <arch>.attention.value_length (default head_dim; another size
                           // only where the variant allows it: DeepSeek's MLA)
  int64_t n_rot = 0;       // <arch>.rope.dimension_count (default head_dim)
  float rms_eps = 1e-5f;   // <arch>.attention.layer_norm_rms_epsilon
  float norm_eps = 1e-5f;  // <arch>.attention.layer_norm_epsilon
  float rope_freq_base = 10000.0f;  // <arch>.rope.freq_base
  float rope_freq_scale = 1.0f;     // 1 / <arch>.rope.scaling.factor (1 when the type is none)
  float rope_freq_scale_train = 1.0f;  // 1 / <arch>.rope.scaling.factor, whatever the type: what
                                       // another scaling type chosen for a context scales by
  RopeScaling rope_scaling = RopeScaling::Linear;  // <arch>.rope.scaling.type
  int64_t n_ctx_orig = 0;           // <arch>.rope.scaling.original_context_length (default
                                    // n_ctx_train): YaRN's ramp; LongRoPE's long/short choice
  float rope_attn_factor = 1.0f;    // <arch>.rope.scaling.attn_factor: multiplies cos and sin
  float rope_yarn_log_mul = 0.0f;   // <arch>.rope.scaling.yarn_log_multiplier (DeepSeek's mscale)
  // A context's YaRN settings (RopeScalingParams, apply_rope_scaling); the defaults are the
  // reference's, which leave the file's rope as it is.
  float yarn_ext_factor = -1.0f;    // negative: 1 for YaRN, else 0
  float yarn_attn_factor = 1.0f;    // times rope_attn_factor
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  int64_t yarn_orig_ctx = 0;        // YaRN's ramp over this context (0: n_ctx_orig); LongRoPE
                                    // still chooses by n_ctx_orig, as the reference does
  float alibi_max_bias = 0.0f;      // <arch>.attention.max_alibi_bias
  float clamp_kqv = 0.0f;           // <arch>.attention.clamp_kqv (0: none)
  int64_t n_swa = 0;                // <arch>.attention.sliding_window (0: none)
  float attn_softcap = 0.0f;        // <arch>.attn_logit_softcapping (0: none): cap tanh(s / cap)
  float final_softcap = 0.0f;       // <arch>.final_logit_softcapping (0: none), on the logits
  float embd_scale = 1.0f;          // <arch>.embedding_scale: multiplies the token embeddings
  float residual_scale = 1.0f;      // <arch>.residual_scale: multiplies attn and ffn outputs
  float attn_scale = 0.0f;          // <arch>.attention.scale: the q.k scale (0: 1/sqrt(head_dim))
  float logit_scale = 1.0f;         // <arch>.logit_scale: multiplies the logits (configure may
                                    // invert it: granite divides by the key's value)
  bool parallel_residual = false;   // <arch>.use_parallel_residual
  // Multi-head latent attention (variant.h: mla; DeepSeek-V2): the ranks of the low-rank
  // projections.
  int64_t n_lora_q = 0;   // <arch>.attention.q_lora_rank (0: absent, q is attn_q x)
  int64_t n_lora_kv = 0;  // <arch>.attention.kv_lora_rank
  // Mixture of experts (variant.h: moe). Keys where the file has them; an architecture
  // whose reference fixes the routing sets it in Arch::configure.
  int64_t n_expert = 0;            // <arch>.expert_count
  int64_t n_expert_used = 0;       // <arch>.expert_used_count
  int64_t n_ff_exp = 0;            // <arch>.expert_feed_forward_length (default n_ff; Qwen2-MoE:
                                   // n_ff / n_expert_used, its configure says)
  int64_t n_expert_shared = 0;     // <arch>.expert_shared_count
  int64_t n_ff_shexp = 0;          // <arch>.expert_shared_feed_forward_length (default
                                   // n_expert_shared * n_ff_exp, or n_ff without that key)
  int64_t n_layer_dense_lead = 0;  // <arch>.leading_dense_block_count
  ExpertGating expert_gating = ExpertGating::Softmax;  // <arch>.expert_gating_func (1 softmax, 2 sigmoid)
  bool expert_weights_norm = false;   // <arch>.expert_weights_norm: the chosen weights divided by their sum
  float expert_weights_scale = 0.0f;  // <arch>.expert_weights_scale (0: not scaled)
  bool causal = true;               // <arch>.attention.causal: false, every token of a
                                    // sequence attends to all its cells (encoders)
  int64_t pooling_type = -1;        // <arch>.pooling_type: 0 none, 1 mean, 2 cls, 3 last,
                                    // 4 rank; -1 absent
  int64_t n_token_types = 0;        // tokenizer.ggml.token_type_count (BERT's token_types rows)
  // Set by the architecture (Arch::configure), not read from keys of their own:
  PositionKind positions = PositionKind::Rope;
  RopeMode rope_mode = RopeMode::Normal;
  /// Layer il attends within the sliding window (n_swa) when il % swa_period == 0; the
  /// others see every earlier position (Gemma 2: 2). 1: every layer.
  int64_t swa_period = 1;

  /// Whether attention adds ALiBi's per-head distance bias.
  bool alibi() const { return positions == PositionKind::Alibi && alibi_max_bias > 0; }
  int64_t n_embd_q() const { return head_dim * n_head; }
  /// Whether some layers use the window and others not: the runtime then builds both masks.
  bool mixed_swa() const { return n_swa > 0 && swa_period > 1 && n_layer > 1; }
  /// Whether layer il attends within the window.
  bool layer_swa(int64_t il) const { return n_swa > 0 && il % swa_period == 0; }
  /// The q.k scale of attention.
  float kq_scale() const { return attn_scale > 0 ? attn_scale : 1.0f / std::sqrt(float(head_dim)); }
  /// The rope's YaRN parameters, as the reference's context sets them: the ramp (by
  /// default ext_factor 1 for YaRN, else none) between beta_fast and beta_slow over the
  /// original context, and yarn_attn_factor x rope.scaling.attn_factor on the magnitude.
  RopeYarn rope_yarn() const {
    const float ext = yarn_ext_factor < 0.0f ? (rope_scaling == RopeScaling::Yarn ? 1.0f : 0.0f) : yarn_ext_factor;
    return {ext, yarn_attn_factor * rope_attn_factor, yarn_beta_fast, yarn_beta_slow,
            int32_t(yarn_orig_ctx > 0 ? yarn_orig_ctx : n_ctx_orig)};
  }
  int64_t n_embd_kv() const { return head_dim * n_head_kv; }
  /// A cache row of values (n_embd_kv but where values have their own head size).
  int64_t n_embd_v() const { return head_dim_v * n_head_kv; }
};

/// Reads and checks the hyper-parameters; errors name the key and the bad value.
Result<HParams> read_hparams(const gguf::File& file);

}  // namespace tessera
