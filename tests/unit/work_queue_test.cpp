// WorkQueue (backend/cpu/work_queue.h): every item is claimed exactly once, each thread
// starts with its own share in order, in ranges that shrink towards its end, and a thread
// that runs out takes over the back half of the largest range another has left.
#include "backend/cpu/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

namespace tessera::cpu {
namespace {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;

Ranges drain(WorkQueue q) {
  Ranges ranges;
  for (int64_t f, e; q.next(&f, &e);) ranges.emplace_back(f, e);
  return ranges;
}

TEST(WorkQueueTest, AloneTakesOwnShareThenHalvesOfTheLargestOtherRange) {
  auto slots = std::make_unique<WorkSlot[]>(3);
  // Thread 1 of 3 over 9 items: its share 3..5 one item at a time (a quarter of what is
  // left, at least a grain); then the back half of thread 2's 6..8 (7..8), then of thread
  // 0's 0..2 (1..2), then the single items left: 6 (thread 2, first in the scan), 0.
  EXPECT_EQ(drain(WorkQueue(slots.get(), 1, 3, 1, 9)),
            (Ranges{{3, 4}, {4, 5}, {5, 6}, {7, 8}, {8, 9}, {1, 2}, {2, 3}, {6, 7}, {0, 1}}));
  // The other threads then find nothing left of this node.
  EXPECT_TRUE(drain(WorkQueue(slots.get(), 0, 3, 1, 9)).empty());
  EXPECT_TRUE(drain(WorkQueue(slots.get(), 2, 3, 1, 9)).empty());
}

TEST(WorkQueueTest, RangesShrinkTowardsTheEndInWholeGrains) {
  auto slots = std::make_unique<WorkSlot[]>(1);
  EXPECT_EQ(drain(WorkQueue(slots.get(), 0, 1, 1, 40, 2)),
            (Ranges{{0, 10}, {10, 18}, {18, 24}, {24, 28}, {28, 32}, {32, 34}, {34, 36}, {36, 38}, {38, 40}}));
  // An odd count leaves one short range at the end.
  EXPECT_EQ(drain(WorkQueue(slots.get(), 0, 1, 2, 5, 2)), (Ranges{{0, 2}, {2, 4}, {4, 5}}));
}

TEST(WorkQueueTest, SharesStartOnWholeGrains) {
  auto slots = std::make_unique<WorkSlot[]>(2);
  // 10 items, grain 4: thread 1's share is 4..9 (10 / 2 = 5 rounded down to 4).
  EXPECT_EQ(drain(WorkQueue(slots.get(), 1, 2, 1, 10, 4)), (Ranges{{4, 8}, {8, 10}, {0, 4}}));
}

TEST(WorkQueueTest, NextNodeStartsAfresh) {
  auto slots = std::make_unique<WorkSlot[]>(2);
  EXPECT_EQ(drain(WorkQueue(slots.get(), 0, 2, 7, 4)), (Ranges{{0, 1}, {1, 2}, {3, 4}, {2, 3}}));
  // Node 8 reuses the slots: the old words are replaced by node 8's shares.
  EXPECT_EQ(drain(WorkQueue(slots.get(), 1, 2, 8, 5)), (Ranges{{2, 3}, {3, 4}, {4, 5}, {1, 2}, {0, 1}}));
  EXPECT_TRUE(drain(WorkQueue(slots.get(), 1, 2, 8, 5)).empty());
}

TEST(WorkQueueTest, NoItems) {
  auto slots = std::make_unique<WorkSlot[]>(2);
  EXPECT_TRUE(drain(WorkQueue(slots.get(), 0, 2, 1, 0)).empty());
}

TEST(WorkQueueTest, ConcurrentThreadsClaimEachItemOnce) {
  constexpr int kThreads = 4;
  constexpr int64_t kItems = 1000;
  auto slots = std::make_unique<WorkSlot[]>(kThreads);
  for (uint32_t node = 1; node <= 60; ++node) {
    const int64_t grain = 1 + node % 3;
    std::vector<std::atomic<int>> seen(kItems);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        WorkQueue q(slots.get(), t, kThreads, node, kItems, grain);
        for (int64_t f, e; q.next(&f, &e);) {
          ASSERT_LE(0, f);
          ASSERT_LT(f, e);
          ASSERT_LE(e, kItems);
          for (int64_t i = f; i < e; ++i) seen[size_t(i)].fetch_add(1);
          if (t == 0) std::this_thread::yield();  // a slow thread: the others take its work
        }
      });
    }
    for (std::thread& th : threads) th.join();
    for (int64_t i = 0; i < kItems; ++i) ASSERT_EQ(seen[size_t(i)].load(), 1) << "node " << node << " item " << i;
  }
}

}  // namespace
}  // namespace tessera::cpu
