// LLaMA (and Mistral, which shares its GGUF layout): pre-RMSNorm blocks, rotary
// positions, grouped-query attention, SwiGLU feed-forward. Llama 3.1+ files carry
// rope_freqs.weight, per-pair divisors of the RoPE frequencies.
#include "model/arch.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using LW = LayerWeights;
using MW = ModelWeights;

constexpr WeightSpec kWeights[] = {
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    // Absent when the output projection is tied to the token embedding.
    global("output.weight", &MW::output, shapes::vocab, false),
    global("rope_freqs.weight", &MW::rope_freqs, [](const HParams& h) { return Shape{h.n_rot / 2, 1, 1, 1}; }, false),
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

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  for (int64_t il = 0; il < h.n_layer; ++il) {
    x = decoder_layer(g, h, w, in, il, x, NormKind::Rms, Activation::Silu);
  }
  return output_logits(g, h, w, in, x, NormKind::Rms);
}

}  // namespace

extern const Arch kLlamaArch{"llama", kWeights, build, nullptr, {.rule_70b = true}};

}  // namespace tessera
