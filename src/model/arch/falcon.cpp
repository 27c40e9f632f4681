// Falcon: LayerNorm (with bias), a fused multi-query QKV projection, NeoX RoPE, and a
// parallel block: attention and the GELU feed-forward both read the normed input and are
// added to the residual together. Falcon-40B files add a second norm (attn_norm_2).
#include "core/ops.h"
#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using LW = LayerWeights;
using MW = ModelWeights;

constexpr WeightSpec kWeights[] = {
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output_norm.bias", &MW::output_norm_b, shapes::embd),
    // Absent when the output projection is tied to the token embedding.
    global("output.weight", &MW::output, shapes::vocab, false),
    per_layer("blk.{}.attn_norm.weight", &LW::attn_norm, shapes::embd),
    per_layer("blk.{}.attn_norm.bias", &LW::attn_norm_b, shapes::embd),
    // Falcon-40B: the attention's own norm (attn_norm then feeds only the FFN).
    per_layer("blk.{}.attn_norm_2.weight", &LW::attn_norm_2, shapes::embd, false),
    per_layer("blk.{}.attn_norm_2.bias", &LW::attn_norm_2_b, shapes::embd, false),
    per_layer("blk.{}.attn_qkv.weight", &LW::wqkv, shapes::qkv),
    per_layer("blk.{}.attn_output.weight", &LW::wo, shapes::attn_out),
    per_layer("blk.{}.ffn_up.weight", &LW::ffn_up, shapes::up),
    per_layer("blk.{}.ffn_down.weight", &LW::ffn_down, shapes::down),
};

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Layer,
    .norm_bias = Presence::Yes,
    .second_norm = Presence::Either,  // Falcon-40B: attn_norm_2
    .ffn_norm = false,                // the FFN reads attn_norm
    .qkv = QkvLayout::Fused,
    .ffn = FfnKind::Plain,
    .act = Activation::Gelu,
    .residual = Residual::Parallel,
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
  const BlockVariant& v = w.variant;
  for (int64_t il = 0; il < h.n_layer; ++il) {
    const LayerWeights& l = w.layers[size_t(il)];
    Tensor* normed = layer_norm_block(g, x, l.attn_norm, l.attn_norm_b, h.norm_eps);
    // As the reference: with attn_norm_2 (HF's ln_attn, a Falcon-40B file) the attention
    // reads it, and the FFN keeps attn_norm (ln_mlp).
    Tensor* attn_in = v.has(&BlockVariant::second_norm)
                          ? layer_norm_block(g, x, l.attn_norm_2, l.attn_norm_2_b, h.norm_eps)
                          : normed;
    const QkvProjections p = qkv_projections(g, h, v, l, attn_in);
    Tensor* attn = attention_block(g, h, in, in.kv[size_t(il)], rope_block(g, h, w, in, p.q),
                                   rope_block(g, h, w, in, p.k), p.v);
    Tensor* ffn = ffn_block(g, normed, v, l);
    x = ops::add(g, x, ops::add(g, attn_output(g, v, l, attn), ffn));
  }
  x = ops::get_rows(g, x, in.out_ids);  // only the tokens whose logits are wanted
  x = layer_norm_block(g, x, w.output_norm, w.output_norm_b, h.norm_eps);
  return logits_block(g, w, x);  // [n_vocab, n_outputs]
}

}  // namespace

// The reference quantizer gives Falcon its own K-quant mixes and a Q8_0 output.
extern const Arch kFalconArch{"falcon", kVariant, kWeights, build, configure, {.falcon_mixes = true}};

}  // namespace tessera
