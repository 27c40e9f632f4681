// Baichuan: the LLaMA layout (pre-RMSNorm blocks, separate q/k/v projections, a SwiGLU
// feed-forward). Baichuan-7B rotates q and k (normal-mode RoPE); Baichuan-13B has no RoPE
// and uses ALiBi (max bias 8) instead. The files do not say which: see configure.
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
  const bool rope = h.positions == PositionKind::Rope;
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  for (int64_t il = 0; il < h.n_layer; ++il) {
    const LayerWeights& l = w.layers[size_t(il)];
    Tensor* cur = rms_norm_block(g, x, l.attn_norm, nullptr, h.rms_eps);
    const QkvProjections p = qkv_projections(g, h, l, cur);  // one mul_mat when l.wqkv is set
    Tensor* q = rope ? rope_block(g, h, w, in, p.q) : p.q;
    Tensor* k = rope ? rope_block(g, h, w, in, p.k) : p.k;
    cur = attention_block(g, h, in, in.kv[size_t(il)], q, k, p.v);
    x = ops::add(g, x, attn_output(g, l, cur));
    cur = rms_norm_block(g, x, l.ffn_norm, nullptr, h.rms_eps);
    x = ops::add(g, x, ffn_block(g, cur, l, Activation::Silu));
  }
  x = ops::get_rows(g, x, in.out_ids);  // only the tokens whose logits are wanted
  x = rms_norm_block(g, x, w.output_norm, nullptr, h.rms_eps);
  return logits_block(g, w, x);  // [n_vocab, n_outputs]
}

}  // namespace

extern const Arch kBaichuanArch{"baichuan", kWeights, build, configure};

}  // namespace tessera
