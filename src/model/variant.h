// The block variant of an architecture: what its layers compute, stated as data.
//
// Each architecture declares one constexpr BlockVariant (norm, attention layout, biases,
// feed-forward, residual, positions, output). Where files of one architecture differ
// (a tied output, Falcon-40B's second norm, MPT's optional biases, a key choosing the
// residual), the variant says Either; the loader decides each Either once per file
// (variant_check.h: decide_variant) and stores the decided variant in ModelWeights. The
// blocks build from the decided variant, never from which weight pointers are set.
#pragma once

#include <cstdint>

#include "core/op.h"
#include "model/hparams.h"

namespace tessera {

/// A layer's normalisation: RMSNorm (eps HParams::rms_eps) or LayerNorm (norm_eps).
enum class NormKind : uint8_t { Rms, Layer };

/// The feed-forward activations.
enum class Activation : uint8_t {
  Silu,     // SwiGLU when gated
  Gelu,     // tanh GELU; GeGLU when gated
  ReluSqr,  // max(x, 0)^2
};

/// Whether a part is there: never, always, or as the file chose (decided once, at load).
enum class Presence : uint8_t { No, Yes, Either };

/// How the file stores the q, k and v projections.
enum class QkvLayout : uint8_t {
  Separate,      // attn_q, attn_k, attn_v
  Fused,         // one attn_qkv, rows [Q | K | V]
  FusedPerHead,  // one attn_qkv, rows [q | k | v] of head 0, then head 1, ... (Persimmon)
};

/// The feed-forward network.
enum class FfnKind : uint8_t {
  Plain,       // down(act(up x + b_up))
  Gated,       // down(act(gate x) * up x): ffn_gate and ffn_up
  GatedFused,  // as Gated, the gate's rows then the up's in one ffn_up matrix (Phi-3)
};

/// Shared experts of a mixture-of-experts feed-forward, run for every token beside the
/// routed ones (ffn_{gate,up,down}_shexp, SwiGLU).
enum class SharedExperts : uint8_t {
  None,
  Gated,    // scaled by sigmoid(ffn_gate_inp_shexp x), one scalar per token (Qwen2-MoE)
  Ungated,  // added as they are (DeepSeek)
};

/// How attention and feed-forward join the residual stream.
enum class Residual : uint8_t {
  Sequential,  // x += attn(norm1 x); x += ffn(norm2 x)
  Parallel,    // x += attn(norm1 x) + ffn(norm2 x)
  ByKey,       // <arch>.use_parallel_residual chooses (GPT-NeoX)
};

/// Sets of PositionKind, for the positions an architecture allows (configure picks one).
constexpr uint8_t position_bit(PositionKind k) { return uint8_t(1u << unsigned(k)); }
inline constexpr uint8_t kRopePositions = position_bit(PositionKind::Rope);
inline constexpr uint8_t kAlibiPositions = position_bit(PositionKind::Alibi);
inline constexpr uint8_t kLearnedPositions = position_bit(PositionKind::Learned);

struct BlockVariant {
  NormKind norm = NormKind::Rms;
  /// Biases of every norm (attn_norm, ffn_norm, output_norm, attn_norm_2, the q/k and
  /// embedding norms).
  Presence norm_bias = Presence::No;
  /// attn_norm_2: the attention's own norm in a parallel block, the FFN keeping
  /// attn_norm (Falcon-40B). Needs a parallel residual and no ffn_norm.
  Presence second_norm = Presence::No;
  /// ffn_norm; false: the FFN reads the attention's normed input (Falcon).
  bool ffn_norm = true;
  /// attn_norm (and ffn_norm) before the attention (and the FFN); false: no pre-norms,
  /// both read the residual stream itself (OLMo2).
  bool pre_norm = true;
  /// post_attention_norm, post_ffw_norm: norms of the attention's and the FFN's outputs
  /// before each joins the residual (Gemma 2, OLMo2).
  bool post_norms = false;
  /// token_embd_norm: a norm of the token embeddings (BLOOM).
  bool embd_norm = false;
  QkvLayout qkv = QkvLayout::Separate;
  /// attn_q/k/v.bias, or attn_qkv.bias when fused.
  Presence qkv_bias = Presence::No;
  /// attn_q_norm, attn_k_norm: a norm of every head's q and k (Persimmon).
  bool qk_norm = false;
  /// attn_q_norm [n_embd_q], attn_k_norm [n_embd_kv]: a norm of the whole projected q (k),
  /// all heads together, before the split into heads and RoPE (OLMo2, OLMoE).
  bool qk_norm_whole = false;
  /// Multi-head latent attention (DeepSeek-V2) in place of attn_k / attn_v: one latent
  /// row per token, attn_kv_a_mqa x = [c | k_pe], c RMS-normed (attn_kv_a_norm) and
  /// expanded by attn_kv_b into each head's k_nope and v (values of head size
  /// value_length); k_pe (rope.dimension_count dims, RoPE'd) is shared by all heads, and
  /// each head's q is [q_nope | q_pe]. The cache holds the expanded keys and values.
  bool mla = false;
  /// q through the low-rank attn_q_b(norm(attn_q_a x)) (attn_q_a_norm) instead of attn_q
  /// (MLA only; DeepSeek-V2-Lite has attn_q).
  Presence q_lora = Presence::No;
  /// attn_output.bias.
  Presence out_bias = Presence::No;
  FfnKind ffn = FfnKind::Gated;
  Activation act = Activation::Silu;
  /// ffn_up.bias: a plain FFN only (a gated one has nowhere to add it).
  Presence up_bias = Presence::No;
  /// ffn_down.bias.
  Presence down_bias = Presence::No;
  Residual residual = Residual::Sequential;
  /// The PositionKinds allowed (kRopePositions | ...); decided: the one configure chose.
  /// Learned positions read position_embd and exclude the others.
  uint8_t positions = kRopePositions;
  /// The rotation, when the positions are RoPE.
  RopeMode rope_mode = RopeMode::Normal;
  /// rope_freqs.weight: divisors of the RoPE frequencies (Llama 3.1+).
  Presence rope_freqs = Presence::No;
  /// rope_factors_long.weight, rope_factors_short.weight: LongRoPE's divisors, the long
  /// ones when the context's cells per sequence exceed rope.scaling.original_context_length
  /// (Phi-3 128k).
  Presence long_rope = Presence::No;
  /// output.weight; No: the output is tied to token_embd.
  Presence output = Presence::Yes;
  /// A mixture-of-experts feed-forward in place of the dense one: the F32 router
  /// ffn_gate_inp and the experts ffn_{gate,up,down}_exps (SwiGLU), routed as the
  /// hyper-parameters say (HParams: expert counts, gating, weight norm and scale).
  /// Either: the file decides (Mixtral files are llama's).
  Presence moe = Presence::No;
  /// The shared experts beside the routed ones.
  SharedExperts shared_experts = SharedExperts::None;
  /// The first <arch>.leading_dense_block_count layers keep the dense feed-forward
  /// (DeepSeek); both kinds of FFN tensors are then declared (variant_check.h:
  /// layer_variant says which a layer has).
  bool leading_dense = false;
  /// token_types.weight: its row 0 (every token is of type 0, "sentence A", as the
  /// reference feeds them) added to the token embeddings (BERT).
  bool token_types = false;
  /// Post-norm layers (BERT): x = norm(x + attn(x)) with attn_output_norm, then
  /// x = norm(x + ffn(x)) with layer_output_norm; no attn_norm or ffn_norm.
  bool post_norm = false;
  /// cls.weight [n_embd, n_embd], cls.bias: a reranker's classification head (BERT with
  /// pooling_type rank): tanh(cls·x + b) of the first token's final state x.
  Presence rank_head = Presence::No;
  /// cls.output.weight [n_embd, 1], cls.output.bias: the head's projection to one score
  /// (absent: the score is the first element of tanh(...), as the reference reads it).
  Presence rank_out = Presence::No;
  /// False: an encoder. The graph ends at the final hidden states of the output tokens
  /// (no output_norm, no output matrix, no logits); the runtime serves embeddings only.
  bool logits = true;

  bool has(Presence BlockVariant::*part) const { return this->*part == Presence::Yes; }
  bool parallel() const { return residual == Residual::Parallel; }
  bool rope() const { return positions == kRopePositions; }
  bool learned_positions() const { return positions == kLearnedPositions; }
};

}  // namespace tessera
