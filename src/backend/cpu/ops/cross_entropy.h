// The loss of training (ops::cross_entropy) and its gradient (ops::cross_entropy_back):
// the mean over the rows with a target (>= 0) of logsumexp(row) - row[target], and
// (softmax(row) - onehot(target)) * d loss / count.
#pragma once

#include "backend/cpu/op_table.h"

namespace tessera::cpu {

bool cross_entropy_supports(const Tensor* node);
size_t cross_entropy_work_size(const Tensor* node, int nth);
bool cross_entropy_prepare(Tensor* node, const KernelParams& p);
void cross_entropy_compute(Tensor* node, const KernelParams& p);

bool cross_entropy_back_supports(const Tensor* node);
void cross_entropy_back_compute(Tensor* node, const KernelParams& p);

}  // namespace tessera::cpu
