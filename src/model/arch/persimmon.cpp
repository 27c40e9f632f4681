// Persimmon (Adept): pre-LayerNorm blocks (with biases), a fused QKV projection with bias
// whose rows are laid out per head (q, k, v of head 0, then of head 1, ...), a LayerNorm of
// every head's q and k, NeoX RoPE on the first half of each head, and a squared-ReLU
// feed-forward with biases. The output projection is untied.
#include <string>

#include "core/ops.h"
#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_lists.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using LW = LayerWeights;
using MW = ModelWeights;

/// [head_dim]: the per-head norms of q and k.
Shape head(const HParams& h) { return {h.head_dim, 1, 1, 1}; }

constexpr auto kWeights = join_weights(std::array{
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output_norm.bias", &MW::output_norm_b, shapes::embd),
    global("output.weight", &MW::output, shapes::vocab),
    per_layer("blk.{}.attn_q_norm.weight", &LW::attn_q_norm, head),
    per_layer("blk.{}.attn_q_norm.bias", &LW::attn_q_norm_b, head),
    per_layer("blk.{}.attn_k_norm.weight", &LW::attn_k_norm, head),
    per_layer("blk.{}.attn_k_norm.bias", &LW::attn_k_norm_b, head),
}, kGptLayer);  // whose attn_qkv rows are per head here, [q | k | v] of head 0, then head 1, ...

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Layer,
    .norm_bias = Presence::Yes,
    .qkv = QkvLayout::FusedPerHead,
    .qkv_bias = Presence::Yes,
    .qk_norm = true,
    .out_bias = Presence::Yes,
    .ffn = FfnKind::Plain,
    .act = Activation::ReluSqr,
    .up_bias = Presence::Yes,
    .down_bias = Presence::Yes,
    .residual = Residual::Sequential,
    .positions = kRopePositions,
    .rope_mode = RopeMode::NeoX,
    .output = Presence::Yes,
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File&, HParams& h) {
  if (h.n_head_kv != h.n_head) {
    return Status::error("model: persimmon needs head_count_kv = head_count (per-head fused qkv)");

  }
  if (h.head_dim % 4 != 0) {
    return Status::error("model: persimmon head size " + std::to_string(h.head_dim) +
                         " must be a multiple of 4 (half of it rotates, in pairs)");
  }
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::NeoX;
  // The reference rotates half of each head whatever rope.dimension_count says.
  h.n_rot = h.head_dim / 2;
  return Status::ok();
}

/// Part `part` (0 q, 1 k, 2 v) of every head of qkv [3 n_embd_q, n_tokens], whose rows are
/// per head: [head_dim, n_head, n_tokens], heads 3 head_dim apart, tokens a fused row apart.
Tensor* head_part(Graph& g, const HParams& h, Tensor* qkv, int64_t part) {
  const size_t e = qkv->nb[0];
  const size_t head_stride = size_t(3 * h.head_dim) * e;
  const Strides nb{e, head_stride, qkv->nb[1], qkv->nb[1] * size_t(qkv->ne[1])};
  return ops::view(g, qkv, {h.head_dim, h.n_head, qkv->ne[1], 1}, nb, size_t(part * h.head_dim) * e);
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  for (int64_t il = 0; il < h.n_layer; ++il) {
    const LayerWeights& l = w.layers[size_t(il)];
    Tensor* cur = layer_norm_block(g, x, l.attn_norm, l.attn_norm_b, h.norm_eps);
    Tensor* qkv = ops::add(g, project(g, l, l.wqkv, cur), l.bqkv);  // [3 n_embd_q, n_tokens]
    // The norms read the strided views and write q and k dense.
    Tensor* q = layer_norm_block(g, head_part(g, h, qkv, 0), l.attn_q_norm, l.attn_q_norm_b, h.norm_eps);
    Tensor* k = layer_norm_block(g, head_part(g, h, qkv, 1), l.attn_k_norm, l.attn_k_norm_b, h.norm_eps);
    // The cache write wants each token's heads dense.
    Tensor* v = ops::cont(g, head_part(g, h, qkv, 2));
    cur = attention_block(g, h, in, in.kv[size_t(il)], rope_block(g, h, w, in, q),
                          rope_block(g, h, w, in, k), v);
    x = ops::add(g, x, attn_output(g, w.variant, l, cur));
    cur = layer_norm_block(g, x, l.ffn_norm, l.ffn_norm_b, h.norm_eps);
    x = ops::add(g, x, ffn_block(g, cur, w.variant, l));  // relu(up x + b)^2, no gate
  }
  return output_logits(g, h, w, in, x);
}

}  // namespace

extern const Arch kPersimmonArch{"persimmon", kVariant, kWeights, build, configure};

}  // namespace tessera
