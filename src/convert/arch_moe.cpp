// The mixture-of-experts checkpoints whose experts are HF's mlp.experts.N.*_proj
// (Qwen2MoeModel, OlmoeModel): the experts stacked into ffn_*_exps, the router mlp.gate;
// Qwen2-MoE's q/k/v biases and its gated shared expert; OLMoE's q/k norms. Neither
// permutes q/k (their GGUF rotates NeoX-style halves).
#include "convert/hf_arch.h"

namespace tessera::convert {
namespace {

Status qwen2moe_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  TESSERA_RETURN_IF_ERROR(base_keys(c, arch, w));
  const std::string a = arch + ".";
  if (c.has("num_experts")) w.set(a + "expert_count", uint32_t(c.integer_or("num_experts", 0)));
  if (c.has("moe_intermediate_size")) {
    w.set(a + "expert_feed_forward_length", uint32_t(c.integer_or("moe_intermediate_size", 0)));
  }
  if (c.has("shared_expert_intermediate_size")) {
    w.set(a + "expert_shared_feed_forward_length", uint32_t(c.integer_or("shared_expert_intermediate_size", 0)));
  }
  return Status::ok();
}

Status olmoe_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  TESSERA_RETURN_IF_ERROR(base_keys(c, arch, w));
  const std::string a = arch + ".";
  w.set(a + "attention.layer_norm_rms_epsilon", 1e-5f);  // OlmoeModel writes 1e-5 whatever the config says
  if (c.has("num_experts")) w.set(a + "expert_count", uint32_t(c.integer_or("num_experts", 0)));
  return Status::ok();
}

constexpr NameMap kGlobals[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

constexpr NameMap kLayers[] = {
    {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight"},
    {"model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight"},
    {"model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight"},
    {"model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight"},
    {"model.layers.{}.self_attn.q_proj.bias", "blk.{}.attn_q.bias"},
    {"model.layers.{}.self_attn.k_proj.bias", "blk.{}.attn_k.bias"},
    {"model.layers.{}.self_attn.v_proj.bias", "blk.{}.attn_v.bias"},
    {"model.layers.{}.self_attn.q_norm.weight", "blk.{}.attn_q_norm.weight"},
    {"model.layers.{}.self_attn.k_norm.weight", "blk.{}.attn_k_norm.weight"},
    {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight"},
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight"},
    {"model.layers.{}.mlp.gate.weight", "blk.{}.ffn_gate_inp.weight"},
    {"model.layers.{}.mlp.shared_expert.gate_proj.weight", "blk.{}.ffn_gate_shexp.weight"},
    {"model.layers.{}.mlp.shared_expert.up_proj.weight", "blk.{}.ffn_up_shexp.weight"},
    {"model.layers.{}.mlp.shared_expert.down_proj.weight", "blk.{}.ffn_down_shexp.weight"},
    {"model.layers.{}.mlp.shared_expert_gate.weight", "blk.{}.ffn_gate_inp_shexp.weight"},
};

constexpr NameMap kExperts[] = {
    {"model.layers.{}.mlp.experts.{e}.gate_proj.weight", "blk.{}.ffn_gate_exps.weight"},
    {"model.layers.{}.mlp.experts.{e}.down_proj.weight", "blk.{}.ffn_down_exps.weight"},
    {"model.layers.{}.mlp.experts.{e}.up_proj.weight", "blk.{}.ffn_up_exps.weight"},
};

}  // namespace

extern const HfArch kHfQwen2Moe{"Qwen2MoeForCausalLM", "qwen2moe", qwen2moe_keys, kGlobals, kLayers, kExperts, nullptr};
extern const HfArch kHfOlmoe{"OlmoeForCausalLM", "olmoe", olmoe_keys, kGlobals, kLayers, kExperts, nullptr};

}  // namespace tessera::convert
