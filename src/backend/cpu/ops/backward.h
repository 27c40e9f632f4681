// Kernels of the ops of backward graphs: the linear ones that move or reduce gradients
// (acc, sum_to, get_rows_back) and the row-wise and elementwise derivatives
// (rms_norm_back, soft_max_back, silu_back). rope's gradient is Op::Rope with
// RopeParams::inverse (rope.cpp).
//
// Every result is a contiguous F32 tensor and every output element is computed by one
// thread in an order that does not depend on the thread count, so results are
// bit-identical for any number of threads.
#pragma once

#include "backend/cpu/op_table.h"

namespace tessera::cpu {

// Acc: prepare copies src0 (or zeros) into the result, compute adds src1 into the window.
bool acc_supports(const Tensor* node);
size_t acc_work_size(const Tensor* node, int nth);
bool acc_prepare(Tensor* node, const KernelParams& p);
void acc_compute(Tensor* node, const KernelParams& p);

bool sum_to_supports(const Tensor* node);
size_t sum_to_work_size(const Tensor* node, int nth);
void sum_to_compute(Tensor* node, const KernelParams& p);

// GetRowsBack: prepare zeros the result, compute adds the rows of dy at their ids.
bool get_rows_back_supports(const Tensor* node);
size_t get_rows_back_work_size(const Tensor* node, int nth);
bool get_rows_back_prepare(Tensor* node, const KernelParams& p);
void get_rows_back_compute(Tensor* node, const KernelParams& p);

// RmsNormBack, SoftMaxBack and SiluBack: two F32 inputs of the result's shape (any
// strides), one result row per input row pair.
bool row_pair_supports(const Tensor* node);
size_t row_pair_work_size(const Tensor* node, int nth);
void rms_norm_back_compute(Tensor* node, const KernelParams& p);
void soft_max_back_compute(Tensor* node, const KernelParams& p);
void silu_back_compute(Tensor* node, const KernelParams& p);

}  // namespace tessera::cpu
