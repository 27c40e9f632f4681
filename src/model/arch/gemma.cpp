// Gemma: pre-RMSNorm blocks (the stored norm weights already include Gemma's "1 +"),
// embeddings scaled by sqrt(n_embd), attention heads of attention.key_length dims
// (n_head * head_dim need not be n_embd), NeoX RoPE, a GeGLU feed-forward, and an output
// always tied to the token embedding.
#include <cmath>
#include <string>

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
    per_layer("blk.{}.attn_norm.weight", &LW::attn_norm, shapes::embd),
    per_layer("blk.{}.attn_q.weight", &LW::wq, shapes::q),
    per_layer("blk.{}.attn_k.weight", &LW::wk, shapes::kv),
    per_layer("blk.{}.attn_v.weight", &LW::wv, shapes::kv),
    per_layer("blk.{}.attn_output.weight", &LW::wo, shapes::attn_out),
    per_layer("blk.{}.ffn_norm.weight", &LW::ffn_norm, shapes::embd),
    per_layer("blk.{}.ffn_gate.weight", &LW::ffn_gate, shapes::up),
    per_layer("blk.{}.ffn_up.weight", &LW::ffn_up, shapes::up),
    per_layer("blk.{}.ffn_down.weight", &LW::ffn_down, shapes::down),
};

Status configure(const gguf::File&, HParams& h) {
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::NeoX;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  // The reference scales the embeddings (not the tied output) by sqrt(n_embd).
  Tensor* x = ops::scale(g, input_embeddings(g, w, in), std::sqrt(float(h.n_embd)));
  for (int64_t il = 0; il < h.n_layer; ++il) {
    // attention_block scales q k by 1/sqrt(head_dim), as Gemma does; GeGLU feed-forward.
    x = decoder_layer(g, h, w, in, il, x, NormKind::Rms, Activation::Gelu);
  }
  return output_logits(g, h, w, in, x, NormKind::Rms);
}

}  // namespace

extern const Arch kGemmaArch{"gemma", kWeights, build, configure};

}  // namespace tessera
