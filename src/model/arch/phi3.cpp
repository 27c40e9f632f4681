// Phi-3: pre-RMSNorm blocks with a fused QKV projection (rows [Q | K | V], no bias), NeoX
// RoPE, a sliding attention window (attention.sliding_window, applied by the cache's
// mask), and a SwiGLU feed-forward whose gate and up rows share one matrix (ffn_up).
#include <string>

#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using LW = LayerWeights;
using MW = ModelWeights;

/// [n_embd, 2 n_ff]: ffn_up.weight, the gate's n_ff rows then the up projection's.
Shape gate_up(const HParams& h) { return {h.n_embd, 2 * h.n_ff, 1, 1}; }

constexpr WeightSpec kWeights[] = {
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output.weight", &MW::output, shapes::vocab),
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
    .output = Presence::Yes,
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File& file, HParams& h) {
  // The 128k files' LongRoPE: frequency factors chosen by the context size (short up to
  // rope.scaling.original_context_length, long past it) and an attention factor on the
  // rotation. Not built here: refused rather than run with the wrong positions.
  for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
    if (file.find_tensor(name) != nullptr) {
      return Status::error("model: phi3 tensor '" + std::string(name) +
                           "' (LongRoPE scaling, the 128k-context Phi-3 files) is not supported");
    }
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
