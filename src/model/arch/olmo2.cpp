// OLMo 2: no pre-norms; q and k each RMS-normed over the whole projected vector (all heads
// together, before RoPE), NeoX RoPE, and RMSNorm after the attention and after the SwiGLU
// feed-forward, before each joins the residual (build_olmo2):
// h = x + post_attention_norm(attn(x)), out = h + post_ffw_norm(ffn(h)).
#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_lists.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using LW = LayerWeights;
using MW = ModelWeights;

constexpr auto kWeights = join_weights(std::array{
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output.weight", &MW::output, shapes::vocab, false),
    per_layer("blk.{}.attn_q.weight", &LW::wq, shapes::q),
    per_layer("blk.{}.attn_k.weight", &LW::wk, shapes::kv),
    per_layer("blk.{}.attn_v.weight", &LW::wv, shapes::kv),
    per_layer("blk.{}.attn_output.weight", &LW::wo, shapes::attn_out),
    per_layer("blk.{}.attn_q_norm.weight", &LW::attn_q_norm, shapes::q_bias),
    per_layer("blk.{}.attn_k_norm.weight", &LW::attn_k_norm, shapes::kv_bias),
    per_layer("blk.{}.post_attention_norm.weight", &LW::post_attn_norm, shapes::embd),
    per_layer("blk.{}.post_ffw_norm.weight", &LW::post_ffn_norm, shapes::embd),
}, kGatedFfnLayer);

constexpr BlockVariant kVariant{
    .norm = NormKind::Rms,
    .pre_norm = false,
    .post_norms = true,
    .qkv = QkvLayout::Separate,
    .qk_norm_whole = true,
    .ffn = FfnKind::Gated,
    .act = Activation::Silu,
    .residual = Residual::Sequential,
    .positions = kRopePositions,
    .rope_mode = RopeMode::NeoX,
    .output = Presence::Either,
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File&, HParams& h) {
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::NeoX;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  return decoder_stack(g, h, w, in, input_embeddings(g, w, in));
}

}  // namespace

extern const Arch kOlmo2Arch{"olmo2", kVariant, kWeights, build, configure};

}  // namespace tessera
