// Qwen2-MoE: the Qwen2 layout (q/k/v biases, NeoX RoPE) with a mixture-of-experts
// feed-forward in every layer: softmax routing, the chosen probabilities unnormalised,
// plus shared experts gated by sigmoid(ffn_gate_inp_shexp x) (build_qwen2moe).
#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_lists.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using LW = LayerWeights;
using MW = ModelWeights;

constexpr auto kWeights = join_weights(std::array{
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output.weight", &MW::output, shapes::vocab, false),
    per_layer("blk.{}.attn_q.bias", &LW::bq, shapes::q_bias),
    per_layer("blk.{}.attn_k.bias", &LW::bk, shapes::kv_bias),
    per_layer("blk.{}.attn_v.bias", &LW::bv, shapes::kv_bias),
}, kLlamaAttnLayer, kMoeLayer, kSharedExpertsLayer, kSharedExpertsGate);

constexpr BlockVariant kVariant{
    .norm = NormKind::Rms,
    .qkv = QkvLayout::Separate,
    .qkv_bias = Presence::Yes,
    .ffn = FfnKind::Gated,
    .act = Activation::Silu,
    .residual = Residual::Sequential,
    .positions = kRopePositions,
    .rope_mode = RopeMode::NeoX,
    .output = Presence::Either,
    .moe = Presence::Yes,
    .shared_experts = SharedExperts::Gated,
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File& f, HParams& h) {
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::NeoX;
  h.expert_gating = ExpertGating::Softmax;
  h.expert_weights_norm = false;
  h.expert_weights_scale = 0.0f;
  // The reference's default expert width (load_tensors).
  if (f.find(h.arch + ".expert_feed_forward_length") == nullptr && h.n_expert_used > 0) {
    h.n_ff_exp = h.n_ff / h.n_expert_used;
  }
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  return decoder_stack(g, h, w, in, input_embeddings(g, w, in));
}

}  // namespace

extern const Arch kQwen2moeArch{"qwen2moe", kVariant, kWeights, build, configure};

}  // namespace tessera
