// Elementwise kernels: add, mul (with broadcasting), scale, silu, gelu, relu_sqr, clamp, softcap.
#pragma once

#include "backend/cpu/op_table.h"

namespace tessera::cpu {

bool binary_supports(const Tensor* node);
size_t binary_work_size(const Tensor* node, int nth);
void add_compute(Tensor* node, const KernelParams& p);
void mul_compute(Tensor* node, const KernelParams& p);

bool unary_supports(const Tensor* node);
void scale_compute(Tensor* node, const KernelParams& p);
void silu_compute(Tensor* node, const KernelParams& p);
void gelu_compute(Tensor* node, const KernelParams& p);
void relu_sqr_compute(Tensor* node, const KernelParams& p);
void clamp_compute(Tensor* node, const KernelParams& p);
void softcap_compute(Tensor* node, const KernelParams& p);

}  // namespace tessera::cpu
