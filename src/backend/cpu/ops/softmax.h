// Softmax along dim 0 with a scale and an optional additive mask.
#pragma once

#include "backend/cpu/op_table.h"

namespace tessera::cpu {

bool soft_max_supports(const Tensor* node);
size_t soft_max_work_size(const Tensor* node, int nth);
void soft_max_compute(Tensor* node, const KernelParams& p);

}  // namespace tessera::cpu
