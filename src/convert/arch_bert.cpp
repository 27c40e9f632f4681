// BERT encoders as the reference converter maps them (BertModel): HF's embeddings.* and
// encoder.layer.N.* names (a "bert." prefix dropped), the pooler and the masked-LM head
// left out, non-causal attention, and the pooling that sentence-transformers'
// modules.json names (mean or CLS).
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

constexpr const char* kDropped[] = {"embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias",
                                    "cls.predictions.*", "cls.seq_relationship.*"};

}  // namespace

extern const HfArch kHfBert{"BertModel", "bert", bert_keys, kGlobals, kLayers, {}, nullptr, "bert.", kDropped};
extern const HfArch kHfBertMlm{"BertForMaskedLM", "bert", bert_keys, kGlobals, kLayers, {}, nullptr, "bert.", kDropped};

}  // namespace tessera::convert
