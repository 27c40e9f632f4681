// Fused q/k/v and gate/up projections (src/model/fuse_weights.h): a repacked model loaded
// with fusion gives logits bit-identical to the same model loaded with TESSERA_FUSE=0,
// for a prompt (many columns per matmul) and single-token steps, with 1 and 2 threads.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "common/runtime_test_util.h"
#include "model/model_impl.h"
#include "tessera/context.h"
#include "tessera/sampler.h"

namespace tessera {
namespace {

std::unique_ptr<Model> load_with_fuse(const std::string& path, const char* fuse) {
  test::ScopedEnv env("TESSERA_FUSE", fuse);
  Result<std::unique_ptr<Model>> m = Model::load(path);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  return m ? std::move(*m) : nullptr;
}

bool repacked(const Tensor* t) { return dtype_traits(t->type).row_group > 1; }

// Whether the parts are repacked matrices of one type: what fusion needs (repack_weights
// places such sets back to back).
bool fusable(std::initializer_list<const Tensor*> parts) {
  for (const Tensor* t : parts) {
    if (!repacked(t) || t->type != (*parts.begin())->type) return false;
  }
  return true;
}

// Checks that a fused tensor is set exactly where its parts are fusable, over their rows.
void expect_fused(const Tensor* fused, std::initializer_list<const Tensor*> parts,
                  const char* what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(fused != nullptr, fusable(parts));
  if (fused == nullptr) return;
  int64_t rows = 0;
  for (const Tensor* t : parts) rows += t->ne[1];
  EXPECT_EQ(fused->type, (*parts.begin())->type);
  EXPECT_EQ(fused->ne[0], (*parts.begin())->ne[0]);
  EXPECT_EQ(fused->ne[1], rows);
  EXPECT_EQ(fused->data, (*parts.begin())->data);
}

// Logits of every prompt token, then of three single-token steps (greedy).
std::vector<float> run(const Model& m, int threads) {
  ContextParams cp;
  cp.n_ctx = 32;
  cp.n_threads = threads;
  cp.all_logits = true;
  Result<std::unique_ptr<Context>> c = Context::create(m, cp);
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  std::vector<float> out;
  if (!c) return out;
  const std::vector<TokenId> prompt = test::some_tokens(13, 7, m.info().n_vocab);
  EXPECT_TRUE((*c)->decode(prompt).is_ok());
  for (size_t i = 0; i < prompt.size(); ++i) {
    const std::span<const float> l = (*c)->logits_at(int64_t(i));
    out.insert(out.end(), l.begin(), l.end());
  }
  for (int step = 0; step < 3; ++step) {
    const TokenId next[] = {argmax((*c)->logits())};
    EXPECT_TRUE((*c)->decode(next).is_ok());
    out.insert(out.end(), (*c)->logits().begin(), (*c)->logits().end());
  }
  return out;
}

// Bit identity, reporting the first differing value.
void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      FAIL() << what << ": logit " << i << " differs: " << a[i] << " vs " << b[i];
    }
  }
}

class FusedProjectionsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FusedProjectionsTest, LogitsBitIdenticalToUnfused) {
  TESSERA_REQUIRE_SHARED(path, std::string("models/") + GetParam());
  std::unique_ptr<Model> fused = load_with_fuse(path, "1");
  std::unique_ptr<Model> plain = load_with_fuse(path, "0");
  ASSERT_TRUE(fused && plain);
  int n_fused = 0;
  for (const LayerWeights& l : plain->impl().weights.layers) {
    EXPECT_EQ(l.wqkv, nullptr);
    EXPECT_EQ(l.ffn_gate_up, nullptr);
  }
  for (const LayerWeights& l : fused->impl().weights.layers) {
    expect_fused(l.wqkv, {l.wq, l.wk, l.wv}, "wqkv");
    expect_fused(l.ffn_gate_up, {l.ffn_gate, l.ffn_up}, "ffn_gate_up");
    n_fused += int(l.wqkv != nullptr) + int(l.ffn_gate_up != nullptr);
  }
  if (n_fused == 0) {
    GTEST_SKIP() << "nothing fused: weights not repacked here (no AVX2, or "
                    "TESSERA_REPACK=0), or no set of one type";
  }
  const std::vector<float> want = run(*plain, 2);
  ASSERT_FALSE(want.empty());
  expect_same_bits(run(*fused, 2), want, "fused, 2 threads");
  expect_same_bits(run(*fused, 1), want, "fused, 1 thread");
}

// "mini-llama-Q4_0.gguf" -> "mini_llama_Q4_0_gguf".
std::string case_name(const ::testing::TestParamInfo<const char*>& param) {
  std::string s = param.param;
  for (char& ch : s) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(Models, FusedProjectionsTest,
                         ::testing::Values("mini-llama-Q4_0.gguf", "mini-llama-Q8_0.gguf",
                                           "mini-llama-Q4_K.gguf", "mini-llama-f16.gguf"),
                         case_name);

}  // namespace
}  // namespace tessera
