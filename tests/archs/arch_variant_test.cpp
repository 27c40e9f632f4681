// Block variants: every architecture's declared variant is buildable and agrees with its
// tensor list; a file's tensors must be exactly those of the variant it chose (a stray
// tensor is refused by name); and each alternative a variant allows still loads, with the
// choice recorded in the decided variant. Files are the architectures' reference models
// (../shared/archs/models) rewritten with tensors added or left out.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/runtime_test_util.h"
#include "common/test_util.h"
#include "core/fp16.h"
#include "model/arch.h"
#include "model/model_impl.h"
#include "model/variant_check.h"
#include "model/weight_lists.h"
#include "tessera/context.h"
#include "tessera/gguf.h"
#include "tessera/model.h"

namespace tessera {
namespace {

TEST(ArchsVariant, EveryArchitectureDeclaresAVariantItsListAgreesWith) {
  ASSERT_EQ(registered_archs().size(), 23u);
  for (const Arch* a : registered_archs()) {
    SCOPED_TRACE(std::string(a->name));
    const char* why = variant_error(a->variant);
    EXPECT_EQ(why, nullptr) << why;
    const char* tensor = weights_error(a->weights, a->variant);
    EXPECT_EQ(tensor, nullptr) << tensor;
  }
}

TEST(ArchsVariant, TheChecksRefuseWhatTheBlocksCannotBuild) {
  constexpr BlockVariant kGated{.ffn = FfnKind::Gated, .up_bias = Presence::Either};
  EXPECT_NE(variant_error(kGated), nullptr);
  constexpr BlockVariant kNoFfnNorm{.ffn_norm = false, .residual = Residual::Sequential};
  EXPECT_NE(variant_error(kNoFfnNorm), nullptr);
  constexpr BlockVariant kLearnedOrRope{.positions = kLearnedPositions | kRopePositions};
  EXPECT_NE(variant_error(kLearnedOrRope), nullptr);
  constexpr BlockVariant kFusedMla{.qkv = QkvLayout::Fused, .mla = true};
  EXPECT_NE(variant_error(kFusedMla), nullptr);
  constexpr BlockVariant kLowRankQWithoutMla{.q_lora = Presence::Yes};
  EXPECT_NE(variant_error(kLowRankQWithoutMla), nullptr);

  // A LLaMA list with an up bias: the gated variant does not use it, and says which.
  constexpr BlockVariant kLlama{};
  constexpr auto kWithUpBias = join_weights(
      std::array{global("token_embd.weight", &ModelWeights::token_embd, shapes::vocab),
                 global("output_norm.weight", &ModelWeights::output_norm, shapes::embd),
                 global("output.weight", &ModelWeights::output, shapes::vocab)},
      kLlamaLayer);
  EXPECT_EQ(weights_error(kWithUpBias, kLlama), nullptr);
  constexpr auto kStray = join_weights(
      kWithUpBias, std::array{per_layer("blk.{}.ffn_up.bias", &LayerWeights::ffn_up_b, shapes::ff)});
  ASSERT_NE(weights_error(kStray, kLlama), nullptr);
  EXPECT_STREQ(weights_error(kStray, kLlama), "blk.{}.ffn_up.bias");
  // A list that leaves out a tensor the variant uses.
  constexpr auto kNoOutput = join_weights(
      std::array{global("token_embd.weight", &ModelWeights::token_embd, shapes::vocab),
                 global("output_norm.weight", &ModelWeights::output_norm, shapes::embd)},
      kLlamaLayer);
  EXPECT_STREQ(weights_error(kNoOutput, kLlama), "output.weight");
}

/// `model` (a file in ../shared/archs/models) rewritten: the tensors in `drop` left out,
/// then `edit` applied (adds tensors); written to a temporary file whose path it returns.
std::string rewrite(const gguf::File& base, const std::string& name, const std::set<std::string>& drop,
                    const std::function<void(gguf::Writer&)>& edit) {
  gguf::Writer w;
  for (const auto& [key, value] : base.metadata()) w.set(key, value);
  for (const gguf::TensorInfo& t : base.tensors()) {
    if (!drop.count(t.name)) w.add_tensor_ref(t.name, t.type, t.ne, t.n_dims, t.data, t.nbytes);
  }
  if (edit) edit(w);
  const std::string path = ::testing::TempDir() + "variant_" + name + ".gguf";
  EXPECT_TRUE(w.write(path).is_ok());
  return path;
}

/// Loads `path` (then removes it): the decided variant, or the load's error.
Result<BlockVariant> load_variant(const std::string& path) {
  Result<std::unique_ptr<Model>> m = Model::load(path);
  std::remove(path.c_str());
  if (!m) return m.status();
  return (*m)->impl().weights.variant;
}

/// Vectors kept alive until the writer has written them.
using Kept = std::vector<std::vector<float>>;

/// Adds an F32 [n] tensor of `value`s (0: a bias, 1: a norm weight) named `name`.
void add_vector(gguf::Writer& w, Kept& kept, const std::string& name, int64_t n, float value = 0.0f) {
  const std::vector<float>& data = kept.emplace_back(size_t(n), value);
  w.add_tensor_ref(name, DType::F32, {n, 1, 1, 1}, 1, data.data(), data.size() * sizeof(float));
}

class ArchsVariantFiles : public ::testing::Test {
 protected:
  /// The reference model `stem`.gguf, or skip.
  const gguf::File* open(const std::string& stem) {
    path_ = test::shared_file("archs/models/" + stem + ".gguf");
    if (path_.empty()) return nullptr;
    Result<std::unique_ptr<gguf::File>> f = gguf::File::open(path_);
    EXPECT_TRUE(f.is_ok()) << f.status().message();
    if (!f) return nullptr;
    file_ = std::move(*f);
    return file_.get();
  }
  /// Rows of tensor `name` (ne[1]) or its length (ne[0] of a vector).
  int64_t dim(const std::string& name, int i) const { return file_->find_tensor(name)->ne[size_t(i)]; }
  int64_t n_layer() const {
    int64_t n = 0;
    while (file_->find_tensor("blk." + std::to_string(n) + ".attn_norm.weight") != nullptr) ++n;
    return n;
  }

  std::string path_;
  std::unique_ptr<gguf::File> file_;
  Kept zeros_;
};

#define OPEN_OR_SKIP(var, stem)                                                       \
  const gguf::File* var = open(stem);                                                 \
  if (var == nullptr) GTEST_SKIP() << "shared file absent: archs/models/" stem ".gguf"

TEST_F(ArchsVariantFiles, AGatedModelWithAStrayUpBiasIsRefusedNamingIt) {
  OPEN_OR_SKIP(f, "qwen2");
  const int64_t n_ff = dim("blk.0.ffn_up.weight", 1);
  const std::string path = rewrite(*f, "qwen2_up_bias", {}, [&](gguf::Writer& w) {
    add_vector(w, zeros_, "blk.0.ffn_up.bias", n_ff);
  });
  Result<BlockVariant> v = load_variant(path);
  ASSERT_FALSE(v.is_ok());
  EXPECT_NE(v.status().message().find("'blk.0.ffn_up.bias'"), std::string::npos) << v.status().message();
}

TEST_F(ArchsVariantFiles, TiedAndUntiedOutputsAndRopeFreqsLoadAsTheFileChose) {
  {
    OPEN_OR_SKIP(f, "qwen2");  // tied: no output.weight
    ASSERT_EQ(f->find_tensor("output.weight"), nullptr);
    Result<BlockVariant> v = load_variant(rewrite(*f, "qwen2_tied", {}, {}));
    ASSERT_TRUE(v.is_ok()) << v.status().message();
    EXPECT_EQ(v->output, Presence::No);
    EXPECT_EQ(v->qkv_bias, Presence::Yes);
    EXPECT_TRUE(is_decided(*v));
  }
  OPEN_OR_SKIP(f, "llama3");  // untied, with rope_freqs
  Result<BlockVariant> full = load_variant(rewrite(*f, "llama3_full", {}, {}));
  ASSERT_TRUE(full.is_ok()) << full.status().message();
  EXPECT_EQ(full->output, Presence::Yes);
  EXPECT_EQ(full->rope_freqs, Presence::Yes);
  Result<BlockVariant> bare = load_variant(rewrite(*f, "llama3_bare", {"output.weight", "rope_freqs.weight"}, {}));
  ASSERT_TRUE(bare.is_ok()) << bare.status().message();
  EXPECT_EQ(bare->output, Presence::No);
  EXPECT_EQ(bare->rope_freqs, Presence::No);
}

TEST_F(ArchsVariantFiles, FalconWithASecondNormInEveryLayerLoadsAndInOneLayerIsRefused) {
  OPEN_OR_SKIP(f, "falcon");
  const int64_t n_embd = dim("blk.0.attn_norm.weight", 0);
  const int64_t layers = n_layer();
  ASSERT_GT(layers, 1);
  Result<BlockVariant> seven = load_variant(rewrite(*f, "falcon_7b", {}, {}));
  ASSERT_TRUE(seven.is_ok()) << seven.status().message();
  EXPECT_EQ(seven->second_norm, Presence::No);
  EXPECT_TRUE(seven->parallel());

  Result<BlockVariant> forty = load_variant(rewrite(*f, "falcon_40b", {}, [&](gguf::Writer& w) {
    for (int64_t il = 0; il < layers; ++il) {
      add_vector(w, zeros_, "blk." + std::to_string(il) + ".attn_norm_2.weight", n_embd, 1.0f);
      add_vector(w, zeros_, "blk." + std::to_string(il) + ".attn_norm_2.bias", n_embd);
    }
  }));
  ASSERT_TRUE(forty.is_ok()) << forty.status().message();
  EXPECT_EQ(forty->second_norm, Presence::Yes);

  // Layer 0 decides (no second norm): one in layer 1 is a tensor this file's variant lacks.
  Result<BlockVariant> mixed = load_variant(rewrite(*f, "falcon_mixed", {}, [&](gguf::Writer& w) {
    add_vector(w, zeros_, "blk.1.attn_norm_2.weight", n_embd, 1.0f);
    add_vector(w, zeros_, "blk.1.attn_norm_2.bias", n_embd);
  }));
  ASSERT_FALSE(mixed.is_ok());
  EXPECT_NE(mixed.status().message().find("'blk.1.attn_norm_2.weight'"), std::string::npos)
      << mixed.status().message();
}

TEST_F(ArchsVariantFiles, MptWithAndWithoutBiasesLoadsAndAStrayBiasIsRefused) {
  OPEN_OR_SKIP(f, "mpt");
  const int64_t n_embd = dim("blk.0.attn_norm.weight", 0);
  const int64_t n_qkv = dim("blk.0.attn_qkv.weight", 1);
  const int64_t n_ff = dim("blk.0.ffn_up.weight", 1);
  const int64_t layers = n_layer();
  Result<BlockVariant> none = load_variant(rewrite(*f, "mpt_no_bias", {}, {}));
  ASSERT_TRUE(none.is_ok()) << none.status().message();
  EXPECT_EQ(none->norm_bias, Presence::No);
  EXPECT_EQ(none->up_bias, Presence::No);
  EXPECT_EQ(none->output, Presence::No);

  Result<BlockVariant> all = load_variant(rewrite(*f, "mpt_biases", {}, [&](gguf::Writer& w) {
    add_vector(w, zeros_, "output_norm.bias", n_embd);
    for (int64_t il = 0; il < layers; ++il) {
      const std::string blk = "blk." + std::to_string(il) + ".";
      for (const char* name : {"attn_norm.bias", "attn_output.bias", "ffn_norm.bias", "ffn_down.bias"}) {
        add_vector(w, zeros_, blk + name, n_embd);
      }
      add_vector(w, zeros_, blk + "attn_qkv.bias", n_qkv);
      add_vector(w, zeros_, blk + "ffn_up.bias", n_ff);
    }
  }));
  ASSERT_TRUE(all.is_ok()) << all.status().message();
  for (Presence BlockVariant::*part : {&BlockVariant::norm_bias, &BlockVariant::qkv_bias, &BlockVariant::out_bias,
                                       &BlockVariant::up_bias, &BlockVariant::down_bias}) {
    EXPECT_EQ((*all).*part, Presence::Yes);
  }

  Result<BlockVariant> stray = load_variant(rewrite(*f, "mpt_stray", {}, [&](gguf::Writer& w) {
    add_vector(w, zeros_, "blk.1.ffn_up.bias", n_ff);
  }));
  ASSERT_FALSE(stray.is_ok());
  EXPECT_NE(stray.status().message().find("'blk.1.ffn_up.bias'"), std::string::npos) << stray.status().message();
}

/// The logits after decoding a fixed prompt with the model at `path` (then removed).
std::vector<float> prompt_logits(const std::string& path) {
  Result<std::unique_ptr<Model>> m = Model::load(path);
  std::remove(path.c_str());
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  if (!m) return {};
  ContextParams cp;
  cp.n_ctx = 32;
  Result<std::unique_ptr<Context>> ctx = Context::create(**m, cp);
  EXPECT_TRUE(ctx.is_ok()) << ctx.status().message();
  const TokenId prompt[] = {4081, 17, 300, 2048, 9, 1000, 77};
  EXPECT_TRUE(ctx && (*ctx)->decode(prompt).is_ok());
  return ctx ? std::vector<float>((*ctx)->logits().begin(), (*ctx)->logits().end()) : std::vector<float>{};
}

// DeepSeek-V2's low-rank query, attn_q_b(norm(attn_q_a x) * attn_q_a_norm), against
// V2-Lite's attn_q x on the same model: attn_q_a = 3 P (P a permutation), the norm's
// weights 1/2, and attn_q_b = 2 attn_q P^T give attn_q x again when x is RMS-normed
// already (every attn_norm 1, the epsilon negligible). A missing part (the permutation,
// the norm, its weights) would scale or scramble q.
TEST(ArchsVariantMla, TheLowRankQueryIsTheProductOfItsParts) {
  TESSERA_REQUIRE_SHARED(path, "archs2/models/deepseek2.gguf");
  Result<std::unique_ptr<gguf::File>> opened = gguf::File::open(path);
  ASSERT_TRUE(opened.is_ok()) << opened.status().message();
  const gguf::File& base = **opened;
  const int64_t n = base.find_tensor("blk.0.attn_norm.weight")->ne[0];
  int64_t layers = 0;
  while (base.find_tensor("blk." + std::to_string(layers) + ".attn_q.weight") != nullptr) ++layers;
  ASSERT_EQ(layers, 27);
  auto perm = [n](int64_t j) { return (j * 5 + 3) % n; };  // 5 is prime to n = 64
  std::vector<float> q_a(size_t(n * n), 0.0f);
  for (int64_t j = 0; j < n; ++j) q_a[size_t(j * n + perm(j))] = 3.0f;  // output j reads input perm(j)
  Kept kept;
  std::vector<std::vector<uint16_t>> q_b(static_cast<size_t>(layers));
  std::set<std::string> norms, queries;
  for (int64_t il = 0; il < layers; ++il) {
    const std::string blk = "blk." + std::to_string(il) + ".";
    norms.insert(blk + "attn_norm.weight");
    queries.insert(blk + "attn_q.weight");
    const gguf::TensorInfo* q = base.find_tensor(blk + "attn_q.weight");
    ASSERT_EQ(q->type, DType::F16);
    const auto* src = reinterpret_cast<const uint16_t*>(q->data);
    std::vector<uint16_t>& dst = q_b[size_t(il)];
    dst.resize(size_t(q->ne[0] * q->ne[1]));
    for (int64_t r = 0; r < q->ne[1]; ++r) {
      for (int64_t j = 0; j < n; ++j) dst[size_t(r * n + j)] = f32_to_f16(2.0f * f16_to_f32(src[r * n + perm(j)]));
    }
  }
  auto common = [&](gguf::Writer& w) {
    w.set("deepseek2.attention.layer_norm_rms_epsilon", 1e-12f);
    for (const std::string& name : norms) add_vector(w, kept, name, n, 1.0f);
  };
  const std::vector<float> plain = prompt_logits(rewrite(base, "ds2_plain_q", norms, common));
  std::set<std::string> dropped = norms;
  dropped.insert(queries.begin(), queries.end());
  const std::string low_rank = rewrite(base, "ds2_q_lora", dropped, [&](gguf::Writer& w) {
    common(w);
    w.set("deepseek2.attention.q_lora_rank", uint32_t(n));
    for (int64_t il = 0; il < layers; ++il) {
      const std::string blk = "blk." + std::to_string(il) + ".";
      const gguf::TensorInfo* q = base.find_tensor(blk + "attn_q.weight");
      w.add_tensor_ref(blk + "attn_q_a.weight", DType::F32, {n, n, 1, 1}, 2, q_a.data(), q_a.size() * sizeof(float));
      add_vector(w, kept, blk + "attn_q_a_norm.weight", n, 0.5f);
      w.add_tensor_ref(blk + "attn_q_b.weight", DType::F16, q->ne, 2, q_b[size_t(il)].data(), q_b[size_t(il)].size() * 2);
    }
  });
  Result<std::unique_ptr<Model>> m = Model::load(low_rank);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ((*m)->impl().weights.variant.q_lora, Presence::Yes);
  m->reset();
  const std::vector<float> with_lora = prompt_logits(low_rank);
  ASSERT_EQ(with_lora.size(), plain.size());
  EXPECT_LE(test::nmse(with_lora, plain), 1e-8);  // rounding; q twice as large gives 3e-2
}

}  // namespace
}  // namespace tessera
