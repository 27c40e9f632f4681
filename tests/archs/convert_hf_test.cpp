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

struct HfCase {
  const char* model;    // under ../shared
  const char* hf_arch;  // config.json architectures[0]
  bool permute;         // LLaMA's q/k rows
  /// Made by the reference converter: no <arch>.* key beyond its own may be written.
  bool exact_keys;
  /// Compare the logits: not for llama3, whose rope_freqs are the test file's own (no config
  /// gives them).
  bool logits;
};

constexpr HfCase kCases[] = {
    {"archs/models/llama3.gguf", "LlamaForCausalLM", true, true, false},
    {"archs/models/qwen2.gguf", "Qwen2ForCausalLM", false, true, true},
    {"archs2/models/mixtral.gguf", "MixtralForCausalLM", true, true, true},
    {"models/mini-llama-f16.gguf", "MistralForCausalLM", true, false, true},
};

/// rope_freqs for Llama 3.1's published rope_scaling at head_dim 32, base 1e4 (the
/// reference converter's formula, evaluated in Python).
const std::vector<float> kLlama3RopeFreqs = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1.9624499628340775f, 4.681482597220152f,
                                             8, 8, 8};

/// The HF name of a GGUF tensor (empty: not in a checkpoint, e.g. rope_freqs).
std::string hf_name(const std::string& g) {
  static const std::map<std::string, std::string> globals = {{"token_embd.weight", "model.embed_tokens.weight"},
                                                             {"output_norm.weight", "model.norm.weight"},
                                                             {"output.weight", "lm_head.weight"}};
  if (globals.count(g)) return globals.at(g);
  if (!g.starts_with("blk.")) return "";
  const size_t dot = g.find('.', 4);
  const std::string il = g.substr(4, dot - 4), rest = g.substr(dot + 1);
  static const std::map<std::string, std::string> layer = {
      {"attn_norm.weight", "input_layernorm.weight"},     {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},       {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},           {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},           {"attn_output.weight", "self_attn.o_proj.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},            {"ffn_down.weight", "mlp.down_proj.weight"},
      {"ffn_gate_inp.weight", "block_sparse_moe.gate.weight"}};
  return "model.layers." + il + "." + layer.at(rest);
}

int64_t key_int(const gguf::File& f, const std::string& key) { return f.find(key)->as_int().value(); }

json config_of(const gguf::File& f, const HfCase& c) {
  const std::string a = *f.find("general.architecture")->as_string() + ".";
  json j = {{"architectures", {c.hf_arch}},
            {"hidden_size", key_int(f, a + "embedding_length")},
            {"num_hidden_layers", key_int(f, a + "block_count")},
            {"num_attention_heads", key_int(f, a + "attention.head_count")},
            {"num_key_value_heads", key_int(f, a + "attention.head_count_kv")},
            {"intermediate_size", key_int(f, a + "feed_forward_length")},
            {"vocab_size", f.find_tensor("token_embd.weight")->ne[1]},
            {"max_position_embeddings", key_int(f, a + "context_length")},
            {"rms_norm_eps", f.find(a + "attention.layer_norm_rms_epsilon")->as_float().value()},
            {"rope_theta", f.find(a + "rope.freq_base")->as_float().value()},
            {"tie_word_embeddings", f.find_tensor("output.weight") == nullptr}};
  if (f.find(a + "expert_count")) {
    j["num_local_experts"] = key_int(f, a + "expert_count");
    j["num_experts_per_tok"] = key_int(f, a + "expert_used_count");
  }
  if (f.find_tensor("rope_freqs.weight")) {  // LLaMA 3.1's published settings
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
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
    if (t.name.ends_with("_exps.weight")) {  // one tensor per expert: w1 gate, w2 down, w3 up
      const std::string il = t.name.substr(4, t.name.find('.', 4) - 4);
      const char* w = t.name.find("gate") != std::string::npos ? "w1" : t.name.find("down") != std::string::npos ? "w2" : "w3";
      const size_t per = t.nbytes / size_t(t.ne[2]);
      for (int64_t e = 0; e < t.ne[2]; ++e) {
        out.push_back({"model.layers." + il + ".block_sparse_moe.experts." + std::to_string(e) + "." + w + ".weight", dt,
                       {t.ne[1], t.ne[0]}, std::vector<uint8_t>(t.data + size_t(e) * per, t.data + size_t(e + 1) * per)});
      }
      continue;
    }
    const std::string name = hf_name(t.name);
    if (name.empty()) continue;
    std::vector<int64_t> shape;
    for (int d = t.n_dims - 1; d >= 0; --d) shape.push_back(t.ne[size_t(d)]);
    std::vector<uint8_t> bytes(t.data, t.data + t.nbytes);
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
  const std::vector<HfTensor> all = hf_tensors(**f, c);
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
                         [](const ::testing::TestParamInfo<HfCase>& i) { return std::string(i.param.hf_arch); });

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
