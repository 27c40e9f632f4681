// Baichuan: the LLaMA layout (pre-RMSNorm blocks, separate q/k/v projections, a SwiGLU
// feed-forward). Baichuan-7B rotates q and k (normal-mode RoPE); Baichuan-13B has no RoPE
// and uses ALiBi (max bias 8) instead. The files do not say which: see configure.
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
    global("output.weight", &MW::output, shapes::vocab),
}, kLlamaLayer);

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Rms,
    .qkv = QkvLayout::Separate,
    .ffn = FfnKind::Gated,
    .act = Activation::Silu,  // SwiGLU
    .residual = Residual::Sequential,
    .positions = kRopePositions | kAlibiPositions,  // 7B RoPE, 13B ALiBi: configure
    .rope_mode = RopeMode::Normal,
    .output = Presence::Yes,
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

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
  return decoder_stack(g, h, w, in, x);
}

}  // namespace

extern const Arch kBaichuanArch{"baichuan", kVariant, kWeights, build, configure};

}  // namespace tessera
