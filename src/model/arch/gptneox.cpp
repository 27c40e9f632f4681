// GPT-NeoX (Pythia and kin): pre-LayerNorm blocks (with biases), a fused QKV projection
// with bias, NeoX RoPE on the first rope.dimension_count dims of each head, and a GELU
// feed-forward with biases; use_parallel_residual adds attention and FFN side by side.
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
    global("output_norm.bias", &MW::output_norm_b, shapes::embd),
    global("output.weight", &MW::output, shapes::vocab),
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
    .residual = Residual::ByKey,  // use_parallel_residual
    .positions = kRopePositions,
    .rope_mode = RopeMode::NeoX,
    .output = Presence::Yes,
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File&, HParams& h) {
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::NeoX;  // rotary_pct < 1: only the first n_rot dims rotate
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  return decoder_stack(g, h, w, in, x);
}

}  // namespace

extern const Arch kGptneoxArch{"gptneox", kVariant, kWeights, build, configure};

}  // namespace tessera
