// The scheduler over every architecture of ../shared/archs (F16 and Q4_0 files, 2 layers):
// split between the layers on two CPU backends, batches, sequence operations and greedy
// steps give the single backend's logits bit for bit, and exactly the first layer's
// output crosses the cut.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "archs/arch_test_util.h"
#include "common/split_test_util.h"
#include "common/test_util.h"
#include "model/model_impl.h"

namespace tessera {
namespace {

class ArchSplit : public ::testing::TestWithParam<test::ArchCase> {};

TEST_P(ArchSplit, TwoBackendsGiveTheSameLogitsBitForBit) {
  const test::ArchCase& c = GetParam();
  TESSERA_REQUIRE_SHARED(path, c.model_path());
  std::unique_ptr<Model> single = test::load_placed(path, "");
  ASSERT_TRUE(single);
  const int64_t n_layer = single->info().n_layer;
  ASSERT_GE(n_layer, 2);
  const bool movable = single->impl().hparams.positions != PositionKind::Learned;
  const std::vector<std::vector<float>> ref = test::split_scenario(*single, movable);
  ASSERT_FALSE(ref.empty());
  // Every cut of the 2-layer files; the deep ones (archs2's gemma2 and deepseek2 need 26
  // and 27 layers) at the first, middle and last cut.
  std::vector<int64_t> cuts;
  for (int64_t k = 1; k < n_layer; ++k) {
    if (n_layer <= 4 || k == 1 || k == n_layer / 2 || k == n_layer - 1) cuts.push_back(k);
  }
  for (int64_t k : cuts) {
    std::unique_ptr<Model> split = test::load_placed(path, test::split_at(k, n_layer));
    ASSERT_TRUE(split);
    const test::PlanStats s = test::plan_stats(*split, 6);
    EXPECT_EQ(s.n_splits, 2) << "split at " << k;
    EXPECT_EQ(s.n_copies, 1) << "split at " << k;
    EXPECT_EQ(s.bytes_copied, size_t(single->info().n_embd) * 6 * sizeof(float)) << "split at " << k;
    const std::vector<std::vector<float>> got = test::split_scenario(*split, movable);
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_EQ(std::memcmp(got[i].data(), ref[i].data(), ref[i].size() * sizeof(float)), 0)
          << "split at " << k << ": logit row " << i << " differs";
    }
  }
}

/// F16 and Q4_0 (repacked, fused) cover the weight layouts; Q8_0 adds nothing here.
std::vector<test::ArchCase> split_cases() {
  std::vector<test::ArchCase> out;
  for (const test::ArchCase& c : test::arch_cases()) {
    if (c.quant != "Q8_0") out.push_back(c);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Archs, ArchSplit, ::testing::ValuesIn(split_cases()), test::arch_case_name);

}  // namespace
}  // namespace tessera
