// `tessera convert` against the reference converter's own output: each shared model (made
// by convert_hf_to_gguf.py's rules) is turned back into the Hugging Face layout by the
// inverse of those rules, written here independently of the converter's tables (HF names,
// q/k rows un-permuted, experts unstacked, config.json from the keys, the weights in two
// shards with an index), then converted. Every tensor must come back bit for bit, every
// <arch>.* key with its value, and the model must give the same logits. Bad folders are
// refused by name, and no partial output is left.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/hf_tokenizer_files.h"
#include "common/test_util.h"
#include "tessera/context.h"
#include "tessera/convert.h"
#include "tessera/gguf.h"
#include "tessera/model.h"
#include "tessera/quantize.h"
#include "tessera/safetensors.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// How the HF side of a case differs from LLaMA's.
enum class Style { Llama, Mixtral, Moe, Gemma, Gemma2, Olmo2, Starcoder2, Phi3, Deepseek2, Bert };

struct HfCase {
  const char* model;    // under ../shared
  const char* hf_arch;  // config.json architectures[0]
  Style style;
  bool permute;         // LLaMA's q/k rows
  /// Made by the reference converter's rules for every key: no <arch>.* key beyond the
  /// file's may be written. (mini-llama and granite were written without the vocab_size
  /// and rope.dimension_count that the reference's LlamaModel adds; their logits must still
  /// match.)
  bool exact_keys;
  /// Compare the logits: not for llama3, whose rope_freqs are the test file's own (no config
  /// gives them), nor for the encoder (bert: embeddings, not logits).
  bool logits;
};

constexpr HfCase kCases[] = {
    {"archs/models/llama3.gguf", "LlamaForCausalLM", Style::Llama, true, true, false},
    {"archs/models/qwen2.gguf", "Qwen2ForCausalLM", Style::Llama, false, true, true},
    {"archs2/models/mixtral.gguf", "MixtralForCausalLM", Style::Mixtral, true, true, true},
    {"models/mini-llama-f16.gguf", "MistralForCausalLM", Style::Llama, true, false, true},
    {"archs2/models/granite.gguf", "GraniteForCausalLM", Style::Llama, true, false, true},
    {"archs/models/gemma.gguf", "GemmaForCausalLM", Style::Gemma, false, true, true},
    {"archs2/models/gemma2.gguf", "Gemma2ForCausalLM", Style::Gemma2, false, true, true},
    {"archs2/models/qwen2moe.gguf", "Qwen2MoeForCausalLM", Style::Moe, false, true, true},
    {"archs2/models/olmoe.gguf", "OlmoeForCausalLM", Style::Moe, false, true, true},
    {"archs2/models/olmo2.gguf", "Olmo2ForCausalLM", Style::Olmo2, false, true, true},
    {"archs2/models/starcoder2.gguf", "Starcoder2ForCausalLM", Style::Starcoder2, false, true, true},
    {"archs2/models/command-r.gguf", "CohereForCausalLM", Style::Llama, false, true, true},
    {"archs/models/phi3.gguf", "Phi3ForCausalLM", Style::Phi3, false, true, true},
    {"archs2/models/phi3lr.gguf", "Phi3ForCausalLM", Style::Phi3, false, true, true},
    {"archs2/models/deepseek2.gguf", "DeepseekV2ForCausalLM", Style::Deepseek2, false, true, true},
    {"archs2/models/bert.gguf", "BertForMaskedLM", Style::Bert, false, true, false},
};

/// rope_freqs for Llama 3.1's published rope_scaling at head_dim 32, base 1e4 (the
/// reference converter's formula, evaluated in Python).
const std::vector<float> kLlama3RopeFreqs = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1.9624499628340775f, 4.681482597220152f,
                                             8, 8, 8};

/// BERT's names (BertForMaskedLM's: with the "bert." prefix).
std::string bert_name(const std::string& g) {
  static const std::map<std::string, std::string> globals = {
      {"token_embd.weight", "embeddings.word_embeddings.weight"},
      {"token_types.weight", "embeddings.token_type_embeddings.weight"},
      {"position_embd.weight", "embeddings.position_embeddings.weight"},
      {"token_embd_norm.weight", "embeddings.LayerNorm.weight"},
      {"token_embd_norm.bias", "embeddings.LayerNorm.bias"}};
  if (globals.count(g)) return "bert." + globals.at(g);
  const size_t dot = g.find('.', 4);
  const std::string il = g.substr(4, dot - 4), rest = g.substr(dot + 1);
  static const std::map<std::string, std::string> layer = {
      {"attn_q", "attention.self.query"}, {"attn_k", "attention.self.key"}, {"attn_v", "attention.self.value"},
      {"attn_output", "attention.output.dense"}, {"attn_output_norm", "attention.output.LayerNorm"},
      {"ffn_up", "intermediate.dense"}, {"ffn_down", "output.dense"}, {"layer_output_norm", "output.LayerNorm"}};
  const size_t kind = rest.rfind('.');
  return "bert.encoder.layer." + il + "." + layer.at(rest.substr(0, kind)) + rest.substr(kind);
}

/// The HF name of a GGUF tensor (empty: not in a checkpoint, e.g. rope_freqs).
std::string hf_name(const std::string& g, Style style) {
  if (style == Style::Bert) return bert_name(g);
  static const std::map<std::string, std::string> globals = {{"token_embd.weight", "model.embed_tokens.weight"},
                                                             {"output_norm.weight", "model.norm.weight"},
                                                             {"output_norm.bias", "model.norm.bias"},
                                                             {"output.weight", "lm_head.weight"}};
  if (globals.count(g)) return globals.at(g);
  if (!g.starts_with("blk.")) return "";
  const size_t dot = g.find('.', 4);
  const std::string il = g.substr(4, dot - 4), rest = g.substr(dot + 1);
  std::map<std::string, std::string> layer = {
      {"attn_norm.weight", "input_layernorm.weight"},     {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},       {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},           {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},           {"attn_output.weight", "self_attn.o_proj.weight"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"},  {"attn_k_norm.weight", "self_attn.k_norm.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},            {"ffn_down.weight", "mlp.down_proj.weight"},
      {"ffn_gate_inp.weight", "mlp.gate.weight"},         {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"},
      {"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"},
      {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"},
      {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight"}};
  if (style == Style::Mixtral) layer["ffn_gate_inp.weight"] = "block_sparse_moe.gate.weight";
  if (style == Style::Gemma2 || style == Style::Olmo2) {
    layer["post_attention_norm.weight"] = "post_attention_layernorm.weight";
    layer["post_ffw_norm.weight"] = "post_feedforward_layernorm.weight";
  }
  if (style == Style::Gemma2) layer["ffn_norm.weight"] = "pre_feedforward_layernorm.weight";
  if (style == Style::Starcoder2) {
    layer["ffn_up.weight"] = "mlp.c_fc.weight";
    layer["ffn_down.weight"] = "mlp.c_proj.weight";
    layer["ffn_up.bias"] = "mlp.c_fc.bias";
    layer["ffn_down.bias"] = "mlp.c_proj.bias";
    layer["attn_norm.bias"] = "input_layernorm.bias";
    layer["ffn_norm.bias"] = "post_attention_layernorm.bias";
    layer["attn_output.bias"] = "self_attn.o_proj.bias";
  }
  if (style == Style::Deepseek2) {
    layer["attn_kv_a_mqa.weight"] = "self_attn.kv_a_proj_with_mqa.weight";
    layer["attn_kv_a_norm.weight"] = "self_attn.kv_a_layernorm.weight";
    layer["attn_kv_b.weight"] = "self_attn.kv_b_proj.weight";
    layer["ffn_gate_shexp.weight"] = "mlp.shared_experts.gate_proj.weight";
    layer["ffn_up_shexp.weight"] = "mlp.shared_experts.up_proj.weight";
    layer["ffn_down_shexp.weight"] = "mlp.shared_experts.down_proj.weight";
  }
  if (style == Style::Phi3) {
    layer["attn_qkv.weight"] = "self_attn.qkv_proj.weight";
    layer["ffn_up.weight"] = "mlp.gate_up_proj.weight";
  }
  return "model.layers." + il + "." + layer.at(rest);
}

/// The expert tensor of expert `e` for a stacked GGUF name.
std::string hf_expert(const std::string& g, int64_t e, Style style) {
  const std::string il = g.substr(4, g.find('.', 4) - 4);
  const std::string kind = g.find("gate") != std::string::npos ? "gate" : g.find("down") != std::string::npos ? "down" : "up";
  if (style == Style::Mixtral) {
    const char* w = kind == "gate" ? "w1" : kind == "down" ? "w2" : "w3";
    return "model.layers." + il + ".block_sparse_moe.experts." + std::to_string(e) + "." + w + ".weight";
  }
  return "model.layers." + il + ".mlp.experts." + std::to_string(e) + "." + kind + "_proj.weight";
}

int64_t key_int(const gguf::File& f, const std::string& key) { return f.find(key)->as_int().value(); }

json config_of(const gguf::File& f, const HfCase& c) {
  const std::string a = *f.find("general.architecture")->as_string() + ".";
  json j = {{"architectures", {c.hf_arch}}, {"vocab_size", f.find_tensor("token_embd.weight")->ne[1]},
            {"tie_word_embeddings", f.find_tensor("output.weight") == nullptr}};
  // The HF name of each GGUF key.
  const std::vector<std::pair<std::string, std::string>> keys = {
      {"embedding_length", "hidden_size"}, {"block_count", "num_hidden_layers"},
      {"attention.head_count", "num_attention_heads"}, {"attention.head_count_kv", "num_key_value_heads"},
      {"feed_forward_length", "intermediate_size"}, {"context_length", "max_position_embeddings"},
      {"attention.layer_norm_rms_epsilon", "rms_norm_eps"}, {"attention.layer_norm_epsilon", "norm_epsilon"},
      {"rope.freq_base", "rope_theta"}, {"expert_used_count", "num_experts_per_tok"},
      {"expert_feed_forward_length", "moe_intermediate_size"},
      {"expert_shared_feed_forward_length", "shared_expert_intermediate_size"},
      {"attention.key_length", "head_dim"}, {"attn_logit_softcapping", "attn_logit_softcapping"},
      {"final_logit_softcapping", "final_logit_softcapping"}, {"attention.sliding_window", "sliding_window"},
      {"embedding_scale", "embedding_multiplier"}, {"residual_scale", "residual_multiplier"},
      {"attention.scale", "attention_multiplier"},
      {"rope.scaling.original_context_length", "original_max_position_embeddings"},
      {"expert_count", c.style == Style::Mixtral ? "num_local_experts" : "num_experts"},
      {"logit_scale", std::string(c.hf_arch) == "GraniteForCausalLM" ? "logits_scaling" : "logit_scale"}};
  for (const auto& [g, h] : keys) {
    const gguf::Value* v = f.find(a + g);
    if (v == nullptr || (c.style == Style::Deepseek2 && h == "head_dim")) continue;
    if (v->as_int()) {
      j[h] = *v->as_int();
    } else {
      j[h] = *v->as_float();
    }
  }
  if (c.style == Style::Bert) j["type_vocab_size"] = f.find_tensor("token_types.weight")->ne[1];
  if (c.style == Style::Deepseek2) {  // DeepSeek-V2's own names
    const int64_t rope = key_int(f, a + "rope.dimension_count");
    j["first_k_dense_replace"] = key_int(f, a + "leading_dense_block_count");
    j["kv_lora_rank"] = key_int(f, a + "attention.kv_lora_rank");
    j["qk_rope_head_dim"] = rope;
    j["qk_nope_head_dim"] = key_int(f, a + "attention.key_length") - rope;
    j["v_head_dim"] = key_int(f, a + "attention.value_length");
    j["moe_intermediate_size"] = key_int(f, a + "expert_feed_forward_length");
    j["n_routed_experts"] = key_int(f, a + "expert_count");
    j["n_shared_experts"] = key_int(f, a + "expert_shared_count");
    j["routed_scaling_factor"] = *f.find(a + "expert_weights_scale")->as_float();
    j["norm_topk_prob"] = *f.find(a + "expert_weights_norm")->as_bool();
    j["scoring_func"] = key_int(f, a + "expert_gating_func") == 2 ? "sigmoid" : "softmax";
    j.erase("num_experts");
    j["rope_scaling"] = {{"type", "yarn"}, {"factor", *f.find(a + "rope.scaling.factor")->as_float()},
                         {"original_max_position_embeddings", key_int(f, a + "rope.scaling.original_context_length")},
                         {"mscale_all_dim", *f.find(a + "rope.scaling.yarn_log_multiplier")->as_float() / 0.1}};
  }
  if (f.find_tensor("rope_freqs.weight")) {  // LLaMA 3.1's published settings
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  }
  if (const gguf::TensorInfo* lf = f.find_tensor("rope_factors_long.weight")) {
    const gguf::TensorInfo* sf = f.find_tensor("rope_factors_short.weight");
    const auto floats = [](const gguf::TensorInfo* t) {
      std::vector<float> v(size_t(t->ne[0]));
      std::memcpy(v.data(), t->data, v.size() * 4);
      return v;
    };
    j["rope_scaling"] = {{"type", "longrope"}, {"long_factor", floats(lf)}, {"short_factor", floats(sf)}};
  }
  return j;
}

/// Un-permutes LLaMA's q/k rows: GGUF row h·hr + 2i + j back to HF row h·hr + j·hr/2 + i.
std::vector<uint8_t> unpermute(const gguf::TensorInfo& t, int64_t heads) {
  const size_t row = t.nbytes / size_t(t.ne[1]);
  const int64_t hr = t.ne[1] / heads, half = hr / 2;
  std::vector<uint8_t> out(t.nbytes);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        std::memcpy(&out[size_t(h * hr + j * half + i) * row], t.data + size_t(h * hr + 2 * i + j) * row, row);
      }
    }
  }
  return out;
}

struct HfTensor {
  std::string name;
  safetensors::Dtype dtype;
  std::vector<int64_t> shape;  // outermost first
  std::vector<uint8_t> bytes;
};

std::vector<HfTensor> hf_tensors(const gguf::File& f, const HfCase& c) {
  const std::string a = *f.find("general.architecture")->as_string() + ".";
  std::vector<HfTensor> out;
  for (const gguf::TensorInfo& t : f.tensors()) {
    const safetensors::Dtype dt = t.type == DType::F16 ? safetensors::Dtype::F16 : safetensors::Dtype::F32;
    if (t.name.ends_with("_exps.weight")) {  // one tensor per expert
      const size_t per = t.nbytes / size_t(t.ne[2]);
      for (int64_t e = 0; e < t.ne[2]; ++e) {
        out.push_back({hf_expert(t.name, e, c.style), dt, {t.ne[1], t.ne[0]},
                       std::vector<uint8_t>(t.data + size_t(e) * per, t.data + size_t(e + 1) * per)});
      }
      continue;
    }
    const std::string name = hf_name(t.name, c.style);
    if (name.empty()) continue;
    std::vector<int64_t> shape;
    for (int d = t.n_dims - 1; d >= 0; --d) shape.push_back(t.ne[size_t(d)]);
    std::vector<uint8_t> bytes(t.data, t.data + t.nbytes);
    // Gemma's norms: HF holds w where GGUF holds 1 + w (exact: w is near 1).
    if ((c.style == Style::Gemma || c.style == Style::Gemma2) && t.name.ends_with("norm.weight")) {
      std::vector<float> v(t.nbytes / 4);
      std::memcpy(v.data(), t.data, t.nbytes);
      for (float& x : v) x -= 1.0f;
      std::memcpy(bytes.data(), v.data(), t.nbytes);
    }
    if (c.permute && t.name.ends_with("attn_q.weight")) bytes = unpermute(t, key_int(f, a + "attention.head_count"));
    if (c.permute && t.name.ends_with("attn_k.weight")) bytes = unpermute(t, key_int(f, a + "attention.head_count_kv"));
    out.push_back({name, dt, shape, std::move(bytes)});
  }
  return out;
}

/// Writes the HF folder of `model` into `dir`: config.json and two shards with an index.
void write_hf_folder(const std::string& model, const HfCase& c, const fs::path& dir) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open(model);
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config_of(**f, c).dump(2);
  std::vector<HfTensor> all = hf_tensors(**f, c);
  if (c.style == Style::Bert) {  // sentence-transformers' pooling, and what the reference drops
    std::ofstream(dir / "modules.json") << R"([{"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])";
    fs::create_directories(dir / "1_Pooling");
    std::ofstream(dir / "1_Pooling" / "config.json") << R"({"pooling_mode_mean_tokens": true, "pooling_mode_cls_token": false})";
    const int64_t n = key_int(**f, "bert.embedding_length");
    all.push_back({"bert.pooler.dense.weight", safetensors::Dtype::F32, {n, n}, std::vector<uint8_t>(size_t(n * n) * 4)});
    all.push_back({"bert.embeddings.position_ids", safetensors::Dtype::I64, {1, 512}, std::vector<uint8_t>(512 * 8)});
  }
  json weight_map = json::object();
  for (int shard = 0; shard < 2; ++shard) {
    const std::string file = "model-0000" + std::to_string(shard + 1) + "-of-00002.safetensors";
    std::vector<safetensors::WriteTensor> part;
    for (size_t i = 0; i < all.size(); ++i) {
      if (int(i % 2) != shard) continue;
      part.push_back({all[i].name, all[i].dtype, all[i].shape, all[i].bytes});
      weight_map[all[i].name] = file;
    }
    ASSERT_TRUE(safetensors::write((dir / file).string(), part, {{"format", "pt"}}).is_ok());
  }
  std::ofstream(dir / "model.safetensors.index.json") << json{{"metadata", json::object()}, {"weight_map", weight_map}}.dump();
  test::write_hf_tokenizer(**f, dir);
}

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tessera_convert_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

std::vector<float> logits_of(const std::string& path) {
  Result<std::unique_ptr<Model>> m = Model::load(path);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  if (!m) return {};
  ContextParams cp;
  cp.n_ctx = 32;
  Result<std::unique_ptr<Context>> ctx = Context::create(**m, cp);
  EXPECT_TRUE(ctx.is_ok());
  if (!ctx) return {};
  EXPECT_TRUE((*ctx)->decode(std::vector<TokenId>{1, 17, 300, 42, 9}).is_ok());
  const std::span<const float> l = (*ctx)->logits();
  return {l.begin(), l.end()};
}

class ConvertHf : public ::testing::TestWithParam<HfCase> {};

TEST_P(ConvertHf, GivesBackTheReferencesTensorsAndKeys) {
  const HfCase& c = GetParam();
  TESSERA_REQUIRE_SHARED(model, c.model);
  const fs::path dir = temp_dir(c.hf_arch);
  write_hf_folder(model, c, dir / "hf");
  ConvertParams p;
  p.input_dir = (dir / "hf").string();
  p.output_path = (dir / "out.gguf").string();
  Result<ConvertReport> r = convert_checkpoint(p);
  ASSERT_TRUE(r.is_ok()) << r.status().message();

  Result<std::unique_ptr<gguf::File>> ref = gguf::File::open(model);
  Result<std::unique_ptr<gguf::File>> got = gguf::File::open(p.output_path);
  ASSERT_TRUE(ref.is_ok() && got.is_ok());
  EXPECT_EQ((*got)->tensors().size(), (*ref)->tensors().size());
  for (const gguf::TensorInfo& t : (*ref)->tensors()) {
    const gguf::TensorInfo* g = (*got)->find_tensor(t.name);
    ASSERT_NE(g, nullptr) << t.name;
    EXPECT_EQ(g->type, t.type) << t.name;
    EXPECT_EQ(g->ne, t.ne) << t.name;
    if (t.name == "rope_freqs.weight") {  // from config.json, not from the file
      std::vector<float> v(kLlama3RopeFreqs.size());
      ASSERT_EQ(g->nbytes, v.size() * 4);
      std::memcpy(v.data(), g->data, g->nbytes);
      for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], kLlama3RopeFreqs[i], 1e-6) << i;
      continue;
    }
    EXPECT_TRUE(g->nbytes == t.nbytes && std::memcmp(g->data, t.data, t.nbytes) == 0) << t.name << " differs";
  }
  const std::string arch = *(*ref)->find("general.architecture")->as_string();
  EXPECT_EQ(*(*got)->find("general.architecture")->as_string(), arch);
  for (const auto& [key, value] : (*ref)->metadata()) {
    if (!key.starts_with(arch + ".")) continue;
    const gguf::Value* v = (*got)->find(key);
    ASSERT_NE(v, nullptr) << key;
    EXPECT_EQ(v->to_string(), value.to_string()) << key;
  }
  for (const auto& [key, value] : (*got)->metadata()) {
    if (c.exact_keys && key.starts_with(arch + ".")) {
      EXPECT_NE((*ref)->find(key), nullptr) << "extra key " << key;
    }
  }
  EXPECT_TRUE(r->vocab);
  for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.scores",
                          "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.add_bos_token"}) {
    const gguf::Value* want = (*ref)->find(key);
    const gguf::Value* have = (*got)->find(key);
    ASSERT_EQ(want == nullptr, have == nullptr) << key;
    if (want != nullptr) {
      EXPECT_EQ(have->to_string(), want->to_string()) << key;
    }
  }
  if (c.logits) {
    EXPECT_EQ(logits_of(p.output_path), logits_of(model));
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Shared, ConvertHf, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<HfCase>& i) {
                           std::string n = fs::path(i.param.model).stem().string();
                           for (char& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

TEST(ConvertHfQuantized, Q8_0EqualsQuantizingTheF16Conversion) {
  TESSERA_REQUIRE_SHARED(model, kCases[0].model);
  const fs::path dir = temp_dir("q8");
  write_hf_folder(model, kCases[0], dir / "hf");
  ConvertParams p;
  p.input_dir = (dir / "hf").string();
  p.output_path = (dir / "f16.gguf").string();
  ASSERT_TRUE(convert_checkpoint(p).is_ok());
  QuantizeParams qp;
  qp.type_name = "Q8_0";
  ASSERT_TRUE(quantize_model(p.output_path, (dir / "quantized.gguf").string(), qp).is_ok());
  p.type = "q8_0";
  p.output_path = (dir / "direct.gguf").string();
  Result<ConvertReport> r = convert_checkpoint(p);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const auto bytes = [](const fs::path& f) {
    std::ifstream in(f, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes(dir / "direct.gguf"), bytes(dir / "quantized.gguf"));
  fs::remove_all(dir);
}

/// A broken copy of the llama folder: `spoil` changes it; the conversion must fail with
/// `message` and leave no output.
void expect_refused(const std::string& name, const std::function<void(const fs::path&)>& spoil,
                    const std::string& message) {
  TESSERA_REQUIRE_SHARED(model, kCases[0].model);
  const fs::path dir = temp_dir("bad_" + name);
  write_hf_folder(model, kCases[0], dir / "hf");
  spoil(dir / "hf");
  ConvertParams p;
  p.input_dir = (dir / "hf").string();
  p.output_path = (dir / "out.gguf").string();
  Result<ConvertReport> r = convert_checkpoint(p);
  ASSERT_FALSE(r.is_ok()) << name;
  EXPECT_NE(r.status().message().find(message), std::string::npos) << name << ": " << r.status().message();
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename(), "hf") << name << ": left " << e.path();
  }
  fs::remove_all(dir);
}

TEST(ConvertHfBadFolders, EachIsRefusedByName) {
  const std::string shard2 = "model-00002-of-00002.safetensors";
  expect_refused("missing_shard", [&](const fs::path& d) { fs::remove(d / shard2); },
                 "shard '" + shard2 + "' (listed by model.safetensors.index.json) is missing");
  expect_refused("truncated", [&](const fs::path& d) { fs::resize_file(d / shard2, fs::file_size(d / shard2) - 10); },
                 shard2 + ": the tensors cover");
  expect_refused("lying_offsets",
                 [&](const fs::path& d) {
                   std::fstream f(d / shard2, std::ios::in | std::ios::out | std::ios::binary);
                   std::string head(200, '\0');
                   f.read(head.data(), 200);
                   const size_t at = head.find("\"data_offsets\":[0,");
                   ASSERT_NE(at, std::string::npos);
                   f.seekp(std::streamoff(at + 16));
                   f.write("1", 1);  // [0,N] becomes [1,N]
                 },
                 "has 511 bytes (data_offsets [1,512])");
  expect_refused("unknown_arch",
                 [](const fs::path& d) {
                   std::ifstream in(d / "config.json");
                   json j = json::parse(in);
                   j["architectures"] = {"FrobnicatorForCausalLM"};
                   std::ofstream(d / "config.json") << j.dump();
                 },
                 "'FrobnicatorForCausalLM' is not one convert maps");
  expect_refused("left_over",
                 [](const fs::path& d) {
                   const std::vector<float> v = {1, 2};
                   const std::span<const uint8_t> b(reinterpret_cast<const uint8_t*>(v.data()), 8);
                   ASSERT_TRUE(safetensors::write((d / "extra.safetensors").string(),
                                                  {{"model.layers.0.mlp.frob.weight", safetensors::Dtype::F32, {2}, b}})
                                   .is_ok());
                   std::ifstream in(d / "model.safetensors.index.json");
                   json j = json::parse(in);
                   j["weight_map"]["model.layers.0.mlp.frob.weight"] = "extra.safetensors";
                   std::ofstream(d / "model.safetensors.index.json") << j.dump();
                 },
                 "tensor 'model.layers.0.mlp.frob.weight' (extra.safetensors) has no place in a llama GGUF");
  expect_refused("shape",
                 [](const fs::path& d) {
                   std::ifstream in(d / "config.json");
                   json j = json::parse(in);
                   j["intermediate_size"] = 256;
                   std::ofstream(d / "config.json") << j.dump();
                 },
                 "but config.json makes blk.0.ffn_gate.weight [256, 128]");
  expect_refused("no_weights", [](const fs::path& d) { fs::remove(d / "model.safetensors.index.json"); },
                 "has no weights");
}

}  // namespace
}  // namespace tessera
