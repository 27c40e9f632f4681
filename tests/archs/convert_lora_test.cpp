// `tessera convert --lora`: a PEFT adapter folder written here (random lora_A/lora_B of
// every projection, in Hugging Face's layout and row order) is converted for a shared base
// model and loaded with --lora; its logits must be those of a merged model this test builds
// on its own (W + scale·B·A in HF's row order, permuted to GGUF's by the test's own code,
// written as F32). The converted adapter also merges with lora-merge to the same logits,
// and each bad folder is refused by name with no output left.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "common/cli_run.h"
#include "common/runtime_test_util.h"
#include "common/test_util.h"
#include "quant/convert.h"
#include "tessera/context.h"
#include "tessera/convert.h"
#include "tessera/gguf.h"
#include "tessera/lora.h"
#include "tessera/model.h"
#include "tessera/safetensors.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kRank = 4;
constexpr double kAlpha = 8;

struct LoraCase {
  const char* name;
  const char* model;  // under ../shared
  bool permute;       // LLaMA's q/k rows (GGUF's differ from HF's)
  bool rslora;        // scale alpha / sqrt(r) instead of alpha / r
};

void PrintTo(const LoraCase& c, std::ostream* os) { *os << c.name; }

constexpr LoraCase kCases[] = {
    {"llama", "models/mini-llama-f16.gguf", true, false},
    {"qwen2", "archs/models/qwen2.gguf", false, false},
    {"llama_rslora", "models/mini-llama-f16.gguf", true, true},
};

/// The PEFT module of each GGUF projection (LLaMA's and Qwen2's names).
const std::vector<std::pair<std::string, std::string>> kModules = {
    {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"}, {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"}, {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"}};

/// One module's pair in PEFT's layout: a [r, in], b [out, r], row-major, HF's row order.
struct HfPair {
  std::string module;  // model.layers.N.self_attn.q_proj
  std::string gguf;    // blk.N.attn_q.weight
  int64_t n_in = 0, n_out = 0;
  std::vector<float> a, b;
};

int64_t key_int(const gguf::File& f, const std::string& key) { return f.find(key)->as_int().value(); }

std::vector<HfPair> random_pairs(const gguf::File& base, uint32_t seed) {
  const std::string arch = *base.find("general.architecture")->as_string();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<HfPair> out;
  for (int64_t il = 0; il < key_int(base, arch + ".block_count"); ++il) {
    for (const auto& [module, gguf] : kModules) {
      HfPair p;
      p.module = "model.layers." + std::to_string(il) + "." + module;
      p.gguf = "blk." + std::to_string(il) + "." + gguf + ".weight";
      const gguf::TensorInfo* w = base.find_tensor(p.gguf);
      p.n_in = w->ne[0];
      p.n_out = w->ne[1];
      p.a.resize(size_t(kRank * p.n_in));
      p.b.resize(size_t(p.n_out * kRank));
      for (float& x : p.a) x = normal(rng);
      for (float& x : p.b) x = normal(rng);
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::span<const uint8_t> bytes_of(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

json peft_config(bool rslora) {
  json targets = json::array();
  for (const auto& [module, gguf] : kModules) targets.push_back(module.substr(module.find('.') + 1));
  return {{"peft_type", "LORA"}, {"base_model_name_or_path", "test/base"}, {"r", kRank}, {"lora_alpha", kAlpha},
          {"lora_dropout", 0.0}, {"bias", "none"}, {"fan_in_fan_out", false}, {"use_rslora", rslora},
          {"use_dora", false}, {"task_type", "CAUSAL_LM"}, {"target_modules", targets}};
}

/// adapter_config.json and adapter_model.safetensors, as PEFT's save_pretrained writes them.
void write_peft_folder(const fs::path& dir, const std::vector<HfPair>& pairs, const json& config) {
  fs::create_directories(dir);
  std::ofstream(dir / "adapter_config.json") << config.dump(2);
  std::vector<safetensors::WriteTensor> tensors;
  for (const HfPair& p : pairs) {
    const std::string stem = "base_model.model." + p.module;
    tensors.push_back({stem + ".lora_A.weight", safetensors::Dtype::F32, {kRank, p.n_in}, bytes_of(p.a)});
    tensors.push_back({stem + ".lora_B.weight", safetensors::Dtype::F32, {p.n_out, kRank}, bytes_of(p.b)});
  }
  ASSERT_TRUE(safetensors::write((dir / "adapter_model.safetensors").string(), tensors, {{"format", "pt"}}).is_ok());
}

std::vector<float> floats_of(const gguf::TensorInfo& t) {
  std::vector<float> v(size_t(t.n_elements()));
  quant::to_float_fn(t.type)(t.data, v.data(), t.n_elements());
  return v;
}

/// LLaMA's rotary row order: HF row h·hr + j·hr/2 + i is GGUF row h·hr + 2i + j (`to_gguf`),
/// or back.
std::vector<float> permuted(const std::vector<float>& v, int64_t cols, int64_t heads, bool to_gguf) {
  const int64_t rows = int64_t(v.size()) / cols, hr = rows / heads, half = hr / 2;
  std::vector<float> out(v.size());
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t g = h * hr + 2 * i + j, hf = h * hr + j * half + i;
        const int64_t to = to_gguf ? g : hf, from = to_gguf ? hf : g;
        std::memcpy(&out[size_t(to * cols)], &v[size_t(from * cols)], size_t(cols) * sizeof(float));
      }
    }
  }
  return out;
}

/// The base with every adapted weight W + scale·B·A (in HF's row order), all in F32.
void write_merged(const gguf::File& base, const std::vector<HfPair>& pairs, double scale, bool permute,
                  const std::string& path) {
  const std::string arch = *base.find("general.architecture")->as_string();
  gguf::Writer w;
  for (const auto& [key, value] : base.metadata()) w.set(key, value);
  std::vector<std::vector<float>> keep;
  keep.reserve(base.tensors().size());
  for (const gguf::TensorInfo& t : base.tensors()) {
    std::vector<float>& v = keep.emplace_back(floats_of(t));
    const auto p = std::find_if(pairs.begin(), pairs.end(), [&](const HfPair& q) { return q.gguf == t.name; });
    if (p != pairs.end()) {
      const bool q = t.name.ends_with("attn_q.weight"), k = t.name.ends_with("attn_k.weight");
      const int64_t heads = key_int(base, arch + (q ? ".attention.head_count" : ".attention.head_count_kv"));
      const bool rope = permute && (q || k);
      if (rope) v = permuted(v, p->n_in, heads, false);
      for (int64_t o = 0; o < p->n_out; ++o) {
        for (int64_t i = 0; i < p->n_in; ++i) {
          double d = 0;
          for (int64_t r = 0; r < kRank; ++r) d += double(p->b[size_t(o * kRank + r)]) * p->a[size_t(r * p->n_in + i)];
          v[size_t(o * p->n_in + i)] = float(double(v[size_t(o * p->n_in + i)]) + scale * d);
        }
      }
      if (rope) v = permuted(v, p->n_in, heads, true);
    }
    w.add_tensor_ref(t.name, DType::F32, t.ne, t.n_dims, v.data(), v.size() * sizeof(float));
  }
  w.set("general.file_type", uint32_t(0));
  ASSERT_TRUE(w.write(path).is_ok());
}

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tessera_convert_lora_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<float> logits_of(const std::string& path, const std::vector<AdapterSpec>& adapters = {}) {
  ModelParams mp;
  mp.adapters = adapters;
  Result<std::unique_ptr<Model>> m = Model::load(path, mp);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  if (!m) return {};
  ContextParams cp;
  cp.n_ctx = 32;
  Result<std::unique_ptr<Context>> ctx = Context::create(**m, cp);
  EXPECT_TRUE(ctx.is_ok());
  if (!ctx) return {};
  EXPECT_TRUE((*ctx)->decode(std::vector<TokenId>{1, 17, 300, 42, 9, 101}).is_ok());
  const std::span<const float> l = (*ctx)->logits();
  return {l.begin(), l.end()};
}

class ConvertLora : public ::testing::TestWithParam<LoraCase> {};

TEST_P(ConvertLora, LoadsAndGivesTheMergedWeightsLogits) {
  const LoraCase& c = GetParam();
  TESSERA_REQUIRE_SHARED(model, c.model);
  Result<std::unique_ptr<gguf::File>> base = gguf::File::open(model);
  ASSERT_TRUE(base.is_ok());
  const fs::path dir = temp_dir(c.name);
  const std::vector<HfPair> pairs = random_pairs(**base, 35);
  write_peft_folder(dir / "peft", pairs, peft_config(c.rslora));

  LoraConvertParams p;
  p.adapter_dir = (dir / "peft").string();
  p.base_path = model;
  p.output_path = (dir / "adapter.gguf").string();
  Result<LoraConvertReport> r = convert_peft_lora(p);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->n_weights, pairs.size());
  EXPECT_EQ(r->r, kRank);
  Result<std::unique_ptr<gguf::File>> out = gguf::File::open(p.output_path);
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(*(*out)->get_string("general.type"), "adapter");
  EXPECT_EQ(*(*out)->get_string("adapter.type"), "lora");
  EXPECT_EQ((*out)->tensors().size(), 2 * pairs.size());

  const double scale = c.rslora ? kAlpha / std::sqrt(double(kRank)) : kAlpha / double(kRank);
  write_merged(**base, pairs, scale, c.permute, (dir / "merged.gguf").string());
  const std::vector<float> want = logits_of((dir / "merged.gguf").string());
  const std::vector<float> got = logits_of(model, {{p.output_path, 1.0f}});
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(got.size(), want.size());
  const double err = test::nmse(got, want);
  std::printf("%s: --lora vs the merged weights: NMSE %.3g\n", c.name, err);
  EXPECT_LE(err, 1e-6);
  // The adapter changes the logits well beyond the tolerance (the test can fail).
  EXPECT_GT(test::nmse(logits_of(model), want), 1e-3);

  // lora-merge's merged model gives the same logits.
  LoraMergeParams mp;
  mp.type = DType::F32;
  const std::string merged_path = (dir / "lora-merge.gguf").string();
  Result<LoraMergeReport> merged = merge_adapters(model, {{p.output_path, 1.0f}}, merged_path, mp);
  ASSERT_TRUE(merged.is_ok()) << merged.status().message();
  EXPECT_EQ(merged->n_merged, pairs.size());
  const double merge_err = test::nmse(logits_of(merged_path), want);
  std::printf("%s: lora-merge vs the merged weights: NMSE %.3g\n", c.name, merge_err);
  EXPECT_LE(merge_err, 1e-6);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Shared, ConvertLora, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<LoraCase>& i) { return std::string(i.param.name); });

/// A broken copy of the llama adapter folder: `spoil` changes it (`base` may be replaced);
/// the conversion must fail with `message` and leave no output.
void expect_refused(const std::string& name, const std::function<void(const fs::path&, std::string&)>& spoil,
                    const std::string& message) {
  TESSERA_REQUIRE_SHARED(model, kCases[0].model);
  Result<std::unique_ptr<gguf::File>> base = gguf::File::open(model);
  ASSERT_TRUE(base.is_ok());
  const fs::path dir = temp_dir("bad_" + name);
  write_peft_folder(dir / "peft", random_pairs(**base, 7), peft_config(false));
  LoraConvertParams p;
  p.adapter_dir = (dir / "peft").string();
  p.base_path = model;
  p.output_path = (dir / "adapter.gguf").string();
  spoil(dir / "peft", p.base_path);
  Result<LoraConvertReport> r = convert_peft_lora(p);
  ASSERT_FALSE(r.is_ok()) << name;
  EXPECT_NE(r.status().message().find(message), std::string::npos) << name << ": " << r.status().message();
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename(), "peft") << name << ": left " << e.path();
  }
  fs::remove_all(dir);
}

/// Rewrites adapter_config.json with `key` set to `value`.
std::function<void(const fs::path&, std::string&)> config_with(const std::string& key, json value) {
  return [key, value](const fs::path& d, std::string&) {
    std::ifstream in(d / "adapter_config.json");
    json j = json::parse(in);
    j[key] = value;
    std::ofstream(d / "adapter_config.json") << j.dump();
  };
}

/// Rewrites adapter_model.safetensors through `edit` of its tensors (copied to floats).
std::function<void(const fs::path&, std::string&)> tensors_with(
    const std::function<void(std::vector<safetensors::WriteTensor>&, std::vector<std::vector<float>>&)>& edit) {
  return [edit](const fs::path& d, std::string&) {
    const std::string path = (d / "adapter_model.safetensors").string();
    std::vector<safetensors::WriteTensor> ts;
    std::vector<std::vector<float>> data;
    {
      Result<std::unique_ptr<safetensors::File>> f = safetensors::File::open(path);
      ASSERT_TRUE(f.is_ok());
      data.reserve((*f)->tensors().size() + 4);
      for (const safetensors::TensorInfo& t : (*f)->tensors()) {
        std::vector<float>& v = data.emplace_back(size_t(t.n_elements()));
        std::memcpy(v.data(), t.data, t.nbytes);
        ts.push_back({t.name, t.dtype, t.shape, {}});
      }
    }
    edit(ts, data);
    for (size_t i = 0; i < ts.size(); ++i) ts[i].data = bytes_of(data[i]);
    ASSERT_TRUE(safetensors::write(path, ts).is_ok());
  };
}

const std::string kQ = "base_model.model.model.layers.0.self_attn.q_proj";
// The first module in name order.
const std::string kDown = "base_model.model.model.layers.0.mlp.down_proj";

TEST(ConvertLoraBadFolders, EachIsRefusedByName) {
  expect_refused("no_config", [](const fs::path& d, std::string&) { fs::remove(d / "adapter_config.json"); },
                 "has no adapter_config.json");
  expect_refused("no_weights", [](const fs::path& d, std::string&) { fs::remove(d / "adapter_model.safetensors"); },
                 "has no adapter_model.safetensors");
  expect_refused("unmapped_base",
                 [](const fs::path& d, std::string& base) {
                   // Every architecture tessera runs is mapped: a file of one it does not run.
                   gguf::Writer w;
                   w.set("general.architecture", std::string("rwkv6"));
                   base = (d / "rwkv6.gguf").string();
                   ASSERT_TRUE(w.write(base).is_ok());
                 },
                 "is a 'rwkv6' model, an architecture convert does not map");
  expect_refused("fan_in_fan_out", config_with("fan_in_fan_out", true), "'fan_in_fan_out' is true");
  expect_refused("dora", config_with("use_dora", true), "'use_dora' is true");
  expect_refused("rank", config_with("r", 8),
                 "tensor '" + kDown + ".lora_A.weight' has rank 4, but adapter_config.json's r is 8");
  expect_refused("no_place", tensors_with([](auto& ts, auto& data) {
                   for (const char* s : {".lora_A.weight", ".lora_B.weight"}) {
                     ts.push_back({"base_model.model.model.layers.0.mlp.frob_proj" + std::string(s),
                                   safetensors::Dtype::F32, {kRank, kRank}, {}});
                     data.emplace_back(size_t(kRank * kRank), 0.5f);
                   }
                 }),
                 "module 'model.layers.0.mlp.frob_proj' has no place in a llama model");
  expect_refused("not_adaptable", tensors_with([](auto& ts, auto& data) {
                   ts.push_back({"base_model.model.lm_head.lora_A.weight", safetensors::Dtype::F32, {kRank, 256}, {}});
                   data.emplace_back(size_t(kRank * 256), 0.5f);
                   ts.push_back({"base_model.model.lm_head.lora_B.weight", safetensors::Dtype::F32, {1024, kRank}, {}});
                   data.emplace_back(size_t(1024 * kRank), 0.5f);
                 }),
                 "module 'lm_head' would update output.weight, which a LoRA adapter cannot update");
  expect_refused("shape", tensors_with([](auto& ts, auto& data) {
                   for (size_t i = 0; i < ts.size(); ++i) {
                     if (ts[i].name == kQ + ".lora_A.weight") {
                       ts[i].shape = {kRank, 128};
                       data[i].resize(size_t(kRank * 128));
                     }
                   }
                 }),
                 "tensors '" + kQ + ".lora_A.weight' [4, 128] and '" + kQ +
                     ".lora_B.weight' [256, 4] do not fit the base's blk.0.attn_q.weight [256, 256]");
  expect_refused("no_partner", tensors_with([](auto& ts, auto& data) {
                   for (size_t i = 0; i < ts.size(); ++i) {
                     if (ts[i].name == kQ + ".lora_B.weight") {
                       ts.erase(ts.begin() + std::ptrdiff_t(i));
                       data.erase(data.begin() + std::ptrdiff_t(i));
                       break;
                     }
                   }
                 }),
                 "tensor '" + kQ + ".lora_A.weight' has no partner '" + kQ + ".lora_B.weight'");
  expect_refused("not_lora", tensors_with([](auto& ts, auto& data) {
                   ts.push_back({"base_model.model.model.embed_tokens.weight", safetensors::Dtype::F32, {2}, {}});
                   data.emplace_back(2, 0.5f);
                 }),
                 "tensor 'base_model.model.model.embed_tokens.weight' of adapter_model.safetensors is not a "
                 "LoRA pair's");
}

TEST(ConvertLoraCli, ConvertsAndRefusesInOneLine) {
  TESSERA_REQUIRE_SHARED(model, kCases[1].model);
  Result<std::unique_ptr<gguf::File>> base = gguf::File::open(model);
  ASSERT_TRUE(base.is_ok());
  const fs::path dir = temp_dir("cli");
  write_peft_folder(dir / "peft", random_pairs(**base, 3), peft_config(false));
  const std::string out = (dir / "adapter.gguf").string();
  const std::string peft = "--lora '" + (dir / "peft").string() + "'";
  test::CliOutput ok = test::run_tessera("convert " + peft + " --base '" + model + "' -o '" + out + "' --type f16");
  EXPECT_EQ(ok.status, 0) << ok.err;
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open(out);
  ASSERT_TRUE(f.is_ok());
  EXPECT_EQ(f->get()->tensors().front().type, DType::F16);
  EXPECT_EQ(logits_of(model, {{out, 1.0f}}).size(), logits_of(model).size());

  test::CliOutput no_base = test::run_tessera("convert " + peft + " -o '" + out + "'");
  EXPECT_EQ(no_base.status, 2);
  EXPECT_EQ(no_base.err, "tessera: convert: --lora needs --base BASE.gguf, the model it adapts\n");
  fs::remove(dir / "peft" / "adapter_config.json");
  test::CliOutput bad = test::run_tessera("convert " + peft + " --base '" + model + "' -o '" + out + "x'");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("has no adapter_config.json"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera
