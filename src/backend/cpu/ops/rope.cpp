#include "backend/cpu/ops/rope.h"

#include <cmath>
#include <variant>

#include "backend/cpu/ops/common.h"
#include "core/check.h"

namespace tessera::cpu {
namespace {

// cos/sin of theta_i = pos * freq_scale * freq_base^(-2i/n_dims) / factors[i] (factors
// null: 1), i < n_dims/2, computed in double and rounded once. The inverse rotation (the
// gradient: the transpose of the rotation) turns by -theta_i: the same cos, sin negated.
void fill_cache(const RopeParams& rp, int32_t pos, const float* factors, float* cos_out,
                float* sin_out) {
  const int64_t half = rp.n_dims / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double inv_freq = std::pow(double(rp.freq_base), -2.0 * double(i) / double(rp.n_dims));
    double theta = double(pos) * double(rp.freq_scale) * inv_freq;
    if (factors) theta /= double(factors[i]);
    cos_out[i] = float(std::cos(theta));
    sin_out[i] = rp.inverse ? -float(std::sin(theta)) : float(std::sin(theta));
  }
}

// Rotates pairs (y[i0], y[i1]) in place, i0 = 2i / i1 = 2i+1 (normal) or i0 = i /
// i1 = i + n_dims/2 (NeoX).
void rotate(float* y, int64_t half, bool neox, const float* c, const float* s) {
  for (int64_t i = 0; i < half; ++i) {
    const int64_t i0 = neox ? i : 2 * i;
    const int64_t i1 = neox ? i + half : 2 * i + 1;
    const float x0 = y[i0];
    const float x1 = y[i1];
    y[i0] = x0 * c[i] - x1 * s[i];
    y[i1] = x0 * s[i] + x1 * c[i];
  }
}

}  // namespace

bool rope_supports(const Tensor* node) {
  const auto& rp = std::get<RopeParams>(node->params);
  return node->type == DType::F32 && node->nb[0] == sizeof(float) &&
         node->src[0]->type == DType::F32 && node->src[1]->type == DType::I32 &&
         (node->src[2] == nullptr || node->src[2]->type == DType::F32) &&
         (rp.mode == RopeMode::Normal || rp.mode == RopeMode::NeoX);
}

size_t rope_work_size(const Tensor* node, int nth) {
  return thread_scratch_size(std::get<RopeParams>(node->params).n_dims, nth);
}

// Rows (one head of one token each) are split across threads; the cos/sin cache in
// this thread's scratch is refilled whenever the token (dim 2) changes.
void rope_compute(Tensor* node, const KernelParams& p) {
  const Tensor* a = node->src[0];
  const Tensor* pos = node->src[1];
  const RopeParams rp = std::get<RopeParams>(node->params);
  const int64_t half = rp.n_dims / 2;
  const bool neox = rp.mode == RopeMode::NeoX;
  const float* factors = node->src[2] ? static_cast<const float*>(node->src[2]->data) : nullptr;
  float* cache = thread_scratch(p, rp.n_dims);
  int64_t cached_token = -1;
  int64_t r0, r1;
  split_range(node->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(node, r);
    if (ri.i2 != cached_token) {
      fill_cache(rp, read_i32(pos, ri.i2), factors, cache, cache + half);
      cached_token = ri.i2;
    }
    float* y = reinterpret_cast<float*>(elem_ptr(node, 0, ri.i1, ri.i2, ri.i3));
    const float* x = read_row(a, ri.i1, ri.i2, ri.i3, y);
    if (x != y) {
      for (int64_t i = 0; i < node->ne[0]; ++i) y[i] = x[i];
    }
    rotate(y, half, neox, cache, cache + half);
  }
}

}  // namespace tessera::cpu
