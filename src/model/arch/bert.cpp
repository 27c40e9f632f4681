// The BERT family of encoders, which serve embeddings: BERT (the bge-small layout: learned
// positions, biased q/k/v/o, a GELU feed-forward with biases) and Nomic-BERT (a fused qkv
// without bias, NeoX RoPE, a SwiGLU feed-forward without biases). Both add row 0 of
// token_types to the token embeddings, normalise them (token_embd_norm), run post-norm
// layers with non-causal attention (attention.causal false) and end at the final hidden
// states: no output norm, no output matrix, no logits. The pooling the file names
// (pooling_type) is applied by whoever reads the embeddings (tessera/embedding.h). A BERT
// reranker (pooling_type rank) also has a classification head, cls and cls.output, that
// Model::classify applies to the first token's state.
#include "model/arch.h"
#include "model/variant_check.h"
#include "model/weight_lists.h"
#include "model/weight_shapes.h"

namespace tessera {
namespace {

using MW = ModelWeights;
using LW = LayerWeights;

/// [n_embd, n_token_types]: token_types.
Shape token_types(const HParams& h) { return {h.n_embd, h.n_token_types, 1, 1}; }

constexpr std::array kEncoderInputs = {
    global("token_embd.weight", &MW::token_embd, shapes::vocab),
    global("token_types.weight", &MW::token_types, token_types),
    global("token_embd_norm.weight", &MW::token_embd_norm, shapes::embd),
    global("token_embd_norm.bias", &MW::token_embd_norm_b, shapes::embd),
};

constexpr std::array kPostNorms = {
    per_layer("blk.{}.attn_output_norm.weight", &LW::attn_out_norm, shapes::embd),
    per_layer("blk.{}.attn_output_norm.bias", &LW::attn_out_norm_b, shapes::embd),
    per_layer("blk.{}.layer_output_norm.weight", &LW::layer_out_norm, shapes::embd),
    per_layer("blk.{}.layer_output_norm.bias", &LW::layer_out_norm_b, shapes::embd),
};

constexpr auto kBertWeights = join_weights(kEncoderInputs, std::array{
    global("position_embd.weight", &MW::position_embd, shapes::positions),
    per_layer("blk.{}.attn_q.weight", &LW::wq, shapes::q),
    per_layer("blk.{}.attn_q.bias", &LW::bq, shapes::q_bias),
    per_layer("blk.{}.attn_k.weight", &LW::wk, shapes::kv),
    per_layer("blk.{}.attn_k.bias", &LW::bk, shapes::kv_bias),
    per_layer("blk.{}.attn_v.weight", &LW::wv, shapes::kv),
    per_layer("blk.{}.attn_v.bias", &LW::bv, shapes::kv_bias),
    per_layer("blk.{}.attn_output.weight", &LW::wo, shapes::attn_out),
    per_layer("blk.{}.attn_output.bias", &LW::bo, shapes::embd),
    per_layer("blk.{}.ffn_up.weight", &LW::ffn_up, shapes::up),
    per_layer("blk.{}.ffn_up.bias", &LW::ffn_up_b, shapes::ff),
    per_layer("blk.{}.ffn_down.weight", &LW::ffn_down, shapes::down),
    per_layer("blk.{}.ffn_down.bias", &LW::ffn_down_b, shapes::embd),
    global("cls.weight", &MW::cls, shapes::cls, false),
    global("cls.bias", &MW::cls_b, shapes::embd, false),
    global("cls.output.weight", &MW::cls_out, shapes::score, false, /*matrix=*/true),
    global("cls.output.bias", &MW::cls_out_b, shapes::one, false),
}, kPostNorms);

constexpr auto kNomicWeights = join_weights(kEncoderInputs, std::array{
    per_layer("blk.{}.attn_qkv.weight", &LW::wqkv, shapes::qkv),
    per_layer("blk.{}.attn_output.weight", &LW::wo, shapes::attn_out),
    per_layer("blk.{}.ffn_gate.weight", &LW::ffn_gate, shapes::up),
    per_layer("blk.{}.ffn_up.weight", &LW::ffn_up, shapes::up),
    per_layer("blk.{}.ffn_down.weight", &LW::ffn_down, shapes::down),
}, kPostNorms);

// What the blocks compute (variant.h); the tensor lists above must agree with them.
constexpr BlockVariant kBertVariant{
    .norm = NormKind::Layer,
    .norm_bias = Presence::Yes,
    .ffn_norm = false,
    .embd_norm = true,
    .qkv = QkvLayout::Separate,
    .qkv_bias = Presence::Yes,
    .out_bias = Presence::Yes,
    .ffn = FfnKind::Plain,
    .act = Activation::Gelu,
    .up_bias = Presence::Yes,
    .down_bias = Presence::Yes,
    .residual = Residual::Sequential,
    .positions = kLearnedPositions,
    .output = Presence::No,
    .token_types = true,
    .post_norm = true,
    .rank_head = Presence::Either,
    .rank_out = Presence::Either,
    .logits = false,
};
static_assert(variant_error(kBertVariant) == nullptr);
static_assert(weights_error(kBertWeights, kBertVariant) == nullptr);

constexpr BlockVariant kNomicVariant{
    .norm = NormKind::Layer,
    .norm_bias = Presence::Yes,
    .ffn_norm = false,
    .embd_norm = true,
    .qkv = QkvLayout::Fused,
    .ffn = FfnKind::Gated,
    .act = Activation::Silu,
    .residual = Residual::Sequential,
    .positions = kRopePositions,
    .rope_mode = RopeMode::NeoX,
    .output = Presence::No,
    .token_types = true,
    .post_norm = true,
    .logits = false,
};
static_assert(variant_error(kNomicVariant) == nullptr);
static_assert(weights_error(kNomicWeights, kNomicVariant) == nullptr);

/// What both encoders refuse: a file without its token type count, and
/// token_types that are not F32 (the row is added to F32 activations, as the reference
/// adds it; its converter always writes them F32).
Status check_encoder(const gguf::File& file, const HParams& h) {
  const gguf::TensorInfo* types = file.find_tensor("token_types.weight");
  if (types != nullptr && types->type != DType::F32) {
    return Status::error("model: tensor 'token_types.weight' is " + std::string(dtype_name(types->type)) +
                         ": " + h.arch + " needs it F32");
  }
  if (h.n_token_types < 1) {
    return Status::error("model: key 'tokenizer.ggml.token_type_count' is missing (the rows of " + h.arch +
                         "'s token_types.weight)");
  }
  return Status::ok();
}

Status configure_bert(const gguf::File& file, HParams& h) {
  h.positions = PositionKind::Learned;
  return check_encoder(file, h);
}

Status configure_nomic(const gguf::File& file, HParams& h) {
  h.positions = PositionKind::Rope;
  h.rope_mode = RopeMode::NeoX;
  return check_encoder(file, h);
}

Tensor* build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  return encoder_stack(g, h, w, in, input_embeddings(g, w, in));  // [n_embd, n_outputs]
}

}  // namespace

extern const Arch kBertArch{"bert", kBertVariant, kBertWeights, build, configure_bert};
extern const Arch kNomicBertArch{"nomic-bert", kNomicVariant, kNomicWeights, build, configure_nomic};

}  // namespace tessera
