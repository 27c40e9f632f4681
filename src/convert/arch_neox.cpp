// Architectures with one fused query_key_value projection, as the reference converter maps
// them (convert_hf_to_gguf.py: GPTNeoXModel, BloomModel, FalconModel; Persimmon from the
// last reference that had it): GPT-NeoX's and BLOOM's rows regrouped from per-head [q|k|v]
// to [Q|K|V], Falcon's from per-key/value-group [q…|k|v] to [Q|K|V], Persimmon's kept per
// head (its engine splits them so), and BLOOM's embedding copied as the output.
#include <map>

#include "convert/hf_arch.h"

namespace tessera::convert {
namespace {

Status gptneox_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  Result<std::map<std::string, int64_t>> ints = c.integers(
      {"max_position_embeddings", "hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads"});
  if (!ints) return ints.status();
  std::map<std::string, int64_t>& v = *ints;
  Result<double> pct = c.number("rotary_pct"), eps = c.number("layer_norm_eps");
  if (!pct) return pct.status();
  if (!eps) return eps.status();
  const std::string a = arch + ".";
  w.set(a + "context_length", uint32_t(v["max_position_embeddings"]));
  w.set(a + "embedding_length", uint32_t(v["hidden_size"]));
  w.set(a + "block_count", uint32_t(v["num_hidden_layers"]));
  w.set(a + "feed_forward_length", uint32_t(v["intermediate_size"]));
  w.set(a + "rope.dimension_count", uint32_t(*pct * double(v["hidden_size"] / v["num_attention_heads"])));
  w.set(a + "attention.head_count", uint32_t(v["num_attention_heads"]));
  w.set(a + "use_parallel_residual", c.boolean_or("use_parallel_residual", true));
  w.set(a + "attention.layer_norm_epsilon", float(*eps));
  return Status::ok();
}

/// The first of `keys` config.json has (the reference's find_hparam, for renamed keys).
Result<int64_t> first_of(const HfConfig& c, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (c.has(k)) return c.integer(k);
  }
  return Status::error("convert: config.json has none of '" + std::string(*keys.begin()) + "' and its other names");
}

/// BLOOM: the FFN is always 4·n_embd (its modeling code fixes it); the context is
/// seq_length, or n_embd where that is absent (as the reference writes it).
Status bloom_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  Result<int64_t> n_embd = first_of(c, {"hidden_size", "n_embed"}), n_head = first_of(c, {"n_head", "num_attention_heads"});
  Result<int64_t> n_layer = c.integer("n_layer");
  Result<double> eps = c.number("layer_norm_epsilon");
  for (const Status& s : {n_embd.status(), n_head.status(), n_layer.status(), eps.status()}) TESSERA_RETURN_IF_ERROR(s);
  const std::string a = arch + ".";
  w.set(a + "context_length", uint32_t(c.integer_or("seq_length", *n_embd)));
  w.set(a + "embedding_length", uint32_t(*n_embd));
  w.set(a + "feed_forward_length", uint32_t(4 * *n_embd));
  w.set(a + "block_count", uint32_t(*n_layer));
  w.set(a + "attention.head_count", uint32_t(*n_head));
  w.set(a + "attention.head_count_kv", uint32_t(*n_head));
  w.set(a + "attention.layer_norm_epsilon", float(*eps));
  return Status::ok();
}

/// Falcon: a context of 2048 (config.json has none), the tensor layout the qkv regrouping
/// makes, and (unlike the reference's 4·n_embd) config.json's ffn_hidden_size where given.
Status falcon_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  Result<int64_t> n_layer = first_of(c, {"num_hidden_layers", "n_layer"}), n_head = first_of(c, {"num_attention_heads", "n_head"});
  Result<int64_t> n_embd = c.integer("hidden_size");
  Result<double> eps = c.number("layer_norm_epsilon");
  for (const Status& s : {n_layer.status(), n_head.status(), n_embd.status(), eps.status()}) TESSERA_RETURN_IF_ERROR(s);
  const std::string a = arch + ".";
  w.set(a + "context_length", uint32_t(2048));
  w.set(a + "tensor_data_layout", std::string("jploski"));
  w.set(a + "embedding_length", uint32_t(*n_embd));
  w.set(a + "feed_forward_length", uint32_t(c.integer_or("ffn_hidden_size", 4 * *n_embd)));
  w.set(a + "block_count", uint32_t(*n_layer));
  w.set(a + "attention.head_count", uint32_t(*n_head));
  w.set(a + "attention.head_count_kv", uint32_t(c.integer_or("num_kv_heads", c.integer_or("n_head_kv", 1))));
  w.set(a + "attention.layer_norm_epsilon", float(*eps));
  return Status::ok();
}

/// Persimmon: the keys of the seed's converter (rope.dimension_count the head size; the
/// engine rotates half of it whatever the key says).
Status persimmon_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  Result<int64_t> n_layer = first_of(c, {"num_layers", "num_hidden_layers"});
  Result<std::map<std::string, int64_t>> ints =
      c.integers({"max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads"});
  Result<double> theta = c.number("rope_theta"), eps = c.number("layer_norm_eps");
  for (const Status& s : {n_layer.status(), ints.status(), theta.status(), eps.status()}) TESSERA_RETURN_IF_ERROR(s);
  std::map<std::string, int64_t>& v = *ints;
  const std::string a = arch + ".";
  w.set(a + "context_length", uint32_t(v["max_position_embeddings"]));
  w.set(a + "embedding_length", uint32_t(v["hidden_size"]));
  w.set(a + "block_count", uint32_t(*n_layer));
  w.set(a + "feed_forward_length", uint32_t(v["intermediate_size"]));
  w.set(a + "rope.dimension_count", uint32_t(v["hidden_size"] / v["num_attention_heads"]));
  w.set(a + "attention.head_count", uint32_t(v["num_attention_heads"]));
  w.set(a + "attention.head_count_kv", uint32_t(v["num_attention_heads"]));
  w.set(a + "rope.freq_base", float(*theta));
  w.set(a + "attention.layer_norm_epsilon", float(*eps));
  return Status::ok();
}

constexpr NameMap kNeoxGlobals[] = {
    {"embed_in.weight", "token_embd.weight"},
    {"final_layer_norm.weight", "output_norm.weight"},
    {"final_layer_norm.bias", "output_norm.bias"},
    {"embed_out.weight", "output.weight"},
};

constexpr NameMap kNeoxLayers[] = {
    {"layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight"},
    {"layers.{}.input_layernorm.bias", "blk.{}.attn_norm.bias"},
    {"layers.{}.attention.query_key_value.weight", "blk.{}.attn_qkv.weight", Transform::QkvPerHead},
    {"layers.{}.attention.query_key_value.bias", "blk.{}.attn_qkv.bias", Transform::QkvPerHead},
    {"layers.{}.attention.dense.weight", "blk.{}.attn_output.weight"},
    {"layers.{}.attention.dense.bias", "blk.{}.attn_output.bias"},
    {"layers.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight"},
    {"layers.{}.post_attention_layernorm.bias", "blk.{}.ffn_norm.bias"},
    {"layers.{}.mlp.dense_h_to_4h.weight", "blk.{}.ffn_up.weight"},
    {"layers.{}.mlp.dense_h_to_4h.bias", "blk.{}.ffn_up.bias"},
    {"layers.{}.mlp.dense_4h_to_h.weight", "blk.{}.ffn_down.weight"},
    {"layers.{}.mlp.dense_4h_to_h.bias", "blk.{}.ffn_down.bias"},
};

/// BLOOM's and Falcon's names after "transformer.".
constexpr NameMap kBloomGlobals[] = {
    {"word_embeddings.weight", "token_embd.weight"},
    {"word_embeddings_layernorm.weight", "token_embd_norm.weight"},
    {"word_embeddings_layernorm.bias", "token_embd_norm.bias"},
    {"ln_f.weight", "output_norm.weight"},
    {"ln_f.bias", "output_norm.bias"},
    {"lm_head.weight", "output.weight"},
};

/// BLOOM's and Falcon's blocks; `qkv` is the regrouping of their fused qkv.
#define TESSERA_BLOOM_LAYER(qkv)                                                                 \
  {"h.{}.input_layernorm.weight", "blk.{}.attn_norm.weight"},                                     \
  {"h.{}.input_layernorm.bias", "blk.{}.attn_norm.bias"},                                         \
  {"h.{}.self_attention.query_key_value.weight", "blk.{}.attn_qkv.weight", qkv},                  \
  {"h.{}.self_attention.query_key_value.bias", "blk.{}.attn_qkv.bias", qkv},                      \
  {"h.{}.self_attention.dense.weight", "blk.{}.attn_output.weight"},                              \
  {"h.{}.self_attention.dense.bias", "blk.{}.attn_output.bias"},                                  \
  {"h.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight"},                             \
  {"h.{}.post_attention_layernorm.bias", "blk.{}.ffn_norm.bias"},                                 \
  {"h.{}.mlp.dense_h_to_4h.weight", "blk.{}.ffn_up.weight"},                                      \
  {"h.{}.mlp.dense_h_to_4h.bias", "blk.{}.ffn_up.bias"},                                          \
  {"h.{}.mlp.dense_4h_to_h.weight", "blk.{}.ffn_down.weight"},                                    \
  {"h.{}.mlp.dense_4h_to_h.bias", "blk.{}.ffn_down.bias"}

constexpr NameMap kBloomLayers[] = {TESSERA_BLOOM_LAYER(Transform::QkvPerHead)};
/// Falcon-40B's blocks (new_decoder_architecture) add ln_attn, the attention's own norm,
/// and call the other one ln_mlp.
constexpr NameMap kFalconLayers[] = {TESSERA_BLOOM_LAYER(Transform::QkvGroups),
                                     {"h.{}.ln_attn.weight", "blk.{}.attn_norm_2.weight"},
                                     {"h.{}.ln_attn.bias", "blk.{}.attn_norm_2.bias"},
                                     {"h.{}.ln_mlp.weight", "blk.{}.attn_norm.weight"},
                                     {"h.{}.ln_mlp.bias", "blk.{}.attn_norm.bias"}};
#undef TESSERA_BLOOM_LAYER

/// Persimmon's names after "model.".
constexpr NameMap kPersimmonGlobals[] = {
    {"embed_tokens.weight", "token_embd.weight"},
    {"final_layernorm.weight", "output_norm.weight"},
    {"final_layernorm.bias", "output_norm.bias"},
    {"lm_head.weight", "output.weight"},
};

constexpr NameMap kPersimmonLayers[] = {
    {"layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight"},
    {"layers.{}.input_layernorm.bias", "blk.{}.attn_norm.bias"},
    {"layers.{}.self_attn.query_key_value.weight", "blk.{}.attn_qkv.weight"},
    {"layers.{}.self_attn.query_key_value.bias", "blk.{}.attn_qkv.bias"},
    {"layers.{}.self_attn.dense.weight", "blk.{}.attn_output.weight"},
    {"layers.{}.self_attn.dense.bias", "blk.{}.attn_output.bias"},
    {"layers.{}.self_attn.q_layernorm.weight", "blk.{}.attn_q_norm.weight"},
    {"layers.{}.self_attn.q_layernorm.bias", "blk.{}.attn_q_norm.bias"},
    {"layers.{}.self_attn.k_layernorm.weight", "blk.{}.attn_k_norm.weight"},
    {"layers.{}.self_attn.k_layernorm.bias", "blk.{}.attn_k_norm.bias"},
    {"layers.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight"},
    {"layers.{}.post_attention_layernorm.bias", "blk.{}.ffn_norm.bias"},
    {"layers.{}.mlp.dense_h_to_4h.weight", "blk.{}.ffn_up.weight"},
    {"layers.{}.mlp.dense_h_to_4h.bias", "blk.{}.ffn_up.bias"},
    {"layers.{}.mlp.dense_4h_to_h.weight", "blk.{}.ffn_down.weight"},
    {"layers.{}.mlp.dense_4h_to_h.bias", "blk.{}.ffn_down.bias"},
};

}  // namespace

extern const HfArch kHfGptNeox{"GPTNeoXForCausalLM", "gptneox", gptneox_keys, kNeoxGlobals, kNeoxLayers, {}, nullptr,
                               "gpt_neox."};
extern const HfArch kHfBloom{"BloomForCausalLM", "bloom", bloom_keys, kBloomGlobals, kBloomLayers, {}, nullptr,
                             "transformer.", {}, "word_embeddings.weight"};
extern const HfArch kHfBloomModel{"BloomModel", "bloom", bloom_keys, kBloomGlobals, kBloomLayers, {}, nullptr,
                                  "transformer.", {}, "word_embeddings.weight"};
extern const HfArch kHfFalcon{"FalconForCausalLM", "falcon", falcon_keys, kBloomGlobals, kFalconLayers, {}, nullptr,
                              "transformer."};
extern const HfArch kHfFalconRw{"RWForCausalLM", "falcon", falcon_keys, kBloomGlobals, kFalconLayers, {}, nullptr,
                                "transformer."};
extern const HfArch kHfPersimmon{"PersimmonForCausalLM", "persimmon", persimmon_keys, kPersimmonGlobals,
                                 kPersimmonLayers, {}, nullptr, "model."};

}  // namespace tessera::convert
