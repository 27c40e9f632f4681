// How the CUDA mul_mat multiplies a weight by activation columns: plain C++, so the
// choice is unit-tested on the host (tests/unit/cuda_host_parts_test.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/dequant.h"
#include "tessera/dtype.h"

namespace tessera::cuda {

enum class MatPath {
  Refuse,         // a type with no kernels here: the node stays on the CPU
  FloatVec,       // F32/F16/BF16 weight, few columns: a warp per weight row, F32 activations
  Cublas,         // F32/F16/BF16 weight: cuBLAS GEMM
  QuantVec,       // quantized weight, few columns: 8-bit activations and __dp4a (mmvq.cu)
  DequantCublas,  // quantized weight, many columns: weight rows to F16, then cuBLAS
};

/// Activation columns up to which the matrix-vector kernels beat a GEMM (decode steps,
/// small speculative batches).
inline constexpr int64_t kMaxVecCols = 8;
/// F16 scratch for one chunk of dequantized weight rows: an output projection of 128k
/// rows would take 1 GiB at once; in chunks each GEMM is still large.
inline constexpr size_t kDequantChunkBytes = size_t(64) << 20;

inline bool is_float_weight(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

/// The path for a weight of type w times n_cols columns (per plane).
inline MatPath mat_path(DType w, int64_t n_cols) {
  const bool vec = n_cols <= kMaxVecCols;
  if (is_float_weight(w)) return vec ? MatPath::FloatVec : MatPath::Cublas;
  if (dq::has_decoder(w)) return vec ? MatPath::QuantVec : MatPath::DequantCublas;
  return MatPath::Refuse;
}

/// Weight rows (of m, k elements each) dequantized per GEMM: as many as fit
/// kDequantChunkBytes of F16, a multiple of 128 (whole GEMM tiles), at least 128, at
/// most m.
inline int64_t dequant_chunk_rows(int64_t m, int64_t k) {
  const int64_t row_bytes = std::max<int64_t>(k, 1) * 2;
  const int64_t fit = int64_t(kDequantChunkBytes) / row_bytes / 128 * 128;
  return std::min(m, std::max<int64_t>(fit, 128));
}

}  // namespace tessera::cuda
