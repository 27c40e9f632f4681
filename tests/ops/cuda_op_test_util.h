// Harness of the CUDA op tests (cuda_ops_test.cpp, cuda_matmul_attention_test.cpp): a
// one-op graph built with core/ops.h, its leaves filled once with seeded values, run on
// the CPU backend and on CUDA device 0 from the same bytes, and the two results compared
// by NMSE, sum((gpu - cpu)^2) / sum(cpu^2). Each backend gets the graph's memory from its
// own alloc_buffer, the leaves go in with set_tensor and the result comes back with
// get_tensor, as the scheduler moves data. The GPU computes the graph three times (eager,
// recorded into a CUDA graph, replayed), each result the first one's bits.
//
// Every test begins with TESSERA_REQUIRE_CUDA(): in a build without CUDA, or on a
// machine without a GPU, it skips and says why.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda.h"
#include "core/graph.h"
#include "core/ops.h"
#include "ops/op_test_util.h"

/// Skips the current test (with the reason) when no GPU can be used here.
#define TESSERA_REQUIRE_CUDA()                                                        \
  if (const std::string tessera_no_cuda_ = ::tessera::cuda::unavailable_reason();     \
      !tessera_no_cuda_.empty())                                                      \
  GTEST_SKIP() << "no CUDA: " << tessera_no_cuda_

namespace tessera::test {

/// The CUDA backend on device 0, made once per process and never destroyed (a backend
/// torn down after the CUDA runtime has unloaded at exit is not safe).
Backend& cuda_backend();

/// sum((got - ref)^2) / sum(ref^2) over the elements finite on both sides; +infinity when
/// a NaN or an infinity of one side is not the other's, or the sizes differ. 0 when both
/// are all zeros.
double nmse_of(const std::vector<double>& got, const std::vector<double>& ref);

class CudaOpCase {
 public:
  explicit CudaOpCase(uint64_t seed = 1);
  ~CudaOpCase();
  CudaOpCase(const CudaOpCase&) = delete;
  CudaOpCase& operator=(const CudaOpCase&) = delete;

  Graph& graph() { return graph_; }

  /// A leaf with values uniform in [lo, hi], rounded to its type; quantized types are
  /// quantized from them by the reference quantizer (src/quant).
  Tensor* input(DType type, const Shape& ne, float lo = -1.0f, float hi = 1.0f);
  /// The same logical shape laid out as `layout` (op_test_util.h); quantized types only
  /// Contiguous and Permuted (their rows stay dense).
  Tensor* input(DType type, const Shape& ne, Layout layout, float lo = -1.0f, float hi = 1.0f);
  /// A float leaf with the given values (row-major), rounded to its type.
  Tensor* input_values(DType type, const Shape& ne, const std::vector<float>& values);
  /// An I32 leaf [n].
  Tensor* ids(const std::vector<int32_t>& ids);

  /// out's elements (row-major; quantized rows dequantized) as `backend` computes them
  /// `times` times over, each time from the initial leaves; the results must agree bit for
  /// bit. Empty (and a test failure) when the backend fails.
  std::vector<double> run(Backend& backend, Tensor* out, int times = 1);

  /// Runs out's graph on the CPU backend (2 threads) and on CUDA device 0 (three times),
  /// and expects every node to be one the CUDA backend supports and NMSE(gpu, cpu) <=
  /// max_nmse; max_nmse 0 asks for the same bits. Returns the NMSE.
  double expect_match(Tensor* out, double max_nmse);

 private:
  struct Leaf {
    Tensor* tensor;
    std::vector<uint8_t> bytes;
  };
  Tensor* add_leaf(DType type, const Shape& ne, std::vector<uint8_t> bytes);
  std::vector<float> uniform(int64_t n, float lo, float hi);

  Graph graph_;
  std::mt19937 rng_;
  std::vector<Leaf> leaves_;
  Tensor* planned_ = nullptr;
};

}  // namespace tessera::test
