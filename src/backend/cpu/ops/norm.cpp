#include "backend/cpu/ops/norm.h"

#include <cmath>
#include <variant>

#include "backend/cpu/ops/common.h"
#include "backend/cpu/vec.h"

namespace tessera::cpu {

bool norm_supports(const Tensor* node) {
  return node->type == DType::F32 && node->nb[0] == sizeof(float) &&
         node->src[0]->type == DType::F32;
}

// y = x / sqrt(mean(x^2) + eps)
void rms_norm_compute(Tensor* node, const KernelParams& p) {
  const float eps = std::get<NormParams>(node->params).eps;
  const VecKernels& vk = vec_kernels();
  for_each_row(node, p, [&](float* y, const float* x, int64_t n) {
    const float mean_sq = vk.sumsq_f32(x, n) / float(n);
    vk.scale_f32(y, x, 1.0f / std::sqrt(mean_sq + eps), n);
  });
}

// y = (x - mean) / sqrt(var + eps), population variance, in two passes for stability.
void norm_compute(Tensor* node, const KernelParams& p) {
  const float eps = std::get<NormParams>(node->params).eps;
  const VecKernels& vk = vec_kernels();
  for_each_row(node, p, [&](float* y, const float* x, int64_t n) {
    const float mean = vk.sum_f32(x, n) / float(n);
    vk.add_scalar_f32(y, x, -mean, n);
    const float var = vk.sumsq_f32(y, n) / float(n);
    vk.scale_f32(y, y, 1.0f / std::sqrt(var + eps), n);
  });
}

}  // namespace tessera::cpu
