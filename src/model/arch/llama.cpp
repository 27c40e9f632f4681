// LLaMA (and Mistral, which shares its GGUF layout): pre-RMSNorm blocks, rotary
// positions, grouped-query attention, SwiGLU feed-forward. Llama 3.1+ files carry
// rope_freqs.weight, per-pair divisors of the RoPE frequencies. Mixtral files are llama
// files whose feed-forward is a mixture of experts (ffn_gate_inp, ffn_*_exps): softmax
// routing, the chosen experts' probabilities normalised to sum 1 (build_llama).
#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_lists.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using MW = ModelWeights;

constexpr auto kWeights = join_weights(std::array{
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    // Absent when the output projection is tied to the token embedding.
    global("output.weight", &MW::output, shapes::vocab, false),
    global("rope_freqs.weight", &MW::rope_freqs, [](const HParams& h) { return Shape{h.n_rot / 2, 1, 1, 1}; }, false),
}, kLlamaAttnLayer, optional_weights(kGatedFfnLayer), optional_weights(kMoeLayer));

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Rms,
    .qkv = QkvLayout::Separate,
    .ffn = FfnKind::Gated,
    .act = Activation::Silu,  // SwiGLU
    .residual = Residual::Sequential,
    .positions = kRopePositions,
    .rope_mode = RopeMode::Normal,
    .rope_freqs = Presence::Either,  // Llama 3.1+ files
    .output = Presence::Either,      // absent: tied to token_embd
    .moe = Presence::Either,         // Mixtral
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File&, HParams& h) {
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::Normal;
  // The reference's Mixtral routing, whatever keys the file has.
  h.expert_gating = ExpertGating::Softmax;
  h.expert_weights_norm = true;
  h.expert_weights_scale = 0.0f;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  return decoder_stack(g, h, w, in, x);
}

}  // namespace

extern const Arch kLlamaArch{"llama", kVariant, kWeights, build, configure, {.rule_70b = true}};

}  // namespace tessera
