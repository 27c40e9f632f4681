// BLOOM: GPT-2-style blocks (pre-LayerNorm with biases, a fused QKV projection with bias, a
// GELU feed-forward with biases) with ALiBi positions instead of learned ones, and an extra
// LayerNorm (token_embd_norm) on the token embeddings.
#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_lists.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using MW = ModelWeights;

constexpr auto kWeights = join_weights(std::array{
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("token_embd_norm.weight", &MW::token_embd_norm, shapes::embd),
    global("token_embd_norm.bias", &MW::token_embd_norm_b, shapes::embd),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output_norm.bias", &MW::output_norm_b, shapes::embd),
    // Absent when the output projection is tied to the token embedding (as the reference allows).
    global("output.weight", &MW::output, shapes::vocab, false),
}, kGptLayer);

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Layer,
    .norm_bias = Presence::Yes,
    .embd_norm = true,
    .qkv = QkvLayout::Fused,
    .qkv_bias = Presence::Yes,
    .out_bias = Presence::Yes,
    .ffn = FfnKind::Plain,
    .act = Activation::Gelu,
    .up_bias = Presence::Yes,
    .down_bias = Presence::Yes,
    .residual = Residual::Sequential,
    .positions = kAlibiPositions,
    .output = Presence::Either,  // absent: tied to token_embd
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File& file, HParams& h) {
  h.positions = PositionKind::Alibi;
  // BLOOM files carry no max_alibi_bias key: the reference hard-codes 8 (BLOOM's own value).
  if (file.find(h.arch + ".attention.max_alibi_bias") == nullptr) h.alibi_max_bias = 8.0f;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  x = layer_norm_block(g, x, w.token_embd_norm, w.token_embd_norm_b, h.norm_eps);
  return decoder_stack(g, h, w, in, x);
}

}  // namespace

extern const Arch kBloomArch{"bloom", kVariant, kWeights, build, configure};

}  // namespace tessera
