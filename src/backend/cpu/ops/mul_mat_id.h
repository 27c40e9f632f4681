// mul_mat_id: the expert products of a mixture-of-experts layer (core/ops.h). The
// (id, token) pairs are grouped by expert, so that each expert's matrix streams once per
// batch against all the activation rows routed to it, through the same kernels as the
// dense mul_mat of its weight type:
//   _X16 (weights repacked at load, repack.h): the register-tiled GEMMs (gemm_kernels.h),
//     activations quantized once to BlockQ8X / BlockQ8KX (floats for F16_X16, bf16 for BF16_X16);
//   other quantized types: the quantized dot against activations quantized to the
//     partner type (quant_kernels.h);
//   float types: rows converted to F32 and dot_f32.
// Each output is computed exactly as the dense mul_mat computes it for that expert's
// matrix and that activation row, so the results are those bits, on every level where
// the dense path gives the same bits on every level (the _X16 kernels).
#pragma once

#include "backend/cpu/op_table.h"

namespace tessera::cpu {

bool mul_mat_id_supports(const Tensor* node);
size_t mul_mat_id_work_size(const Tensor* node, int nth);
bool mul_mat_id_prepare(Tensor* node, const KernelParams& p);
void mul_mat_id_compute(Tensor* node, const KernelParams& p);

}  // namespace tessera::cpu
