// The gradients of the fused attention op (ops::attention_back): d q, d k and d v packed
// in one F32 result [dq | dk | dv], the softmax recomputed from q and k rather than kept
// from the forward pass (scratch stays linear in the sizes). Two phases, as in
// FlashAttention-2: prepare computes dq row by row (with each row's softmax statistics,
// and q and d out transposed per KV head); compute then recomputes p and ds for blocks of
// 16 cells and forms dk and dv as dot products over the KV head's query rows. Every
// element is computed by one thread in an order that does not depend on the thread
// count, so the result is bit-identical for any, and all threads have work even when
// there are fewer KV heads than threads.
#pragma once

#include "backend/cpu/op_table.h"

namespace tessera::cpu {

bool attention_back_supports(const Tensor* node);
size_t attention_back_work_size(const Tensor* node, int nth);
bool attention_back_prepare(Tensor* node, const KernelParams& p);
void attention_back_compute(Tensor* node, const KernelParams& p);

}  // namespace tessera::cpu
