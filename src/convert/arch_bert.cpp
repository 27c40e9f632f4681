// BERT encoders as the reference converter maps them (BertModel): HF's embeddings.* and
// encoder.layer.N.* names (a "bert." prefix dropped), the pooler and the masked-LM head
// left out, non-causal attention, and the pooling that sentence-transformers'
// modules.json names (mean or CLS); Nomic-BERT (NomicBertModel: fused Wqkv, a SwiGLU FFN
// of fc11 (up) and fc12 (gate), rotary positions).
#include <fstream>

#include "convert/hf_arch.h"

namespace tessera::convert {
namespace {

/// The pooling_type of sentence-transformers' Pooling module, where the folder has one.
Result<int> pooling_of(const std::filesystem::path& dir) {
  std::ifstream modules(dir / "modules.json");
  if (!modules) return -1;
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(modules);
    for (const nlohmann::json& mod : m) {
      if (mod.value("type", std::string()) != "sentence_transformers.models.Pooling") continue;
      std::ifstream cfg(dir / mod.value("path", std::string()) / "config.json");
      const nlohmann::json p = nlohmann::json::parse(cfg);
      if (p.value("pooling_mode_mean_tokens", false)) return 1;
      if (p.value("pooling_mode_cls_token", false)) return 2;
      return Status::error("convert: " + (dir / mod.value("path", std::string())).string() +
                           "/config.json: only mean and CLS pooling are converted");
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::error("convert: " + (dir / "modules.json").string() + " or its Pooling config is not valid (" +
                         e.what() + ")");
  }
  return -1;
}

Status bert_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  TESSERA_RETURN_IF_ERROR(base_keys(c, arch, w));
  const std::string a = arch + ".";
  w.set(a + "attention.causal", false);
  Result<int> pooling = pooling_of(c.dir());
  if (!pooling) return pooling.status();
  if (*pooling >= 0) w.set(a + "pooling_type", uint32_t(*pooling));
  // The reference writes it with the vocabulary; it comes from config.json.
  w.set("tokenizer.ggml.token_type_count", uint32_t(c.integer_or("type_vocab_size", 1)));
  return Status::ok();
}

/// NomicBertModel: BERT's keys with a context of 2048 (its config.json's 8192 is reached by
/// rope scaling the engine does not do), the rotary base; the variant the reference accepts.
Status nomic_bert_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  const nlohmann::json& j = c.json();
  const auto is = [&](const char* key, const nlohmann::json& want) { return j.contains(key) && j[key] == want; };
  if (!is("activation_function", "swiglu") || !is("causal", false) || !is("qkv_proj_bias", false) ||
      !is("mlp_fc1_bias", false) || !is("mlp_fc2_bias", false) || !is("prenorm", false) ||
      !is("rotary_emb_fraction", 1.0) || !is("rotary_emb_interleaved", false) || !is("rotary_emb_scale_base", nullptr)) {
    return Status::error("convert: config.json is not the Nomic-BERT that is converted (activation_function swiglu, "
                         "causal, qkv_proj_bias, mlp_fc1_bias, mlp_fc2_bias and prenorm false, rotary_emb_fraction 1, "
                         "rotary_emb_interleaved false, rotary_emb_scale_base null)");
  }
  TESSERA_RETURN_IF_ERROR(bert_keys(c, arch, w));
  if (!c.has("max_position_embeddings")) w.set(arch + ".context_length", uint32_t(2048));
  Result<double> base = c.number("rotary_emb_base");
  if (!base) return base.status();
  w.set(arch + ".rope.freq_base", float(*base));
  return Status::ok();
}

constexpr NameMap kGlobals[] = {
    {"embeddings.word_embeddings.weight", "token_embd.weight"},
    {"embeddings.token_type_embeddings.weight", "token_types.weight"},
    {"embeddings.position_embeddings.weight", "position_embd.weight"},
    {"embeddings.LayerNorm.weight", "token_embd_norm.weight"},
    {"embeddings.LayerNorm.bias", "token_embd_norm.bias"},
};

constexpr NameMap kLayers[] = {
    {"encoder.layer.{}.attention.self.query.weight", "blk.{}.attn_q.weight"},
    {"encoder.layer.{}.attention.self.query.bias", "blk.{}.attn_q.bias"},
    {"encoder.layer.{}.attention.self.key.weight", "blk.{}.attn_k.weight"},
    {"encoder.layer.{}.attention.self.key.bias", "blk.{}.attn_k.bias"},
    {"encoder.layer.{}.attention.self.value.weight", "blk.{}.attn_v.weight"},
    {"encoder.layer.{}.attention.self.value.bias", "blk.{}.attn_v.bias"},
    {"encoder.layer.{}.attention.output.dense.weight", "blk.{}.attn_output.weight"},
    {"encoder.layer.{}.attention.output.dense.bias", "blk.{}.attn_output.bias"},
    {"encoder.layer.{}.attention.output.LayerNorm.weight", "blk.{}.attn_output_norm.weight"},
    {"encoder.layer.{}.attention.output.LayerNorm.bias", "blk.{}.attn_output_norm.bias"},
    {"encoder.layer.{}.intermediate.dense.weight", "blk.{}.ffn_up.weight"},
    {"encoder.layer.{}.intermediate.dense.bias", "blk.{}.ffn_up.bias"},
    {"encoder.layer.{}.output.dense.weight", "blk.{}.ffn_down.weight"},
    {"encoder.layer.{}.output.dense.bias", "blk.{}.ffn_down.bias"},
    {"encoder.layer.{}.output.LayerNorm.weight", "blk.{}.layer_output_norm.weight"},
    {"encoder.layer.{}.output.LayerNorm.bias", "blk.{}.layer_output_norm.bias"},
};

constexpr NameMap kNomicGlobals[] = {
    {"embeddings.word_embeddings.weight", "token_embd.weight"},
    {"embeddings.token_type_embeddings.weight", "token_types.weight"},
    {"emb_ln.weight", "token_embd_norm.weight"},
    {"emb_ln.bias", "token_embd_norm.bias"},
};

constexpr NameMap kNomicLayers[] = {
    {"encoder.layers.{}.attn.Wqkv.weight", "blk.{}.attn_qkv.weight"},
    {"encoder.layers.{}.attn.out_proj.weight", "blk.{}.attn_output.weight"},
    {"encoder.layers.{}.norm1.weight", "blk.{}.attn_output_norm.weight"},
    {"encoder.layers.{}.norm1.bias", "blk.{}.attn_output_norm.bias"},
    {"encoder.layers.{}.mlp.fc11.weight", "blk.{}.ffn_up.weight"},
    {"encoder.layers.{}.mlp.fc12.weight", "blk.{}.ffn_gate.weight"},
    {"encoder.layers.{}.mlp.fc2.weight", "blk.{}.ffn_down.weight"},
    {"encoder.layers.{}.norm2.weight", "blk.{}.layer_output_norm.weight"},
    {"encoder.layers.{}.norm2.bias", "blk.{}.layer_output_norm.bias"},
};

constexpr const char* kDropped[] = {"embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias",
                                    "cls.predictions.*", "cls.seq_relationship.*"};

}  // namespace

extern const HfArch kHfBert{"BertModel", "bert", bert_keys, kGlobals, kLayers, {}, nullptr, "bert.", kDropped};
extern const HfArch kHfNomicBert{"NomicBertModel", "nomic-bert", nomic_bert_keys, kNomicGlobals, kNomicLayers, {},
                                 nullptr, "bert.", kDropped};
extern const HfArch kHfBertMlm{"BertForMaskedLM", "bert", bert_keys, kGlobals, kLayers, {}, nullptr, "bert.", kDropped};

}  // namespace tessera::convert
