// The mixture-of-experts checkpoints whose experts are HF's mlp.experts.N.*_proj
// (Qwen2MoeModel, OlmoeModel, DeepseekV2Model): the experts stacked into ffn_*_exps, the
// router mlp.gate; Qwen2-MoE's q/k/v biases and its gated shared expert; OLMoE's q/k
// norms; DeepSeek-V2's latent attention (kv_a_proj_with_mqa, its norm, kv_b_proj, the
// optional q LoRA), ungated shared experts and leading dense layers. None permutes q/k.
#include <map>

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

/// DeepseekV2Model's keys: the latent and head sizes, the routing, YaRN with the log
/// multiplier 0.1 · mscale_all_dim.
Status deepseek2_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  TESSERA_RETURN_IF_ERROR(base_keys(c, arch, w));
  const std::string a = arch + ".";
  Result<std::map<std::string, int64_t>> ints =
      c.integers({"first_k_dense_replace", "vocab_size", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                  "v_head_dim", "moe_intermediate_size", "n_routed_experts", "n_shared_experts"});
  if (!ints) return ints.status();
  std::map<std::string, int64_t>& v = *ints;
  w.set(a + "leading_dense_block_count", uint32_t(v["first_k_dense_replace"]));
  w.set(a + "vocab_size", uint32_t(v["vocab_size"]));
  if (c.has("q_lora_rank")) w.set(a + "attention.q_lora_rank", uint32_t(c.integer_or("q_lora_rank", 0)));
  w.set(a + "attention.kv_lora_rank", uint32_t(v["kv_lora_rank"]));
  w.set(a + "attention.key_length", uint32_t(v["qk_nope_head_dim"] + v["qk_rope_head_dim"]));
  w.set(a + "attention.value_length", uint32_t(v["v_head_dim"]));
  w.set(a + "expert_feed_forward_length", uint32_t(v["moe_intermediate_size"]));
  w.set(a + "expert_count", uint32_t(v["n_routed_experts"]));
  w.set(a + "expert_shared_count", uint32_t(v["n_shared_experts"]));
  Result<double> scale = c.number("routed_scaling_factor");
  if (!scale) return scale.status();
  w.set(a + "expert_weights_scale", float(*scale));
  w.set(a + "expert_weights_norm", c.boolean_or("norm_topk_prob", false));
  const std::string scoring = c.has("scoring_func") && c.json()["scoring_func"].is_string()
                                  ? c.json()["scoring_func"].get<std::string>()
                                  : "";
  if (scoring != "softmax" && scoring != "sigmoid") {
    return Status::error("convert: config.json scoring_func '" + scoring + "' is not softmax or sigmoid");
  }
  w.set(a + "expert_gating_func", uint32_t(scoring == "softmax" ? 1 : 2));
  w.set(a + "rope.dimension_count", uint32_t(v["qk_rope_head_dim"]));
  if (c.has("rope_scaling") && c.json()["rope_scaling"].is_object()) {
    const nlohmann::json& s = c.json()["rope_scaling"];
    if (s.contains("factor") && s.value("type", std::string()) == "yarn") {
      w.set(a + "rope.scaling.type", std::string("yarn"));
      w.set(a + "rope.scaling.factor", float(s.value("factor", 1.0)));
      w.set(a + "rope.scaling.original_context_length", uint32_t(s.value("original_max_position_embeddings", int64_t(0))));
      w.set(a + "rope.scaling.yarn_log_multiplier", float(0.1 * s.value("mscale_all_dim", 0.0)));
    }
  }
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

constexpr NameMap kDeepseek2Layers[] = {
    {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight"},
    {"model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight"},
    {"model.layers.{}.self_attn.q_a_proj.weight", "blk.{}.attn_q_a.weight"},
    {"model.layers.{}.self_attn.q_a_layernorm.weight", "blk.{}.attn_q_a_norm.weight"},
    {"model.layers.{}.self_attn.q_b_proj.weight", "blk.{}.attn_q_b.weight"},
    {"model.layers.{}.self_attn.kv_a_proj_with_mqa.weight", "blk.{}.attn_kv_a_mqa.weight"},
    {"model.layers.{}.self_attn.kv_a_layernorm.weight", "blk.{}.attn_kv_a_norm.weight"},
    {"model.layers.{}.self_attn.kv_b_proj.weight", "blk.{}.attn_kv_b.weight"},
    {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight"},
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight"},
    {"model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight"},  // the leading dense layers
    {"model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight"},
    {"model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight"},
    {"model.layers.{}.mlp.gate.weight", "blk.{}.ffn_gate_inp.weight"},
    {"model.layers.{}.mlp.shared_experts.gate_proj.weight", "blk.{}.ffn_gate_shexp.weight"},
    {"model.layers.{}.mlp.shared_experts.up_proj.weight", "blk.{}.ffn_up_shexp.weight"},
    {"model.layers.{}.mlp.shared_experts.down_proj.weight", "blk.{}.ffn_down_shexp.weight"},
};

constexpr NameMap kExperts[] = {
    {"model.layers.{}.mlp.experts.{e}.gate_proj.weight", "blk.{}.ffn_gate_exps.weight"},
    {"model.layers.{}.mlp.experts.{e}.down_proj.weight", "blk.{}.ffn_down_exps.weight"},
    {"model.layers.{}.mlp.experts.{e}.up_proj.weight", "blk.{}.ffn_up_exps.weight"},
};

}  // namespace

extern const HfArch kHfQwen2Moe{"Qwen2MoeForCausalLM", "qwen2moe", qwen2moe_keys, kGlobals, kLayers, kExperts, nullptr};
extern const HfArch kHfDeepseek2{"DeepseekV2ForCausalLM", "deepseek2", deepseek2_keys, kGlobals, kDeepseek2Layers,
                                 kExperts, nullptr};
extern const HfArch kHfOlmoe{"OlmoeForCausalLM", "olmoe", olmoe_keys, kGlobals, kLayers, kExperts, nullptr};

}  // namespace tessera::convert
