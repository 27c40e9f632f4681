// GPT-2: learned absolute position embeddings, pre-LayerNorm blocks (with biases), a
// fused multi-head QKV projection with bias, and a GELU feed-forward with biases.
#include "model/arch.h"
#include "model/weight_lists.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using MW = ModelWeights;

constexpr auto kWeights = join_weights(std::array{
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("position_embd.weight", &MW::position_embd, shapes::positions),
    global("output_norm.weight", &MW::output_norm, shapes::embd),
    global("output_norm.bias", &MW::output_norm_b, shapes::embd),
    global("output.weight", &MW::output, shapes::vocab),
}, kGptLayer);

Status configure(const gguf::File&, HParams& h) {
  h.positions = PositionKind::Learned;
  return Status::ok();
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  Tensor* x = input_embeddings(g, w, in);  // [n_embd, n_tokens]
  return decoder_stack(g, h, w, in, x, NormKind::Layer, Activation::Gelu);
}

}  // namespace

extern const Arch kGpt2Arch{"gpt2", kWeights, build, configure};

}  // namespace tessera
