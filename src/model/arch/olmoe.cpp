// OLMoE: LLaMA-shaped pre-RMSNorm layers whose q and k are each RMS-normed over the whole
// projected vector (all heads together, before RoPE), NeoX RoPE, and a mixture-of-experts
// feed-forward in every layer: softmax routing, the chosen probabilities unnormalised and
// unscaled, no shared experts (build_olmoe).
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
    per_layer("blk.{}.attn_q_norm.weight", &LW::attn_q_norm, shapes::q_bias),
    per_layer("blk.{}.attn_k_norm.weight", &LW::attn_k_norm, shapes::kv_bias),
}, kLlamaAttnLayer, kMoeLayer);

constexpr BlockVariant kVariant{
    .norm = NormKind::Rms,
    .qkv = QkvLayout::Separate,
    .qk_norm_whole = true,
    .ffn = FfnKind::Gated,
    .act = Activation::Silu,
    .residual = Residual::Sequential,
    .positions = kRopePositions,
    .rope_mode = RopeMode::NeoX,
    .output = Presence::Either,
    .moe = Presence::Yes,
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File&, HParams& h) {
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::NeoX;
  h.expert_gating = ExpertGating::Softmax;
  h.expert_weights_norm = false;
  h.expert_weights_scale = 0.0f;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  return decoder_stack(g, h, w, in, input_embeddings(g, w, in));
}

}  // namespace

extern const Arch kOlmoeArch{"olmoe", kVariant, kWeights, build, configure};

}  // namespace tessera
