// Command-R (Cohere): a parallel block, x + attn(h) + ffn(h) with h one LayerNorm of x
// (attn_norm, no bias), separate q/k/v, a SwiGLU feed-forward, normal-mode RoPE, an output
// tied to token_embd, and the logits multiplied by logit_scale.
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
    per_layer("blk.{}.attn_norm.weight", &LW::attn_norm, shapes::embd),
    per_layer("blk.{}.attn_q.weight", &LW::wq, shapes::q),
    per_layer("blk.{}.attn_k.weight", &LW::wk, shapes::kv),
    per_layer("blk.{}.attn_v.weight", &LW::wv, shapes::kv),
    per_layer("blk.{}.attn_output.weight", &LW::wo, shapes::attn_out),
    per_layer("blk.{}.ffn_gate.weight", &LW::ffn_gate, shapes::up),
    per_layer("blk.{}.ffn_up.weight", &LW::ffn_up, shapes::up),
    per_layer("blk.{}.ffn_down.weight", &LW::ffn_down, shapes::down),
};

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Layer,  // without bias
    .ffn_norm = false,        // the FFN reads attn_norm's output
    .qkv = QkvLayout::Separate,
    .ffn = FfnKind::Gated,
    .act = Activation::Silu,  // SwiGLU
    .residual = Residual::Parallel,
    .positions = kRopePositions,
    .rope_mode = RopeMode::Normal,
    .output = Presence::No,  // always tied to token_embd
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File& file, HParams& h) {
  // The reference's q/k LayerNorms exist from 64 layers on (Command-R+): not built here.
  if (file.find_tensor("blk.0.attn_q_norm.weight") != nullptr) {
    return Status::error("model: command-r tensor 'blk.0.attn_q_norm.weight' (the per-head q/k norms of "
                         "Command-R+ files) is not supported");
  }
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::Normal;
  return Status::ok();  // logit_scale multiplies the logits, as read
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  return decoder_stack(g, h, w, in, x);
}

}  // namespace

extern const Arch kCommandRArch{"command-r", kVariant, kWeights, build, configure};

}  // namespace tessera
