// The CPU backend: host memory buffers and a persistent thread pool that computes
// a graph node by node, each node's work split across the threads.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/work_queue.h"

namespace tessera {

class CpuBackend final : public Backend {
 public:
  /// `name`: what logs call it ("CPU", or "CPU a" for a placement's backend a).
  explicit CpuBackend(int n_threads, std::string name = "CPU");
  std::string_view name() const override { return name_; }
  int n_threads() const { return pool_.size(); }

  Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
  /// A buffer over memory the caller owns (e.g. a mapped file); no copy is made.
  std::unique_ptr<Buffer> buffer_from_host_ptr(void* ptr, size_t size);
  size_t alignment() const override { return kAlignment; }

  void set_tensor_async(Tensor* t, const void* data, size_t offset, size_t size) override;
  void get_tensor_async(const Tensor* t, void* data, size_t offset, size_t size) override;
  void synchronize() override {}

  /// From host memory (any CPU backend's buffers, a mapped file): one memcpy.
  void copy_tensor_from(const Tensor* src, Tensor* dst) override;

  bool supports_op(const Tensor* node) const override;
  Status compute(const Graph& graph) override;

  static constexpr size_t kAlignment = 64;

 private:
  struct FreeDeleter {
    void operator()(char* p) const { std::free(p); }
  };
  std::string name_;
  ThreadPool pool_;
  std::unique_ptr<char, FreeDeleter> work_;  // scratch shared by the kernels, 64-byte aligned
  size_t work_size_ = 0;
  std::unique_ptr<cpu::WorkSlot[]> slots_;  // one per thread, for the kernels' work queues
  uint32_t seq_ = 0;                        // number of the last node computed (WorkQueue)
};

}  // namespace tessera
