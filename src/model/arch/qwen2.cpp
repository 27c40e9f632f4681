// Qwen2: the LLaMA layout (pre-RMSNorm blocks, grouped-query attention, SwiGLU) with
// biases on the q, k and v projections (none on the output projection), NeoX RoPE,
// and an output usually tied to the token embedding (Qwen2-0.5B, 1.5B).
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
    // Absent when the output projection is tied to the token embedding.
    global("output.weight", &MW::output, shapes::vocab, false),
    per_layer("blk.{}.attn_q.bias", &LW::bq, shapes::q_bias),
    per_layer("blk.{}.attn_k.bias", &LW::bk, shapes::kv_bias),
    per_layer("blk.{}.attn_v.bias", &LW::bv, shapes::kv_bias),
}, kLlamaLayer);

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Rms,
    .qkv = QkvLayout::Separate,
    .qkv_bias = Presence::Yes,
    .out_bias = Presence::No,
    .ffn = FfnKind::Gated,
    .act = Activation::Silu,  // SwiGLU
    .residual = Residual::Sequential,
    .positions = kRopePositions,
    .rope_mode = RopeMode::NeoX,
    .output = Presence::Either,  // absent: tied to token_embd
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File&, HParams& h) {
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::NeoX;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  return decoder_stack(g, h, w, in, x);
}

}  // namespace

extern const Arch kQwen2Arch{"qwen2", kVariant, kWeights, build, configure};

}  // namespace tessera
