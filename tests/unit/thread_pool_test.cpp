// The CPU thread pool: every thread runs every job, barriers separate phases, and the
// pool survives many back-to-back jobs, including with more threads than cores.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "backend/cpu/thread_pool.h"

namespace tessera {
namespace {

TEST(ThreadPool, EveryThreadRunsEveryJob) {
  for (int n : {1, 2, 3, 8}) {
    ThreadPool pool(n);
    std::atomic<int> calls{0};
    std::vector<std::atomic<int>> per_thread(static_cast<size_t>(n));
    for (int job = 0; job < 200; ++job) {
      pool.run([&](int ith, int nth) {
        EXPECT_EQ(nth, n);
        per_thread[size_t(ith)]++;
        calls++;
      });
    }
    EXPECT_EQ(calls.load(), 200 * n);
    for (auto& c : per_thread) EXPECT_EQ(c.load(), 200);
  }
}

TEST(ThreadPool, BarrierSeparatesPhases) {
  for (int n : {2, 3, 6}) {
    ThreadPool pool(n);
    constexpr int kPhases = 300;
    std::vector<std::atomic<int>> arrived(kPhases);
    std::atomic<int> errors{0};
    pool.run([&](int, int nth) {
      for (int p = 0; p < kPhases; ++p) {
        arrived[size_t(p)]++;
        pool.barrier();
        // After the barrier every thread has counted itself in this phase.
        if (arrived[size_t(p)].load() != nth) errors++;
        pool.barrier();
      }
    });
    EXPECT_EQ(errors.load(), 0) << n << " threads";
  }
}

}  // namespace
}  // namespace tessera
