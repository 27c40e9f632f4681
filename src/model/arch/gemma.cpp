// Gemma: pre-RMSNorm blocks (the stored norm weights already include Gemma's "1 +"),
// embeddings scaled by sqrt(n_embd), attention heads of attention.key_length dims
// (n_head * head_dim need not be n_embd), NeoX RoPE, a GeGLU feed-forward, and an output
// always tied to the token embedding.
#include <cmath>
#include <string>

#include "core/ops.h"
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
}, kLlamaLayer);

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Rms,
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

Status configure(const gguf::File&, HParams& h) {
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::NeoX;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  // The reference scales the embeddings (not the tied output) by sqrt(n_embd).
  Tensor* x = ops::scale(g, input_embeddings(g, w, in), std::sqrt(float(h.n_embd)));
  // GeGLU; attention_block scales q k by 1/sqrt(head_dim), as Gemma does.
  return decoder_stack(g, h, w, in, x);
}

}  // namespace

extern const Arch kGemmaArch{"gemma", kVariant, kWeights, build, configure};

}  // namespace tessera
