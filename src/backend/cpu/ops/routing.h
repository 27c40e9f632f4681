// The small ops of mixture-of-experts routing: sigmoid gating, division (weight
// normalisation), row sums, top-k selection and gathering each row's chosen elements
// (and its gradient, scattering them back).
// Plain loops: they touch n_expert values per token, so no per-level kernels; every
// level gives the same bits.
#pragma once

#include "backend/cpu/op_table.h"

namespace tessera::cpu {

void sigmoid_compute(Tensor* node, const KernelParams& p);

bool div_supports(const Tensor* node);
size_t div_work_size(const Tensor* node, int nth);
void div_compute(Tensor* node, const KernelParams& p);

bool sum_rows_supports(const Tensor* node);
void sum_rows_compute(Tensor* node, const KernelParams& p);

bool top_k_supports(const Tensor* node);
size_t top_k_work_size(const Tensor* node, int nth);
void top_k_compute(Tensor* node, const KernelParams& p);

bool take_along_supports(const Tensor* node);
void take_along_compute(Tensor* node, const KernelParams& p);

bool take_along_back_supports(const Tensor* node);
void take_along_back_compute(Tensor* node, const KernelParams& p);

}  // namespace tessera::cpu
