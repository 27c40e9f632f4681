// AVX2 attention tile (attn_kernels.h): one query row at a time with lanes over the head
// dimension (8 floats per register). A score is a dot product (vector fmadds, one
// horizontal sum); the softmax runs over 8 cells at a time; the values accumulate into
// up to 4 vectors of head dimensions per pass over the cells.
// Compiled with per-file target flags, reached only through attn_dispatch.cpp.
#include <algorithm>
#include <cmath>

#include "backend/cpu/attn_kernels.h"
#include "backend/cpu/kernels/x86_avx2/exp.h"

namespace tessera::cpu::avx2 {
namespace {

constexpr int64_t kW = 8;  // floats per register

// Lanes [0, left) set (all when left >= 8), for maskload / maskstore.
inline __m256i lanes(int64_t left) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(std::min<int64_t>(left, kW))), idx);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float dot_row(const float* q, const float* k, int64_t hd) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t d = 0; d < hd; d += kW) {
    const __m256i m = lanes(hd - d);
    acc = _mm256_fmadd_ps(_mm256_maskload_ps(q + d, m), _mm256_maskload_ps(k + d, m), acc);
  }
  return hsum(acc);
}

// Softmax of s[0, n) in place given its maximum; returns 1 / sum.
float softmax(float* s, int64_t n, float max) {
  __m256 sum = _mm256_setzero_ps();
  const __m256 vmax = _mm256_set1_ps(max);
  for (int64_t c = 0; c < n; c += kW) {
    const __m256i m = lanes(n - c);
    const __m256 p = _mm256_and_ps(exp_ps(_mm256_sub_ps(_mm256_maskload_ps(s + c, m), vmax)),
                                   _mm256_castsi256_ps(m));
    _mm256_maskstore_ps(s + c, m, p);
    sum = _mm256_add_ps(sum, p);
  }
  return 1.0f / hsum(sum);
}

void row(const AttnTile& t, int r) {
  float* s = t.scratch;  // n scores
  float max = -INFINITY;
  for (int64_t c = 0; c < t.n; ++c) {
    float v = dot_row(t.q[r], t.k + size_t(c) * t.k_stride, t.hd);
    if (t.mask) v += t.mask[t.mask_off[r] + c];
    s[c] = v;
    max = std::max(max, v);
  }
  float* out = t.out[r];
  if (max == -INFINITY) {
    std::fill(out, out + t.hd, 0.0f);
    return;
  }
  const __m256 inv = _mm256_set1_ps(softmax(s, t.n, max));
  for (int64_t d = 0; d < t.hd; d += 4 * kW) {  // up to 4 vectors of d per pass over the cells
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t c = 0; c < t.n; ++c) {
      const __m256 p = _mm256_set1_ps(s[c]);
      const float* v = t.v + size_t(c) * t.v_stride + d;
      for (int j = 0; j < 4; ++j) {
        const int64_t dj = d + j * kW;
        if (dj < t.hd) acc[j] = _mm256_fmadd_ps(p, _mm256_maskload_ps(v + j * kW, lanes(t.hd - dj)), acc[j]);
      }
    }
    for (int j = 0; j < 4 && d + j * kW < t.hd; ++j) {
      _mm256_maskstore_ps(out + d + j * kW, lanes(t.hd - d - j * kW), _mm256_mul_ps(acc[j], inv));
    }
  }
}

void tile(const AttnTile& t) {
  for (int r = 0; r < t.rows; ++r) row(t, r);
}

}  // namespace

const AttnKernels kAttnKernels = {.isa = Isa::Avx2, .tile = tile};

}  // namespace tessera::cpu::avx2
