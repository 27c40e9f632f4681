// Matrix multiplication with repacked _X16 weights (repack.h) as src0: src1 rows are
// quantized once into BlockQ8X rows (prepare), then each thread takes groups of 16
// weight rows and runs the GEMM kernel (gemm_kernels.h) over the columns, a cache-sized
// chunk of columns at a time.
#pragma once

#include "backend/cpu/op_table.h"

namespace tessera::cpu {

bool is_x16(DType t);
bool mul_mat_x16_supports(const Tensor* node);
size_t mul_mat_x16_work_size(const Tensor* node, int nth);
bool mul_mat_x16_prepare(Tensor* node, const KernelParams& p);
void mul_mat_x16_compute(Tensor* node, const KernelParams& p);

}  // namespace tessera::cpu
