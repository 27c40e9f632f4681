// The LLaMA family as the reference converter maps it (convert_hf_to_gguf.py: LlamaModel
// for LLaMA, Mistral and Mixtral; Qwen2Model for Qwen2): HF's model.layers.N.* names, the
// q/k rows of LLaMA permuted for GGUF's adjacent-pair rotation (Qwen2's are not: its GGUF
// rotates NeoX-style halves), Qwen2's q/k/v biases, Mixtral's experts stacked into
// ffn_*_exps, LLaMA 3's rope_freqs computed from rope_scaling, and Baichuan's fused W_pack
// split into q, k (both permuted as LLaMA's) and v.
#include <cmath>
#include <map>
#include <numbers>

#include "convert/hf_arch.h"

namespace tessera::convert {
namespace {

struct Dims {
  int64_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, head_dim, n_expert;
};

Result<Dims> dims(const HfConfig& c) {
  Dims d{};
  for (auto [key, field] : {std::pair{"hidden_size", &d.n_embd}, std::pair{"num_hidden_layers", &d.n_layer},
                            std::pair{"num_attention_heads", &d.n_head}, std::pair{"intermediate_size", &d.n_ff},
                            std::pair{"vocab_size", &d.n_vocab}}) {
    Result<int64_t> v = c.integer(key);
    if (!v) return v.status();
    if (*v <= 0) return Status::error("convert: config.json '" + std::string(key) + "' must be positive");
    *field = *v;
  }
  d.n_head_kv = c.integer_or("num_key_value_heads", d.n_head);
  d.head_dim = c.integer_or("head_dim", d.n_embd / d.n_head);
  d.n_expert = c.integer_or("num_local_experts", 0);
  if (d.n_head_kv <= 0 || d.n_head % d.n_head_kv != 0 || d.head_dim <= 0 || d.head_dim % 2 != 0) {
    return Status::error("convert: config.json's heads (" + std::to_string(d.n_head) + " query, " +
                         std::to_string(d.n_head_kv) + " key/value, head_dim " + std::to_string(d.head_dim) +
                         ") do not make grouped-query attention");
  }
  return d;
}

/// LLaMA 3's rope_freqs: the divisor of each rotary pair's frequency (LlamaModel's
/// generate_extra_tensors for rope_scaling.rope_type "llama3").
std::vector<float> llama3_rope_freqs(const HfConfig& c, int64_t head_dim) {
  const nlohmann::json& s = c.json()["rope_scaling"];
  const double base = c.number_or("rope_theta", 10000.0);
  const double factor = s.value("factor", 8.0);
  const double low = s.value("low_freq_factor", 1.0);
  const double high = s.value("high_freq_factor", 4.0);
  const double old_ctx = s.value("original_max_position_embeddings", 8192.0);
  const double low_wavelen = old_ctx / low;
  const double high_wavelen = old_ctx / high;
  std::vector<float> out;
  for (int64_t i = 0; i < head_dim; i += 2) {
    const double freq = 1.0 / std::pow(base, double(i) / double(head_dim));
    const double wavelen = 2 * std::numbers::pi / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(float(factor));
    } else {
      const double smooth = (old_ctx / wavelen - low) / (high - low);
      out.push_back(float(1.0 / ((1 - smooth) / factor + smooth)));
    }
  }
  return out;
}

std::string rope_type(const HfConfig& c) {
  if (!c.has("rope_scaling") || !c.json()["rope_scaling"].is_object()) return "";
  const nlohmann::json& s = c.json()["rope_scaling"];
  if (s.contains("rope_type") && s["rope_type"].is_string()) return s["rope_type"].get<std::string>();
  if (s.contains("type") && s["type"].is_string()) return s["type"].get<std::string>();
  return "";
}

/// LlamaModel's additions: the vocabulary size, the rotary dims, the head size where it is
/// not n_embd / n_head, linear or YaRN rope scaling (LLaMA 3's becomes rope_freqs).
Status llama_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  TESSERA_RETURN_IF_ERROR(base_keys(c, arch, w));
  Result<Dims> d = dims(c);
  if (!d) return d.status();
  const std::string a = arch + ".";
  w.set(a + "vocab_size", uint32_t(d->n_vocab));
  w.set(a + "rope.dimension_count", uint32_t(d->head_dim));
  const std::string rt = rope_type(c);
  if (rt == "linear") {
    w.set(a + "rope.scaling.type", std::string("linear"));
    w.set(a + "rope.scaling.factor", float(c.json()["rope_scaling"].value("factor", 1.0)));
  } else if (rt == "yarn") {
    const nlohmann::json& s = c.json()["rope_scaling"];
    w.set(a + "rope.scaling.type", std::string("yarn"));
    w.set(a + "rope.scaling.factor", float(s.value("factor", 1.0)));
    w.set(a + "rope.scaling.original_context_length",
          uint32_t(s.value("original_max_position_embeddings", int64_t(4096))));
  } else if (!rt.empty() && rt != "llama3" && rt != "default") {
    return Status::error("convert: config.json rope_scaling type '" + rt + "' is not converted for " + arch);
  }
  return Status::ok();
}

/// LLaMA 3's rope_freqs, where rope_scaling asks for them.
Result<std::vector<TensorPlan>> llama_generated(const HfConfig& c) {
  if (rope_type(c) != "llama3") return std::vector<TensorPlan>{};
  Result<Dims> d = dims(c);
  if (!d) return d.status();
  TensorPlan f;
  f.name = "rope_freqs.weight";
  f.generated = llama3_rope_freqs(c, d->head_dim);
  f.shape = {int64_t(f.generated.size())};
  f.keep_f32 = true;
  return std::vector<TensorPlan>{std::move(f)};
}

constexpr NameMap kGlobals[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},  // absent when tied to the embedding
};

/// LLaMA's layers; `rope` is its q/k permutation (Qwen2 has none).
#define TESSERA_LLAMA_LAYER(rope)                                                                 \
  {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight"},                           \
  {"model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight", rope},                       \
  {"model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight", rope},                       \
  {"model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight"},                             \
  {"model.layers.{}.self_attn.q_proj.bias", "blk.{}.attn_q.bias"},                                 \
  {"model.layers.{}.self_attn.k_proj.bias", "blk.{}.attn_k.bias"},                                 \
  {"model.layers.{}.self_attn.v_proj.bias", "blk.{}.attn_v.bias"},                                 \
  {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight"},                        \
  {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight"},                   \
  {"model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight"},                              \
  {"model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight"},                                  \
  {"model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight"},                              \
  {"model.layers.{}.block_sparse_moe.gate.weight", "blk.{}.ffn_gate_inp.weight"}

constexpr NameMap kLlamaLayers[] = {TESSERA_LLAMA_LAYER(Transform::PermuteRope)};
constexpr NameMap kQwen2Layers[] = {TESSERA_LLAMA_LAYER(Transform::None)};
#undef TESSERA_LLAMA_LAYER

/// Mixtral's experts: w1 the gate, w2 down, w3 up.
constexpr NameMap kMixtralExperts[] = {
    {"model.layers.{}.block_sparse_moe.experts.{e}.w1.weight", "blk.{}.ffn_gate_exps.weight"},
    {"model.layers.{}.block_sparse_moe.experts.{e}.w2.weight", "blk.{}.ffn_down_exps.weight"},
    {"model.layers.{}.block_sparse_moe.experts.{e}.w3.weight", "blk.{}.ffn_up_exps.weight"},
};

/// GraniteModel (a LlamaModel without head_dim): its four multipliers as GGUF's scales.
Status granite_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  HfConfig without = c;
  without.erase("head_dim");  // the reference ignores it for Granite
  TESSERA_RETURN_IF_ERROR(llama_keys(without, arch, w));
  const std::string a = arch + ".";
  for (auto [from, key] : {std::pair{"attention_multiplier", "attention.scale"},
                           std::pair{"embedding_multiplier", "embedding_scale"},
                           std::pair{"residual_multiplier", "residual_scale"}, std::pair{"logits_scaling", "logit_scale"}}) {
    if (c.number_or(from, 0) != 0) w.set(a + key, float(c.number_or(from, 0)));
  }
  return Status::ok();
}

/// BaichuanModel's keys: the context under any of three names, the rotary dims n_embd /
/// n_head, the data layout of its permuted q/k, linear rope scaling.
Status baichuan_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  Result<std::map<std::string, int64_t>> ints =
      c.integers({"num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads"});
  if (!ints) return ints.status();
  std::map<std::string, int64_t>& v = *ints;
  const char* ctx = c.has("max_sequence_length")       ? "max_sequence_length"
                    : c.has("max_position_embeddings") ? "max_position_embeddings"
                                                       : "model_max_length";
  Result<int64_t> n_ctx = c.integer(ctx);
  Result<double> eps = c.number("rms_norm_eps");
  if (!n_ctx) return n_ctx.status();
  if (!eps) return eps.status();
  const std::string a = arch + ".";
  w.set(a + "tensor_data_layout", std::string("Meta AI original pth"));
  w.set(a + "context_length", uint32_t(*n_ctx));
  w.set(a + "embedding_length", uint32_t(v["hidden_size"]));
  w.set(a + "block_count", uint32_t(v["num_hidden_layers"]));
  w.set(a + "feed_forward_length", uint32_t(v["intermediate_size"]));
  w.set(a + "rope.dimension_count", uint32_t(v["hidden_size"] / v["num_attention_heads"]));
  w.set(a + "attention.head_count", uint32_t(v["num_attention_heads"]));
  w.set(a + "attention.head_count_kv", uint32_t(c.integer_or("num_key_value_heads", v["num_attention_heads"])));
  w.set(a + "attention.layer_norm_rms_epsilon", float(*eps));
  if (rope_type(c) == "linear" && c.json()["rope_scaling"].contains("factor")) {
    w.set(a + "rope.scaling.type", std::string("linear"));
    w.set(a + "rope.scaling.factor", float(c.json()["rope_scaling"].value("factor", 1.0)));
  }
  return Status::ok();
}

/// Baichuan: LLaMA's blocks with q, k and v fused in W_pack (thirds of its rows).
constexpr NameMap kBaichuanLayers[] = {
    {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight"},
    {"model.layers.{}.self_attn.W_pack.weight", "blk.{}.attn_q.weight", Transform::PermuteRope, 0, 3},
    {"model.layers.{}.self_attn.W_pack.weight", "blk.{}.attn_k.weight", Transform::PermuteRope, 1, 3},
    {"model.layers.{}.self_attn.W_pack.weight", "blk.{}.attn_v.weight", Transform::None, 2, 3},
    {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight"},
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight"},
    {"model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight"},
    {"model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight"},
    {"model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight"},
};

}  // namespace

extern const HfArch kHfBaichuan{"BaichuanForCausalLM", "baichuan", baichuan_keys, kGlobals, kBaichuanLayers, {},
                                nullptr};
extern const HfArch kHfBaichuan2{"BaiChuanForCausalLM", "baichuan", baichuan_keys, kGlobals, kBaichuanLayers, {},
                                 nullptr};
extern const HfArch kHfGranite{"GraniteForCausalLM", "granite", granite_keys, kGlobals, kLlamaLayers, {}, nullptr};
extern const HfArch kHfLlama{"LlamaForCausalLM", "llama", llama_keys, kGlobals, kLlamaLayers, kMixtralExperts,
                             llama_generated};
extern const HfArch kHfMistral{"MistralForCausalLM", "llama", llama_keys, kGlobals, kLlamaLayers, kMixtralExperts,
                               llama_generated};
extern const HfArch kHfMixtral{"MixtralForCausalLM", "llama", llama_keys, kGlobals, kLlamaLayers, kMixtralExperts,
                               llama_generated};
extern const HfArch kHfQwen2{"Qwen2ForCausalLM", "qwen2", base_keys, kGlobals, kQwen2Layers, {}, nullptr};

}  // namespace tessera::convert
