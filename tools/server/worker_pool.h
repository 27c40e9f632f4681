// A fixed set of threads running submitted tasks in order, with a bounded queue: the
// server's handlers that wait (on the engine) run here, so that the I/O thread never does.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::server {

class WorkerPool {
 public:
  WorkerPool(size_t threads, size_t max_waiting);
  /// Finishes the tasks already queued, then joins.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// False (and `task` is dropped) when `max_waiting` tasks already wait for a thread.
  bool submit(std::function<void()> task);

 private:
  void work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t max_waiting_;
  size_t idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tessera::server
