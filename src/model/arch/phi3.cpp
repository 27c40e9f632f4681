// Phi-3: pre-RMSNorm blocks with a fused QKV projection (rows [Q | K | V], no bias), NeoX
// RoPE, a sliding attention window (attention.sliding_window, applied by the cache's
// mask), and a SwiGLU feed-forward whose gate and up rows share one matrix (ffn_up). The
// 128k-context files (Phi-3-mini-128k, Phi-3.5) add LongRoPE: divisors of the RoPE
// frequencies, rope_factors_long past rope.scaling.original_context_length cells per
// sequence and rope_factors_short up to it (rope_factors in blocks.h), and
// rope.scaling.attn_factor on the rotation's magnitude (HParams::rope_yarn).

#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using LW = LayerWeights;
using MW = ModelWeights;

/// [n_embd, 2 n_ff]: ffn_up.weight, the gate's n_ff rows then the up projection's.
Shape gate_up(const HParams& h) { return {h.n_embd, 2 * h.n_ff, 1, 1}; }
/// [n_rot / 2]: LongRoPE's divisors, one per rotated pair.
Shape rope_pairs(const HParams& h) { return {h.n_rot / 2, 1, 1, 1}; }

constexpr WeightSpec kWeights[] = {
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output.weight", &MW::output, shapes::vocab),
    global("rope_factors_long.weight", &MW::rope_factors_long, rope_pairs, false),
    global("rope_factors_short.weight", &MW::rope_factors_short, rope_pairs, false),
    per_layer("blk.{}.attn_norm.weight", &LW::attn_norm, shapes::embd),
    per_layer("blk.{}.attn_qkv.weight", &LW::wqkv, shapes::qkv),
    per_layer("blk.{}.attn_output.weight", &LW::wo, shapes::attn_out),
    per_layer("blk.{}.ffn_norm.weight", &LW::ffn_norm, shapes::embd),
    per_layer("blk.{}.ffn_up.weight", &LW::ffn_gate_up, gate_up),
    per_layer("blk.{}.ffn_down.weight", &LW::ffn_down, shapes::down),
};

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Rms,
    .qkv = QkvLayout::Fused,
    .ffn = FfnKind::GatedFused,  // gate and up rows in ffn_up
    .act = Activation::Silu,     // SwiGLU
    .residual = Residual::Sequential,
    .positions = kRopePositions,
    .rope_mode = RopeMode::NeoX,
    .long_rope = Presence::Either,  // the 128k files
    .output = Presence::Yes,
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File& file, HParams& h) {
  // LongRoPE needs both factor tensors (the choice between them is the context's).
  const bool has_long = file.find_tensor("rope_factors_long.weight") != nullptr;
  const bool has_short = file.find_tensor("rope_factors_short.weight") != nullptr;
  if (has_long != has_short) {
    return Status::error(std::string("model: phi3 tensor '") +
                         (has_long ? "rope_factors_short.weight" : "rope_factors_long.weight") +
                         "' is missing: LongRoPE needs the long and the short factors");
  }
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::NeoX;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  return decoder_stack(g, h, w, in, x);
}

}  // namespace

extern const Arch kPhi3Arch{"phi3", kVariant, kWeights, build, configure};

}  // namespace tessera
