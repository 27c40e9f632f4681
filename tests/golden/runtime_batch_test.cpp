// Multi-sequence decoding: a batch serving several sequences gives each the logits it
// would get alone, and the sequence operations (seq_cp, seq_rm, seq_add, context_shift)
// leave the cache in the state a fresh decode of the result would build.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/runtime_test_util.h"
#include "tessera/sampler.h"

namespace tessera {
namespace {

using test::decode_alone;
using test::make_context;
using test::nmse;
using test::some_tokens;

// Batched and lone decodes differ only in the shapes of the matrix products (the same
// dot products, accumulated alike): agreement is at rounding level.
constexpr double kSameMath = 1e-6;

std::vector<TokenId> concat(std::vector<TokenId> a, std::span<const TokenId> b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class RuntimeBatch : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    model_ = test::shared_model(GetParam());
    if (!model_) GTEST_SKIP() << "shared model absent: " << GetParam();
    n_vocab_ = model_->info().n_vocab;
  }
  const Model* model_ = nullptr;
  int64_t n_vocab_ = 0;
};

TEST_P(RuntimeBatch, InterleavedSequencesMatchLoneDecodes) {
  const size_t lengths[4] = {7, 12, 3, 9};
  std::vector<std::vector<TokenId>> prompts;
  for (int s = 0; s < 4; ++s) prompts.push_back(some_tokens(lengths[s], s + 1, n_vocab_));
  auto ctx = make_context(*model_, 128, 4);
  ASSERT_TRUE(ctx);
  Batch b;
  std::vector<std::vector<int64_t>> index(4);  // batch index of each sequence's tokens
  for (size_t k = 0; k < 12; ++k) {
    for (int s = 0; s < 4; ++s) {
      if (k >= lengths[s]) continue;
      index[size_t(s)].push_back(b.size());
      b.add(prompts[size_t(s)][k], Pos(k), s, true);
    }
  }
  ASSERT_TRUE(ctx->decode(b).is_ok());
  std::vector<TokenId> next(4);
  for (int s = 0; s < 4; ++s) {
    const auto alone = decode_alone(*model_, prompts[size_t(s)]);
    ASSERT_EQ(alone.size(), lengths[s]);
    for (size_t k = 0; k < lengths[s]; ++k) {
      EXPECT_LE(nmse(ctx->logits_at(index[size_t(s)][k]), alone[k]), kSameMath) << "seq " << s << " token " << k;
    }
    next[size_t(s)] = argmax(alone.back());
  }
  // One more step: the next token of every sequence in one batch.
  b.clear();
  for (int s = 0; s < 4; ++s) b.add(next[size_t(s)], Pos(lengths[s]), s, true);
  ASSERT_TRUE(ctx->decode(b).is_ok());
  for (int s = 0; s < 4; ++s) {
    const TokenId one[] = {next[size_t(s)]};
    const auto alone = decode_alone(*model_, concat(prompts[size_t(s)], one));
    EXPECT_LE(nmse(ctx->logits_at(s), alone.back()), kSameMath) << "seq " << s;
  }
  EXPECT_EQ(ctx->n_cells_used(), 7 + 12 + 3 + 9 + 4);
}

TEST_P(RuntimeBatch, SharedPrefixForksIntoSequences) {
  const std::vector<TokenId> prefix = some_tokens(6, 10, n_vocab_);
  auto ctx = make_context(*model_, 64, 4);
  ASSERT_TRUE(ctx);
  ASSERT_TRUE(ctx->decode(prefix).is_ok());
  for (SeqId s = 1; s < 4; ++s) ASSERT_TRUE(ctx->seq_cp(0, s, -1, -1).is_ok());
  EXPECT_EQ(ctx->n_cells_used(), 6);  // shared, not copied
  const size_t cont_len[4] = {2, 4, 3, 5};
  std::vector<std::vector<TokenId>> conts;
  Batch b;
  std::vector<int64_t> last(4);
  for (SeqId s = 0; s < 4; ++s) {
    conts.push_back(some_tokens(cont_len[s], 20 + s, n_vocab_));
    b.add_sequence(conts.back(), 6, s);
    last[size_t(s)] = b.size() - 1;
  }
  ASSERT_TRUE(ctx->decode(b).is_ok());
  for (SeqId s = 0; s < 4; ++s) {
    const auto alone = decode_alone(*model_, concat(prefix, conts[size_t(s)]));
    EXPECT_LE(nmse(ctx->logits_at(last[size_t(s)]), alone.back()), kSameMath) << "seq " << s;
    EXPECT_EQ(ctx->seq_tokens(s), concat(prefix, conts[size_t(s)]));
    EXPECT_EQ(ctx->seq_pos_max(s), Pos(5 + cont_len[s]));
  }
  EXPECT_EQ(ctx->n_cells_used(), 6 + 2 + 4 + 3 + 5);
  ASSERT_TRUE(ctx->seq_rm(2, -1, -1).is_ok());  // the prefix stays: others use it
  EXPECT_EQ(ctx->n_cells_used(), 6 + 2 + 4 + 5);
  EXPECT_EQ(ctx->seq_pos_max(2), -1);
  ASSERT_TRUE(ctx->seq_keep(1).is_ok());
  EXPECT_EQ(ctx->n_cells_used(), 6 + 4);
  EXPECT_EQ(ctx->seq_pos_max(0), -1);
  EXPECT_EQ(ctx->seq_pos_min(1), 0);
}

// Removing a middle range hides it from later tokens. Reference: the same cells built
// without seq_rm, the middle range living in a second sequence only.
TEST_P(RuntimeBatch, RemovedMiddleRangeIsInvisible) {
  const std::vector<TokenId> t = some_tokens(20, 30, n_vocab_);
  const TokenId x = 5;
  auto a = make_context(*model_, 64, 1);
  ASSERT_TRUE(a->decode(t).is_ok());
  auto c = make_context(*model_, 64, 1);  // no removal
  ASSERT_TRUE(c->decode(t).is_ok());
  ASSERT_TRUE(a->seq_rm(0, 5, 10).is_ok());
  EXPECT_EQ(a->n_cells_used(), 15);
  EXPECT_EQ(a->seq_tokens(0), concat(std::vector<TokenId>(t.begin(), t.begin() + 5),
                                     std::span<const TokenId>(t).subspan(10)));
  Batch next;
  next.add(x, 20, 0, true);
  ASSERT_TRUE(a->decode(next).is_ok());
  ASSERT_TRUE(c->decode(next).is_ok());

  auto b = make_context(*model_, 64, 2);
  Batch built;
  const SeqId both[] = {0, 1};
  for (Pos p = 0; p < 20; ++p) {
    if (p >= 5 && p < 10) {
      built.add(t[size_t(p)], p, 1, false);
    } else {
      built.add(t[size_t(p)], p, both, false);
    }
  }
  ASSERT_TRUE(b->decode(built).is_ok());
  ASSERT_TRUE(b->decode(next).is_ok());
  EXPECT_LE(nmse(a->logits(), b->logits()), kSameMath);
  EXPECT_GT(nmse(a->logits(), c->logits()), 1e-4) << "the removal changed nothing";
}

// RoPE makes attention depend on relative positions only, so moving a whole sequence
// (its cached keys re-rotated by seq_add) must give what decoding it at the new
// positions gives. With an F32 cache the two rotations agree to float rounding (NMSE
// measured <= 4e-12; tolerance 1e-9). In an F16 cache the rotated key is rounded to F16
// once more (relative 2^-11): the error is of the size of the F16 cache's own rounding,
// which on stories260K (F16 vs F32 cache, same positions) reaches NMSE 2e-6 at shifts
// 0..100; the shifted results measured 3e-7..3e-6 there (mini-llama-f16: 1.5e-9), so the
// tolerance is 1e-5. A wrong rotation is off by more than 1e-4 (checked below).
void expect_shift_matches(const Model& m, DType kv, Pos from, Pos to, double tol) {
  const std::vector<TokenId> t = some_tokens(16, 40, m.info().n_vocab);
  const TokenId x = 7;
  auto ctx = make_context(m, 64, 1, kv);
  Batch b;
  b.add_sequence(t, from, 0);
  ASSERT_TRUE(ctx->decode(b).is_ok());
  ASSERT_TRUE(ctx->seq_add(0, -1, -1, to - from).is_ok());
  EXPECT_EQ(ctx->seq_pos_min(0), to);
  EXPECT_EQ(ctx->seq_pos_max(0), to + 15);
  b.clear();
  b.add(x, to + 16, 0, true);
  ASSERT_TRUE(ctx->decode(b).is_ok());
  const TokenId one[] = {x};
  const auto ref = decode_alone(m, concat(t, one), kv, to);
  const double e = nmse(ctx->logits(), ref.back());
  EXPECT_LE(e, tol) << "from " << from << " to " << to;
  if (to > from) {
    // Keys left at their old rotation (a shift that only renumbers cells) are far off.
    auto broken = make_context(m, 64, 1, kv);
    b.clear();
    b.add_sequence(t, from, 0);
    b.add(x, to + 16, 0, true);
    ASSERT_TRUE(broken->decode(b).is_ok());
    EXPECT_GT(nmse(broken->logits(), ref.back()), 1e-4);
  }
}

TEST_P(RuntimeBatch, ShiftedKeysMatchDecodingAtTheNewPositions) {
  expect_shift_matches(*model_, DType::F32, 40, 0, 1e-9);
  expect_shift_matches(*model_, DType::F32, 3, 30, 1e-9);
  expect_shift_matches(*model_, DType::F16, 40, 0, 1e-5);
  expect_shift_matches(*model_, DType::F16, 3, 30, 1e-5);
}

// Dropping the first part of a sequence and shifting the rest back keeps every relative
// position: the next token sees what it would see without the shift (F16 cache: the
// tolerance of the test above).
TEST_P(RuntimeBatch, DropFrontAndShiftBackKeepsRelativePositions) {
  const std::vector<TokenId> t = some_tokens(24, 50, n_vocab_);
  auto a = make_context(*model_, 64, 1);
  auto c = make_context(*model_, 64, 1);
  ASSERT_TRUE(a->decode(t).is_ok());
  ASSERT_TRUE(c->decode(t).is_ok());
  ASSERT_TRUE(a->seq_rm(0, 0, 8).is_ok());
  ASSERT_TRUE(a->seq_add(0, 8, -1, -8).is_ok());
  ASSERT_TRUE(c->seq_rm(0, 0, 8).is_ok());
  EXPECT_EQ(a->n_past(), 16);
  const TokenId x[] = {9};
  ASSERT_TRUE(a->decode(x).is_ok());  // at position 16
  Batch b;
  b.add(x[0], 24, 0, true);
  ASSERT_TRUE(c->decode(b).is_ok());
  EXPECT_LE(nmse(a->logits(), c->logits()), 1e-5);
}

TEST_P(RuntimeBatch, ContextShiftKeepsPrefixAndMovesTail) {
  const std::vector<TokenId> t = some_tokens(40, 60, n_vocab_);
  auto ctx = make_context(*model_, 48, 2);
  ASSERT_TRUE(ctx->decode(t).is_ok());
  Result<int64_t> dropped = ctx->context_shift(0, 4);
  ASSERT_TRUE(dropped.is_ok()) << dropped.status().message();
  EXPECT_EQ(*dropped, 18);
  EXPECT_EQ(ctx->n_past(), 22);
  EXPECT_EQ(ctx->n_cells_used(), 22);
  EXPECT_EQ(ctx->seq_tokens(0), concat(std::vector<TokenId>(t.begin(), t.begin() + 4),
                                       std::span<const TokenId>(t).subspan(22)));
  ASSERT_TRUE(ctx->decode(some_tokens(20, 61, n_vocab_)).is_ok());  // room again
  EXPECT_EQ(ctx->n_past(), 42);
  EXPECT_FALSE(ctx->context_shift(0, 41).is_ok());
  // Cells shared with another sequence cannot move: refused, nothing changed.
  ASSERT_TRUE(ctx->seq_cp(0, 1, -1, -1).is_ok());
  Result<int64_t> shared = ctx->context_shift(0, 4);
  ASSERT_FALSE(shared.is_ok());
  EXPECT_NE(shared.status().message().find("shared"), std::string::npos) << shared.status().message();
  EXPECT_EQ(ctx->n_cells_used(), 42);
  EXPECT_EQ(ctx->n_past(), 42);
}

TEST_P(RuntimeBatch, BatchLargerThanNBatchIsSplit) {
  std::vector<std::vector<TokenId>> prompts;
  Batch b;
  for (int s = 0; s < 3; ++s) {
    prompts.push_back(some_tokens(size_t(9 + s), 70 + s, n_vocab_));
    b.add_sequence(prompts.back(), 0, s, true);
  }
  ContextParams cp;
  cp.n_ctx = 64;
  cp.n_seq_max = 3;
  cp.n_batch = 5;
  auto small = Context::create(*model_, cp);
  ASSERT_TRUE(small.is_ok());
  ASSERT_TRUE((*small)->decode(b).is_ok());
  auto whole = make_context(*model_, 64, 3);
  ASSERT_TRUE(whole->decode(b).is_ok());
  for (int64_t i = 0; i < b.size(); ++i) {
    EXPECT_LE(nmse((*small)->logits_at(i), whole->logits_at(i)), kSameMath) << i;
  }
  // decode(tokens) with all_logits keeps every token's logits across forward passes.
  cp.n_seq_max = 1;
  cp.all_logits = true;
  auto legacy = Context::create(*model_, cp);
  ASSERT_TRUE(legacy.is_ok());
  ASSERT_TRUE((*legacy)->decode(prompts[2]).is_ok());
  const auto alone = decode_alone(*model_, prompts[2]);
  for (size_t i = 0; i < prompts[2].size(); ++i) {
    EXPECT_LE(nmse((*legacy)->logits_at(int64_t(i)), alone[i]), kSameMath) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, RuntimeBatch, ::testing::Values("stories260K.gguf", "mini-llama-f16.gguf"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           std::string name = param.param;
                           name = name.substr(0, name.find(".gguf"));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

std::string decode_error(Context& ctx, const Batch& b) {
  const Status s = ctx.decode(b);
  EXPECT_FALSE(s.is_ok());
  return s.message();
}

TEST(RuntimeBatchErrors, BadBatchesAreRefusedAndChangeNothing) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared model absent: stories260K.gguf";
  auto ctx = make_context(*m, 16, 2);
  Batch ok;
  ok.add_sequence(std::vector<TokenId>{1, 2}, 0, 0);
  ASSERT_TRUE(ctx->decode(ok).is_ok());
  struct Case {
    Batch batch;
    const char* expect;
  };
  std::vector<Case> cases(9);
  cases[0].expect = "no tokens";
  cases[1].batch.add(512, 2, 0, true);
  cases[1].expect = "outside the vocabulary";
  cases[2].batch.add(3, -1, 1, true);
  cases[2].expect = "negative position";
  cases[3].batch.add(3, 0, 2, true);
  cases[3].expect = "sequence id 2 out of range";
  const SeqId twice[] = {1, 1};
  cases[4].batch.add(3, 0, twice, true);
  cases[4].expect = "twice";
  cases[5].batch.add(3, 0, std::span<const SeqId>(), true);
  cases[5].expect = "no sequence";
  cases[6].batch.add(3, 1, 0, true);
  cases[6].expect = "does not follow its last position 1";
  cases[7].batch.add(3, 5, 1, false);
  cases[7].batch.add(4, 4, 1, true);
  cases[7].expect = "does not follow its last position 5";
  cases[8].batch.add_sequence(some_tokens(15, 1, 512), 0, 1);
  cases[8].expect = "context full";
  for (const Case& c : cases) {
    const std::string err = decode_error(*ctx, c.batch);
    EXPECT_NE(err.find(c.expect), std::string::npos) << err;
    EXPECT_EQ(ctx->n_cells_used(), 2);
  }
  EXPECT_EQ(ctx->n_past(), 2);
  EXPECT_FALSE(ctx->seq_rm(2, -1, -1).is_ok());
  EXPECT_FALSE(ctx->seq_cp(-1, 0, -1, -1).is_ok());
  EXPECT_FALSE(ctx->seq_keep(5).is_ok());
  EXPECT_FALSE(ctx->seq_add(-2, 0, 1, 1).is_ok());
  ContextParams cp;
  cp.n_seq_max = 65;
  EXPECT_FALSE(Context::create(*m, cp).is_ok());
  cp.n_seq_max = 0;
  EXPECT_FALSE(Context::create(*m, cp).is_ok());
}

}  // namespace
}  // namespace tessera
