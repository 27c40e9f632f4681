// MPT (MosaicML): ALiBi positions (attention.max_alibi_bias), pre-LayerNorm blocks, a fused
// QKV projection (optionally clamped to +-attention.clamp_kqv) and a GELU feed-forward.
// MPT-7B has no biases at all (its norms are weight-only) and ties the output to the embedding.
#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using LW = LayerWeights;
using MW = ModelWeights;

// The biases are optional, as the reference loads them: MPT configs with no_bias = false
// have them; MPT-7B's files have none.
constexpr WeightSpec kWeights[] = {
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output_norm.bias", &MW::output_norm_b, shapes::embd, false),
    // Absent when the output projection is tied to the token embedding (MPT-7B).
    global("output.weight", &MW::output, shapes::vocab, false),
    per_layer("blk.{}.attn_norm.weight", &LW::attn_norm, shapes::embd),
    per_layer("blk.{}.attn_norm.bias", &LW::attn_norm_b, shapes::embd, false),
    per_layer("blk.{}.attn_qkv.weight", &LW::wqkv, shapes::qkv),
    per_layer("blk.{}.attn_qkv.bias", &LW::bqkv, shapes::qkv_bias, false),
    per_layer("blk.{}.attn_output.weight", &LW::wo, shapes::attn_out),
    per_layer("blk.{}.attn_output.bias", &LW::bo, shapes::embd, false),
    per_layer("blk.{}.ffn_norm.weight", &LW::ffn_norm, shapes::embd),
    per_layer("blk.{}.ffn_norm.bias", &LW::ffn_norm_b, shapes::embd, false),
    per_layer("blk.{}.ffn_up.weight", &LW::ffn_up, shapes::up),
    per_layer("blk.{}.ffn_up.bias", &LW::ffn_up_b, shapes::ff, false),
    per_layer("blk.{}.ffn_down.weight", &LW::ffn_down, shapes::down),
    per_layer("blk.{}.ffn_down.bias", &LW::ffn_down_b, shapes::embd, false),
};

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Layer,
    .norm_bias = Presence::Either,  // configs with no_bias = false have the biases
    .qkv = QkvLayout::Fused,
    .qkv_bias = Presence::Either,
    .out_bias = Presence::Either,
    .ffn = FfnKind::Plain,
    .act = Activation::Gelu,
    .up_bias = Presence::Either,
    .down_bias = Presence::Either,
    .residual = Residual::Sequential,
    .positions = kAlibiPositions,
    .output = Presence::Either,  // absent: tied to token_embd (MPT-7B)
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File&, HParams& h) {
  // The bias comes from attention.max_alibi_bias (read with the other keys); without it the
  // reference adds no bias at all, and neither do we.
  h.positions = PositionKind::Alibi;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  return decoder_stack(g, h, w, in, x);
}

}  // namespace

extern const Arch kMptArch{"mpt", kVariant, kWeights, build, configure};

}  // namespace tessera
