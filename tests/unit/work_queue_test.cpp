// WorkQueue (backend/cpu/work_queue.h): every item is claimed exactly once, each thread
// starts with its own share in order, and threads that run out take over the end of
// the others' shares.
#include "backend/cpu/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace tessera::cpu {
namespace {

std::vector<int64_t> drain(WorkQueue q) {
  std::vector<int64_t> items;
  for (int64_t i; q.next(&i);) items.push_back(i);
  return items;
}

TEST(WorkQueueTest, AloneTakesOwnShareInOrderThenOthersFromTheirEnds) {
  auto slots = std::make_unique<WorkSlot[]>(3);
  // Thread 1 of 3 over 9 items: its share 3..5 in order, then 8, 7, 6, then 2, 1, 0.
  EXPECT_EQ(drain(WorkQueue(slots.get(), 1, 3, 1, 9)),
            (std::vector<int64_t>{3, 4, 5, 8, 7, 6, 2, 1, 0}));
  // The other threads then find nothing left of this node.
  EXPECT_TRUE(drain(WorkQueue(slots.get(), 0, 3, 1, 9)).empty());
  EXPECT_TRUE(drain(WorkQueue(slots.get(), 2, 3, 1, 9)).empty());
}

TEST(WorkQueueTest, NextNodeStartsAfresh) {
  auto slots = std::make_unique<WorkSlot[]>(2);
  EXPECT_EQ(drain(WorkQueue(slots.get(), 0, 2, 7, 4)), (std::vector<int64_t>{0, 1, 3, 2}));
  // Node 8 reuses the slots: the old words are replaced by node 8's shares.
  EXPECT_EQ(drain(WorkQueue(slots.get(), 1, 2, 8, 5)), (std::vector<int64_t>{2, 3, 4, 1, 0}));
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
  for (uint32_t node = 1; node <= 50; ++node) {
    std::vector<std::atomic<int>> seen(kItems);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        WorkQueue q(slots.get(), t, kThreads, node, kItems);
        for (int64_t i; q.next(&i);) {
          ASSERT_GE(i, 0);
          ASSERT_LT(i, kItems);
          seen[size_t(i)].fetch_add(1);
        }
      });
    }
    for (std::thread& th : threads) th.join();
    for (int64_t i = 0; i < kItems; ++i) ASSERT_EQ(seen[size_t(i)].load(), 1) << "node " << node << " item " << i;
  }
}

}  // namespace
}  // namespace tessera::cpu
