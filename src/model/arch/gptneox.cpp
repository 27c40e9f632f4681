// GPT-NeoX (Pythia and kin): pre-LayerNorm blocks (with biases), a fused QKV projection
// with bias, NeoX RoPE on the first rope.dimension_count dims of each head, and a GELU
// feed-forward with biases; use_parallel_residual adds attention and FFN side by side.
#include "model/arch.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using LW = LayerWeights;
using MW = ModelWeights;

constexpr WeightSpec kWeights[] = {
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output_norm.bias", &MW::output_norm_b, shapes::embd),
    global("output.weight", &MW::output, shapes::vocab),
    per_layer("blk.{}.attn_norm.weight", &LW::attn_norm, shapes::embd),
    per_layer("blk.{}.attn_norm.bias", &LW::attn_norm_b, shapes::embd),
    per_layer("blk.{}.attn_qkv.weight", &LW::wqkv, shapes::qkv),
    per_layer("blk.{}.attn_qkv.bias", &LW::bqkv, shapes::qkv_bias),
    per_layer("blk.{}.attn_output.weight", &LW::wo, shapes::attn_out),
    per_layer("blk.{}.attn_output.bias", &LW::bo, shapes::embd),
    per_layer("blk.{}.ffn_norm.weight", &LW::ffn_norm, shapes::embd),
    per_layer("blk.{}.ffn_norm.bias", &LW::ffn_norm_b, shapes::embd),
    per_layer("blk.{}.ffn_up.weight", &LW::ffn_up, shapes::up),
    per_layer("blk.{}.ffn_up.bias", &LW::ffn_up_b, shapes::ff),
    per_layer("blk.{}.ffn_down.weight", &LW::ffn_down, shapes::down),
    per_layer("blk.{}.ffn_down.bias", &LW::ffn_down_b, shapes::embd),
};

Status configure(const gguf::File&, HParams& h) {
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::NeoX;  // rotary_pct < 1: only the first n_rot dims rotate
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  for (int64_t il = 0; il < h.n_layer; ++il) {
    x = decoder_layer(g, h, w, in, il, x, NormKind::Layer, Activation::Gelu);
  }
  return output_logits(g, h, w, in, x, NormKind::Layer);
}

}  // namespace

extern const Arch kGptneoxArch{"gptneox", kWeights, build, configure};

}  // namespace tessera
