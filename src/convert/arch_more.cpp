// Architectures whose checkpoints keep LLaMA's module layout with their own twists, none
// permuting q/k (their GGUF files rotate NeoX-style halves, or HF already interleaves):
// OLMo 2 (q/k norms, norms after the attention and the FFN instead of before), StarCoder 2
// (LayerNorms and projections with biases, a plain c_fc/c_proj FFN), Command-R (one
// LayerNorm per layer, the output tied, a logit scale), Phi-3 (fused qkv and gate_up, and
// LongRoPE's factors from rope_scaling).
#include <cmath>
#include <map>

#include "convert/hf_arch.h"

namespace tessera::convert {
namespace {

Status command_r_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  TESSERA_RETURN_IF_ERROR(base_keys(c, arch, w));
  const std::string a = arch + ".";
  // The reference takes model_max_length over max_position_embeddings (Command-R's
  // config.json says 8192 for a model trained on 128k).
  if (c.has("model_max_length")) w.set(a + "context_length", uint32_t(c.integer_or("model_max_length", 0)));
  Result<double> scale = c.number("logit_scale");
  if (!scale) return scale.status();
  w.set(a + "logit_scale", float(*scale));
  w.set(a + "rope.scaling.type", std::string("none"));
  return Status::ok();
}

/// Phi3MiniModel's keys: the rotary dims n_embd / n_head, the original context, the
/// sliding window (0 when absent), and LongRoPE's attention factor.
Status phi3_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  const std::string a = arch + ".";
  Result<std::map<std::string, int64_t>> ints =
      c.integers({"num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
                  "max_position_embeddings", "original_max_position_embeddings", "intermediate_size"});
  if (!ints) return ints.status();
  std::map<std::string, int64_t>& v = *ints;
  Result<double> eps = c.number("rms_norm_eps"), theta = c.number("rope_theta");
  if (!eps) return eps.status();
  if (!theta) return theta.status();
  w.set(a + "context_length", uint32_t(v["max_position_embeddings"]));
  w.set(a + "rope.scaling.original_context_length", uint32_t(v["original_max_position_embeddings"]));
  w.set(a + "embedding_length", uint32_t(v["hidden_size"]));
  w.set(a + "feed_forward_length", uint32_t(v["intermediate_size"]));
  w.set(a + "block_count", uint32_t(v["num_hidden_layers"]));
  w.set(a + "attention.head_count", uint32_t(v["num_attention_heads"]));
  w.set(a + "attention.head_count_kv", uint32_t(v["num_key_value_heads"]));
  w.set(a + "attention.layer_norm_rms_epsilon", float(*eps));
  w.set(a + "rope.dimension_count", uint32_t(v["hidden_size"] / v["num_attention_heads"]));
  w.set(a + "rope.freq_base", float(*theta));
  w.set(a + "attention.sliding_window", uint32_t(c.integer_or("sliding_window", 0)));
  if (!c.has("rope_scaling")) return Status::ok();
  const nlohmann::json& s = c.json()["rope_scaling"];
  const std::string type = s.is_object() && s.contains("type") && s["type"].is_string() ? s["type"].get<std::string>() : "";
  const double scale = double(v["max_position_embeddings"]) / double(v["original_max_position_embeddings"]);
  double attn_factor = 1.0;
  if (type == "su" || type == "longrope") {
    if (scale > 1.0) attn_factor = std::sqrt(1 + std::log(scale) / std::log(double(v["original_max_position_embeddings"])));
  } else if (type == "yarn") {
    if (scale > 1.0) attn_factor = 0.1 * std::log(scale) + 1.0;
  } else {
    return Status::error("convert: config.json rope_scaling type '" + type + "' is not converted for phi3");
  }
  w.set(a + "rope.scaling.attn_factor", float(attn_factor));
  return Status::ok();
}

/// LongRoPE's long and short factors, where rope_scaling has them.
Result<std::vector<TensorPlan>> phi3_generated(const HfConfig& c) {
  std::vector<TensorPlan> out;
  if (!c.has("rope_scaling")) return out;
  const nlohmann::json& s = c.json()["rope_scaling"];
  const int64_t half = c.integer_or("hidden_size", 0) / c.integer_or("num_attention_heads", 1) / 2;
  for (auto [key, name] : {std::pair{"long_factor", "rope_factors_long.weight"},
                           std::pair{"short_factor", "rope_factors_short.weight"}}) {
    if (!s.is_object() || !s.contains(key) || !s[key].is_array() || int64_t(s[key].size()) != half) {
      return Status::error(std::string("convert: config.json rope_scaling needs '") + key + "', " +
                           std::to_string(half) + " numbers (the rotary dims / 2)");
    }
    TensorPlan p;
    p.name = name;
    for (const nlohmann::json& x : s[key]) p.generated.push_back(x.is_number() ? x.get<float>() : 0.0f);
    p.shape = {half};
    p.keep_f32 = true;
    out.push_back(std::move(p));
  }
  return out;
}

constexpr NameMap kGlobals[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"model.norm.bias", "output_norm.bias"},
    {"lm_head.weight", "output.weight"},
};

constexpr NameMap kOlmo2Layers[] = {
    {"model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight"},
    {"model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight"},
    {"model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight"},
    {"model.layers.{}.self_attn.q_norm.weight", "blk.{}.attn_q_norm.weight"},
    {"model.layers.{}.self_attn.k_norm.weight", "blk.{}.attn_k_norm.weight"},
    {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight"},
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.post_attention_norm.weight"},
    {"model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight"},
    {"model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight"},
    {"model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight"},
    {"model.layers.{}.post_feedforward_layernorm.weight", "blk.{}.post_ffw_norm.weight"},
};

constexpr NameMap kStarcoder2Layers[] = {
    {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight"},
    {"model.layers.{}.input_layernorm.bias", "blk.{}.attn_norm.bias"},
    {"model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight"},
    {"model.layers.{}.self_attn.q_proj.bias", "blk.{}.attn_q.bias"},
    {"model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight"},
    {"model.layers.{}.self_attn.k_proj.bias", "blk.{}.attn_k.bias"},
    {"model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight"},
    {"model.layers.{}.self_attn.v_proj.bias", "blk.{}.attn_v.bias"},
    {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight"},
    {"model.layers.{}.self_attn.o_proj.bias", "blk.{}.attn_output.bias"},
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight"},
    {"model.layers.{}.post_attention_layernorm.bias", "blk.{}.ffn_norm.bias"},
    {"model.layers.{}.mlp.c_fc.weight", "blk.{}.ffn_up.weight"},
    {"model.layers.{}.mlp.c_fc.bias", "blk.{}.ffn_up.bias"},
    {"model.layers.{}.mlp.c_proj.weight", "blk.{}.ffn_down.weight"},
    {"model.layers.{}.mlp.c_proj.bias", "blk.{}.ffn_down.bias"},
};

constexpr NameMap kCommandRLayers[] = {
    {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight"},
    {"model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight"},
    {"model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight"},
    {"model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight"},
    {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight"},
    {"model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight"},
    {"model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight"},
    {"model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight"},
};

constexpr NameMap kPhi3Layers[] = {
    {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight"},
    {"model.layers.{}.self_attn.qkv_proj.weight", "blk.{}.attn_qkv.weight"},
    {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight"},
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight"},
    {"model.layers.{}.mlp.gate_up_proj.weight", "blk.{}.ffn_up.weight"},
    {"model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight"},
};

}  // namespace

extern const HfArch kHfOlmo2{"Olmo2ForCausalLM", "olmo2", base_keys, kGlobals, kOlmo2Layers, {}, nullptr};
extern const HfArch kHfStarcoder2{"Starcoder2ForCausalLM", "starcoder2", base_keys, kGlobals, kStarcoder2Layers, {},
                                  nullptr};
extern const HfArch kHfCommandR{"CohereForCausalLM", "command-r", command_r_keys, kGlobals, kCommandRLayers, {},
                                nullptr};
extern const HfArch kHfPhi3{"Phi3ForCausalLM", "phi3", phi3_keys, kGlobals, kPhi3Layers, {}, phi3_generated};

}  // namespace tessera::convert
