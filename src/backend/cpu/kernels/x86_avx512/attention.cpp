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
#include <type_traits>

#include "backend/cpu/attn_kernels.h"
#include "backend/cpu/kernels/x86_avx512/exp.h"
#include "backend/cpu/kernels/x86_tile_loops.h"

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

inline __mmask16 lanes(int64_t left) {
  if (left <= 0) return 0;
  return left >= kL ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
}

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
    std::fill(out, out + t.vd, 0.0f);
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
  for (int64_t d = 0; d < t.vd; d += 4 * kL) {  // up to 4 vectors of d per pass over the cells
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t c = 0; c < t.n; ++c) {
      const __m512 p = _mm512_set1_ps(s[c]);
      const float* v = t.v + size_t(c) * t.v_stride + d;
      for (int j = 0; j < 4; ++j) {
        const int64_t dj = d + j * kL;
        if (dj < t.vd) acc[j] = _mm512_fmadd_ps(p, _mm512_maskz_loadu_ps(lanes(t.vd - dj), v + j * kL), acc[j]);
      }
    }
    for (int j = 0; j < 4 && d + j * kL < t.vd; ++j) {
      _mm512_mask_storeu_ps(out + d + j * kL, lanes(t.vd - d - j * kL), _mm512_mul_ps(acc[j], _mm512_set1_ps(inv)));
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
  for (int64_t d0 = 0; d0 < t.vd; d0 += kL) {
    const int nd = int(std::min<int64_t>(kL, t.vd - d0));
    if (nd == kL) {
      weighted_values<true>(t, st, inv, d0, nd);
    } else {
      weighted_values<false>(t, st, inv, d0, nd);
    }
  }
}

// ---- an F16 cache read directly (tile_f16) ---------------------------------------------
// When all the query rows of a KV head fit one tile (decode), the tile is the only reader
// of that head's cells, so converting the cache to F32 first would only add a pass over
// it. Here K and V stay F16, and every lane is useful whatever the number of rows (the
// row-per-lane tile above fills rows/16 of each vector: half, for a model with 8 query
// heads per KV head):
//  - scores, lanes over cells: 16 cells' keys are converted and transposed into
//    kt[d][16] (scratch), then row r's 16 scores are sum_d q[r][d] * kt[d], q[r][d]
//    broadcast; below kFewRows rows a transpose costs more than it saves, and each score
//    is a dot product with lanes over d instead;
//  - softmax per row over its scores (rows of ns floats);
//  - values, lanes over d: each cell's value row is converted once per pass and meets
//    every row's probability (broadcast).

inline __m512 load_f16(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

// In place: r[i] holds element i of each of the 16 input vectors.
void transpose16(__m512 (&r)[kL]) {
  __m512 t[kL];
  for (int i = 0; i < kL; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // u[4i + j], 128-bit lane l: element 4l + j of inputs 4i .. 4i + 3.
  __m512 u[kL];
  for (int i = 0; i < kL; i += 4) {
    u[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int j = 0; j < 4; ++j) {
    const __m512 x0 = _mm512_shuffle_f32x4(u[j], u[4 + j], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 x1 = _mm512_shuffle_f32x4(u[j], u[4 + j], _MM_SHUFFLE(3, 1, 3, 1));
    const __m512 y0 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 y1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(3, 1, 3, 1));
    r[j] = _mm512_shuffle_f32x4(x0, y0, _MM_SHUFFLE(2, 0, 2, 0));
    r[4 + j] = _mm512_shuffle_f32x4(x1, y1, _MM_SHUFFLE(2, 0, 2, 0));
    r[8 + j] = _mm512_shuffle_f32x4(x0, y0, _MM_SHUFFLE(3, 1, 3, 1));
    r[12 + j] = _mm512_shuffle_f32x4(x1, y1, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

using x86::for_row_chunks;
using x86::kAheadCells;
using x86::prefetch_row;

// kt[d * 16 + i] = k[c0 + i][d] for d < hd rounded up to 16 (cells past n and d past hd
// give zeros).
void transpose_keys(const AttnTile& t, int64_t c0, float* kt) {
  const int64_t valid = std::min<int64_t>(kL, t.n - c0);
  const uint16_t* k0 = t.k16 + size_t(c0) * t.k_stride;
  const uint16_t* ahead = t.k16 + size_t(std::min<int64_t>(c0 + kAheadCells, t.n - 1)) * t.k_stride;
  const uint16_t* last = t.k16 + size_t(t.n - 1) * t.k_stride;
  for (int i = 0; i < kL; ++i) prefetch_row(std::min(ahead + size_t(i) * t.k_stride, last), t.hd);
  for (int64_t d0 = 0; d0 < t.hd; d0 += kL) {
    const __mmask16 m = lanes(t.hd - d0);
    __m512 r[kL];
    const uint16_t* row = k0 + d0;
    for (int i = 0; i < kL; ++i, row += t.k_stride) r[i] = load_f16(row, i < valid ? m : __mmask16(0));
    transpose16(r);
    for (int j = 0; j < kL; ++j) _mm512_store_ps(kt + (d0 + j) * kL, r[j]);
  }
}

// s[r * ns + c0 + i] = q[r] . k[c0 + i], i < 16, for the rows [r0, r0 + R).
template <int R>
void score_rows(const AttnTile& t, const float* kt, int r0, float* s, int64_t ns, int64_t c0) {
  __m512 acc[R];
  const float* q[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm512_setzero_ps();
    q[r] = t.q[r0 + r];
  }
  for (int64_t d = 0; d < t.hd; ++d) {
    const __m512 kv = _mm512_load_ps(kt + d * kL);
    for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(q[r][d]), kv, acc[r]);
  }
  for (int r = 0; r < R; ++r) _mm512_store_ps(s + (r0 + r) * ns + c0, acc[r]);
}

// Scores of fewer than kFewRows rows: one dot product per (row, cell), lanes over d.
void score_few(const AttnTile& t, float* s, int64_t ns) {
  for (int64_t c = 0; c < t.n; ++c) {
    const uint16_t* k = t.k16 + size_t(c) * t.k_stride;
    __m512 acc[kFewRows - 1] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t d = 0; d < t.hd; d += kL) {
      const __mmask16 m = lanes(t.hd - d);
      const __m512 kv = load_f16(k + d, m);
      for (int r = 0; r < t.rows; ++r) acc[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, t.q[r] + d), kv, acc[r]);
    }
    for (int r = 0; r < t.rows; ++r) s[r * ns + c] = _mm512_reduce_add_ps(acc[r]);
  }
}

// Adds row r's mask to its n scores s, then turns them into exp(s - max); returns
// 1 / sum, or 0 for a row that sees no cell (its probabilities are then all 0).
float softmax_row(const AttnTile& t, int r, float* s) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t c = 0; c < t.n; c += kL) {
    const __mmask16 m = lanes(t.n - c);
    __m512 v = _mm512_maskz_loadu_ps(m, s + c);
    if (t.mask) {
      v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, t.mask + t.mask_off[r] + c));
      _mm512_mask_storeu_ps(s + c, m, v);
    }
    mx = _mm512_mask_max_ps(mx, m, mx, v);
  }
  const float max = _mm512_reduce_max_ps(mx);
  if (max == -INFINITY) {
    std::fill(s, s + t.n, 0.0f);
    return 0.0f;
  }
  const __m512 vmax = _mm512_set1_ps(max);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t c = 0; c < t.n; c += kL) {
    const __mmask16 m = lanes(t.n - c);
    const __m512 p = _mm512_maskz_mov_ps(m, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + c), vmax)));
    _mm512_mask_storeu_ps(s + c, m, p);
    sum = _mm512_add_ps(sum, p);
  }
  return 1.0f / _mm512_reduce_add_ps(sum);
}

// The value sums run over the cells a chunk at a time, every pass over d and every group
// of rows within the chunk, so that a chunk's value rows are read from memory once and
// then from L1 (a pass reads its vectors of each row; at 16384 cells one KV head's values
// are 2 MiB, past L2, and a second pass over all the cells read them from memory again).
// The sums are carried in the output rows between chunks; each accumulator still adds
// its cells in order, so chunking does not change a bit of the result.
constexpr int64_t kValueCells = 256;

// out[r][d0 + 16 j ..] (+)= sum_{c in [c0, c1)} p[r][c] v[c][d0 + 16 j ..] for rows
// [r0, r0 + R) and J vectors of d: started at c0 == 0, times inv[r] once c1 == n.
template <int R, int J>
void value_rows(const AttnTile& t, const float* s, int64_t ns, const float* inv, int r0, int64_t d0, int64_t c0,
                int64_t c1) {
  // Locals, not t's fields, in the loop: its stores would otherwise make the compiler
  // reload n and keep the accumulators in memory.
  const size_t stride = t.v_stride;
  const uint16_t* v = t.v16 + d0 + size_t(c0) * stride;
  const float* p = s + r0 * ns;
  __mmask16 m[J];
  __m512 acc[R * J];
#pragma GCC unroll 4
  for (int j = 0; j < J; ++j) m[j] = lanes(t.vd - d0 - j * kL);
#pragma GCC unroll 16
  for (int i = 0; i < R * J; ++i) {
    acc[i] = c0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m[i % J], t.out[r0 + i / J] + d0 + (i % J) * kL);
  }
  const uint16_t* last = t.v16 + size_t(t.n - 1) * stride;
  for (int64_t c = c0; c < c1; ++c, v += stride) {
    if (d0 == 0) prefetch_row(std::min(v + kAheadCells * stride, last), t.vd);
    __m512 vv[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) vv[j] = load_f16(v + j * kL, m[j]);
#pragma GCC unroll 16
    for (int i = 0; i < R * J; ++i) {
      acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(p[(i / J) * ns + c]), vv[i % J], acc[i]);
    }
  }
  const bool done = c1 == t.n;
#pragma GCC unroll 16
  for (int i = 0; i < R * J; ++i) {
    const int r = r0 + i / J, j = i % J;
    _mm512_mask_storeu_ps(t.out[r] + d0 + j * kL, m[j], done ? _mm512_mul_ps(acc[i], _mm512_set1_ps(inv[r])) : acc[i]);
  }
}

// Values of the rows [r0, r0 + R) over cells [c0, c1): up to 16 accumulators, so 2
// vectors of d per pass for more than 4 rows, else 4.
template <int R>
void values_for_rows(const AttnTile& t, const float* s, int64_t ns, const float* inv, int r0, int64_t c0, int64_t c1) {
  constexpr int kJ = R > 4 ? 2 : 4;
  for (int64_t d0 = 0; d0 < t.vd; d0 += kJ * kL) {
    switch (std::min<int64_t>(kJ, (t.vd - d0 + kL - 1) / kL)) {
      case 1: value_rows<R, 1>(t, s, ns, inv, r0, d0, c0, c1); break;
      case 2: value_rows<R, 2>(t, s, ns, inv, r0, d0, c0, c1); break;
      case 3: value_rows<R, 3>(t, s, ns, inv, r0, d0, c0, c1); break;
      default: value_rows<R, kJ>(t, s, ns, inv, r0, d0, c0, c1); break;
    }
  }
}

void tile_f16(const AttnTile& t) {
  float* kt = t.scratch;                                // hd rounded up to 16, times 16
  float* s = t.scratch + (t.hd + kL - 1) / kL * kL * kL;  // rows * ns
  const int64_t ns = (t.n + kL - 1) / kL * kL;
  if (t.rows < kFewRows) {
    score_few(t, s, ns);
  } else {
    for (int64_t c0 = 0; c0 < t.n; c0 += kL) {
      transpose_keys(t, c0, kt);
      for_row_chunks(t.rows, [&](auto r, int r0) { score_rows<decltype(r)::value>(t, kt, r0, s, ns, c0); });
    }
  }
  float inv[kAttnRows];
  for (int r = 0; r < t.rows; ++r) inv[r] = softmax_row(t, r, s + r * ns);
  for (int64_t c0 = 0; c0 < t.n; c0 += kValueCells) {
    const int64_t c1 = std::min(t.n, c0 + kValueCells);
    for_row_chunks(t.rows, [&](auto r, int r0) { values_for_rows<decltype(r)::value>(t, s, ns, inv, r0, c0, c1); });
  }
}

}  // namespace

const AttnKernels kAttnKernels = {.isa = Isa::Avx512, .tile = tile, .tile_f16 = tile_f16};

}  // namespace tessera::cpu::avx512
