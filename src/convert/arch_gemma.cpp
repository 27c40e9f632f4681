// Gemma and Gemma 2 as the reference converter maps them (GemmaModel, Gemma2Model): LLaMA's
// HF names without the q/k permutation (GGUF's Gemma rotates NeoX-style halves), every
// norm stored as 1 + w (HF's Gemma norms multiply by 1 + w), lm_head dropped (the output is
// the embedding), and Gemma 2's four norms per layer, soft-caps and sliding window.
#include "convert/hf_arch.h"

namespace tessera::convert {
namespace {

Status gemma_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  const std::string a = arch + ".";
  for (auto [from, key] : {std::pair{"max_position_embeddings", "context_length"},
                           std::pair{"hidden_size", "embedding_length"}, std::pair{"num_hidden_layers", "block_count"},
                           std::pair{"intermediate_size", "feed_forward_length"},
                           std::pair{"num_attention_heads", "attention.head_count"},
                           std::pair{"head_dim", "attention.key_length"}, std::pair{"head_dim", "attention.value_length"}}) {
    Result<int64_t> v = c.integer(from);
    if (!v) return v.status();
    w.set(a + key, uint32_t(*v));
  }
  w.set(a + "attention.head_count_kv",
        uint32_t(c.integer_or("num_key_value_heads", c.integer_or("num_attention_heads", 0))));
  Result<double> eps = c.number("rms_norm_eps");
  if (!eps) return eps.status();
  w.set(a + "attention.layer_norm_rms_epsilon", float(*eps));
  return Status::ok();
}

Status gemma2_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  TESSERA_RETURN_IF_ERROR(gemma_keys(c, arch, w));
  const std::string a = arch + ".";
  for (auto [from, key] : {std::pair{"attn_logit_softcapping", "attn_logit_softcapping"},
                           std::pair{"final_logit_softcapping", "final_logit_softcapping"}}) {
    Result<double> v = c.number(from);
    if (!v) return v.status();
    w.set(a + key, float(*v));
  }
  Result<int64_t> window = c.integer("sliding_window");
  if (!window) return window.status();
  w.set(a + "attention.sliding_window", uint32_t(*window));
  return Status::ok();
}

constexpr Transform kPlusOne = Transform::AddOne;

constexpr NameMap kGlobals[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight", kPlusOne},
    {"lm_head.weight", nullptr},  // the reference drops it: the output is the embedding
};

#define TESSERA_GEMMA_ATTENTION                                                            \
  {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight", kPlusOne},         \
  {"model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight"},                     \
  {"model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight"},                     \
  {"model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight"},                     \
  {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight"},                \
  {"model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight"},                      \
  {"model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight"},                          \
  {"model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight"}

constexpr NameMap kGemmaLayers[] = {
    TESSERA_GEMMA_ATTENTION,
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight", kPlusOne},
};

constexpr NameMap kGemma2Layers[] = {
    TESSERA_GEMMA_ATTENTION,
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.post_attention_norm.weight", kPlusOne},
    {"model.layers.{}.pre_feedforward_layernorm.weight", "blk.{}.ffn_norm.weight", kPlusOne},
    {"model.layers.{}.post_feedforward_layernorm.weight", "blk.{}.post_ffw_norm.weight", kPlusOne},
};
#undef TESSERA_GEMMA_ATTENTION

}  // namespace

extern const HfArch kHfGemma{"GemmaForCausalLM", "gemma", gemma_keys, kGlobals, kGemmaLayers, {}, nullptr};
extern const HfArch kHfGemma2{"Gemma2ForCausalLM", "gemma2", gemma2_keys, kGlobals, kGemma2Layers, {}, nullptr};

}  // namespace tessera::convert
