// Context::seq_copy: a sequence gets its own copies of another's cells, and continues
// exactly as the original (or a seq_cp share) would.
#include <gtest/gtest.h>

#include "common/runtime_test_util.h"

namespace tessera {
namespace {

TEST(RuntimeSeqCopy, CopiedCellsContinueLikeSharedOnes) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  // 4 regions of 32 cells; sequence 0 decodes 20 tokens in region 0.
  std::unique_ptr<Context> ctx = test::make_context(*m, 128, 4);
  const std::vector<TokenId> prompt = test::some_tokens(20, 3, m->info().n_vocab);
  Batch b;
  b.add_sequence(prompt, 0, 0);
  ASSERT_TRUE(ctx->decode(b).is_ok());
  ASSERT_TRUE(ctx->seq_copy(0, 2, 0, 12).is_ok());  // the first 12 positions, copied
  ASSERT_TRUE(ctx->seq_cp(0, 1, 0, 12).is_ok());    // the same, shared
  EXPECT_EQ(ctx->n_cells_used(), 32);
  EXPECT_EQ(ctx->seq_pos_max(2), 11);
  EXPECT_EQ(ctx->seq_tokens(2), std::vector<TokenId>(prompt.begin(), prompt.begin() + 12));
  EXPECT_EQ(ctx->seq_home_free(2), 32 - 12);  // the copies went to sequence 2's home region
  EXPECT_EQ(ctx->seq_home_free(1), 32);
  // The same next token in sequences 1 and 2 gives the same logits.
  Batch next;
  next.add(prompt[12], 12, 1, true);
  next.add(prompt[12], 12, 2, true);
  ASSERT_TRUE(ctx->decode(next).is_ok());
  const auto a = ctx->logits_at(0);
  const auto c = ctx->logits_at(1);
  // The same keys and values; only the cells' places in the attention window differ,
  // which changes the order of the vector sums (rounding), nothing more.
  EXPECT_LT(test::nmse(c, a), 1e-10);
  // Errors change nothing.
  EXPECT_FALSE(ctx->seq_copy(2, 2, 0, -1).is_ok());
  EXPECT_FALSE(ctx->seq_copy(0, 9, 0, -1).is_ok());
  std::unique_ptr<Context> small = test::make_context(*m, 32, 2);
  Batch fill;
  fill.add_sequence(prompt, 0, 0);
  ASSERT_TRUE(small->decode(fill).is_ok());
  const Status full = small->seq_copy(0, 1, 0, -1);  // 20 more cells, 12 free
  EXPECT_FALSE(full.is_ok());
  EXPECT_NE(full.message().find("seq_copy"), std::string::npos) << full.message();
  EXPECT_EQ(small->n_cells_used(), 20);
  EXPECT_EQ(small->seq_pos_max(1), -1);
}

}  // namespace
}  // namespace tessera
