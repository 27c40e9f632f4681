#include "model/hparams.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "tessera/limits.h"

namespace tessera {
namespace {

constexpr int64_t kMaxSize = limits::kMaxModelSize;
constexpr int64_t kMaxLayers = limits::kMaxLayers;

/// An integer key that must be present, in 1..max.
/// `limit` names the bound (limits.h) for the message.
Status read_positive(const gguf::File& f, const std::string& key, int64_t* out, int64_t max = kMaxSize,
                     const char* limit = "kMaxModelSize") {
  Result<int64_t> v = f.get_int(key);
  if (!v) return v.status();
  if (*v <= 0 || *v > max) {
    return Status::error("model: key '" + key + "' = " + std::to_string(*v) + " is out of range (1 to " +
                         std::to_string(max) + ", tessera's limit " + limit + ")");
  }
  *out = *v;
  return Status::ok();
}

/// An optional integer key; `*out` keeps its value when the key is absent.
Status read_optional_positive(const gguf::File& f, const std::string& key, int64_t* out) {
  if (f.find(key) == nullptr) return Status::ok();
  return read_positive(f, key, out);
}

enum class FloatRange { NonNegative, Positive };

/// An optional float key, finite (as a float) and in `range`; `*out` keeps its value when
/// the key is absent.
Status read_optional_float(const gguf::File& f, const std::string& key, float* out, FloatRange range) {
  if (f.find(key) == nullptr) return Status::ok();
  Result<double> v = f.get_float(key);
  if (!v) return v.status();
  // Checked as a double: a value beyond float's range has no float to convert to.
  const bool finite = std::isfinite(*v) && std::fabs(*v) <= double(std::numeric_limits<float>::max());
  if (!finite || (range == FloatRange::Positive ? !(*v > 0) : !(*v >= 0))) {
    char value[32];
    std::snprintf(value, sizeof value, "%g", *v);
    return Status::error("model: key '" + key + "' = " + value + " must be a finite number " +
                         (range == FloatRange::Positive ? "> 0" : ">= 0"));
  }
  *out = float(*v);
  return Status::ok();
}

/// <arch>.rope.scaling.*: the type, factor, original context and the attention factor and
/// YaRN's log multiplier (reference: llama_model::load_hparams, llama_init_from_model).
Status read_rope_scaling(const gguf::File& f, const std::string& p, HParams& h) {
  using enum FloatRange;
  if (f.find(p + "rope.scaling.type") != nullptr) {
    Result<std::string> type = f.get_string(p + "rope.scaling.type");
    if (!type) return type.status();
    if (*type == "none") {
      h.rope_scaling = RopeScaling::None;
    } else if (*type == "linear") {
      h.rope_scaling = RopeScaling::Linear;
    } else if (*type == "yarn") {
      h.rope_scaling = RopeScaling::Yarn;
    } else if (*type == "longrope") {
      h.rope_scaling = RopeScaling::LongRope;
    } else {
      return Status::error("model: key '" + p + "rope.scaling.type' = '" + *type +
                           "' is not a RoPE scaling tessera knows (none, linear, yarn, longrope)");
    }
  }
  float scaling_factor = 0.0f;  // 0: none
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "rope.scaling.factor", &scaling_factor, NonNegative));
  if (scaling_factor > 0.0f) h.rope_freq_scale_train = 1.0f / scaling_factor;
  if (h.rope_scaling != RopeScaling::None) h.rope_freq_scale = h.rope_freq_scale_train;
  if (!std::isfinite(h.rope_freq_scale_train)) {
    return Status::error("model: key '" + p + "rope.scaling.factor' is too small: its inverse is not a finite float");
  }
  h.n_ctx_orig = h.n_ctx_train;
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "rope.scaling.original_context_length", &h.n_ctx_orig));
  if (h.n_ctx_orig > std::numeric_limits<int32_t>::max()) {
    return Status::error("model: key '" + p + "rope.scaling.original_context_length' = " +
                         std::to_string(h.n_ctx_orig) + " is out of range (at most 2^31 - 1)");
  }
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "rope.scaling.attn_factor", &h.rope_attn_factor, Positive));
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "rope.scaling.yarn_log_multiplier", &h.rope_yarn_log_mul, NonNegative));
  return Status::ok();
}

/// The scales and caps of Gemma 2, Granite and Command-R (0 or absent: none).
Status read_scales(const gguf::File& f, const std::string& p, HParams& h) {
  using enum FloatRange;
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "attn_logit_softcapping", &h.attn_softcap, NonNegative));
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "final_logit_softcapping", &h.final_softcap, NonNegative));
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "embedding_scale", &h.embd_scale, Positive));
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "residual_scale", &h.residual_scale, Positive));
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "attention.scale", &h.attn_scale, Positive));
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "logit_scale", &h.logit_scale, Positive));
  return Status::ok();
}

/// An optional bool key; `*out` keeps its value when the key is absent.
Status read_optional_bool(const gguf::File& f, const std::string& key, bool* out) {
  const gguf::Value* v = f.find(key);
  if (v == nullptr) return Status::ok();
  const std::optional<bool> b = v->as_bool();
  if (!b) return Status::error("model: key '" + key + "' is not a bool");
  *out = *b;
  return Status::ok();
}

/// The mixture-of-experts keys (all optional: a dense file has none).
Status read_experts(const gguf::File& f, const std::string& p, HParams& h) {
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "expert_count", &h.n_expert));
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "expert_used_count", &h.n_expert_used));
  h.n_ff_exp = h.n_ff;
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "expert_feed_forward_length", &h.n_ff_exp));
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "expert_shared_count", &h.n_expert_shared));
  h.n_ff_shexp = h.n_expert_shared > 0 ? h.n_expert_shared * h.n_ff_exp : h.n_ff;
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "expert_shared_feed_forward_length", &h.n_ff_shexp));
  if (f.find(p + "leading_dense_block_count") != nullptr) {
    Result<int64_t> n = f.get_int(p + "leading_dense_block_count");
    if (!n) return n.status();
    if (*n < 0 || *n > h.n_layer) {
      return Status::error("model: key '" + p + "leading_dense_block_count' = " + std::to_string(*n) +
                           " is out of range (0 to block_count)");
    }
    h.n_layer_dense_lead = *n;
  }
  if (f.find(p + "expert_gating_func") != nullptr) {
    Result<int64_t> g = f.get_int(p + "expert_gating_func");
    if (!g) return g.status();
    if (*g != 1 && *g != 2) {
      return Status::error("model: key '" + p + "expert_gating_func' = " + std::to_string(*g) +
                           " is not 1 (softmax) or 2 (sigmoid)");
    }
    h.expert_gating = *g == 1 ? ExpertGating::Softmax : ExpertGating::Sigmoid;
  }
  TESSERA_RETURN_IF_ERROR(read_optional_bool(f, p + "expert_weights_norm", &h.expert_weights_norm));
  return read_optional_float(f, p + "expert_weights_scale", &h.expert_weights_scale, FloatRange::NonNegative);
}

Status check_shape(const HParams& h) {
  if (h.n_head_kv > h.n_head || h.n_head % h.n_head_kv != 0) {
    return Status::error("model: head_count " + std::to_string(h.n_head) +
                         " is not a multiple of head_count_kv " + std::to_string(h.n_head_kv));
  }
  if (h.n_rot > h.head_dim || h.n_rot % 2 != 0) {
    return Status::error("model: rope.dimension_count " + std::to_string(h.n_rot) +
                         " must be even and at most the head size " + std::to_string(h.head_dim));
  }
  return Status::ok();
}

}  // namespace

Result<HParams> read_hparams(const gguf::File& f) {
  HParams h;
  Result<std::string> arch = f.get_string("general.architecture");
  if (!arch) return arch.status();
  h.arch = *arch;
  const std::string p = h.arch + ".";

  TESSERA_RETURN_IF_ERROR(read_positive(f, p + "context_length", &h.n_ctx_train));
  TESSERA_RETURN_IF_ERROR(read_positive(f, p + "embedding_length", &h.n_embd));
  TESSERA_RETURN_IF_ERROR(read_positive(f, p + "block_count", &h.n_layer, kMaxLayers, "kMaxLayers"));
  TESSERA_RETURN_IF_ERROR(read_positive(f, p + "feed_forward_length", &h.n_ff));
  TESSERA_RETURN_IF_ERROR(read_positive(f, p + "attention.head_count", &h.n_head));
  h.n_head_kv = h.n_head;
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "attention.head_count_kv", &h.n_head_kv));
  if (h.n_embd % h.n_head != 0 && f.find(p + "attention.key_length") == nullptr) {
    return Status::error("model: embedding_length " + std::to_string(h.n_embd) +
                         " is not a multiple of head_count " + std::to_string(h.n_head));
  }
  h.head_dim = h.n_embd / h.n_head;
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "attention.key_length", &h.head_dim));
  // Another value head size than the key's: decide_variant refuses it where the variant
  // has no place for one.
  h.head_dim_v = h.head_dim;
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "attention.value_length", &h.head_dim_v));
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "attention.q_lora_rank", &h.n_lora_q));
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "attention.kv_lora_rank", &h.n_lora_kv));
  h.n_rot = h.head_dim;
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "rope.dimension_count", &h.n_rot));

  if (const gguf::Value* tokens = f.find("tokenizer.ggml.tokens")) {
    if (!tokens->is_array() || tokens->array_size() == 0) {
      return Status::error("model: key 'tokenizer.ggml.tokens' is " +
                           std::string(tokens->is_array() ? "an empty array" : "not an array"));
    }
    h.n_vocab = int64_t(tokens->array_size());
  }
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "vocab_size", &h.n_vocab));
  if (h.n_vocab <= 0) {
    return Status::error("model: no vocabulary size (tokenizer.ggml.tokens or " + p + "vocab_size)");
  }

  using enum FloatRange;
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "attention.layer_norm_rms_epsilon", &h.rms_eps, NonNegative));
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "attention.layer_norm_epsilon", &h.norm_eps, NonNegative));
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "rope.freq_base", &h.rope_freq_base, Positive));
  TESSERA_RETURN_IF_ERROR(read_rope_scaling(f, p, h));
  TESSERA_RETURN_IF_ERROR(read_scales(f, p, h));
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "attention.max_alibi_bias", &h.alibi_max_bias, NonNegative));
  TESSERA_RETURN_IF_ERROR(read_optional_float(f, p + "attention.clamp_kqv", &h.clamp_kqv, NonNegative));
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, p + "attention.sliding_window", &h.n_swa));
  if (const gguf::Value* v = f.find(p + "use_parallel_residual")) {
    const std::optional<bool> b = v->as_bool();
    if (!b) return Status::error("model: key '" + p + "use_parallel_residual' is not a bool");
    h.parallel_residual = *b;
  }
  TESSERA_RETURN_IF_ERROR(read_experts(f, p, h));
  if (const gguf::Value* v = f.find(p + "attention.causal")) {
    const std::optional<bool> b = v->as_bool();
    if (!b) return Status::error("model: key '" + p + "attention.causal' is not a bool");
    h.causal = *b;
  }
  if (f.find(p + "pooling_type") != nullptr) {
    Result<int64_t> v = f.get_int(p + "pooling_type");
    if (!v) return v.status();
    if (*v < 0 || *v > 4) {
      return Status::error("model: key '" + p + "pooling_type' = " + std::to_string(*v) +
                           " is not a pooling (0 none, 1 mean, 2 cls, 3 last, 4 rank)");
    }
    h.pooling_type = *v;
  }
  TESSERA_RETURN_IF_ERROR(read_optional_positive(f, "tokenizer.ggml.token_type_count", &h.n_token_types));
  TESSERA_RETURN_IF_ERROR(check_shape(h));
  return h;
}

}  // namespace tessera
