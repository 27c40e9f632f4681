// write_random_model for every registered architecture: the file loads (its tensors are
// exactly what the architecture declares), tokenizes with the vocabulary it was given,
// and decodes a prompt and a few more tokens with finite logits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tessera/context.h"
#include "tessera/gguf.h"
#include "tessera/model.h"
#include "tessera/synth.h"
#include "tessera/tokenizer.h"

namespace tessera {
namespace {

/// A small SentencePiece vocabulary: specials, the 256 byte tokens, printable ASCII and
/// the space mark.
Status tiny_vocab(gguf::Writer& w) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens.emplace_back(name);
    types.push_back(6);
  }
  tokens.emplace_back("\xe2\x96\x81");
  types.push_back(1);
  for (char c = 33; c < 127; ++c) {
    tokens.emplace_back(1, c);
    types.push_back(1);
  }
  std::vector<float> scores(tokens.size(), -1.0f);
  w.set("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens", gguf::Value::array(std::move(tokens)));
  w.set("tokenizer.ggml.scores", gguf::Value::array(std::move(scores)));
  w.set("tokenizer.ggml.token_type", gguf::Value::array(std::move(types)));
  w.set("tokenizer.ggml.unknown_token_id", uint32_t(0));
  w.set("tokenizer.ggml.bos_token_id", uint32_t(1));
  w.set("tokenizer.ggml.eos_token_id", uint32_t(2));
  return Status::ok();
}

class Synth : public ::testing::TestWithParam<std::string> {};

TEST_P(Synth, WritesAModelThatDecodes) {
  const std::string path =
      ::testing::TempDir() + "tessera_synth_" + std::to_string(getpid()) + "_" + GetParam() + ".gguf";
  SynthParams p;
  p.arch = GetParam();
  // Multi-head attention and a head size of 16: shapes every architecture accepts.
  p.n_embd = 64;
  p.n_layer = 2;
  p.n_head = 4;
  p.n_head_kv = 4;
  p.n_ff = 128;
  p.n_ctx = 256;
  p.vocab = tiny_vocab;
  const Status s = write_random_model(p, path);
  ASSERT_TRUE(s.is_ok()) << s.message();

  Result<std::unique_ptr<Model>> m = Model::load(path);
  std::remove(path.c_str());  // the mapping stays valid
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ((*m)->info().arch, GetParam());
  EXPECT_EQ((*m)->info().n_layer, 2);
  ASSERT_NE((*m)->tokenizer(), nullptr);
  const std::vector<TokenId> prompt = (*m)->tokenizer()->encode("Hello world", true, false);
  ASSERT_GT(prompt.size(), 2u);

  ContextParams cp;
  cp.n_ctx = 64;
  cp.n_threads = 2;
  cp.embeddings = (*m)->info().encoder;
  cp.all_logits = (*m)->info().encoder;
  Result<std::unique_ptr<Context>> ctx = Context::create(**m, cp);
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().message();
  ASSERT_TRUE((*ctx)->decode(prompt).is_ok());
  if ((*m)->info().encoder) {  // no logits: every token's embedding, finite
    EXPECT_EQ((*m)->info().pooling, "mean");
    for (size_t i = 0; i < prompt.size(); ++i) {
      for (float v : (*ctx)->embeddings_at(int64_t(i))) ASSERT_TRUE(std::isfinite(v)) << "token " << i;
    }
    return;
  }
  for (int step = 0; step < 4; ++step) {
    const std::span<const float> logits = (*ctx)->logits();
    ASSERT_EQ(int64_t(logits.size()), (*m)->info().n_vocab);
    TokenId best = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      ASSERT_TRUE(std::isfinite(logits[i])) << "step " << step << ", token " << i;
      if (logits[i] > logits[size_t(best)]) best = TokenId(i);
    }
    const TokenId next[] = {best};
    ASSERT_TRUE((*ctx)->decode(next).is_ok()) << "step " << step;
  }
}

std::string arch_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& ch : name) {
    if (ch == '-') ch = '_';  // gtest names: letters, digits, underscores ("nomic-bert")
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Archs, Synth, ::testing::ValuesIn(architecture_names()), arch_name);

// Experts on request: llama with 8 experts, 2 used, is Mixtral's layout (routers F32,
// expert stacks, no dense FFN) and decodes; a dense-only architecture refuses experts.
/// The model at `path` (removed once mapped) decodes a text into finite logits.
void expect_decodes(const std::string& path) {
  Result<std::unique_ptr<Model>> m = Model::load(path);
  std::remove(path.c_str());
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  ContextParams cp;
  cp.n_ctx = 32;
  Result<std::unique_ptr<Context>> ctx = Context::create(**m, cp);
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().message();
  ASSERT_TRUE((*ctx)->decode((*m)->tokenizer()->encode("Hello world", true, false)).is_ok());
  for (float v : (*ctx)->logits()) ASSERT_TRUE(std::isfinite(v));
}

TEST(SynthCases, LlamaWithExpertsIsMixtralsLayout) {
  const std::string path = ::testing::TempDir() + "tessera_synth_" + std::to_string(getpid()) + "_moe.gguf";
  SynthParams p;
  p.n_embd = 64;
  p.n_layer = 2;
  p.n_head = 4;
  p.n_head_kv = 2;
  p.n_ff = 96;
  p.n_ctx = 128;
  p.n_expert = 8;
  p.n_expert_used = 2;
  p.vocab = tiny_vocab;
  ASSERT_TRUE(write_random_model(p, path).is_ok());
  {
    Result<std::unique_ptr<gguf::File>> f = gguf::File::open(path);
    ASSERT_TRUE(f.is_ok()) << f.status().message();
    const gguf::TensorInfo* exps = (*f)->find_tensor("blk.1.ffn_down_exps.weight");
    ASSERT_NE(exps, nullptr);
    EXPECT_EQ(exps->ne, (std::array<int64_t, 4>{96, 64, 8, 1}));
    const gguf::TensorInfo* router = (*f)->find_tensor("blk.0.ffn_gate_inp.weight");
    ASSERT_NE(router, nullptr);
    EXPECT_EQ(router->type, DType::F32);
    EXPECT_EQ((*f)->find_tensor("blk.0.ffn_gate.weight"), nullptr);
  }
  expect_decodes(path);

  p.arch = "gpt2";
  const Status dense = write_random_model(p, path);
  EXPECT_FALSE(dense.is_ok());
  EXPECT_NE(dense.message().find("no mixture-of-experts"), std::string::npos) << dense.message();
}

// DeepSeek-V2's layout: multi-head latent attention (no attn_k / attn_v; a latent of half
// the width plus the rotated half of a head), a leading dense layer, then experts with a
// shared one; it decodes.
TEST(SynthCases, Deepseek2HasLatentAttentionAndALeadingDenseLayer) {
  const std::string path = ::testing::TempDir() + "tessera_synth_" + std::to_string(getpid()) + "_ds2.gguf";
  SynthParams p;
  p.arch = "deepseek2";
  p.n_embd = 64;
  p.n_layer = 3;
  p.n_head = 4;
  p.n_head_kv = 2;  // MLA expands for every head: written as 4
  p.n_ff = 96;
  p.n_ctx = 128;
  p.vocab = tiny_vocab;
  ASSERT_TRUE(write_random_model(p, path).is_ok());
  {
    Result<std::unique_ptr<gguf::File>> f = gguf::File::open(path);
    ASSERT_TRUE(f.is_ok()) << f.status().message();
    const gguf::TensorInfo* kv_a = (*f)->find_tensor("blk.0.attn_kv_a_mqa.weight");
    ASSERT_NE(kv_a, nullptr);
    EXPECT_EQ(kv_a->ne, (std::array<int64_t, 4>{64, 32 + 8, 1, 1}));  // latent 32, rope 8 of head 16
    EXPECT_EQ((*f)->find_tensor("blk.0.attn_k.weight"), nullptr);
    EXPECT_NE((*f)->find_tensor("blk.0.ffn_gate.weight"), nullptr);
    EXPECT_EQ((*f)->find_tensor("blk.0.ffn_gate_inp.weight"), nullptr);
    EXPECT_EQ((*f)->find_tensor("blk.1.ffn_gate.weight"), nullptr);
    EXPECT_NE((*f)->find_tensor("blk.2.ffn_down_shexp.weight"), nullptr);
  }
  expect_decodes(path);
}

TEST(SynthCases, WithoutAVocabularyWritesVocabSize) {
  const std::string path =
      ::testing::TempDir() + "tessera_synth_" + std::to_string(getpid()) + "_novocab.gguf";
  SynthParams p;
  p.n_embd = 64;
  p.n_layer = 1;
  p.n_head = 4;
  p.n_ff = 96;
  p.n_vocab = 300;
  ASSERT_TRUE(write_random_model(p, path).is_ok());
  Result<std::unique_ptr<Model>> m = Model::load(path);
  std::remove(path.c_str());
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ((*m)->info().n_vocab, 300);
  EXPECT_EQ((*m)->tokenizer(), nullptr);
}

TEST(SynthCases, RefusesAnUnknownArchitecture) {
  SynthParams p;
  p.arch = "no-such-arch";
  const Status s = write_random_model(p, ::testing::TempDir() + "tessera_synth_none.gguf");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("llama"), std::string::npos) << s.message();  // lists the known ones
}

}  // namespace
}  // namespace tessera
