// Refact: the LLaMA layout (pre-RMSNorm blocks, separate q/k/v projections with one K/V head,
// a SwiGLU feed-forward) with ALiBi positions instead of RoPE.
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
    // Absent when the output projection is tied (the reference loads Refact as LLaMA).
    global("output.weight", &MW::output, shapes::vocab, false),
}, kLlamaLayer);

// What the blocks compute (variant.h); the tensor list above must agree with it.
constexpr BlockVariant kVariant{
    .norm = NormKind::Rms,
    .qkv = QkvLayout::Separate,
    .ffn = FfnKind::Gated,
    .act = Activation::Silu,  // SwiGLU
    .residual = Residual::Sequential,
    .positions = kAlibiPositions,
    .output = Presence::Either,  // absent: tied to token_embd
};
static_assert(variant_error(kVariant) == nullptr);
static_assert(weights_error(kWeights, kVariant) == nullptr);

Status configure(const gguf::File& file, HParams& h) {
  h.positions = PositionKind::Alibi;
  // Refact files carry no max_alibi_bias key: the reference hard-codes 8.
  if (file.find(h.arch + ".attention.max_alibi_bias") == nullptr) h.alibi_max_bias = 8.0f;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  return decoder_stack(g, h, w, in, x);
}

}  // namespace

extern const Arch kRefactArch{"refact", kVariant, kWeights, build, configure};

}  // namespace tessera
