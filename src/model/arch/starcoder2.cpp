// StarCoder2: pre-LayerNorm blocks with biases everywhere (norms, q/k/v, output, the
// plain GELU feed-forward's up and down), grouped-query attention with NeoX RoPE
// (build_starcoder2); the output is untied or tied to token_embd.
#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_lists.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using LW = LayerWeights;
using MW = ModelWeights;

constexpr WeightSpec kWeights[] = {
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output_norm.bias", &MW::output_norm_b, shapes::embd),
    global("output.weight", &MW::output, shapes::vocab, false),
    per_layer("blk.{}.attn_norm.weight", &LW::attn_norm, shapes::embd),
    per_layer("blk.{}.attn_norm.bias", &LW::attn_norm_b, shapes::embd),
    per_layer("blk.{}.attn_q.weight", &LW::wq, shapes::q),
    per_layer("blk.{}.attn_q.bias", &LW::bq, shapes::q_bias),
    per_layer("blk.{}.attn_k.weight", &LW::wk, shapes::kv),
    per_layer("blk.{}.attn_k.bias", &LW::bk, shapes::kv_bias),
    per_layer("blk.{}.attn_v.weight", &LW::wv, shapes::kv),
    per_layer("blk.{}.attn_v.bias", &LW::bv, shapes::kv_bias),
    per_layer("blk.{}.attn_output.weight", &LW::wo, shapes::attn_out),
    per_layer("blk.{}.attn_output.bias", &LW::bo, shapes::embd),
    per_layer("blk.{}.ffn_norm.weight", &LW::ffn_norm, shapes::embd),
    per_layer("blk.{}.ffn_norm.bias", &LW::ffn_norm_b, shapes::embd),
    per_layer("blk.{}.ffn_up.weight", &LW::ffn_up, shapes::up),
    per_layer("blk.{}.ffn_up.bias", &LW::ffn_up_b, shapes::ff),
    per_layer("blk.{}.ffn_down.weight", &LW::ffn_down, shapes::down),
    per_layer("blk.{}.ffn_down.bias", &LW::ffn_down_b, shapes::embd),
};

constexpr BlockVariant kVariant{
    .norm = NormKind::Layer,
    .norm_bias = Presence::Yes,
    .qkv = QkvLayout::Separate,
    .qkv_bias = Presence::Yes,
    .out_bias = Presence::Yes,
    .ffn = FfnKind::Plain,
    .act = Activation::Gelu,
    .up_bias = Presence::Yes,
    .down_bias = Presence::Yes,
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
  return decoder_stack(g, h, w, in, input_embeddings(g, w, in));
}

}  // namespace

extern const Arch kStarcoder2Arch{"starcoder2", kVariant, kWeights, build, configure};

}  // namespace tessera
