// LLaMA (and Mistral, which shares its GGUF layout): pre-RMSNorm blocks, rotary
// positions, grouped-query attention, SwiGLU feed-forward. Llama 3.1+ files carry
// rope_freqs.weight, per-pair divisors of the RoPE frequencies.
#include "model/arch.h"
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
}, kLlamaLayer);

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  return decoder_stack(g, h, w, in, x, NormKind::Rms, Activation::Silu);
}

}  // namespace

extern const Arch kLlamaArch{"llama", kWeights, build, nullptr, {.rule_70b = true}};

}  // namespace tessera
