// Embeddings: Context::embeddings_at is the final hidden state after the output norm,
// and `tessera embed` pools it (deterministically, normalized on request).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/test_util.h"
#include "common/runtime_test_util.h"
#include "model/model_impl.h"
#include "tessera/embedding.h"
#include "tessera/tokenizer.h"

namespace tessera {
namespace {

using test::run_cli;

class RuntimeEmbed : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = test::shared_model("stories260K.gguf");
    if (!model_) GTEST_SKIP() << "shared model absent: stories260K.gguf";
    path_ = test::shared_file("models/stories260K.gguf");
  }
  /// Per-token embeddings of `text` (BOS added), token-major.
  std::vector<float> token_rows(const std::string& text) {
    const Tokenizer* tok = model_->tokenizer();
    const std::vector<TokenId> ids = tok->encode(text, tok->add_bos_token());
    auto ctx = test::make_context(*model_, 64, 1, DType::F16, /*embeddings=*/true);
    Batch b;
    b.add_sequence(ids, 0, 0, true);
    EXPECT_TRUE(ctx->decode(b).is_ok());
    std::vector<float> rows;
    for (int64_t i = 0; i < b.size(); ++i) {
      const std::span<const float> e = ctx->embeddings_at(i);
      EXPECT_EQ(e.size(), 64u);
      rows.insert(rows.end(), e.begin(), e.end());
    }
    return rows;
  }
  const Model* model_ = nullptr;
  std::string path_;
};

// The logits are the output projection of the embedding: checks that embeddings_at
// is the hidden state the logits came from.
TEST_F(RuntimeEmbed, LogitsAreTheOutputProjectionOfTheEmbedding) {
  auto ctx = test::make_context(*model_, 64, 1, DType::F16, true);
  Batch b;
  b.add_sequence(std::vector<TokenId>{1, 400, 30, 77}, 0, 0, true);
  ASSERT_TRUE(ctx->decode(b).is_ok());
  const Tensor* w = model_->impl().weights.output;
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->type, DType::F32);
  for (int64_t i = 0; i < b.size(); ++i) {
    const std::span<const float> e = ctx->embeddings_at(i);
    const std::span<const float> logits = ctx->logits_at(i);
    for (int64_t v = 0; v < 512; v += 37) {
      double dot = 0;
      for (int64_t j = 0; j < 64; ++j) dot += double(w->ptr<float>(v)[j]) * e[size_t(j)];
      EXPECT_NEAR(dot, logits[size_t(v)], 1e-4 * (1 + std::abs(dot))) << "token " << i << " vocab " << v;
    }
  }
}

TEST_F(RuntimeEmbed, PoolingAndNormalization) {
  const std::vector<float> rows = {1, 2, 3, 5, 6, 7, 6, 4, 2};
  EXPECT_EQ(pool_embeddings(rows, 3, Pooling::Mean), (std::vector<float>{4, 4, 4}));
  EXPECT_EQ(pool_embeddings(rows, 3, Pooling::Cls), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(pool_embeddings(rows, 3, Pooling::Last), (std::vector<float>{6, 4, 2}));
  std::vector<float> v = {3, 4};
  normalize_l2(v);
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(v[1], 0.8f);
  EXPECT_FALSE(parse_pooling("max").is_ok());
}

TEST_F(RuntimeEmbed, CliIsDeterministicAndMeanPoolsEmbeddingsAt) {
  const std::string args = "embed -m " + path_ + " -p 'Once upon a time'";
  const test::CliOutput a = run_cli(args + " -t 2");
  ASSERT_EQ(a.status, 0) << a.err;
  const test::CliOutput again = run_cli(args + " -t 1");
  EXPECT_EQ(again.out, a.out);  // same bytes, whatever the thread count
  const auto j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["model"], "stories260K.gguf");
  EXPECT_EQ(j["n_embd"], 64);
  EXPECT_EQ(j["pooling"], "mean");
  const auto cli = j["embedding"].get<std::vector<float>>();
  const std::vector<float> rows = token_rows("Once upon a time");
  const size_t n_tokens = rows.size() / 64;
  ASSERT_EQ(j["n_tokens"].get<size_t>(), n_tokens);
  ASSERT_EQ(cli.size(), 64u);
  for (size_t d = 0; d < 64; ++d) {
    double mean = 0;
    for (size_t t = 0; t < n_tokens; ++t) mean += rows[t * 64 + d];
    mean /= double(n_tokens);
    EXPECT_NEAR(cli[d], mean, 1e-6 * (1 + std::abs(mean))) << d;
  }
}

TEST_F(RuntimeEmbed, CliNormalizeAndPoolings) {
  for (const char* pooling : {"mean", "last", "cls"}) {
    const test::CliOutput o = run_cli("embed -m " + path_ + " -p 'The little dog' --normalize --pooling " + pooling);
    ASSERT_EQ(o.status, 0) << o.err;
    const auto j = nlohmann::json::parse(o.out);
    EXPECT_EQ(j["pooling"], pooling);
    double sq = 0;
    for (float x : j["embedding"].get<std::vector<float>>()) sq += double(x) * x;
    EXPECT_NEAR(std::sqrt(sq), 1.0, 1e-5) << pooling;
  }
  const std::vector<float> rows = token_rows("The little dog");
  const auto last = nlohmann::json::parse(run_cli("embed -m " + path_ + " -p 'The little dog' --pooling last").out);
  const auto cli_last = last["embedding"].get<std::vector<float>>();
  ASSERT_EQ(cli_last.size(), 64u);
  for (size_t d = 0; d < 64; ++d) {
    const float api = rows[rows.size() - 64 + d];
    EXPECT_NEAR(cli_last[d], api, 1e-5 * (1 + std::abs(api))) << d;  // other n_ctx: other sum order
  }
}

TEST_F(RuntimeEmbed, CliBadFlagsGiveOneErrorLine) {
  for (const std::string& args : std::vector<std::string>{"embed -m " + path_ + " -p hi --pooling max", "embed -m " + path_,
                                  "embed -m /nonexistent.gguf -p hi", "embed -m " + path_ + " -p hi --frobnicate"}) {
    const test::CliOutput o = run_cli(args);
    EXPECT_NE(o.status, 0) << args;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << args << ": " << o.err;
    EXPECT_EQ(o.out, "") << args;
  }
}

}  // namespace
}  // namespace tessera
