// Baichuan: the LLaMA layout (pre-RMSNorm blocks, separate q/k/v projections, a SwiGLU
// feed-forward). Baichuan-7B rotates q and k (normal-mode RoPE); Baichuan-13B has no RoPE
// and uses ALiBi (max bias 8) instead. The files do not say which: see configure.
#include "model/arch.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using LW = LayerWeights;
using MW = ModelWeights;

constexpr WeightSpec kWeights[] = {
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output.weight", &MW::output, shapes::vocab),
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

// The variant comes from the layer count, as in the reference: 40 layers is 13B (ALiBi),
// 32 is 7B (RoPE). The reference aborts on any other count; we build those as 7B (RoPE):
// ALiBi belongs to the one 40-layer 13B shape only, the files do carry the RoPE keys
// (rope.dimension_count), and RoPE is the LLaMA default the rest of the layout follows.
Status configure(const gguf::File& file, HParams& h) {
  if (h.n_layer == 40) {
    h.positions = PositionKind::Alibi;
    // No key in Baichuan files: the reference hard-codes 8 for 13B.
    if (file.find(h.arch + ".attention.max_alibi_bias") == nullptr) h.alibi_max_bias = 8.0f;
  } else {
    h.positions = PositionKind::Rope;
    h.rope_mode = RopeMode::Normal;
  }
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  for (int64_t il = 0; il < h.n_layer; ++il) {
    x = decoder_layer(g, h, w, in, il, x, NormKind::Rms, Activation::Silu);
  }
  return output_logits(g, h, w, in, x, NormKind::Rms);
}

}  // namespace

extern const Arch kBaichuanArch{"baichuan", kWeights, build, configure};

}  // namespace tessera
