// The scheduler on two (and three) CPU backends, LLaMA files of ../shared/models: at every
// layer boundary the logits of batches, sequence operations and greedy steps are the
// single backend's bit for bit (the same kernels run on each side of the cut), exactly
// the layer's output crosses each cut, and a state saved on a split context restores
// into an unsplit one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "common/split_test_util.h"
#include "common/test_util.h"
#include "tessera/batch.h"
#include "tessera/context.h"

namespace tessera {
namespace {

using test::load_placed;
using test::plan_stats;
using test::split_at;
using test::split_scenario;

void expect_bit_identical(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& ref,
                          const std::string& where) {
  ASSERT_EQ(got.size(), ref.size()) << where;
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_EQ(got[i].size(), ref[i].size()) << where;
    EXPECT_EQ(std::memcmp(got[i].data(), ref[i].data(), ref[i].size() * sizeof(float)), 0)
        << where << ": logit row " << i << " differs";
  }
}

std::string file_case_name(const ::testing::TestParamInfo<std::string>& p) {
  std::string n = p.param.substr(0, p.param.size() - 5);
  for (char& c : n) {
    if (c == '-' || c == '.') c = '_';
  }
  return n;
}

class SchedulerSplit : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    path_ = test::shared_file("models/" + GetParam());
    if (path_.empty()) GTEST_SKIP() << "shared file absent: models/" << GetParam();
    single_ = load_placed(path_, "");
    ASSERT_TRUE(single_);
    n_layer_ = single_->info().n_layer;
    ASSERT_GE(n_layer_, 2);
  }
  std::string path_;
  std::unique_ptr<Model> single_;
  int64_t n_layer_ = 0;
};

TEST_P(SchedulerSplit, EveryLayerBoundaryGivesTheSameLogitsBitForBit) {
  const std::vector<std::vector<float>> ref = split_scenario(*single_, true);
  ASSERT_FALSE(ref.empty());
  for (int64_t k = 1; k < n_layer_; ++k) {
    std::unique_ptr<Model> split = load_placed(path_, split_at(k, n_layer_));
    ASSERT_TRUE(split);
    expect_bit_identical(split_scenario(*split, true), ref, "split at layer " + std::to_string(k));
  }
}

TEST_P(SchedulerSplit, ExactlyTheLayerOutputCrossesEachCut) {
  const int64_t n_embd = single_->info().n_embd;
  const std::string hidden = "add [" + std::to_string(n_embd) + ", 7]";
  const test::PlanStats one = plan_stats(*single_, 7);
  EXPECT_EQ(one.n_splits, 1);
  EXPECT_EQ(one.n_copies, 0);
  for (int64_t k = 1; k < n_layer_; ++k) {
    std::unique_ptr<Model> split = load_placed(path_, split_at(k, n_layer_));
    const test::PlanStats s = plan_stats(*split, 7);
    EXPECT_EQ(s.n_splits, 2) << "split at " << k;
    ASSERT_EQ(s.n_copies, 1) << "split at " << k;
    EXPECT_EQ(s.copied[0], hidden) << "split at " << k;
    EXPECT_EQ(s.bytes_copied, size_t(n_embd) * 7 * sizeof(float));
    EXPECT_EQ(s.split_backends, (std::vector<int>{0, 1}));
  }
}

TEST_P(SchedulerSplit, ThreeBackendsAndBackAgain) {
  // a, b, a, c: four splits, three cuts, and backend a's tensors live across its two splits.
  if (n_layer_ < 4) GTEST_SKIP() << "needs 4 layers";
  const std::string layers = "0:a,1:b,2:a,3-" + std::to_string(n_layer_ - 1) + ":c";
  std::unique_ptr<Model> split = load_placed(path_, layers);
  ASSERT_TRUE(split);
  const test::PlanStats s = plan_stats(*split, 5);
  EXPECT_EQ(s.split_backends, (std::vector<int>{0, 1, 0, 2}));
  EXPECT_EQ(s.n_copies, 3);
  expect_bit_identical(split_scenario(*split, true), split_scenario(*single_, true), layers);
}

TEST_P(SchedulerSplit, StateSavedOnASplitContextRestoresIntoOneBackend) {
  std::unique_ptr<Model> split = load_placed(path_, split_at(n_layer_ / 2, n_layer_));
  ASSERT_TRUE(split);
  ContextParams p;
  p.n_ctx = 128;
  p.n_threads = 2;
  std::vector<TokenId> prompt;
  for (int i = 0; i < 9; ++i) prompt.push_back(TokenId(3 + i * 5));
  Result<std::unique_ptr<Context>> a = Context::create(*split, p);
  ASSERT_TRUE(a.is_ok());
  ASSERT_TRUE((*a)->decode(prompt).is_ok());
  const std::string path = ::testing::TempDir() + "tessera_split_state_" + std::to_string(getpid());
  ASSERT_TRUE((*a)->save_state(path).is_ok());
  p.n_threads = 1;
  Result<std::unique_ptr<Context>> b = Context::create(*single_, p);
  ASSERT_TRUE(b.is_ok());
  ASSERT_TRUE((*b)->load_state(path).is_ok());
  std::remove(path.c_str());
  const std::vector<TokenId> more = {11, 12, 13};
  ASSERT_TRUE((*a)->decode(more).is_ok());
  ASSERT_TRUE((*b)->decode(more).is_ok());
  EXPECT_EQ(std::memcmp((*a)->logits().data(), (*b)->logits().data(), (*a)->logits().size() * sizeof(float)), 0);
}

TEST(SchedulerPlacement, BadPlacementsAreRefusedWithTheEntry) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"0-2", "is not RANGE:NAME"},
      {"0-9:a", "layer 9 is outside"},
      {"2-1:a", "ends before it starts"},
      {"0-2:a,2-4:b", "layer 2 is placed twice"},
      {"0-4:cuda0", "layers go to the GPU with -ngl N"},
      {"x-4:a", "is not a layer number"},
      {"0-4:a b", "letters, digits or _"},
  };
  for (const auto& [spec, why] : bad) {
    ModelParams params;
    params.layers = spec;
    Result<std::unique_ptr<Model>> m = Model::load(path, params);
    ASSERT_FALSE(m.is_ok()) << spec;
    EXPECT_NE(m.status().message().find(why), std::string::npos) << spec << ": " << m.status().message();
  }
}

INSTANTIATE_TEST_SUITE_P(Llama, SchedulerSplit,
                         ::testing::Values("stories260K.gguf", "mini-llama-f16.gguf", "mini-llama-Q4_0.gguf",
                                           "mini-llama-Q6_K.gguf"),
                         file_case_name);

}  // namespace
}  // namespace tessera
