// `tessera convert` against the reference converter's own output: each shared model (made
// by convert_hf_to_gguf.py's rules) is turned back into the Hugging Face layout by the
// inverse of those rules, written here independently of the converter's tables (HF names,
// q/k rows un-permuted, experts unstacked, config.json from the keys, the weights in two
// shards with an index), then converted. Every tensor must come back bit for bit, every
// <arch>.* key with its value, and the model must give the same logits. Bad folders are
// refused by name, and no partial output is left.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <nlohmann/json.hpp>

#include "common/hf_tokenizer_files.h"
#include "convert_hf_inverse.h"
#include "convert_hf_names.h"
#include "core/fp16.h"
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

using Style = test::HfStyle;

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
  /// gives them), nor for the encoders (bert, nomic-bert: embeddings, not logits).
  bool logits;
  /// The shared file's FFN size is one its architecture's HF configuration cannot express
  /// (BLOOM's FFN is always 4·n_embd, Refact's a function of n_embd): the case converts the
  /// shared model with its FFN widened to this size (convert_hf_inverse.h) instead.
  int64_t ffn = 0;
  /// Falcon-40B's layout: the case converts the shared Falcon-7B-style model with a second
  /// norm added to each block (convert_hf_inverse.h).
  bool second_norm = false;
  /// A checkpoint without lm_head.weight, whose embedding the reference copies as the
  /// output (GPT-2): the case converts the shared model with output.weight made that copy.
  bool output_copy = false;
  /// A key the reference writes that the shared file was made without (the only extra one
  /// allowed with exact_keys).
  const char* extra_key = nullptr;
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
    {"archs/models/gpt2.gguf", "GPT2LMHeadModel", Style::Gpt2, false, true, true},
    {"archs/models/gpt2.gguf", "GPT2LMHeadModel", Style::Gpt2, false, true, true, 0, false, true},
    {"archs/models/starcoder.gguf", "GPTBigCodeForCausalLM", Style::Starcoder, false, true, true},
    {"archs/models/refact.gguf", "GPTRefactForCausalLM", Style::Refact, false, true, true, 512},
    {"archs/models/mpt.gguf", "MPTForCausalLM", Style::Mpt, false, true, true},
    {"archs/models/gptneox.gguf", "GPTNeoXForCausalLM", Style::GptNeox, false, true, true},
    {"archs/models/bloom.gguf", "BloomForCausalLM", Style::Bloom, false, true, true, 512},
    // The reference writes falcon.tensor_data_layout and baichuan.tensor_data_layout, which
    // the shared files were written without.
    {"archs/models/falcon.gguf", "FalconForCausalLM", Style::Falcon, false, true, true, 0, false, false,
     "falcon.tensor_data_layout"},
    {"archs/models/falcon.gguf", "FalconForCausalLM", Style::Falcon40b, false, true, true, 0, true, false,
     "falcon.tensor_data_layout"},
    {"archs/models/baichuan.gguf", "BaichuanForCausalLM", Style::Baichuan, true, true, true, 0, false, false,
     "baichuan.tensor_data_layout"},
    {"archs/models/persimmon.gguf", "PersimmonForCausalLM", Style::Persimmon, false, true, true},
    {"archs2/models/nomic-bert.gguf", "NomicBertModel", Style::NomicBert, false, true, false},
};

/// rope_freqs for Llama 3.1's published rope_scaling at head_dim 32, base 1e4 (the
/// reference converter's formula, evaluated in Python).
const std::vector<float> kLlama3RopeFreqs = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1.9624499628340775f, 4.681482597220152f,
                                             8, 8, 8};

int64_t key_int(const gguf::File& f, const std::string& key) { return f.find(key)->as_int().value(); }

struct HfTensor {
  std::string name;
  safetensors::Dtype dtype;
  std::vector<int64_t> shape;  // outermost first
  std::vector<uint8_t> bytes;
};

/// A GGUF tensor's values as its checkpoint holds them: the reference's transforms undone.
std::vector<uint8_t> hf_bytes(const gguf::File& f, const gguf::TensorInfo& t, const HfCase& c) {
  const std::string a = *f.find("general.architecture")->as_string() + ".";
  std::vector<uint8_t> bytes(t.data, t.data + t.nbytes);
  // Gemma's norms: HF holds w where GGUF holds 1 + w (exact: w is near 1).
  if ((c.style == Style::Gemma || c.style == Style::Gemma2) && t.name.ends_with("norm.weight")) {
    std::vector<float> v(t.nbytes / 4);
    std::memcpy(v.data(), t.data, t.nbytes);
    for (float& x : v) x -= 1.0f;
    std::memcpy(bytes.data(), v.data(), t.nbytes);
  }
  if (c.permute && t.name.ends_with("attn_q.weight")) return test::unpermute_rope(t, key_int(f, a + "attention.head_count"));
  if (c.permute && t.name.ends_with("attn_k.weight")) return test::unpermute_rope(t, key_int(f, a + "attention.head_count_kv"));
  const bool qkv = t.name.find(".attn_qkv.") != std::string::npos;
  if (qkv && (c.style == Style::GptNeox || c.style == Style::Bloom)) {
    return test::qkv_to_per_head(t, key_int(f, a + "attention.head_count"));
  }
  if (qkv && (c.style == Style::Falcon || c.style == Style::Falcon40b)) {
    return test::qkv_to_groups(t, key_int(f, a + "attention.head_count"), key_int(f, a + "attention.head_count_kv"));
  }
  if (c.style == Style::Gpt2 && t.n_dims == 2 && t.name.starts_with("blk.")) return test::transposed(t);  // Conv1D
  return bytes;
}

std::vector<HfTensor> hf_tensors(const gguf::File& f, const HfCase& c) {
  std::vector<HfTensor> out;
  std::map<std::string, HfTensor> fused_parts;
  for (const gguf::TensorInfo& t : f.tensors()) {
    const safetensors::Dtype dt = t.type == DType::F16 ? safetensors::Dtype::F16 : safetensors::Dtype::F32;
    if (t.name.ends_with("_exps.weight")) {  // one tensor per expert
      const size_t per = t.nbytes / size_t(t.ne[2]);
      for (int64_t e = 0; e < t.ne[2]; ++e) {
        out.push_back({test::hf_expert(t.name, e, c.style), dt, {t.ne[1], t.ne[0]},
                       std::vector<uint8_t>(t.data + size_t(e) * per, t.data + size_t(e + 1) * per)});
      }
      continue;
    }
    const test::HfPlace place = test::hf_place(t.name, c.style);
    if (place.name.empty() || (c.output_copy && t.name == "output.weight")) continue;
    std::vector<int64_t> shape;
    for (int d = t.n_dims - 1; d >= 0; --d) shape.push_back(t.ne[size_t(d)]);
    std::vector<uint8_t> bytes = hf_bytes(f, t, c);
    if (c.style == Style::Gpt2 && t.n_dims == 2 && t.name.starts_with("blk.")) std::swap(shape[0], shape[1]);
    if (place.parts == 1) {
      out.push_back({place.name, dt, shape, std::move(bytes)});
      continue;
    }
    // A block of a fused tensor: the blocks are stacked in part order.
    HfTensor& fused = fused_parts[place.name];
    if (fused.name.empty()) fused = {place.name, dt, {0, shape[1]}, std::vector<uint8_t>(t.nbytes * size_t(place.parts))};
    EXPECT_EQ(int64_t(fused.bytes.size()), int64_t(t.nbytes) * place.parts) << t.name;
    std::memcpy(fused.bytes.data() + size_t(place.part) * t.nbytes, bytes.data(), t.nbytes);
    fused.shape[0] += shape[0];
  }
  for (auto& [name, t] : fused_parts) out.push_back(std::move(t));
  return out;
}

/// Writes the HF folder of `model` into `dir`: config.json and two shards with an index.
void write_hf_folder(const std::string& model, const HfCase& c, const fs::path& dir) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open(model);
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  fs::create_directories(dir);
  json config = test::hf_config(**f, c.style, c.hf_arch);
  if (c.output_copy) config["tie_word_embeddings"] = true;
  std::ofstream(dir / "config.json") << config.dump(2);
  std::vector<HfTensor> all = hf_tensors(**f, c);
  if (c.style == Style::Bert || c.style == Style::NomicBert) {  // sentence-transformers' pooling
    std::ofstream(dir / "modules.json") << R"([{"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])";
    fs::create_directories(dir / "1_Pooling");
    std::ofstream(dir / "1_Pooling" / "config.json") << R"({"pooling_mode_mean_tokens": true, "pooling_mode_cls_token": false})";
  }
  // Buffers some checkpoints save, which the reference drops.
  if (c.style == Style::Gpt2) {
    all.push_back({"h.0.attn.bias", safetensors::Dtype::F32, {1, 1, 4, 4}, std::vector<uint8_t>(16 * 4)});
  }
  if (c.style == Style::GptNeox) {
    all.push_back({"gpt_neox.layers.1.attention.rotary_emb.inv_freq", safetensors::Dtype::F32, {4}, std::vector<uint8_t>(16)});
    all.push_back({"gpt_neox.layers.0.attention.masked_bias", safetensors::Dtype::F32, {1}, std::vector<uint8_t>(4)});
  }
  if (c.style == Style::Bert) {  // what the reference drops
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

/// The GGUF the case converts back to: the shared one, or one made from it (see HfCase).
std::string reference_model(const HfCase& c, const std::string& shared_model, const fs::path& dir) {
  if (c.ffn == 0 && !c.second_norm && !c.output_copy) return shared_model;
  Result<std::unique_ptr<gguf::File>> shared = gguf::File::open(shared_model);
  EXPECT_TRUE(shared.is_ok());
  if (!shared) return shared_model;
  const std::string model = (dir / "reference.gguf").string();
  fs::create_directories(dir);
  if (c.ffn != 0) test::write_with_ffn(**shared, c.ffn, model);
  if (c.second_norm) test::write_with_second_norm(**shared, model);
  if (c.output_copy) test::write_with_output_copy(**shared, model);
  return model;
}

class ConvertHf : public ::testing::TestWithParam<HfCase> {};

TEST_P(ConvertHf, GivesBackTheReferencesTensorsAndKeys) {
  const HfCase& c = GetParam();
  TESSERA_REQUIRE_SHARED(shared_model, c.model);
  const fs::path dir = temp_dir(std::string(c.hf_arch) + (c.second_norm ? "_40b" : "") + (c.output_copy ? "_tied" : ""));
  const std::string model = reference_model(c, shared_model, dir);
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
    if (t.name == "position_embd.weight" && t.type == DType::F16) {
      // The reference writes learned positions F32 (its always-F32 list); archs/ holds them
      // F16 (gpt2, starcoder): the same values.
      ASSERT_EQ(g->type, DType::F32);
      ASSERT_EQ(g->nbytes, t.nbytes * 2);
      for (int64_t i = 0; i < t.n_elements(); ++i) {
        uint16_t h = 0;
        float x = 0;
        std::memcpy(&h, t.data + i * 2, 2);
        std::memcpy(&x, g->data + i * 4, 4);
        ASSERT_EQ(x, f16_to_f32(h)) << i;
      }
      continue;
    }
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
    if (c.exact_keys && key.starts_with(arch + ".") && (c.extra_key == nullptr || key != c.extra_key)) {
      EXPECT_NE((*ref)->find(key), nullptr) << "extra key " << key;
    }
  }
  if (c.extra_key != nullptr) {
    EXPECT_NE((*got)->find(c.extra_key), nullptr) << c.extra_key << ", which the reference writes";
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
                           if (i.param.second_norm) n += "_40b";
                           if (i.param.output_copy) n += "_tied";
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

/// E4M3's value of `b` (1 sign, 4 exponent bits biased by 7, 3 mantissa bits; subnormal at
/// exponent 0), written here from the format's definition.
float e4m3(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  const float v = e == 0 ? std::ldexp(float(m) / 8.0f, -6) : std::ldexp(1.0f + float(m) / 8.0f, e - 7);
  return b & 0x80 ? -v : v;
}

// FP8 checkpoints: a weight stored as F8_E4M3 with DeepSeek-V3's block scales
// (`weight_scale_inv`, blocks from quantization_config.weight_block_size) and one with
// compressed-tensors' per-row `weight_scale` convert to the scaled values; the scales are
// not left over.
TEST(ConvertHfFp8, ScalesAreApplied) {
  TESSERA_REQUIRE_SHARED(model, kCases[0].model);
  const fs::path dir = temp_dir("fp8");
  write_hf_folder(model, kCases[0], dir / "hf");
  json index;
  std::ifstream(dir / "hf" / "model.safetensors.index.json") >> index;
  const std::string down = "model.layers.0.mlp.down_proj.weight", up = "model.layers.1.mlp.up_proj.weight";
  std::mt19937 rng(5);
  std::map<std::string, std::pair<std::vector<uint8_t>, std::vector<float>>> fp8;  // bytes, scales
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string file : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
    Result<std::unique_ptr<safetensors::File>> f = safetensors::File::open((dir / "hf" / file).string());
    ASSERT_TRUE(f.is_ok());
    std::vector<safetensors::WriteTensor> out;
    std::vector<std::vector<uint8_t>> keep;
    keep.reserve(8);
    for (const safetensors::TensorInfo& t : (*f)->tensors()) {
      if (t.name != down && t.name != up) {
        out.push_back({t.name, t.dtype, t.shape, {t.data, size_t(t.nbytes)}});
        continue;
      }
      const int64_t rows = t.shape[0], cols = t.shape[1];
      shapes[t.name] = t.shape;
      auto& [bytes, scales] = fp8[t.name];
      bytes.resize(size_t(rows * cols));
      for (uint8_t& b : bytes) {
        do b = uint8_t(rng()); while ((b & 0x7F) == 0x7F);  // no NaN
      }
      // Blocks of 4 x 8 for down_proj (its sizes are not multiples: partial blocks at the
      // edges); one scale a row for up_proj.
      const bool blocks = t.name == down;
      scales.resize(size_t(blocks ? ((rows + 3) / 4) * ((cols + 7) / 8) : rows));
      for (float& x : scales) x = 0.01f + float(rng() % 1000) / 1000.0f;
      keep.push_back(bytes);
      out.push_back({t.name, safetensors::Dtype::F8_E4M3, t.shape, keep.back()});
      const std::string scale_name = t.name + (blocks ? "_scale_inv" : "_scale");
      keep.emplace_back(reinterpret_cast<const uint8_t*>(scales.data()),
                        reinterpret_cast<const uint8_t*>(scales.data() + scales.size()));
      out.push_back({scale_name, safetensors::Dtype::F32,
                     blocks ? std::vector<int64_t>{(rows + 3) / 4, (cols + 7) / 8} : std::vector<int64_t>{rows, 1},
                     keep.back()});
      index["weight_map"][scale_name] = file;
    }
    // Written beside the shard, which `out` still reads from, then moved over it.
    ASSERT_TRUE(safetensors::write((dir / "hf" / (file + ".new")).string(), out).is_ok());
    f->reset();
    fs::rename(dir / "hf" / (file + ".new"), dir / "hf" / file);
  }
  ASSERT_EQ(fp8.size(), 2u);
  std::ofstream(dir / "hf" / "model.safetensors.index.json") << index.dump();
  json config;
  std::ifstream(dir / "hf" / "config.json") >> config;
  config["quantization_config"] = {{"quant_method", "fp8"}, {"weight_block_size", {4, 8}}};
  std::ofstream(dir / "hf" / "config.json") << config.dump();
  ConvertParams p;
  p.input_dir = (dir / "hf").string();
  p.output_path = (dir / "out.gguf").string();
  p.type = "f32";
  Result<ConvertReport> r = convert_checkpoint(p);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  Result<std::unique_ptr<gguf::File>> got = gguf::File::open(p.output_path);
  ASSERT_TRUE(got.is_ok());
  for (const auto& [name, gguf_name] : {std::pair{down, "blk.0.ffn_down.weight"}, std::pair{up, "blk.1.ffn_up.weight"}}) {
    SCOPED_TRACE(name);
    const gguf::TensorInfo* t = (*got)->find_tensor(gguf_name);
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->type, DType::F32);
    const auto& [bytes, scales] = fp8.at(name);
    const int64_t cols = shapes.at(name)[1];
    size_t differ = 0;
    for (size_t e = 0; e < bytes.size(); ++e) {
      const int64_t row = int64_t(e) / cols, col = int64_t(e) % cols;
      const float scale = name == down ? scales[size_t((row / 4) * ((cols + 7) / 8) + col / 8)] : scales[size_t(row)];
      float have;
      std::memcpy(&have, t->data + e * 4, 4);
      differ += have != e4m3(bytes[e]) * scale;
    }
    EXPECT_EQ(differ, 0u) << "of " << bytes.size();
  }
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
