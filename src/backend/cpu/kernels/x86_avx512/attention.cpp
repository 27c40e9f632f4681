// AVX-512 attention tile (attn_kernels.h). Lane r of every vector is query row r:
//  - scores: the 16 rows' queries are transposed once into qt[d][r]; a score vector
//    for cell c is sum_d qt[d] * k[c][d], with k[c][d] a broadcast scalar, 8 cells at a
//    time (8 accumulators, one qt load per d);
//  - softmax runs down the cells with per-lane max and sum (mask values gathered per
//    cell from each row's mask row);
//  - the output is sum_c p[c] * v[c][d] per d, 16 d's at a time (16 accumulators, one p
//    load per cell), then transposed into the rows.
// Compiled with per-file target flags, reached only through attn_dispatch.cpp.
#include <algorithm>
#include <cmath>

#include "backend/cpu/attn_kernels.h"
#include "backend/cpu/kernels/x86_avx512/exp.h"

namespace tessera::cpu::avx512 {
namespace {

constexpr int kCells = 8;  // score columns per step
constexpr int kL = 16;     // lanes

// qt[d * 16 + r] = q[r][d]; lanes past the rows are zero.
void transpose_queries(const AttnTile& t, float* qt) {
  for (int64_t d = 0; d < t.hd; ++d) {
    for (int r = 0; r < kL; ++r) qt[d * kL + r] = r < t.rows ? t.q[r][d] : 0.0f;
  }
}

// st[c * 16 + r] = q[r] . k[c]
void scores(const AttnTile& t, const float* qt, float* st) {
  for (int64_t c0 = 0; c0 < t.n; c0 += kCells) {
    const float* k[kCells];
    for (int i = 0; i < kCells; ++i) k[i] = t.k + size_t(std::min<int64_t>(c0 + i, t.n - 1)) * t.k_stride;
    __m512 acc[kCells];
    for (int i = 0; i < kCells; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t d = 0; d < t.hd; ++d) {
      const __m512 qv = _mm512_load_ps(qt + d * kL);
      for (int i = 0; i < kCells; ++i) acc[i] = _mm512_fmadd_ps(qv, _mm512_set1_ps(k[i][d]), acc[i]);
    }
    for (int i = 0; i < kCells && c0 + i < t.n; ++i) _mm512_store_ps(st + (c0 + i) * kL, acc[i]);
  }
}

// Adds the mask, then turns each lane's scores into exp(s - max); returns 1 / sum per
// lane (0 for a row that sees no cell, whose probabilities are then all 0).
__m512 softmax(const AttnTile& t, float* st) {
  const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
  __m512 m = neg_inf;
  const __m512i off = _mm512_loadu_si512(t.mask_off);
  for (int64_t c = 0; c < t.n; ++c) {
    __m512 s = _mm512_load_ps(st + c * kL);
    if (t.mask) {
      s = _mm512_add_ps(s, _mm512_i32gather_ps(off, t.mask + c, 4));
      _mm512_store_ps(st + c * kL, s);
    }
    m = _mm512_max_ps(m, s);
  }
  const __mmask16 dead = _mm512_cmp_ps_mask(m, neg_inf, _CMP_EQ_OQ);
  m = _mm512_mask_mov_ps(m, dead, _mm512_setzero_ps());  // exp(-inf - 0) = 0, not NaN
  __m512 sum = _mm512_setzero_ps();
  for (int64_t c = 0; c < t.n; ++c) {
    const __m512 p = exp_ps(_mm512_sub_ps(_mm512_load_ps(st + c * kL), m));
    _mm512_store_ps(st + c * kL, p);
    sum = _mm512_add_ps(sum, p);
  }
  const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.0f), sum);
  return _mm512_mask_mov_ps(inv, dead, _mm512_setzero_ps());
}

// out[r][d0 + j] = inv[r] * sum_c p[c][r] v[c][d0 + j] for j < nd (<= 16).
template <int kFull>
void weighted_values(const AttnTile& t, const float* st, __m512 inv, int64_t d0, int nd) {
  __m512 acc[kL];
  for (int j = 0; j < kL; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t c = 0; c < t.n; ++c) {
    const __m512 p = _mm512_load_ps(st + c * kL);
    const float* v = t.v + size_t(c) * t.v_stride + d0;
    if constexpr (kFull) {
      for (int j = 0; j < kL; ++j) acc[j] = _mm512_fmadd_ps(p, _mm512_set1_ps(v[j]), acc[j]);
    } else {
      for (int j = 0; j < nd; ++j) acc[j] = _mm512_fmadd_ps(p, _mm512_set1_ps(v[j]), acc[j]);
    }
  }
  alignas(64) float tmp[kL][kL];
  for (int j = 0; j < nd; ++j) _mm512_store_ps(tmp[j], _mm512_mul_ps(acc[j], inv));
  for (int r = 0; r < t.rows; ++r) {
    for (int j = 0; j < nd; ++j) t.out[r][d0 + j] = tmp[j][r];
  }
}

// ---- few rows (decode): lanes over the head dimension -----------------------------------
// With fewer than kFewRows rows (a decode step of a model with little or no grouping),
// one row per lane would leave most lanes idle; instead each row is done alone with
// lanes over d: a score is a dot product (vector fmadds, one horizontal sum), the
// softmax runs over 16 cells at a time, and the values accumulate into hd / 16 vectors.
constexpr int kFewRows = 4;

inline __mmask16 lanes(int64_t left) { return left >= kL ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u); }

float dot_row(const float* q, const float* k, int64_t hd) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; d += kL) {
    const __mmask16 m = lanes(hd - d);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d), _mm512_maskz_loadu_ps(m, k + d), acc);
  }
  return _mm512_reduce_add_ps(acc);
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
  __m512 sum = _mm512_setzero_ps();
  const __m512 vmax = _mm512_set1_ps(max);
  for (int64_t c = 0; c < t.n; c += kL) {
    const __mmask16 m = lanes(t.n - c);
    const __m512 p = _mm512_maskz_mov_ps(m, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + c), vmax)));
    _mm512_mask_storeu_ps(s + c, m, p);
    sum = _mm512_add_ps(sum, p);
  }
  const float inv = 1.0f / _mm512_reduce_add_ps(sum);
  for (int64_t d = 0; d < t.hd; d += 4 * kL) {  // up to 4 vectors of d per pass over the cells
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t c = 0; c < t.n; ++c) {
      const __m512 p = _mm512_set1_ps(s[c]);
      const float* v = t.v + size_t(c) * t.v_stride + d;
      for (int j = 0; j < 4; ++j) {
        const int64_t dj = d + j * kL;
        if (dj < t.hd) acc[j] = _mm512_fmadd_ps(p, _mm512_maskz_loadu_ps(lanes(t.hd - dj), v + j * kL), acc[j]);
      }
    }
    for (int j = 0; j < 4 && d + j * kL < t.hd; ++j) {
      _mm512_mask_storeu_ps(out + d + j * kL, lanes(t.hd - d - j * kL), _mm512_mul_ps(acc[j], _mm512_set1_ps(inv)));
    }
  }
}

void tile(const AttnTile& t) {
  if (t.rows < kFewRows) {
    for (int r = 0; r < t.rows; ++r) row(t, r);
    return;
  }
  float* qt = t.scratch;
  float* st = t.scratch + t.hd * kL;
  transpose_queries(t, qt);
  scores(t, qt, st);
  const __m512 inv = softmax(t, st);
  for (int64_t d0 = 0; d0 < t.hd; d0 += kL) {
    const int nd = int(std::min<int64_t>(kL, t.hd - d0));
    if (nd == kL) {
      weighted_values<true>(t, st, inv, d0, nd);
    } else {
      weighted_values<false>(t, st, inv, d0, nd);
    }
  }
}

}  // namespace

const AttnKernels kAttnKernels = {.isa = Isa::Avx512, .tile = tile};

}  // namespace tessera::cpu::avx512
