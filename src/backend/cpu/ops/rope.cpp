#include "backend/cpu/ops/rope.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "backend/cpu/ops/common.h"
#include "core/check.h"

namespace tessera::cpu {
namespace {

// What every token's angles share: YaRN's ramp ends and the magnitude.
struct Yarn {
  float corr[2] = {0, 0};
  double magnitude = 1.0;
};

Yarn yarn_of(const RopeParams& rp) {
  Yarn y;
  if (rp.yarn.ext_factor != 0.0f) rp.yarn.corr_dims(rp.n_dims, rp.freq_base, y.corr);
  y.magnitude = rp.yarn.magnitude(rp.freq_scale);
  return y;
}

// cos/sin of theta_i, i < n_dims/2, computed in double and rounded once, times the
// magnitude. theta_extrap = pos * freq_base^(-2i/n_dims) / factors[i] (factors null: 1)
// and theta = freq_scale * theta_extrap, or with YaRN (ext_factor != 0) the mix
// theta (1 - m) + theta_extrap m, m = ramp(i) ext_factor, the ramp 1 below corr[0] and 0
// from corr[1] on (ggml's rope_yarn). The inverse rotation (the gradient: the transpose
// of the rotation) turns by -theta_i: the same cos, sin negated.
void fill_cache(const RopeParams& rp, const Yarn& y, int32_t pos, const float* factors, float* cos_out,
                float* sin_out) {
  const int64_t half = rp.n_dims / 2;
  const float ext = rp.yarn.ext_factor;
  for (int64_t i = 0; i < half; ++i) {
    const double inv_freq = std::pow(double(rp.freq_base), -2.0 * double(i) / double(rp.n_dims));
    double extrap = double(pos) * inv_freq;
    if (factors) extrap /= double(factors[i]);
    double theta = double(rp.freq_scale) * extrap;
    if (ext != 0.0f) {
      const float r = (float(i) - y.corr[0]) / std::max(0.001f, y.corr[1] - y.corr[0]);
      const double mix = double(1.0f - std::min(1.0f, std::max(0.0f, r))) * double(ext);
      theta = theta * (1.0 - mix) + extrap * mix;
    }
    cos_out[i] = float(std::cos(theta) * y.magnitude);
    const float s = float(std::sin(theta) * y.magnitude);
    sin_out[i] = rp.inverse ? -s : s;
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
  const Yarn yarn = yarn_of(rp);
  float* cache = thread_scratch(p, rp.n_dims);
  int64_t cached_token = -1;
  int64_t r0, r1;
  split_range(node->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(node, r);
    if (ri.i2 != cached_token) {
      fill_cache(rp, yarn, read_i32(pos, ri.i2), factors, cache, cache + half);
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
