// The matrix-vector kernels of mul_mat (mmvq.cu) for few activation columns (decode):
// one warp per weight row, every column of a plane at once. The node is mul_mat's: src0
// the weight [k, m, ne2/r2, ne3/r3], src1 F32 [k, n, ne2, ne3] (any strides, multiples
// of 4 bytes), the result F32 [m, n, ne2, ne3] contiguous, n <= kMaxVecCols.
#pragma once

#include "backend/cuda/common.cuh"
#include "backend/cuda/q8_dot.h"

namespace tessera::cuda {

/// src1's rows as Q8Act blocks in scratch: row (i1, i2, i3) at block
/// ((i3 * ne2 + i2) * ne1 + i1) * (k / 32). k must be a multiple of 32.
const q8::Q8Act* quantize_activations(const Tensor* src1, Ctx& ctx);

/// node = quantized src0 x the activations of quantize_activations(src1).
void mmvq(Tensor* node, const q8::Q8Act* act, Ctx& ctx);

/// node = src0 (F32, F16 or BF16) x src1, in F32.
void mmv_float(Tensor* node, Ctx& ctx);

}  // namespace tessera::cuda
