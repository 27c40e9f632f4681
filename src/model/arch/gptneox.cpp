// GPT-NeoX (Pythia and kin): pre-LayerNorm blocks (with biases), a fused QKV projection
// with bias, NeoX RoPE on the first rope.dimension_count dims of each head, and a GELU
// feed-forward with biases; use_parallel_residual adds attention and FFN side by side.
#include "core/ops.h"
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
    const LayerWeights& l = w.layers[size_t(il)];
    Tensor* cur = layer_norm_block(g, x, l.attn_norm, l.attn_norm_b, h.norm_eps);
    const QkvProjections p = qkv_projections(g, h, l, cur);
    cur = attention_block(g, h, in, in.kv[size_t(il)], rope_block(g, h, w, in, p.q),
                          rope_block(g, h, w, in, p.k), p.v);
    Tensor* attn = attn_output(g, l, cur);
    if (h.parallel_residual) {  // x + attn(ln1(x)) + ffn(ln2(x))
      cur = layer_norm_block(g, x, l.ffn_norm, l.ffn_norm_b, h.norm_eps);
      x = ops::add(g, x, ops::add(g, attn, ffn_block(g, cur, l, Activation::Gelu)));
    } else {
      x = ops::add(g, x, attn);
      cur = layer_norm_block(g, x, l.ffn_norm, l.ffn_norm_b, h.norm_eps);
      x = ops::add(g, x, ffn_block(g, cur, l, Activation::Gelu));
    }
  }
  x = ops::get_rows(g, x, in.out_ids);  // only the tokens whose logits are wanted
  x = layer_norm_block(g, x, w.output_norm, w.output_norm_b, h.norm_eps);
  return logits_block(g, w, x);  // [n_vocab, n_outputs]
}

}  // namespace

extern const Arch kGptneoxArch{"gptneox", kWeights, build, configure};

}  // namespace tessera
