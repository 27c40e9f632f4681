// Normalisation kernels along dim 0: rms_norm and norm (layer norm without affine).
#pragma once

#include "backend/cpu/op_table.h"

namespace tessera::cpu {

bool norm_supports(const Tensor* node);
void rms_norm_compute(Tensor* node, const KernelParams& p);
void norm_compute(Tensor* node, const KernelParams& p);

}  // namespace tessera::cpu
