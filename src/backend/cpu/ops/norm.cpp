#include "backend/cpu/ops/norm.h"

#include <cmath>
#include <variant>

#include "backend/cpu/ops/common.h"
#include "backend/cpu/vec.h"

namespace tessera::cpu {
namespace {

// Calls f(y, x, n) for each row of dst owned by this thread; x is the source row
// (gathered into y when strided).
template <typename F>
void for_rows(Tensor* dst, const KernelParams& p, F f) {
  const Tensor* a = dst->src[0];
  int64_t r0, r1;
  split_range(dst->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(dst, r);
    float* y = reinterpret_cast<float*>(elem_ptr(dst, 0, ri.i1, ri.i2, ri.i3));
    f(y, read_row(a, ri.i1, ri.i2, ri.i3, y), dst->ne[0]);
  }
}

}  // namespace

bool norm_supports(const Tensor* node) {
  return node->type == DType::F32 && node->nb[0] == sizeof(float) &&
         node->src[0]->type == DType::F32;
}

// y = x / sqrt(mean(x^2) + eps)
void rms_norm_compute(Tensor* node, const KernelParams& p) {
  const float eps = std::get<NormParams>(node->params).eps;
  const VecKernels& vk = vec_kernels();
  for_rows(node, p, [&](float* y, const float* x, int64_t n) {
    const float mean_sq = vk.sumsq_f32(x, n) / float(n);
    vk.scale_f32(y, x, 1.0f / std::sqrt(mean_sq + eps), n);
  });
}

// y = (x - mean) / sqrt(var + eps), population variance, in two passes for stability.
void norm_compute(Tensor* node, const KernelParams& p) {
  const float eps = std::get<NormParams>(node->params).eps;
  const VecKernels& vk = vec_kernels();
  for_rows(node, p, [&](float* y, const float* x, int64_t n) {
    const float mean = vk.sum_f32(x, n) / float(n);
    vk.add_scalar_f32(y, x, -mean, n);
    const float var = vk.sumsq_f32(y, n) / float(n);
    vk.scale_f32(y, y, 1.0f / std::sqrt(var + eps), n);
  });
}

}  // namespace tessera::cpu
