// The KV cache's cell bookkeeping: free-slot search, the full-cache error, the mask
// built from hand-made cell states, and the sequence operations.
#include "runtime/kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera {
namespace {

constexpr float kNo = -INFINITY;

std::unique_ptr<KvCache> cache_with(int64_t n, std::initializer_list<std::tuple<int32_t, Pos, SeqMask>> cells) {
  auto kv = KvCache::cells_only(n);
  for (const auto& [cell, pos, seqs] : cells) kv->store(cell, pos, seqs, TokenId(100 + cell));
  return kv;
}

std::vector<SeqMask> seq0(size_t n) { return std::vector<SeqMask>(n, SeqMask{1}); }

TEST(KvCache, FreeSlotSearchTakesLowestFreeCells) {
  auto kv = cache_with(8, {{0, 0, 1}, {2, 1, 1}, {3, 2, 1}, {6, 0, 2}});
  Result<std::vector<int32_t>> cells = kv->find_slots(seq0(3));
  ASSERT_TRUE(cells.is_ok());
  EXPECT_EQ(*cells, (std::vector<int32_t>{1, 4, 5}));
  EXPECT_EQ(kv->n_used(), 4);
  kv->seq_rm(0, 1, 2);  // frees cell 2
  cells = kv->find_slots(seq0(4));
  ASSERT_TRUE(cells.is_ok());
  EXPECT_EQ(*cells, (std::vector<int32_t>{1, 2, 4, 5}));
}

// Two sequences: cells 0-4 are sequence 0's home, 5-9 sequence 1's; a full home region
// spills into the lowest free cells anywhere.
TEST(KvCache, SequencesTakeCellsInTheirHomeRegion) {
  auto kv = KvCache::cells_only(10, 2);
  const std::vector<SeqMask> seqs = {2, 1, 2, 3, 2};
  Result<std::vector<int32_t>> cells = kv->find_slots(seqs);
  ASSERT_TRUE(cells.is_ok());
  EXPECT_EQ(*cells, (std::vector<int32_t>{5, 0, 6, 1, 7}));  // {0, 1} lives with sequence 0
  for (size_t i = 0; i < seqs.size(); ++i) kv->store((*cells)[i], Pos(i), seqs[i], 1);
  cells = kv->find_slots(std::vector<SeqMask>(4, SeqMask{2}));
  ASSERT_TRUE(cells.is_ok());
  EXPECT_EQ(*cells, (std::vector<int32_t>{8, 9, 2, 3}));
}

TEST(KvCache, FullCacheIsAClearError) {
  auto kv = cache_with(4, {{0, 0, 1}, {1, 1, 1}, {2, 2, 1}});
  EXPECT_TRUE(kv->find_slots(seq0(1)).is_ok());
  Result<std::vector<int32_t>> r = kv->find_slots(seq0(2));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("context full"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("of 4 cells are free"), std::string::npos) << r.status().message();
}

TEST(KvCache, WindowCoversTheVisibleCellsPadded) {
  auto kv = KvCache::cells_only(200, 2);
  kv->store(40, 0, 1, 1);
  kv->store(70, 1, 1, 1);
  kv->store(150, 0, 2, 1);
  kv->store(199, 1, 2, 1);
  EXPECT_EQ(kv->window(1, 5), (std::pair<int64_t, int64_t>{32, 96}));
  EXPECT_EQ(kv->window(1, 0), (std::pair<int64_t, int64_t>{32, 64}));  // position 1 not visible
  EXPECT_EQ(kv->window(2, 9), (std::pair<int64_t, int64_t>{128, 200}));  // capped at n_ctx
  EXPECT_EQ(kv->window(3, 9), (std::pair<int64_t, int64_t>{32, 200}));
}

TEST(KvCache, NKvCoversTheLastUsedCellPadded) {
  auto kv = KvCache::cells_only(100);
  EXPECT_EQ(kv->n_kv(), 32);
  kv->store(40, 0, 1, 1);
  EXPECT_EQ(kv->n_kv(), 64);
  kv->store(99, 1, 1, 1);
  EXPECT_EQ(kv->n_kv(), 100);  // capped at n_ctx
}

// Cells: 0 = (pos 0, seq 0), 1 = (pos 1, seqs 0+1), 2 = (pos 0, seq 1), 3 free,
// 4 = (pos 2, seq 1). Tokens: (pos 1, seq 0), (pos 2, seq 1), (pos 0, seqs 0+1).
TEST(KvCache, MaskFollowsSequencesAndPositions) {
  auto kv = cache_with(6, {{0, 0, 1}, {1, 1, 3}, {2, 0, 2}, {4, 2, 2}});
  const Pos pos[] = {1, 2, 0};
  const SeqMask seqs[] = {1, 2, 3};
  std::vector<float> mask(3 * 6, 123.0f);
  kv->fill_mask(pos, seqs, 0, 6, mask.data());
  const std::vector<float> expect = {
      0, 0, kNo, kNo, kNo, kNo,  // seq 0 at 1: cells 0, 1
      kNo, 0, 0, kNo, 0, kNo,    // seq 1 at 2: cells 1, 2, 4
      0, kNo, 0, kNo, kNo, kNo,  // seqs 0+1 at 0: cells of either at position 0
  };
  EXPECT_EQ(mask, expect);
  std::vector<float> window(3 * 3, 123.0f);  // cells [2, 5) only
  kv->fill_mask(pos, seqs, 2, 3, window.data());
  EXPECT_EQ(window, (std::vector<float>{kNo, kNo, kNo, 0, kNo, 0, 0, kNo, kNo}));
}

// ALiBi: visible cells hold minus their distance to the token; a sliding window of 2
// positions hides cells 2 or more positions back.
TEST(KvCache, MaskRuleAlibiAndSlidingWindow) {
  auto kv = cache_with(6, {{0, 0, 1}, {1, 1, 3}, {2, 0, 2}, {4, 2, 2}});
  const Pos pos[] = {1, 2, 0};
  const SeqMask seqs[] = {1, 2, 3};
  std::vector<float> mask(3 * 6, 123.0f);
  kv->set_mask_rule(true, 0);
  kv->fill_mask(pos, seqs, 0, 6, mask.data());
  EXPECT_EQ(mask, (std::vector<float>{-1, 0, kNo, kNo, kNo, kNo,  //
                                      kNo, -1, -2, kNo, 0, kNo,   //
                                      0, kNo, 0, kNo, kNo, kNo}));
  kv->set_mask_rule(false, 2);
  kv->fill_mask(pos, seqs, 0, 6, mask.data());
  EXPECT_EQ(mask, (std::vector<float>{0, 0, kNo, kNo, kNo, kNo,  //
                                      kNo, 0, kNo, kNo, 0, kNo,  //
                                      0, kNo, 0, kNo, kNo, kNo}));
}

TEST(KvCache, SequenceOperations) {
  auto kv = cache_with(8, {{0, 0, 1}, {1, 1, 1}, {2, 2, 1}, {3, 3, 1}});
  kv->seq_cp(0, 2, 1, 3);  // positions 1, 2 shared with sequence 2
  EXPECT_EQ(kv->cell(1).seqs, SeqMask{5});
  EXPECT_EQ(kv->cell(3).seqs, SeqMask{1});
  EXPECT_EQ(kv->seq_pos_min(2), 1);
  EXPECT_EQ(kv->seq_pos_max(2), 2);
  EXPECT_EQ(kv->seq_tokens(2), (std::vector<TokenId>{101, 102}));
  kv->seq_rm(0, 2, -1);  // cell 2 stays for sequence 2, cell 3 is freed
  EXPECT_EQ(kv->cell(2).seqs, SeqMask{4});
  EXPECT_TRUE(kv->cell(3).free());
  EXPECT_EQ(kv->seq_pos_max(0), 1);
  EXPECT_EQ(kv->seq_pos_max(-1), 2);  // -1: any sequence
  const std::array<Pos, kMaxSeq> maxes = kv->seq_pos_maxes();
  EXPECT_EQ(maxes[0], 1);
  EXPECT_EQ(maxes[1], -1);
  EXPECT_EQ(maxes[2], 2);
  // Shifting a cell shared with a sequence left in place is refused, changing nothing.
  EXPECT_FALSE(kv->seq_add(0, 0, -1, 5).is_ok());
  EXPECT_EQ(kv->cell(1).pos, 1);
  EXPECT_FALSE(kv->has_shift());
  ASSERT_TRUE(kv->seq_add(2, 2, -1, 10).is_ok());  // cell 2: only sequence 2
  EXPECT_EQ(kv->cell(2).pos, 12);
  EXPECT_EQ(kv->shifts(4), (std::vector<int32_t>{0, 0, 10, 0}));
  ASSERT_TRUE(kv->seq_add(-1, 0, 1, -3).is_ok());  // pushed below 0: freed
  EXPECT_TRUE(kv->cell(0).free());
  EXPECT_EQ(kv->cell(0).shift, 0);
  kv->clear_shifts();
  EXPECT_FALSE(kv->has_shift());
  kv->seq_keep(2);
  EXPECT_EQ(kv->n_used(), 2);
  EXPECT_EQ(kv->cell(1).seqs, SeqMask{4});
  kv->clear();
  EXPECT_EQ(kv->n_used(), 0);
  EXPECT_EQ(kv->seq_pos_max(2), -1);
}

}  // namespace
}  // namespace tessera
