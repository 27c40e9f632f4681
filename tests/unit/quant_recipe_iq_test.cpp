// The i-quant and ternary recipes (model/quant_recipe.h): on mini-llama-f16.gguf each
// target gives every tensor the type the reference quantizer gave it in
// ../shared/models/mini-llama-<TYPE>.gguf (made with an importance matrix); the rules that
// depend on the importance matrix, the layer position and the model's shape; which
// targets and tensors need an importance matrix; the fallbacks for short rows.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "model/quant_recipe.h"
#include "quant/convert.h"
#include "tessera/gguf.h"

namespace tessera {
namespace {

std::vector<TensorDesc> descs_of(const gguf::File& f) {
  std::vector<TensorDesc> d;
  for (const gguf::TensorInfo& t : f.tensors()) d.push_back({t.name, t.type, t.n_dims, t.ne[0]});
  return d;
}

TEST(QuantRecipeIq, MiniLlamaTypesMatchTheReferenceFiles) {
  TESSERA_REQUIRE_SHARED(f16_path, "models/mini-llama-f16.gguf");
  auto f16 = gguf::File::open(f16_path);
  ASSERT_TRUE(f16.is_ok()) << f16.status().message();
  const std::vector<TensorDesc> descs = descs_of(**f16);
  const QuantModelFacts facts = quant_model_facts(**f16);
  int files = 0;
  for (const char* type : {"IQ4_NL", "IQ4_XS", "IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ2_S",
                           "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0"}) {
    const std::string path = test::shared_file(std::string("models/mini-llama-") + type + ".gguf");
    if (path.empty()) continue;
    auto ref = gguf::File::open(path);
    ASSERT_TRUE(ref.is_ok()) << ref.status().message();
    const QuantRecipe* recipe = find_quant_recipe(type);
    ASSERT_NE(recipe, nullptr) << type;
    Result<int64_t> ft = (*ref)->get_int("general.file_type");
    ASSERT_TRUE(ft.is_ok());
    EXPECT_EQ(int64_t(recipe->file_type), *ft) << type;
    const std::vector<TensorPlan> plans = plan_quantization(*recipe, facts, descs, false, /*has_imatrix=*/true);
    for (size_t i = 0; i < descs.size(); ++i) {
      const gguf::TensorInfo* t = (*ref)->find_tensor(descs[i].name);
      ASSERT_NE(t, nullptr) << descs[i].name;
      EXPECT_EQ(dtype_name(plans[i].type), dtype_name(t->type)) << type << ": " << descs[i].name;
      EXPECT_TRUE(plans[i].note.empty()) << plans[i].note;
    }
    ++files;
  }
  if (files == 0) GTEST_SKIP() << "no i-quant mini-llama files";
}

// A 16-layer LLaMA with 4 KV groups per head (gqa 4) and one with 2, with or without an
// importance matrix.
struct Model16 {
  std::vector<std::string> names;
  std::vector<TensorDesc> descs;
  Model16() {
    names = {"token_embd.weight", "output.weight"};
    for (int il = 0; il < 16; ++il) {
      for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
        names.push_back("blk." + std::to_string(il) + "." + w + ".weight");
      }
    }
    for (const std::string& n : names) descs.push_back({n, DType::F16, 2, 4096});
  }
  DType type_of(const char* recipe, const std::string& name, int64_t gqa, bool imatrix,
                int64_t n_expert = 0) const {
    const QuantModelFacts facts{"llama", 16, gqa, n_expert, false, false};
    const std::vector<TensorPlan> plans =
        plan_quantization(*find_quant_recipe(recipe), facts, descs, false, imatrix);
    for (size_t i = 0; i < descs.size(); ++i) {
      if (descs[i].name == name) return plans[i].type;
    }
    ADD_FAILURE() << name;
    return DType::F32;
  }
};

TEST(QuantRecipeIq, RulesOfTheReference) {
  const Model16 m;
  // IQ3_XXS's attn_v: Q4_K with gqa >= 4, else IQ3_XXS with an importance matrix, IQ3_S without.
  EXPECT_EQ(m.type_of("IQ3_XXS", "blk.3.attn_v.weight", 4, true), DType::Q4_K);
  EXPECT_EQ(m.type_of("IQ3_XXS", "blk.3.attn_v.weight", 2, true), DType::IQ3_XXS);
  EXPECT_EQ(m.type_of("IQ3_XXS", "blk.3.attn_v.weight", 2, false), DType::IQ3_S);
  // ... and its ffn_down without one: Q4_K for i < n/8 (2), Q3_K after.
  EXPECT_EQ(m.type_of("IQ3_XXS", "blk.1.ffn_down.weight", 2, false), DType::Q4_K);
  EXPECT_EQ(m.type_of("IQ3_XXS", "blk.2.ffn_down.weight", 2, false), DType::Q3_K);
  EXPECT_EQ(m.type_of("IQ3_XXS", "blk.1.ffn_down.weight", 2, true), DType::IQ3_XXS);
  // The low i-quants: ffn_down of the first eighth Q2_K (IQ2_S/M: IQ3_S), attn_v Q4_K at gqa 4.
  EXPECT_EQ(m.type_of("IQ2_XXS", "blk.1.ffn_down.weight", 2, true), DType::Q2_K);
  EXPECT_EQ(m.type_of("IQ2_XXS", "blk.2.ffn_down.weight", 2, true), DType::IQ2_XXS);
  EXPECT_EQ(m.type_of("IQ2_M", "blk.0.ffn_down.weight", 2, true), DType::IQ3_S);
  EXPECT_EQ(m.type_of("IQ2_M", "blk.5.ffn_gate.weight", 2, true), DType::IQ2_S);
  EXPECT_EQ(m.type_of("IQ1_M", "blk.5.attn_v.weight", 4, true), DType::Q4_K);
  EXPECT_EQ(m.type_of("IQ1_M", "blk.5.attn_output.weight", 4, true), DType::IQ2_XXS);
  EXPECT_EQ(m.type_of("IQ2_XS", "blk.5.attn_output.weight", 4, true, 8), DType::Q5_K);
  EXPECT_EQ(m.type_of("IQ2_XS", "blk.5.attn_k.weight", 4, true, 8), DType::Q4_K);
  // IQ3_XS: attn_q/k IQ3_XXS, the middle layers' ffn_gate/up IQ3_XXS (2 <= i < 14).
  EXPECT_EQ(m.type_of("IQ3_XS", "blk.0.attn_q.weight", 2, true), DType::IQ3_XXS);
  EXPECT_EQ(m.type_of("IQ3_XS", "blk.1.ffn_up.weight", 2, true), DType::IQ3_S);
  EXPECT_EQ(m.type_of("IQ3_XS", "blk.2.ffn_up.weight", 2, true), DType::IQ3_XXS);
  EXPECT_EQ(m.type_of("IQ3_XS", "blk.13.ffn_gate.weight", 2, true), DType::IQ3_XXS);
  EXPECT_EQ(m.type_of("IQ3_XS", "blk.14.ffn_gate.weight", 2, true), DType::IQ3_S);
  // IQ3_M: attn_v and attn_output Q4_K, ffn_down Q4_K in the first eighth.
  EXPECT_EQ(m.type_of("IQ3_M", "blk.7.attn_v.weight", 2, true), DType::Q4_K);
  EXPECT_EQ(m.type_of("IQ3_M", "blk.7.attn_output.weight", 2, true), DType::Q4_K);
  EXPECT_EQ(m.type_of("IQ3_M", "blk.1.ffn_down.weight", 2, true), DType::Q4_K);
  EXPECT_EQ(m.type_of("IQ3_M", "blk.2.ffn_down.weight", 2, true), DType::IQ3_S);
  // IQ4_*: attn_v Q5_K at gqa 4; ffn_down Q5_K in the first eighth only without a matrix.
  EXPECT_EQ(m.type_of("IQ4_XS", "blk.9.attn_v.weight", 4, true), DType::Q5_K);
  EXPECT_EQ(m.type_of("IQ4_NL", "blk.1.ffn_down.weight", 2, false), DType::Q5_K);
  EXPECT_EQ(m.type_of("IQ4_NL", "blk.1.ffn_down.weight", 2, true), DType::IQ4_NL);
  EXPECT_EQ(m.type_of("IQ4_NL", "output.weight", 2, true), DType::Q6_K);
  // Q4_0 / Q5_0 with an importance matrix: the first eighth's ffn_down get a minimum.
  EXPECT_EQ(m.type_of("Q4_0", "blk.1.ffn_down.weight", 2, true), DType::Q4_1);
  EXPECT_EQ(m.type_of("Q4_0", "blk.1.ffn_down.weight", 2, false), DType::Q4_0);
  EXPECT_EQ(m.type_of("Q5_0", "blk.0.ffn_down.weight", 2, true), DType::Q5_1);
  EXPECT_EQ(m.type_of("Q5_0", "blk.2.ffn_down.weight", 2, true), DType::Q5_0);
  // The ternary targets: token_embd Q4_K, output Q6_K.
  EXPECT_EQ(m.type_of("TQ1_0", "token_embd.weight", 2, false), DType::Q4_K);
  EXPECT_EQ(m.type_of("TQ2_0", "output.weight", 2, false), DType::Q6_K);
  EXPECT_EQ(m.type_of("TQ2_0", "blk.4.attn_v.weight", 2, false), DType::TQ2_0);
}

TEST(QuantRecipeIq, FallbacksForShortRows) {
  // 4096 rows fit every block; 96 = 3 x 32 fits only the 32-blocks; 100 fits nothing.
  const bool iq4_nl = quant::from_float_fn(DType::IQ4_NL) != nullptr;
  auto plan = [](const char* recipe, int64_t row) {
    const TensorDesc d{"blk.0.ffn_gate.weight", DType::F16, 2, row};
    return plan_quantization(*find_quant_recipe(recipe), QuantModelFacts{"llama", 1}, {&d, 1}, false, true)[0];
  };
  EXPECT_EQ(plan("IQ2_XXS", 96).type, iq4_nl ? DType::IQ4_NL : DType::Q4_0);
  EXPECT_EQ(plan("IQ4_XS", 96).type, iq4_nl ? DType::IQ4_NL : DType::Q4_0);
  EXPECT_EQ(plan("Q3_K_S", 96).type, iq4_nl ? DType::IQ4_NL : DType::Q4_0);
  EXPECT_EQ(plan("TQ1_0", 96).type, DType::Q4_0);
  EXPECT_EQ(plan("IQ4_NL", 96).type, DType::IQ4_NL);
  EXPECT_EQ(plan("IQ4_NL", 100).type, DType::F16);
  EXPECT_EQ(plan("IQ3_S", 100).type, DType::F16);
  EXPECT_NE(plan("IQ3_S", 100).note.find("row length 100"), std::string::npos);
}

TEST(QuantRecipeIq, TargetsAndTensorsThatNeedAnImportanceMatrix) {
  for (const char* t : {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "Q2_K_S"}) {
    EXPECT_TRUE(find_quant_recipe(t)->needs_imatrix) << t;
  }
  for (const char* t : {"IQ2_M", "IQ3_XXS", "IQ3_S", "IQ4_NL", "IQ4_XS", "TQ1_0", "Q2_K", "Q4_K_M"}) {
    EXPECT_FALSE(find_quant_recipe(t)->needs_imatrix) << t;
  }
  EXPECT_TRUE(tensor_needs_imatrix(FileType::IQ2_M, DType::IQ2_S, "blk.0.attn_q.weight"));
  EXPECT_TRUE(tensor_needs_imatrix(FileType::IQ3_XXS, DType::IQ2_S, "blk.0.attn_q.weight"));
  EXPECT_TRUE(tensor_needs_imatrix(FileType::IQ1_M, DType::IQ1_M, "blk.0.ffn_up.weight"));
  EXPECT_FALSE(tensor_needs_imatrix(FileType::IQ1_M, DType::IQ1_M, "token_embd.weight"));
  EXPECT_TRUE(tensor_needs_imatrix(FileType::Q2_K_S, DType::Q2_K, "blk.0.ffn_up.weight"));
  EXPECT_FALSE(tensor_needs_imatrix(FileType::Q2_K_S, DType::Q2_K, "token_embd.weight"));
  EXPECT_FALSE(tensor_needs_imatrix(FileType::Q2_K, DType::Q2_K, "blk.0.ffn_up.weight"));
  EXPECT_FALSE(tensor_needs_imatrix(FileType::IQ3_S, DType::IQ3_S, "blk.0.ffn_up.weight"));
}

TEST(QuantRecipeIq, BitsPerWeight) {
  // From the blocks: Q4_K 144 bytes per 256 = 4.5; the reference's figure for the IQ mixes.
  EXPECT_DOUBLE_EQ(recipe_bpw(*find_quant_recipe("Q4_K_M")), 4.5);
  EXPECT_DOUBLE_EQ(recipe_bpw(*find_quant_recipe("Q6_K")), 6.5625);
  EXPECT_DOUBLE_EQ(recipe_bpw(*find_quant_recipe("IQ2_M")), 2.7);
  for (const QuantRecipe& r : quant_recipes()) EXPECT_GT(recipe_bpw(r), 1.0) << r.name;
}

}  // namespace
}  // namespace tessera
