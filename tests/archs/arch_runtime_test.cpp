// The runtime over every architecture's F16 file in ../shared/archs: a batch of three
// sequences equals each decoded alone; a saved state continues identically; one and two
// threads agree; cache shifts follow how the architecture encodes positions; and
// tessera's quantizer gives the reference quantizer's tensor types and logits within the
// quantized golden's bound.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "archs/arch_test_util.h"
#include "common/runtime_test_util.h"
#include "common/test_util.h"
#include "tessera/batch.h"
#include "tessera/context.h"
#include "tessera/gguf.h"
#include "tessera/model.h"
#include "tessera/quantize.h"

namespace tessera {
namespace {

// Batching changes the order of no sum, but the GEMM paths differ with the batch's width.
constexpr double kSameMath = 1e-6;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "tessera_arch_" + std::to_string(getpid()) + "_" + name;
}

using test::decode_alone;
using test::make_context;
using test::some_tokens;

class ArchRuntime : public ::testing::TestWithParam<test::ArchCase> {
 protected:
  void SetUp() override {
    TESSERA_REQUIRE_SHARED(path, GetParam().model_path());
    path_ = path;
    Result<std::unique_ptr<Model>> m = Model::load(path_);
    ASSERT_TRUE(m.is_ok()) << m.status().message();
    model_ = std::move(*m);
  }
  std::string path_;
  std::unique_ptr<Model> model_;
};

TEST_P(ArchRuntime, BatchOfThreeEqualsEachAlone) {
  const Model& m = *model_;
  const int64_t nv = m.info().n_vocab;
  const std::vector<std::vector<TokenId>> seqs = {some_tokens(7, 1, nv), some_tokens(11, 2, nv),
                                                  some_tokens(4, 3, nv)};
  std::unique_ptr<Context> ctx = make_context(m, 128, 3);
  Batch b;
  std::vector<int64_t> first;
  for (size_t s = 0; s < seqs.size(); ++s) {
    first.push_back(b.size());
    b.add_sequence(seqs[s], 0, SeqId(s), /*all_outputs=*/true);
  }
  ASSERT_TRUE(ctx->decode(b).is_ok());
  for (size_t s = 0; s < seqs.size(); ++s) {
    const auto alone = decode_alone(m, seqs[s]);
    ASSERT_EQ(alone.size(), seqs[s].size());
    for (size_t k = 0; k < seqs[s].size(); ++k) {
      EXPECT_LE(test::nmse(ctx->logits_at(first[s] + int64_t(k)), alone[k]), kSameMath)
          << "seq " << s << " token " << k;
    }
  }
  // One more token each, in one batch: the decode step of continuous batching.
  Batch step;
  for (size_t s = 0; s < seqs.size(); ++s) step.add(TokenId(5 + s), Pos(seqs[s].size()), SeqId(s), true);
  ASSERT_TRUE(ctx->decode(step).is_ok());
  for (size_t s = 0; s < seqs.size(); ++s) {
    std::vector<TokenId> longer = seqs[s];
    longer.push_back(TokenId(5 + s));
    EXPECT_LE(test::nmse(ctx->logits_at(int64_t(s)), decode_alone(m, longer).back()), kSameMath) << "seq " << s;
  }
}

TEST_P(ArchRuntime, SavedStateContinuesIdentically) {
  const Model& m = *model_;
  const std::vector<TokenId> prompt = some_tokens(9, 4, m.info().n_vocab);
  const TokenId next[] = {7};
  const std::string file = temp_path(GetParam().stem() + ".state");
  std::vector<float> expected;
  {
    std::unique_ptr<Context> a = make_context(m, 64);
    ASSERT_TRUE(a->decode(prompt).is_ok());
    ASSERT_TRUE(a->save_state(file).is_ok());
    ASSERT_TRUE(a->decode(next).is_ok());
    expected.assign(a->logits().begin(), a->logits().end());
  }
  std::unique_ptr<Context> b = make_context(m, 64);
  ASSERT_TRUE(b->load_state(file).is_ok());
  ASSERT_TRUE(b->decode(next).is_ok());
  EXPECT_EQ(std::vector<float>(b->logits().begin(), b->logits().end()), expected);
  std::remove(file.c_str());
}

TEST_P(ArchRuntime, OneAndTwoThreadsAgree) {
  const Model& m = *model_;
  const std::vector<TokenId> prompt = some_tokens(13, 5, m.info().n_vocab);
  std::vector<std::vector<float>> out;
  for (int threads : {1, 2}) {
    std::unique_ptr<Context> c = make_context(m, 64, 1, DType::F16, false, threads);
    ASSERT_TRUE(c->decode(prompt).is_ok());
    out.emplace_back(c->logits().begin(), c->logits().end());
  }
  EXPECT_LE(test::nmse(out[1], out[0]), 1e-12);
}

// RoPE moves a cached key by rotating it, ALiBi by the distances alone: decoding after
// shifting a whole sequence by 5 equals decoding it 5 positions on. Learned absolute
// positions cannot move, and say so.
TEST_P(ArchRuntime, ShiftsFollowThePositionEncoding) {
  const Model& m = *model_;
  const std::vector<TokenId> prompt = some_tokens(10, 6, m.info().n_vocab);
  const TokenId next = 9;
  std::unique_ptr<Context> c = make_context(m, 64);
  ASSERT_TRUE(c->decode(prompt).is_ok());
  const Status moved = c->seq_add(0, 0, -1, 5);
  if (!moved.is_ok()) {
    EXPECT_NE(moved.message().find("learned absolute position"), std::string::npos) << moved.message();
    EXPECT_FALSE(c->context_shift(0, 2).is_ok());
    return;
  }
  Batch b;
  b.add(next, Pos(prompt.size() + 5), 0, true);
  ASSERT_TRUE(c->decode(b).is_ok());
  std::vector<TokenId> all = prompt;
  all.push_back(next);
  // The F16 cache holds keys rotated twice (at p, then by 5) instead of once.
  EXPECT_LE(test::nmse(c->logits(), decode_alone(m, all, DType::F16, 5).back()), 1e-5);
  EXPECT_TRUE(c->context_shift(0, 2).is_ok());
}

INSTANTIATE_TEST_SUITE_P(Archs, ArchRuntime, ::testing::ValuesIn(test::arch_f16_cases()), test::arch_case_name);

// Our quantizer on the F16 file: the reference quantizer's types tensor by tensor, and
// logits within the quantized golden's bound.
class ArchQuantize : public ::testing::TestWithParam<test::ArchCase> {};

TEST_P(ArchQuantize, MatchesTheReferenceQuantizer) {
  const test::ArchCase& c = GetParam();
  TESSERA_REQUIRE_SHARED(f16, c.f16().model_path());
  TESSERA_REQUIRE_SHARED(ref_path, c.model_path());
  TESSERA_REQUIRE_SHARED(golden_path, c.golden_path());
  const std::string out = temp_path(c.model());
  QuantizeParams p;
  p.type_name = c.quant;
  p.n_threads = 2;
  Result<QuantizeReport> r = quantize_model(f16, out, p);
  ASSERT_TRUE(r.is_ok()) << r.status().message();

  Result<std::unique_ptr<gguf::File>> ours = gguf::File::open(out);
  Result<std::unique_ptr<gguf::File>> ref = gguf::File::open(ref_path);
  ASSERT_TRUE(ours.is_ok() && ref.is_ok());
  ASSERT_EQ((*ours)->tensors().size(), (*ref)->tensors().size());
  for (const gguf::TensorInfo& t : (*ref)->tensors()) {
    const gguf::TensorInfo* mine = (*ours)->find_tensor(t.name);
    ASSERT_NE(mine, nullptr) << t.name;
    EXPECT_EQ(dtype_name(mine->type), dtype_name(t.type)) << t.name;
  }

  std::ifstream in(golden_path);
  const nlohmann::json golden = nlohmann::json::parse(in);
  Result<std::unique_ptr<Model>> m = Model::load(out);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  // The reference's context where its goldens depend on it (LongRoPE's factors).
  std::unique_ptr<Context> ctx = make_context(**m, c.golden_n_ctx() > 0 ? c.golden_n_ctx() : 64);
  ASSERT_TRUE(ctx->decode(golden["prompt_ids"].get<std::vector<TokenId>>()).is_ok());
  const double e = test::nmse(ctx->logits(), golden["logits_last_prompt"].get<std::vector<float>>());
  EXPECT_LE(e, c.max_nmse());
  char text[32];
  std::snprintf(text, sizeof text, "%.3e", e);
  RecordProperty("nmse", text);
  std::remove(out.c_str());
}

std::vector<test::ArchCase> quantized_cases() {
  std::vector<test::ArchCase> cases;
  for (const test::ArchCase& c : test::arch_cases()) {
    if (!c.quant.empty()) cases.push_back(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Archs, ArchQuantize, ::testing::ValuesIn(quantized_cases()), test::arch_case_name);

}  // namespace
}  // namespace tessera
