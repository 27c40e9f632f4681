// What every CUDA kernel file shares: error checks, the per-compute context a kernel
// launches in, and a tensor's shape and strides as a kernel argument.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "backend/cuda/scratch_pool.h"
#include "core/tensor.h"

namespace tessera::cuda {

/// A CUDA call that cannot fail on valid arguments (a launch, a stream operation): a
/// failure is a bug or a lost device, reported with where it happened, then abort.
[[noreturn]] void fail(const char* what, const char* error, const char* file, int line);

#define TESSERA_CUDA_CHECK(expr)                                                         \
  do {                                                                                   \
    const cudaError_t tessera_err_ = (expr);                                             \
    if (tessera_err_ != cudaSuccess)                                                     \
      ::tessera::cuda::fail(#expr, cudaGetErrorString(tessera_err_), __FILE__, __LINE__); \
  } while (0)

#define TESSERA_CUBLAS_CHECK(expr)                                                  \
  do {                                                                              \
    const cublasStatus_t tessera_st_ = (expr);                                      \
    if (tessera_st_ != CUBLAS_STATUS_SUCCESS)                                       \
      ::tessera::cuda::fail(#expr, cublasGetStatusString(tessera_st_), __FILE__, __LINE__); \
  } while (0)

/// After a kernel launch: a bad configuration shows here, not at the next sync.
#define TESSERA_CUDA_LAUNCHED() TESSERA_CUDA_CHECK(cudaGetLastError())

/// What a kernel invocation gets: the backend's stream, cuBLAS handle and scratch.
struct Ctx {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  ScratchPool* scratch = nullptr;
  int cc = 0;  // compute capability * 10 + minor (90 for Hopper)
  int sm_count = 0;

  /// Scratch valid until the compute ends; aborts when the device has no memory left
  /// (compute buffers are sized up front, so this is a temporary the size of one op's).
  template <typename T>
  T* take(size_t count) {
    void* p = scratch->take(count * sizeof(T));
    if (p == nullptr) {
      std::fprintf(stderr, "tessera: CUDA: out of device memory for %zu bytes of scratch\n", count * sizeof(T));
      std::abort();
    }
    return static_cast<T*>(p);
  }
};

/// A tensor's shape and byte strides, passed to kernels by value.
struct Dims {
  int64_t ne[4];
  int64_t nb[4];
};

inline Dims dims_of(const Tensor* t) {
  Dims d{};
  for (int i = 0; i < 4; ++i) {
    d.ne[i] = t->ne[size_t(i)];
    d.nb[i] = int64_t(t->nb[size_t(i)]);
  }
  return d;
}

/// Whether every stride (and the view's offset) of t is a multiple of size bytes: what
/// kernels reading elements of that size need (allocations themselves are aligned).
inline bool aligned(const Tensor* t, size_t size) {
  for (size_t s : t->nb) {
    if (s % size != 0) return false;
  }
  return t->view_src == nullptr || t->view_offset % size == 0;
}

/// Whether t's sizes and row count fit the int indices of a grid.
inline bool fits_grid(const Tensor* t) {
  for (int64_t n : t->ne) {
    if (n < 0 || n > INT_MAX) return false;
  }
  return t->nrows() <= INT_MAX;
}

/// Blocks of `per` threads to cover n items.
inline unsigned blocks_for(int64_t n, int per) { return unsigned((n + per - 1) / per); }

}  // namespace tessera::cuda
