#include "backend/cpu/thread_pool.h"

#include "core/check.h"

namespace tessera {
namespace {

// Spin iterations before yielding / sleeping. A compute of a small model runs a few
// hundred barriers per token, so short spins keep threads hot between ops.
constexpr int kSpinsBeforeYield = 2000;
constexpr int kSpinsBeforeSleep = 200000;
// Pauses a barrier spins before it sleeps (a few tens of microseconds).
constexpr int kBarrierSpins = 4000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins on `done` with pauses, then with yields, so an oversubscribed machine progresses.
template <typename Pred>
void spin_until(Pred done) {
  for (int i = 0; !done(); ++i) {
    if (i < kSpinsBeforeYield) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads) {
  TESSERA_CHECK(n_threads >= 1);
  workers_.reserve(size_t(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    job_generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool ThreadPool::wait_for_job(uint64_t seen) {
  for (int i = 0; i < kSpinsBeforeSleep; ++i) {
    if (job_generation_.load(std::memory_order_acquire) != seen) return !stop_;
    if (i < kSpinsBeforeYield) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait(lock, [&] { return job_generation_.load() != seen; });
  return !stop_;
}

void ThreadPool::worker_loop(int ith) {
  uint64_t seen = 0;
  while (wait_for_job(seen)) {
    seen = job_generation_.load(std::memory_order_acquire);
    (*job_)(ith, n_threads_);
    n_running_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::run(const std::function<void(int, int)>& job) {
  if (n_threads_ == 1) {
    job(0, 1);
    return;
  }
  job_ = &job;
  n_running_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  job(0, n_threads_);
  spin_until([&] { return n_running_.load(std::memory_order_acquire) == 0; });
  job_ = nullptr;
}

void ThreadPool::barrier() {
  if (n_threads_ == 1) return;
  const uint32_t phase = barrier_phase_.load(std::memory_order_acquire);
  if (barrier_arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_threads_) {
    barrier_arrived_.store(0, std::memory_order_relaxed);
    // Sequentially consistent with the sleeper's count-then-check below: either it sees
    // the new phase, or this sees it counted and wakes it.
    barrier_phase_.fetch_add(1);
    if (barrier_sleepers_.load() > 0) barrier_phase_.notify_all();
    return;
  }
  // Spin briefly (the common case: all threads arrive within microseconds), then sleep
  // on the phase word so that a machine with more threads than free cores progresses.
  for (int i = 0; i < kBarrierSpins; ++i) {
    if (barrier_phase_.load(std::memory_order_acquire) != phase) return;
    cpu_relax();
  }
  barrier_sleepers_.fetch_add(1);
  while (barrier_phase_.load() == phase) barrier_phase_.wait(phase);
  barrier_sleepers_.fetch_sub(1);
}

}  // namespace tessera
