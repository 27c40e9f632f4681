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

#include "common/test_util.h"
#include "model/arch.h"
#include "model/model_impl.h"
#include "model/variant_check.h"
#include "model/weight_lists.h"
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

}  // namespace
}  // namespace tessera
