// A pool of threads that persist across graph computes. The caller is thread 0;
// workers spin briefly for the next job and then sleep, so back-to-back computes pay
// no wake-up cost while an idle engine uses no CPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  /// Runs job(ith, nth) on every thread and returns when all have finished.
  void run(const std::function<void(int ith, int nth)>& job);

  /// Inside a job: returns once all nth threads have called it.
  void barrier();

 private:
  void worker_loop(int ith);
  bool wait_for_job(uint64_t seen);

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;

  std::atomic<uint64_t> job_generation_{0};
  std::atomic<int> n_running_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;

  alignas(64) std::atomic<int> barrier_arrived_{0};
  alignas(64) std::atomic<uint32_t> barrier_phase_{0};  // 32-bit: waited on with a futex
  std::atomic<int> barrier_sleepers_{0};
};

}  // namespace tessera
