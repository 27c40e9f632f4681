// Gemma 2: Gemma's layer (RMSNorm, heads of attention.key_length dims, NeoX RoPE, GeGLU,
// embeddings times sqrt(n_embd), an output tied to token_embd) with post-norms of the
// attention and FFN outputs (post_attention_norm, post_ffw_norm), attention scores and final
// logits soft-capped (cap tanh(x / cap)), and a sliding window on the even layers only.
#include <cmath>
#include <string>

#include "core/ops.h"
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
    per_layer("blk.{}.post_attention_norm.weight", &LW::post_attn_norm, shapes::embd),
    per_layer("blk.{}.post_ffw_norm.weight", &LW::post_ffn_norm, shapes::embd),
}, kLlamaLayer);

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Rms,
    .post_norms = true,
    .qkv = QkvLayout::Separate,
    .ffn = FfnKind::Gated,
    .act = Activation::Gelu,  // GeGLU
    .residual = Residual::Sequential,
    .positions = kRopePositions,
    .rope_mode = RopeMode::NeoX,
    .output = Presence::No,  // always tied to token_embd
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File& file, HParams& h) {
  // The reference knows Gemma 2 by its layer count, which picks the query scaling: 2B (26
  // layers) and 9B (42) scale q by 1/sqrt(key_length) (the default), 27B (46) by
  // 1/sqrt(n_embd / n_head). It aborts on other counts; tessera gives them the 2B/9B
  // scaling, so that smaller files (tessera synth, pruned models) run.
  if (h.n_layer == 46) h.attn_scale = 1.0f / std::sqrt(float(h.n_embd / h.n_head));
  // The reference's defaults where the keys are absent.
  const std::string p = h.arch + ".";
  if (file.find(p + "attn_logit_softcapping") == nullptr) h.attn_softcap = 50.0f;
  if (file.find(p + "final_logit_softcapping") == nullptr) h.final_softcap = 30.0f;
  if (file.find(p + "attention.sliding_window") == nullptr) h.n_swa = 4096;
  h.swa_period = 2;  // layers 0, 2, 4, ... attend within the window
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::NeoX;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  // The reference scales the embeddings (not the tied output) by sqrt(n_embd).
  Tensor* x = ops::scale(g, input_embeddings(g, w, in), std::sqrt(float(h.n_embd)));
  return decoder_stack(g, h, w, in, x);  // softcaps, post-norms, windows: from h and w.variant
}

}  // namespace

extern const Arch kGemma2Arch{"gemma2", kVariant, kWeights, build, configure};

}  // namespace tessera
