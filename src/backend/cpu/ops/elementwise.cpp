#include "backend/cpu/ops/elementwise.h"

#include <cmath>
#include <variant>

#include "backend/cpu/ops/common.h"
#include "backend/cpu/vec.h"

namespace tessera::cpu {
namespace {

bool is_f32(const Tensor* t) { return t->type == DType::F32; }
bool dense_f32_rows(const Tensor* t) { return is_f32(t) && t->nb[0] == sizeof(float); }

// dst = a op b, b broadcast: b's row (i1 % ne11, ...) is repeated along dim 0 when
// ne10 < ne0. Rows of dst are split across threads; strided rows of a are gathered
// into the dst row, strided rows of b into this thread's scratch.
template <bool kMul>
void binary_compute(Tensor* dst, const KernelParams& p) {
  const Tensor* a = dst->src[0];
  const Tensor* b = dst->src[1];
  const VecKernels& vk = vec_kernels();
  const int64_t ne0 = dst->ne[0];
  const int64_t ne10 = b->ne[0];
  float* buf = b->nb[0] == sizeof(float) ? nullptr : thread_scratch(p, ne10);
  int64_t r0, r1;
  split_range(dst->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(dst, r);
    float* y = reinterpret_cast<float*>(elem_ptr(dst, 0, ri.i1, ri.i2, ri.i3));
    const float* x = read_row(a, ri.i1, ri.i2, ri.i3, y);
    const float* w = read_row(b, ri.i1 % b->ne[1], ri.i2 % b->ne[2], ri.i3 % b->ne[3], buf);
    if (ne10 == 1) {
      if (kMul) {
        vk.scale_f32(y, x, w[0], ne0);
      } else {
        vk.add_scalar_f32(y, x, w[0], ne0);
      }
      continue;
    }
    for (int64_t i = 0; i < ne0; i += ne10) {
      if (kMul) {
        vk.mul_f32(y + i, x + i, w, ne10);
      } else {
        vk.add_f32(y + i, x + i, w, ne10);
      }
    }
  }
}

}  // namespace

bool binary_supports(const Tensor* node) {
  return dense_f32_rows(node) && is_f32(node->src[0]) && is_f32(node->src[1]);
}

size_t binary_work_size(const Tensor* node, int nth) {
  const Tensor* b = node->src[1];
  return b->nb[0] == sizeof(float) ? 0 : thread_scratch_size(b->ne[0], nth);
}

void add_compute(Tensor* node, const KernelParams& p) { binary_compute<false>(node, p); }
void mul_compute(Tensor* node, const KernelParams& p) { binary_compute<true>(node, p); }

bool unary_supports(const Tensor* node) { return dense_f32_rows(node) && is_f32(node->src[0]); }

void scale_compute(Tensor* node, const KernelParams& p) {
  const float s = std::get<ScaleParams>(node->params).scale;
  const VecKernels& vk = vec_kernels();
  for_each_row(node, p, [&](float* y, const float* x, int64_t n) { vk.scale_f32(y, x, s, n); });
}

void silu_compute(Tensor* node, const KernelParams& p) {
  for_each_row(node, p, vec_kernels().silu_f32);
}

void gelu_compute(Tensor* node, const KernelParams& p) {
  for_each_row(node, p, vec_kernels().gelu_f32);
}

// These two are memory-bound one-pass loops the compiler vectorises at any level; no
// per-level kernels.
void relu_sqr_compute(Tensor* node, const KernelParams& p) {
  for_each_row(node, p, [](float* y, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const float r = x[i] > 0.0f ? x[i] : 0.0f;
      y[i] = r * r;
    }
  });
}

void clamp_compute(Tensor* node, const KernelParams& p) {
  const ClampParams c = std::get<ClampParams>(node->params);
  for_each_row(node, p, [c](float* y, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < c.lo ? c.lo : (x[i] > c.hi ? c.hi : x[i]);
  });
}

// cap tanh(x / cap): Gemma 2's logit caps, on rows of logits (one pass, as the two above).
void softcap_compute(Tensor* node, const KernelParams& p) {
  const float cap = std::get<ScaleParams>(node->params).scale;
  for_each_row(node, p, [cap](float* y, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = cap * std::tanh(x[i] / cap);
  });
}

}  // namespace tessera::cpu
