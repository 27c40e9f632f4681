// Layer placements: --layers specs, and MPI ranks' contiguous ranges (given, or in
// proportion to free memory).
#include "model/placement.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(Placement, LayersSpecNamesBackendsInOrderOfFirstUse) {
  Result<Placement> p = parse_layer_placement("0-2:gpu_like,3:b,4-5:gpu_like", 8);
  ASSERT_FALSE(p.is_ok());  // "gpu" names are refused: this build has none
  p = parse_layer_placement("3:b,0-2:a,4-5:a", 8);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->backends, (std::vector<std::string>{"b", "a"}));
  // Layers 6 and 7 are not named: the first backend named takes them.
  EXPECT_EQ(p->layer, (std::vector<int>{1, 1, 1, 0, 1, 1, 0, 0}));
  EXPECT_EQ(p->input, 1);
  EXPECT_EQ(p->output, 0);
  EXPECT_FALSE(p->mpi);
  EXPECT_TRUE(p->here(0) && p->here(1));
  EXPECT_EQ(describe_placement(*p), "b: layers 3,6-7 + output; a: layers 0-2,4-5 + embeddings");
}

TEST(Placement, MpiRangesFromCounts) {
  Result<Placement> p = mpi_placement({2, 3, 1}, {1, 1, 1}, 6, 1);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->layer, (std::vector<int>{0, 0, 1, 1, 1, 2}));
  EXPECT_TRUE(p->mpi);
  EXPECT_EQ(p->input, 0);
  EXPECT_EQ(p->output, 2);
  EXPECT_TRUE(p->here(1));
  EXPECT_FALSE(p->here(0));
  EXPECT_TRUE(p->layer_here(3));
  EXPECT_FALSE(p->layer_here(5));
}

TEST(Placement, MpiRangesFollowFreeMemory) {
  // 3 : 1 of free memory over 22 layers: 16.5 rounds to 17 and 5 (they always sum up).
  Result<Placement> p = mpi_placement({}, {3ull << 30, 1ull << 30}, 22, 0);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(std::count(p->layer.begin(), p->layer.end(), 0), 17);
  EXPECT_EQ(std::count(p->layer.begin(), p->layer.end(), 1), 5);
  // Equal memory: equal shares.
  p = mpi_placement({}, {8, 8, 8}, 9, 2);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->layer, (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 2}));
}

TEST(Placement, BadMpiCountsAreRefused) {
  Result<Placement> p = mpi_placement({3, 3}, {1, 1}, 5, 0);
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("add up to 6 layers, but the model has 5"), std::string::npos);
  p = mpi_placement({5}, {1, 1}, 5, 0);
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("1 counts for 2 ranks"), std::string::npos);
  p = mpi_placement({6, -1}, {1, 1}, 5, 0);
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("negative"), std::string::npos);
}

}  // namespace
}  // namespace tessera
