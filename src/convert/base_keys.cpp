#include "convert/hf_arch.h"

namespace tessera::convert {

Status base_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  const std::string a = arch + ".";
  Result<int64_t> n_layer = c.integer("num_hidden_layers");
  if (!n_layer) return n_layer.status();
  w.set(a + "block_count", uint32_t(*n_layer));
  const auto u32 = [&](const char* from, const std::string& key) {
    if (c.has(from)) w.set(a + key, uint32_t(c.integer_or(from, 0)));
  };
  const auto f32 = [&](const char* from, const std::string& key) {
    if (c.has(from)) w.set(a + key, float(c.number_or(from, 0)));
  };
  u32("max_position_embeddings", "context_length");
  u32("hidden_size", "embedding_length");
  u32("intermediate_size", "feed_forward_length");
  u32("num_attention_heads", "attention.head_count");
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
