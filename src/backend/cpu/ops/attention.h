// The fused attention op (ops::attention): scores, mask, softmax and the weighted sum of
// values in one pass per tile of query rows, never materialising the [n_kv, n_tokens,
// n_head] score tensor, and skipping the cells no row of a tile can see (for a causal
// batch, the upper triangle). F16 caches are converted to F32 once per op (prepare).
#pragma once

#include "backend/cpu/op_table.h"

namespace tessera::cpu {

bool attention_supports(const Tensor* node);
size_t attention_work_size(const Tensor* node, int nth);
bool attention_prepare(Tensor* node, const KernelParams& p);
void attention_compute(Tensor* node, const KernelParams& p);

}  // namespace tessera::cpu
