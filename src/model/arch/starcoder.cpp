// StarCoder (GPT-BigCode): GPT-2 with multi-query attention: learned absolute positions,
// pre-LayerNorm blocks (with biases), a fused QKV projection with bias (one K/V head), and
// a GELU feed-forward with biases. The output projection may be tied to the embedding.
#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_lists.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using MW = ModelWeights;

constexpr auto kWeights = join_weights(std::array{
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("position_embd.weight", &MW::position_embd, shapes::positions),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output_norm.bias", &MW::output_norm_b, shapes::embd),
    // Absent when the output projection is tied to the token embedding.
    global("output.weight", &MW::output, shapes::vocab, false),
}, kGptLayer);

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Layer,
    .norm_bias = Presence::Yes,
    .qkv = QkvLayout::Fused,
    .qkv_bias = Presence::Yes,
    .out_bias = Presence::Yes,
    .ffn = FfnKind::Plain,
    .act = Activation::Gelu,
    .up_bias = Presence::Yes,
    .down_bias = Presence::Yes,
    .residual = Residual::Sequential,
    .positions = kLearnedPositions,
    .output = Presence::Either,  // absent: tied to token_embd
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File&, HParams& h) {
  h.positions = PositionKind::Learned;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  return decoder_stack(g, h, w, in, x);
}

}  // namespace

extern const Arch kStarcoderArch{"starcoder", kVariant, kWeights, build, configure};

}  // namespace tessera
