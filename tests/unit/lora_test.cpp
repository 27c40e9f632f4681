// LoRA adapters at load (src/model/lora.cpp, project() in src/model/blocks.cpp) and
// merged into a model (tessera/lora.h), on small random llama models:
//  - an adapter whose lora_b is 0, or any adapter at scale 0, gives logits bit-identical
//    to the base's (prompt batch and single-token steps; F32 and Q8_0 bases);
//  - a random adapter gives the logits of the model merge_adapters writes, to NMSE 1e-5
//    (float rounding of W x + s b (a x) against (W + s b a) x), alone and two at once;
//  - the merged file keeps every other tensor and key; bad adapters are refused with the
//    adapter file and the tensor named.
#include "tessera/lora.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/lora_test_util.h"
#include "common/runtime_test_util.h"
#include "model/model_impl.h"
#include "tessera/gguf.h"
#include "tessera/log.h"
#include "tessera/quantize.h"
#include "tessera/synth.h"

namespace tessera {
namespace {

using test::AdapterFile;

constexpr int64_t kLayers = 2;

std::string temp_path(const std::string& stem) { return test::temp_gguf("lora_" + stem); }

// One small random llama per process and type (F32, F16, and Q8_0 quantized from F32).
const std::string& base_model(DType type) {
  static std::map<DType, std::string> paths;
  auto it = paths.find(type);
  if (it != paths.end()) return it->second;
  SynthParams p;
  p.n_embd = 64;
  p.n_layer = kLayers;
  p.n_head = 4;
  p.n_head_kv = 2;
  p.n_ff = 128;
  p.n_ctx = 64;
  p.n_vocab = 256;
  p.type = type == DType::F16 ? DType::F16 : DType::F32;
  std::string path = temp_path(std::string("base_") + std::string(dtype_name(p.type)));
  const Status s = write_random_model(p, path);
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (type == DType::Q8_0) {
    QuantizeParams q;
    q.type_name = "Q8_0";
    q.pure = true;
    const std::string quantized = temp_path("base_q8_0");
    Result<QuantizeReport> r = quantize_model(path, quantized, q);
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    path = quantized;
  }
  return paths[type] = path;
}

std::string write(const AdapterFile& f, const std::string& stem) {
  const std::string path = temp_path(stem);
  const Status s = test::write_adapter(f, path);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return path;
}

AdapterFile adapter(DType base, const std::vector<std::string>& weights, int64_t r, uint64_t seed) {
  Result<AdapterFile> f = test::adapter_for(base_model(base), weights, r);
  EXPECT_TRUE(f.is_ok()) << f.status().message();
  AdapterFile out = f ? *f : AdapterFile{};
  out.seed = seed;
  return out;
}

// The random models have no vocabulary: not worth a warning at each load.
struct QuietLog {
  LogLevel saved = log_level();
  QuietLog() { set_log_level(LogLevel::Error); }
  ~QuietLog() { set_log_level(saved); }
  QuietLog(const QuietLog&) = delete;
  QuietLog& operator=(const QuietLog&) = delete;
};

std::unique_ptr<Model> load(const std::string& path, const std::vector<AdapterSpec>& adapters = {}) {
  const QuietLog quiet;
  ModelParams mp;
  mp.adapters = adapters;
  Result<std::unique_ptr<Model>> m = Model::load(path, mp);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  return m ? std::move(*m) : nullptr;
}

std::unique_ptr<Context> context_of(const Model& m) {
  ContextParams cp;
  cp.n_ctx = 32;
  cp.n_threads = 2;
  cp.all_logits = true;
  cp.embeddings = m.info().encoder;  // an encoder's outputs are its embeddings
  Result<std::unique_ptr<Context>> c = Context::create(m, cp);
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  return c ? std::move(*c) : nullptr;
}

// The logits of every token of a 9-token prompt (one batch), then of 4 single-token steps
// with fixed tokens, so that two models see the same inputs whatever they predict. The
// context is cleared first. An encoder's outputs are its embeddings (it has no logits).
std::vector<float> logits_in(Context& c, bool encoder = false) {
  c.clear();
  std::vector<float> out;
  const auto output = [&](int64_t i) { return encoder ? c.embeddings_at(i) : c.logits_at(i); };
  const std::vector<TokenId> prompt = test::some_tokens(9, 3, c.n_vocab());
  EXPECT_TRUE(c.decode(prompt).is_ok());
  for (size_t i = 0; i < prompt.size(); ++i) {
    const std::span<const float> l = output(int64_t(i));
    out.insert(out.end(), l.begin(), l.end());
  }
  for (TokenId t : test::some_tokens(4, 11, c.n_vocab())) {
    const TokenId one[] = {t};
    EXPECT_TRUE(c.decode(one).is_ok());
    out.insert(out.end(), output(0).begin(), output(0).end());
  }
  return out;
}

std::vector<float> logits_of(const Model& m) {
  std::unique_ptr<Context> c = context_of(m);
  return c ? logits_in(*c, m.info().encoder) : std::vector<float>{};
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) FAIL() << "logit " << i << ": " << a[i] << " vs " << b[i];
  }
}

std::string merge(const std::string& base, const std::vector<AdapterSpec>& adapters, std::optional<DType> type) {
  const QuietLog quiet;
  const std::string out = temp_path("merged");
  LoraMergeParams p;
  p.type = type;
  p.n_threads = 2;
  Result<LoraMergeReport> r = merge_adapters(base, adapters, out, p);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return out;
}

TEST(ParseAdapterSpec, FileAndOptionalScale) {
  EXPECT_EQ(parse_adapter_spec("a.gguf").path, "a.gguf");
  EXPECT_EQ(parse_adapter_spec("a.gguf").scale, 1.0f);
  EXPECT_EQ(parse_adapter_spec("a.gguf:0.5").path, "a.gguf");
  EXPECT_EQ(parse_adapter_spec("a.gguf:0.5").scale, 0.5f);
  EXPECT_EQ(parse_adapter_spec("a.gguf:-2").scale, -2.0f);
  EXPECT_EQ(parse_adapter_spec("dir:x/a.gguf").path, "dir:x/a.gguf");  // not a number: part of the name
  EXPECT_EQ(parse_adapter_spec("a.gguf:").path, "a.gguf:");
}

class ZeroUpdate : public ::testing::TestWithParam<DType> {};

TEST_P(ZeroUpdate, LoraBZeroGivesTheBaseLogitsBitForBit) {
  const std::string& base = base_model(GetParam());
  AdapterFile f = adapter(GetParam(), test::llama_projections(kLayers), 4, 5);
  f.zero_b = true;
  f.alpha = 8;
  const std::string a = write(f, "zero_b");
  std::unique_ptr<Model> plain = load(base);
  std::unique_ptr<Model> adapted = load(base, {{a, 1.0f}});
  ASSERT_TRUE(plain && adapted);
  ASSERT_EQ(adapted->info().adapters, std::vector<std::string>{a});
  int fused = 0;  // where the base's projections are repacked and fused, the adapted ones are not
  for (const LayerWeights& l : plain->impl().weights.layers) fused += int(l.wqkv != nullptr) + int(l.ffn_gate_up != nullptr);
  for (const LayerWeights& l : adapted->impl().weights.layers) {
    EXPECT_EQ(l.lora.size(), 7u);
    EXPECT_TRUE(l.wqkv == nullptr && l.ffn_gate_up == nullptr);
  }
  std::cout << "fused projections in the base: " << fused << "\n";
  expect_same_bits(logits_of(*adapted), logits_of(*plain));
}

TEST_P(ZeroUpdate, ScaleZeroGivesTheBaseLogitsBitForBit) {
  const std::string& base = base_model(GetParam());
  AdapterFile f = adapter(GetParam(), test::llama_projections(kLayers), 4, 6);
  f.stddev = 0.3f;
  const std::string a = write(f, "scale0");
  std::unique_ptr<Model> plain = load(base);
  std::unique_ptr<Model> adapted = load(base, {{a, 0.0f}});
  ASSERT_TRUE(plain && adapted);
  expect_same_bits(logits_of(*adapted), logits_of(*plain));
}

// Scales set at run time (Context::set_adapter_scales) give, bit for bit, the logits of the
// model loaded with those scales, whatever was set before in the same context (its graphs
// are cached per scale set); scale 0 everywhere gives the base model's.
TEST_P(ZeroUpdate, ScalesSetAtRunTimeGiveTheLogitsOfTheModelLoadedWithThem) {
  const std::string& base = base_model(GetParam());
  AdapterFile qv = adapter(
      GetParam(), {"blk.0.attn_q.weight", "blk.1.attn_v.weight", "blk.0.ffn_down.weight"}, 3, 12);
  qv.stddev = 0.2f;
  qv.alpha = 5;  // alpha / r is not exact in floats: the product's order shows
  AdapterFile all = adapter(GetParam(), test::llama_projections(kLayers), 4, 13);
  all.stddev = 0.1f;
  const std::string qv_path = write(qv, "rt_qv"), all_path = write(all, "rt_all");
  std::unique_ptr<Model> adapted = load(base, {{qv_path, 1.0f}, {all_path, 1.0f}});
  std::unique_ptr<Model> plain = load(base);
  ASSERT_TRUE(adapted && plain);
  EXPECT_EQ(adapted->info().adapter_scales, (std::vector<float>{1.0f, 1.0f}));
  std::unique_ptr<Context> c = context_of(*adapted);
  ASSERT_TRUE(c);
  ASSERT_EQ(std::vector<float>(c->adapter_scales().begin(), c->adapter_scales().end()),
            adapted->info().adapter_scales);
  const std::vector<float> at_load = logits_in(*c);
  const std::vector<std::vector<float>> sets = {
      {0.7f, -1.3f}, {0.0f, 0.9f}, {0.7f, -1.3f}, {1.0f, 1.0f}, {0.0f, 0.0f}};
  for (const std::vector<float>& s : sets) {
    SCOPED_TRACE("scales " + std::to_string(s[0]) + ", " + std::to_string(s[1]));
    ASSERT_TRUE(c->set_adapter_scales(s).is_ok());
    std::unique_ptr<Model> loaded = load(base, {{qv_path, s[0]}, {all_path, s[1]}});
    ASSERT_TRUE(loaded);
    const std::vector<float> want = logits_of(*loaded);
    expect_same_bits(logits_in(*c), want);
    if (s == std::vector<float>{1.0f, 1.0f}) expect_same_bits(want, at_load);
    if (s == std::vector<float>{0.0f, 0.0f}) expect_same_bits(want, logits_of(*plain));
  }
  EXPECT_GT(test::nmse(at_load, logits_of(*plain)), 1e-4);  // the adapters change something
}

TEST(LoraRuntimeScales, BadScalesAreRefusedAndChangeNothing) {
  const std::string& base = base_model(DType::F32);
  const std::string a = write(adapter(DType::F32, {"blk.0.attn_q.weight"}, 2, 14), "rt_bad");
  std::unique_ptr<Model> adapted = load(base, {{a, 0.5f}});
  std::unique_ptr<Model> plain = load(base);
  ASSERT_TRUE(adapted && plain);
  std::unique_ptr<Context> c = context_of(*adapted);
  std::unique_ptr<Context> without = context_of(*plain);
  ASSERT_TRUE(c && without);
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  for (const std::vector<float>& s :
       std::vector<std::vector<float>>{{}, {1.0f, 1.0f}, {nan}, {inf}, {-inf}}) {
    const Status st = c->set_adapter_scales(s);
    EXPECT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find("set_adapter_scales"), std::string::npos) << st.message();
    EXPECT_EQ(c->adapter_scales()[0], 0.5f);
  }
  EXPECT_TRUE(without->adapter_scales().empty());
  EXPECT_TRUE(without->set_adapter_scales({}).is_ok());
  const float one[] = {1.0f};
  EXPECT_FALSE(without->set_adapter_scales(one).is_ok());
}

INSTANTIATE_TEST_SUITE_P(Bases, ZeroUpdate, ::testing::Values(DType::F32, DType::Q8_0),
                         [](const ::testing::TestParamInfo<DType>& p) { return std::string(dtype_name(p.param)); });

// Every architecture's graph applies adapters through project(): a zero update changes no
// bit, and a random update of every projection the file has (shared experts' included)
// gives the merged model's logits.
class EveryArch : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryArch, AdaptersApplyAsMerged) {
  SynthParams p;
  p.arch = GetParam();
  p.n_embd = 64;  // multi-head attention with heads of 16: shapes every architecture accepts
  p.n_layer = 2;
  p.n_head = 4;
  p.n_head_kv = 4;
  p.n_ff = 128;
  p.n_ctx = 64;
  p.n_vocab = 256;
  p.type = DType::F32;
  const std::string base = temp_path("arch_" + GetParam());
  ASSERT_TRUE(write_random_model(p, base).is_ok());
  Result<std::unique_ptr<gguf::File>> file = gguf::File::open(base);
  ASSERT_TRUE(file.is_ok());
  std::vector<std::string> weights;
  for (const gguf::TensorInfo& t : (*file)->tensors()) {
    for (const char* w : {".attn_q.weight", ".attn_k.weight", ".attn_v.weight", ".attn_qkv.weight",
                          ".attn_output.weight", ".ffn_gate.weight", ".ffn_up.weight", ".ffn_down.weight",
                          ".ffn_gate_shexp.weight", ".ffn_up_shexp.weight", ".ffn_down_shexp.weight"}) {
      if (t.name.ends_with(w)) weights.push_back(t.name);
    }
  }
  ASSERT_GE(weights.size(), 6u);  // per layer: attention in and out, feed-forward in and out
  Result<AdapterFile> f = test::adapter_for(base, weights, 4);
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  f->stddev = 0.1f;
  f->zero_b = true;
  const std::string zero = write(*f, "arch_zero");
  f->zero_b = false;
  const std::string random = write(*f, "arch_random");
  std::unique_ptr<Model> plain = load(base);
  std::unique_ptr<Model> unchanged = load(base, {{zero, 1.0f}});
  std::unique_ptr<Model> adapted = load(base, {{random, 1.0f}});
  std::unique_ptr<Model> merged = load(merge(base, {{random, 1.0f}}, std::nullopt));
  ASSERT_TRUE(plain && unchanged && adapted && merged);
  const std::vector<float> base_logits = logits_of(*plain), want = logits_of(*merged);
  expect_same_bits(logits_of(*unchanged), base_logits);
  const double err = test::nmse(logits_of(*adapted), want);
  std::cout << GetParam() << ": " << weights.size() << " weights adapted; NMSE adapter vs merged: " << err
            << "; base vs merged: " << test::nmse(base_logits, want) << "\n";
  EXPECT_LT(err, 1e-5);
  EXPECT_GT(test::nmse(base_logits, want), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Archs, EveryArch, ::testing::ValuesIn(architecture_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';  // gtest names: letters, digits, underscores
                           }
                           return name;
                         });

TEST(LoraMerge, OneAdapterMatchesTheMergedModel) {
  const std::string& base = base_model(DType::F32);
  AdapterFile f = adapter(DType::F32, test::llama_projections(kLayers), 4, 7);
  f.stddev = 0.1f;
  f.alpha = 8;  // the update is 8 / 4 = 2 times b a
  const std::string a = write(f, "one");
  std::unique_ptr<Model> adapted = load(base, {{a, 1.0f}});
  std::unique_ptr<Model> merged = load(merge(base, {{a, 1.0f}}, DType::F32));
  std::unique_ptr<Model> plain = load(base);
  ASSERT_TRUE(adapted && merged && plain);
  const std::vector<float> want = logits_of(*merged);
  const double err = test::nmse(logits_of(*adapted), want);
  const double moved = test::nmse(logits_of(*plain), want);
  std::cout << "NMSE adapter vs merged: " << err << "; base vs merged: " << moved << "\n";
  EXPECT_LT(err, 1e-5);
  EXPECT_GT(moved, 1e-3);  // the adapter does change the model
}

TEST(LoraMerge, TwoAdaptersWithScalesMatchTheMergedModel) {
  const std::string& base = base_model(DType::F32);
  AdapterFile qv = adapter(DType::F32, {"blk.0.attn_q.weight", "blk.1.attn_v.weight", "blk.0.ffn_down.weight"}, 2, 8);
  qv.stddev = 0.15f;
  AdapterFile all = adapter(DType::F32, test::llama_projections(kLayers), 8, 9);
  all.stddev = 0.08f;
  all.type = DType::F16;  // alpha absent: the scale alone
  const std::vector<AdapterSpec> specs = {{write(qv, "qv"), 0.7f}, {write(all, "all"), -1.5f}};
  std::unique_ptr<Model> adapted = load(base, specs);
  std::unique_ptr<Model> merged = load(merge(base, specs, std::nullopt));  // F32 base: F32 weights
  std::unique_ptr<Model> plain = load(base);
  ASSERT_TRUE(adapted && merged && plain);
  EXPECT_EQ(adapted->impl().weights.layers[0].lora.size(), 7u + 2u);
  const std::vector<float> want = logits_of(*merged);
  const double err = test::nmse(logits_of(*adapted), want);
  const double moved = test::nmse(logits_of(*plain), want);
  std::cout << "NMSE two adapters vs merged: " << err << "; base vs merged: " << moved << "\n";
  EXPECT_LT(err, 1e-5);
  EXPECT_GT(moved, 1e-3);
}

// Adapter tensors of any type tessera computes with: F16, BF16, and Q8_0 (its blocks of
// 32 need r = 32 for b's rows), each against the merged model.
TEST(LoraMerge, AdapterTensorTypesMatchTheMergedModel) {
  const std::string& base = base_model(DType::F32);
  for (DType type : {DType::F16, DType::BF16, DType::Q8_0}) {
    SCOPED_TRACE(std::string(dtype_name(type)));
    AdapterFile f = adapter(DType::F32, {"blk.0.attn_v.weight", "blk.1.ffn_gate.weight"}, 32, 15);
    f.type = type;
    f.stddev = 0.05f;
    const std::string a = write(f, "typed");
    std::unique_ptr<Model> adapted = load(base, {{a, 1.0f}});
    std::unique_ptr<Model> merged = load(merge(base, {{a, 1.0f}}, DType::F32));
    ASSERT_TRUE(adapted && merged);
    const double err = test::nmse(logits_of(*adapted), logits_of(*merged));
    std::cout << dtype_name(type) << " adapter: NMSE vs merged " << err << "\n";
    // A Q8_0 matmul quantizes its activations to 8 bits at run time; the merge reads a
    // and b exactly (seen: 8e-6).
    EXPECT_LT(err, type == DType::Q8_0 ? 1e-4 : 1e-5);
  }
}

// Every tensor and key of the base in the merged file, with only the adapted weights'
// bytes (and general.name) changed; a zero update leaves even those bytes as they were.
TEST(LoraMerge, CopiesEverythingElse) {
  const std::string& base = base_model(DType::F32);
  AdapterFile f = adapter(DType::F32, {"blk.1.ffn_up.weight", "blk.0.attn_k.weight"}, 4, 10);
  const std::string random = merge(base, {{write(f, "some"), 1.0f}}, std::nullopt);
  f.zero_b = true;
  const std::string zero = merge(base, {{write(f, "some_zero"), 1.0f}}, std::nullopt);
  Result<std::unique_ptr<gguf::File>> b = gguf::File::open(base);
  Result<std::unique_ptr<gguf::File>> m = gguf::File::open(random);
  Result<std::unique_ptr<gguf::File>> z = gguf::File::open(zero);
  ASSERT_TRUE(b && m && z);
  ASSERT_EQ((*m)->tensors().size(), (*b)->tensors().size());
  for (size_t i = 0; i < (*b)->tensors().size(); ++i) {
    const gguf::TensorInfo& x = (*b)->tensors()[i];
    const gguf::TensorInfo& y = (*m)->tensors()[i];
    const gguf::TensorInfo* w = (*z)->find_tensor(x.name);
    ASSERT_EQ(y.name, x.name);
    ASSERT_TRUE(w != nullptr && y.type == x.type && y.ne == x.ne && y.nbytes == x.nbytes) << x.name;
    const bool adapted = x.name == "blk.1.ffn_up.weight" || x.name == "blk.0.attn_k.weight";
    EXPECT_EQ(std::memcmp(x.data, y.data, x.nbytes) == 0, !adapted) << x.name;
    EXPECT_EQ(std::memcmp(x.data, w->data, x.nbytes), 0) << x.name;
  }
  for (const auto& [key, value] : (*b)->metadata()) {
    const gguf::Value* v = (*m)->find(key);
    ASSERT_NE(v, nullptr) << key;
    if (key == "general.name") {
      EXPECT_EQ(*v->as_string(), *value.as_string() + " + lora");
    } else {
      EXPECT_EQ(*v, value) << key;
    }
  }
  EXPECT_EQ((*m)->metadata().size(), (*b)->metadata().size());
}

// The merged weights' type: the weight's own when it is a float type, else F16, or --type.
TEST(LoraMerge, MergedWeightTypes) {
  const std::vector<std::string> w = {"blk.0.attn_q.weight"};
  struct Case {
    DType base;
    std::optional<DType> asked;
    DType want;
  };
  for (const Case c : {Case{DType::F16, std::nullopt, DType::F16}, Case{DType::Q8_0, std::nullopt, DType::F16},
                       Case{DType::F32, DType::BF16, DType::BF16}, Case{DType::Q8_0, DType::F32, DType::F32}}) {
    SCOPED_TRACE(std::string(dtype_name(c.base)));
    const std::string out = merge(base_model(c.base), {{write(adapter(c.base, w, 4, 12), "types"), 1.0f}}, c.asked);
    Result<std::unique_ptr<gguf::File>> m = gguf::File::open(out);
    ASSERT_TRUE(m.is_ok()) << m.status().message();
    EXPECT_EQ((*m)->find_tensor(w[0])->type, c.want);
    EXPECT_EQ((*m)->find_tensor("blk.0.attn_k.weight")->type, c.base);  // not adapted: unchanged
    EXPECT_TRUE(load(out) != nullptr);
  }
}

TEST(LoraMerge, RefusesBadRequests) {
  const std::string& base = base_model(DType::F32);
  const std::string a = write(adapter(DType::F32, {"blk.0.attn_q.weight"}, 4, 13), "req");
  Result<LoraMergeReport> r = merge_adapters(base, {}, temp_path("none"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("no adapter"), std::string::npos) << r.status().message();
  r = merge_adapters(base, {{a, 1.0f}}, base);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("is the base model"), std::string::npos) << r.status().message();
  LoraMergeParams q8;
  q8.type = DType::Q8_0;
  r = merge_adapters(base, {{a, 1.0f}}, temp_path("q8"), q8);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("f32, f16 or bf16"), std::string::npos) << r.status().message();
}

// Loading `f` as an adapter of the F32 base fails with a message naming the file and `what`.
void expect_refused(const AdapterFile& f, const std::string& what) {
  const std::string path = write(f, "bad");
  ModelParams mp;
  mp.adapters = {{path, 1.0f}};
  Result<std::unique_ptr<Model>> m = Model::load(base_model(DType::F32), mp);
  ASSERT_FALSE(m.is_ok()) << what;
  const std::string& msg = m.status().message();
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find(what), std::string::npos) << msg;
  // lora-merge validates with the same code.
  Result<LoraMergeReport> r = merge_adapters(base_model(DType::F32), mp.adapters, temp_path("bad_merge"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), msg);
}

TEST(LoraErrors, NameTheAdapterFileAndTheTensor) {
  AdapterFile good = adapter(DType::F32, {"blk.0.attn_q.weight"}, 4, 14);
  AdapterFile f = good;
  f.general_type = "model";
  expect_refused(f, "not an adapter");
  f = good;
  f.adapter_type = "ia3";
  expect_refused(f, "adapter.type is not 'lora'");
  f = good;
  f.arch = "falcon";
  expect_refused(f, "'falcon'");
  f = good;
  f.tensors.push_back({"token_embd.weight.lora_a", {64, 4, 1, 1}});
  f.tensors.push_back({"token_embd.weight.lora_b", {4, 256, 1, 1}});
  expect_refused(f, "token_embd.weight.lora_a");
  f = good;
  f.tensors[0].ne = {32, 4, 1, 1};  // n_in 32 for a weight of 64 inputs
  expect_refused(f, "blk.0.attn_q.weight.lora_a");
  f = good;
  f.tensors[1].ne = {2, 64, 1, 1};  // b's rank differs from a's
  expect_refused(f, "blk.0.attn_q.weight.lora_b");
  f = good;
  f.tensors.pop_back();  // lora_a alone
  expect_refused(f, "'blk.0.attn_q.weight.lora_a' has no partner");
  f = good;
  f.tensors.push_back({"blk.0.attn_q.weight.scale", {4, 1, 1, 1}, 1});
  expect_refused(f, "blk.0.attn_q.weight.scale");
}

TEST(LoraErrors, MissingFileAndAModelAsAdapter) {
  ModelParams mp;
  mp.adapters = {{"/nonexistent/adapter.gguf", 1.0f}};
  Result<std::unique_ptr<Model>> m = Model::load(base_model(DType::F32), mp);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("/nonexistent/adapter.gguf"), std::string::npos) << m.status().message();
  mp.adapters = {{base_model(DType::F32), 1.0f}};
  m = Model::load(base_model(DType::F32), mp);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("not an adapter"), std::string::npos) << m.status().message();
}

}  // namespace
}  // namespace tessera
