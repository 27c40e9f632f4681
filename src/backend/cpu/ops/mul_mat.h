// Matrix multiplication: result[m, n] = dot(src0 row m, src1 row n), src1 F32, src0
// planes broadcast over src1's dims 2-3. Quantized src0 with a quantized dot
// (quant_kernels.h) multiplies src1 quantized once per op to its partner type (Q8_0,
// Q8_1 or Q8_K), as the GGUF ecosystem does; any other src0 type with a float converter
// is multiplied in F32.
#pragma once

#include "backend/cpu/op_table.h"

namespace tessera::cpu {

bool mul_mat_supports(const Tensor* node);
size_t mul_mat_work_size(const Tensor* node, int nth);
bool mul_mat_prepare(Tensor* node, const KernelParams& p);
void mul_mat_compute(Tensor* node, const KernelParams& p);

}  // namespace tessera::cpu
