// Rotary position embedding (normal and NeoX pairings).
#pragma once

#include "backend/cpu/op_table.h"

namespace tessera::cpu {

bool rope_supports(const Tensor* node);
size_t rope_work_size(const Tensor* node, int nth);
void rope_compute(Tensor* node, const KernelParams& p);

}  // namespace tessera::cpu
