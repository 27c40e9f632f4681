// Granite (IBM): LLaMA's layer and layout with four multipliers from its keys: the token
// embeddings times embedding_scale, attention.scale as the q.k scale (instead of
// 1/sqrt(head_dim)), the attention and FFN outputs times residual_scale before each
// residual add, and the logits divided by logit_scale.
#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_lists.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using MW = ModelWeights;

constexpr auto kWeights = join_weights(std::array{
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    // Absent when the output projection is tied to the token embedding.
    global("output.weight", &MW::output, shapes::vocab, false),
}, kLlamaLayer);

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Rms,
    .qkv = QkvLayout::Separate,
    .ffn = FfnKind::Gated,
    .act = Activation::Silu,  // SwiGLU
    .residual = Residual::Sequential,
    .positions = kRopePositions,
    .rope_mode = RopeMode::Normal,
    .output = Presence::Either,  // absent: tied to token_embd
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File&, HParams& h) {
  // read_hparams reads the multipliers; Granite divides the logits by logit_scale
  // (Command-R multiplies by it).
  h.logit_scale = 1.0f / h.logit_scale;
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::Normal;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = scaled_embeddings(g, h, w, in);  // [n_embd, n_tokens], times embedding_scale
  return decoder_stack(g, h, w, in, x);         // attention.scale, residual_scale, logit_scale: from h
}

}  // namespace

extern const Arch kGraniteArch{"granite", kVariant, kWeights, build, configure};

}  // namespace tessera
