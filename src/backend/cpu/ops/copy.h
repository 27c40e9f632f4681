// Copy-family kernels: cpy (into another tensor's layout and type), cont, concat,
// get_rows and set_rows.
#pragma once

#include "backend/cpu/op_table.h"

namespace tessera::cpu {

bool cpy_supports(const Tensor* node);
bool cont_supports(const Tensor* node);
size_t copy_work_size(const Tensor* node, int nth);      // cpy and cont
void copy_compute(Tensor* node, const KernelParams& p);  // cpy and cont

bool concat_supports(const Tensor* node);
void concat_compute(Tensor* node, const KernelParams& p);

bool get_rows_supports(const Tensor* node);
void get_rows_compute(Tensor* node, const KernelParams& p);

bool set_rows_supports(const Tensor* node);
size_t set_rows_work_size(const Tensor* node, int nth);
void set_rows_compute(Tensor* node, const KernelParams& p);

}  // namespace tessera::cpu
