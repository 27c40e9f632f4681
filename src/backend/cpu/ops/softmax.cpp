#include "backend/cpu/ops/softmax.h"

#include <cmath>
#include <cstring>
#include <variant>

#include "backend/cpu/ops/common.h"
#include "backend/cpu/vec.h"

namespace tessera::cpu {

bool soft_max_supports(const Tensor* node) {
  const Tensor* mask = node->src[1];
  return node->type == DType::F32 && node->nb[0] == sizeof(float) &&
         node->src[0]->type == DType::F32 && (!mask || mask->type == DType::F32);
}

size_t soft_max_work_size(const Tensor* node, int nth) {
  const Tensor* mask = node->src[1];
  return mask && mask->nb[0] != sizeof(float) ? thread_scratch_size(mask->ne[0], nth) : 0;
}

// y = softmax(x * scale + mask[i1]) per row. A row whose every entry is -inf (fully
// masked) gives zeros rather than NaN.
void soft_max_compute(Tensor* node, const KernelParams& p) {
  const Tensor* a = node->src[0];
  const Tensor* mask = node->src[1];
  const float scale = std::get<SoftMaxParams>(node->params).scale;
  const VecKernels& vk = vec_kernels();
  const int64_t n = node->ne[0];
  float* buf = mask && mask->nb[0] != sizeof(float) ? thread_scratch(p, n) : nullptr;
  int64_t r0, r1;
  split_range(node->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(node, r);
    float* y = reinterpret_cast<float*>(elem_ptr(node, 0, ri.i1, ri.i2, ri.i3));
    vk.scale_f32(y, read_row(a, ri.i1, ri.i2, ri.i3, y), scale, n);
    if (mask) vk.add_f32(y, y, read_row(mask, ri.i1, 0, 0, buf), n);
    const float max = vk.max_f32(y, n);
    if (max == -INFINITY) {
      std::memset(y, 0, size_t(n) * sizeof(float));
      continue;
    }
    const float sum = vk.exp_sum_f32(y, y, max, n);
    vk.scale_f32(y, y, 1.0f / sum, n);
  }
}

}  // namespace tessera::cpu
