#include "convert/hf_arch.h"

namespace tessera::convert {

Status base_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  const std::string a = arch + ".";
  // The block count under any of the names the reference looks for.
  const char* layers = "num_hidden_layers";
  for (const char* k : {"n_layers", "num_hidden_layers", "n_layer", "num_layers"}) {
    if (c.has(k)) {
      layers = k;
      break;
    }
  }
  Result<int64_t> n_layer = c.integer(layers);
  if (!n_layer) return n_layer.status();
  w.set(a + "block_count", uint32_t(*n_layer));
  // Each from the first of its names that config.json has (GPT-2-style n_embd, ... second).
  const auto u32 = [&](const char* from, const std::string& key, const char* other = nullptr) {
    if (!c.has(from) && other != nullptr) from = other;
    if (c.has(from)) w.set(a + key, uint32_t(c.integer_or(from, 0)));
  };
  const auto f32 = [&](const char* from, const std::string& key) {
    if (c.has(from)) w.set(a + key, float(c.number_or(from, 0)));
  };
  u32("max_position_embeddings", "context_length", "n_ctx");
  u32("hidden_size", "embedding_length", "n_embd");
  u32("intermediate_size", "feed_forward_length", "n_inner");
  u32("num_attention_heads", "attention.head_count", "n_head");
  u32("num_key_value_heads", "attention.head_count_kv");
  f32("rope_theta", "rope.freq_base");
  f32("rms_norm_eps", "attention.layer_norm_rms_epsilon");
  for (const char* eps : {"layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"}) {
    if (c.has(eps)) {
      f32(eps, "attention.layer_norm_epsilon");
      break;
    }
  }
  u32("num_local_experts", "expert_count");
  u32("num_experts_per_tok", "expert_used_count");
  u32("head_dim", "attention.key_length");
  u32("head_dim", "attention.value_length");
  return Status::ok();
}

}  // namespace tessera::convert
