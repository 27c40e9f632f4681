// DeepSeek-V2 (and V2-Lite): multi-head latent attention (variant.h: mla) with YaRN RoPE
// in normal mode on each head's rope part, and a mixture-of-experts feed-forward after
// leading_dense_block_count dense SwiGLU layers: softmax or sigmoid routing as
// expert_gating_func says, the chosen weights normalised as expert_weights_norm says and
// always scaled by expert_weights_scale, plus ungated shared experts (build_deepseek2).
#include <cmath>

#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_lists.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using LW = LayerWeights;
using MW = ModelWeights;

/// [n_embd, n_lora_q], [n_lora_q] and [n_lora_q, n_embd_q]: the low-rank q.
Shape q_a(const HParams& h) { return {h.n_embd, h.n_lora_q, 1, 1}; }
Shape q_a_norm(const HParams& h) { return {h.n_lora_q, 1, 1, 1}; }
Shape q_b(const HParams& h) { return {h.n_lora_q, h.n_embd_q(), 1, 1}; }
/// [n_embd, n_lora_kv + n_rot]: the latent c and the shared k_pe of each token.
Shape kv_a_mqa(const HParams& h) { return {h.n_embd, h.n_lora_kv + h.n_rot, 1, 1}; }
Shape kv_a_norm(const HParams& h) { return {h.n_lora_kv, 1, 1, 1}; }
/// [n_lora_kv, n_head (head_dim - n_rot + head_dim_v)]: each head's k_nope and v.
Shape kv_b(const HParams& h) { return {h.n_lora_kv, h.n_head * (h.head_dim - h.n_rot + h.head_dim_v), 1, 1}; }
/// [n_head head_dim_v, n_embd]: attn_output.
Shape attn_out(const HParams& h) { return {h.n_head * h.head_dim_v, h.n_embd, 1, 1}; }

constexpr auto kWeights = join_weights(std::array{
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output.weight", &MW::output, shapes::vocab),
    per_layer("blk.{}.attn_norm.weight", &LW::attn_norm, shapes::embd),
    per_layer("blk.{}.attn_q.weight", &LW::wq, shapes::q, false),
    per_layer("blk.{}.attn_q_a.weight", &LW::wq_a, q_a, false),
    per_layer("blk.{}.attn_q_a_norm.weight", &LW::attn_q_a_norm, q_a_norm, false),
    per_layer("blk.{}.attn_q_b.weight", &LW::wq_b, q_b, false),
    per_layer("blk.{}.attn_kv_a_mqa.weight", &LW::wkv_a_mqa, kv_a_mqa),
    per_layer("blk.{}.attn_kv_a_norm.weight", &LW::attn_kv_a_norm, kv_a_norm),
    per_layer("blk.{}.attn_kv_b.weight", &LW::wkv_b, kv_b),
    per_layer("blk.{}.attn_output.weight", &LW::wo, attn_out),
    per_layer("blk.{}.ffn_norm.weight", &LW::ffn_norm, shapes::embd),
}, kGatedFfnLayer, kMoeLayer, kSharedExpertsLayer);

constexpr BlockVariant kVariant{
    .norm = NormKind::Rms,
    .qkv = QkvLayout::Separate,
    .mla = true,
    .q_lora = Presence::Either,  // V2-Lite: attn_q; V2: attn_q_a, attn_q_a_norm, attn_q_b
    .ffn = FfnKind::Gated,
    .act = Activation::Silu,
    .residual = Residual::Sequential,
    .positions = kRopePositions,
    .rope_mode = RopeMode::Normal,
    .output = Presence::Yes,
    .moe = Presence::Yes,
    .shared_experts = SharedExperts::Ungated,
    .leading_dense = true,
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

/// The keys the reference requires of a deepseek2 file (load_hparams).
Status check_keys(const gguf::File& f, const HParams& h) {
  for (const char* key : {"leading_dense_block_count", "expert_shared_count", "expert_weights_scale",
                          "attention.kv_lora_rank", "rope.scaling.yarn_log_multiplier"}) {
    if (f.find(h.arch + "." + key) == nullptr) {
      return Status::error("model: a " + h.arch + " file needs key '" + h.arch + "." + key + "'");
    }
  }
  if (h.n_head_kv != h.n_head) {
    return Status::error("model: " + h.arch + " head_count_kv " + std::to_string(h.n_head_kv) +
                         " differs from head_count " + std::to_string(h.n_head) +
                         " (multi-head latent attention expands keys and values for every head)");
  }
  return Status::ok();
}

Status configure(const gguf::File& f, HParams& h) {
  TESSERA_RETURN_IF_ERROR(check_keys(f, h));
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::Normal;
  return Status::ok();
}

// The scores are scaled by mscale^2 / sqrt(key_length), and the rope's magnitude is
// divided by YaRN's own 1 + 0.1 ln(1 / freq_scale), which the rope op multiplies in: from
// the context's frequency scale and attention factor (a context may set its own), so at
// build time rather than at load.
Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  HParams scaled = h;
  const float log_scale = std::log(1.0f / h.rope_freq_scale);
  const float mscale = h.yarn_attn_factor * h.rope_attn_factor * (1.0f + h.rope_yarn_log_mul * log_scale);
  scaled.attn_scale = mscale * mscale / std::sqrt(float(h.head_dim));
  scaled.rope_attn_factor = 1.0f / (1.0f + 0.1f * log_scale);
  scaled.yarn_attn_factor = 1.0f;
  return decoder_stack(g, scaled, w, in, input_embeddings(g, w, in));
}

}  // namespace

extern const Arch kDeepseek2Arch{"deepseek2", kVariant, kWeights, build, configure};

}  // namespace tessera
