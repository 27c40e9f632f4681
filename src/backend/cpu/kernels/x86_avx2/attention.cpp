// AVX2 attention tiles (attn_kernels.h): tile reads F32 keys and values, tile_f16 an F16
// cache directly (for KV heads whose rows fit one tile); both are rows_tile below, which
// scores 8 cells of all the tile's rows at once from transposed keys and shares each
// value vector between up to 8 rows, rather than a dot product and a horizontal sum per
// score with each row reading the whole head (measured: docs/performance.md,
// "Kernel history").
// Compiled with per-file target flags, reached only through attn_dispatch.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backend/cpu/attn_kernels.h"
#include "backend/cpu/kernels/x86_avx2/exp.h"
#include "backend/cpu/kernels/x86_common.h"
#include "backend/cpu/kernels/x86_tile_loops.h"

namespace tessera::cpu::avx2 {
namespace {

using x86::hmax;
using x86::hsum;

constexpr int64_t kW = 8;  // floats per register

// Lanes [0, left) set (all when left >= 8), for maskload / maskstore.
inline __m256i lanes(int64_t left) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(std::min<int64_t>(left, kW))), idx);
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

// ---- an F16 cache read directly (tile_f16) ---------------------------------------------
// As the AVX-512 tile_f16 (its comment says why), with 8 lanes: when a KV head's rows fit
// one tile, K and V stay F16 and are read once for all the rows, where the row-at-a-time
// tile above reads the whole (converted) head once per row.
//  - scores: 8 cells' keys converted and transposed into kt[d][8], row r's 8 scores
//    sum_d q[r][d] * kt[d]; below kFewRows rows, dot products with lanes over d;
//  - softmax per row;
//  - values: lanes over d, each cell's value vector converted once per pass and shared
//    by up to 8 rows.
constexpr int kFewRows = 4;

// Elements [0, min(left, 8)) of p as floats, the rest zero.
inline __m256 load_elems(const uint16_t* p, int64_t left) {
  if (left >= kW) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  alignas(16) uint16_t tmp[kW] = {};
  for (int64_t i = 0; i < left; ++i) tmp[i] = p[i];
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(tmp)));
}

inline __m256 load_elems(const float* p, int64_t left) {
  return left >= kW ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lanes(left));
}

// The tile's keys and values as F16 (tile_f16) or F32 (tile) elements.
template <typename T>
const T* keys(const AttnTile& t) {
  if constexpr (std::is_same_v<T, float>) return t.k;
  else return t.k16;
}

template <typename T>
const T* values(const AttnTile& t) {
  if constexpr (std::is_same_v<T, float>) return t.v;
  else return t.v16;
}

using x86::for_row_chunks;
using x86::kAheadCells;

// A cache row's hd elements into L2, kAheadCells cells ahead (x86::prefetch_row).
inline void prefetch_cells(const uint16_t* row, int64_t hd) { x86::prefetch_row(row, hd); }
inline void prefetch_cells(const float* row, int64_t hd) {
  x86::prefetch_row(reinterpret_cast<const uint16_t*>(row), 2 * hd);
}

// In place: r[i] holds element i of each of the 8 input vectors.
void transpose8(__m256 (&r)[kW]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// kt[d * 8 + i] = k[c0 + i][d] for d < hd rounded up to 8 (cells past n and d past hd
// give zeros).
template <typename T>
void transpose_keys(const AttnTile& t, int64_t c0, float* kt) {
  const int64_t valid = std::min<int64_t>(kW, t.n - c0);
  const T* k0 = keys<T>(t) + size_t(c0) * t.k_stride;
  const T* last = keys<T>(t) + size_t(t.n - 1) * t.k_stride;
  for (int64_t i = 0; i < kW; ++i) {
    prefetch_cells(std::min(k0 + size_t(kAheadCells + i) * t.k_stride, last), t.hd);
  }
  for (int64_t d0 = 0; d0 < t.hd; d0 += kW) {
    __m256 r[kW];
    for (int64_t i = 0; i < kW; ++i) {
      r[i] = i < valid ? load_elems(k0 + size_t(i) * t.k_stride + d0, t.hd - d0) : _mm256_setzero_ps();
    }
    transpose8(r);
    for (int j = 0; j < kW; ++j) _mm256_store_ps(kt + (d0 + j) * kW, r[j]);
  }
}

// s[r * ns + c0 + i] = q[r] . k[c0 + i], i < 8, for the rows [r0, r0 + R).
template <int R>
void score_rows(const AttnTile& t, const float* kt, int r0, float* s, int64_t ns, int64_t c0) {
  __m256 acc[R];
  const float* q[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    q[r] = t.q[r0 + r];
  }
  for (int64_t d = 0; d < t.hd; ++d) {
    const __m256 kv = _mm256_load_ps(kt + d * kW);
    for (int r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(q[r] + d), kv, acc[r]);
  }
  for (int r = 0; r < R; ++r) _mm256_store_ps(s + (r0 + r) * ns + c0, acc[r]);
}

// Scores of fewer than kFewRows rows: one dot product per (row, cell), lanes over d.
template <typename T>
void score_few(const AttnTile& t, float* s, int64_t ns) {
  for (int64_t c = 0; c < t.n; ++c) {
    const T* k = keys<T>(t) + size_t(c) * t.k_stride;
    if (c % kW == 0) prefetch_cells(keys<T>(t) + size_t(std::min(c + kAheadCells, t.n - 1)) * t.k_stride, t.hd);
    __m256 acc[kFewRows - 1] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t d = 0; d < t.hd; d += kW) {
      const __m256 kv = load_elems(k + d, t.hd - d);
      for (int r = 0; r < t.rows; ++r) {
        acc[r] = _mm256_fmadd_ps(_mm256_maskload_ps(t.q[r] + d, lanes(t.hd - d)), kv, acc[r]);
      }
    }
    for (int r = 0; r < t.rows; ++r) s[r * ns + c] = hsum(acc[r]);
  }
}

// Adds row r's mask to its n scores s and turns them into probabilities times the sum
// (exp(s - max)); returns 1 / sum, or 0 for a row that sees no cell (all zeros then).
float softmax_row(const AttnTile& t, int r, float* s) {
  const float* m = t.mask ? t.mask + t.mask_off[r] : nullptr;
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int64_t c = 0;
  for (; c + kW <= t.n; c += kW) {
    __m256 v = _mm256_loadu_ps(s + c);
    if (m) v = _mm256_add_ps(v, _mm256_loadu_ps(m + c));
    _mm256_storeu_ps(s + c, v);
    vmax = _mm256_max_ps(vmax, v);
  }
  float max = hmax(vmax);
  for (; c < t.n; ++c) {
    if (m) s[c] += m[c];
    max = std::max(max, s[c]);
  }
  if (max == -INFINITY) {
    std::fill(s, s + t.n, 0.0f);
    return 0.0f;
  }
  return softmax(s, t.n, max);
}

// The value sums run over the cells a chunk at a time (as the AVX-512 tile_f16; its
// comment says why), every pass over d and every group of rows within the chunk; the
// sums are carried in the output rows between chunks, each adding its cells in order.
constexpr int64_t kValueCells = 256;

// out[r][d0 ..] (+)= sum_{c in [c0, c1)} p[r][c] v[c][d0 ..] for rows [r0, r0 + R) and J
// vectors of d: started at c0 == 0, times inv[r] once c1 == n.
template <typename T, int R, int J>
void value_rows(const AttnTile& t, const float* s, int64_t ns, const float* inv, int r0, int64_t d0, int64_t c0,
                int64_t c1) {
  const size_t stride = t.v_stride;
  const T* v = values<T>(t) + d0 + size_t(c0) * stride;
  const T* last = values<T>(t) + size_t(t.n - 1) * stride;
  const float* p = s + r0 * ns;
  __m256 acc[R * J];
#pragma GCC unroll 16
  for (int i = 0; i < R * J; ++i) {
    const int64_t d = d0 + (i % J) * kW;
    acc[i] = c0 == 0 ? _mm256_setzero_ps() : _mm256_maskload_ps(t.out[r0 + i / J] + d, lanes(t.vd - d));
  }
  for (int64_t c = c0; c < c1; ++c, v += stride) {
    if (d0 == 0) prefetch_cells(std::min(v + kAheadCells * stride, last), t.vd);
    __m256 vv[J];
    for (int j = 0; j < J; ++j) vv[j] = load_elems(v + j * kW, t.vd - d0 - j * kW);
#pragma GCC unroll 16
    for (int i = 0; i < R * J; ++i) acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(p + (i / J) * ns + c), vv[i % J], acc[i]);
  }
  const bool done = c1 == t.n;
#pragma GCC unroll 16
  for (int i = 0; i < R * J; ++i) {
    const int r = r0 + i / J;
    const int64_t d = d0 + (i % J) * kW;
    _mm256_maskstore_ps(t.out[r] + d, lanes(t.vd - d), done ? _mm256_mul_ps(acc[i], _mm256_set1_ps(inv[r])) : acc[i]);
  }
}

// Values of the rows [r0, r0 + R) over cells [c0, c1): 1 vector of d per pass for more
// than 4 rows, else 2 (at most 8 accumulators of the 16 registers).
template <typename T, int R>
void values_for_rows(const AttnTile& t, const float* s, int64_t ns, const float* inv, int r0, int64_t c0, int64_t c1) {
  constexpr int kJ = R > 4 ? 1 : 2;
  for (int64_t d0 = 0; d0 < t.vd; d0 += kJ * kW) {
    if (kJ == 2 && t.vd - d0 > kW) {
      value_rows<T, R, kJ>(t, s, ns, inv, r0, d0, c0, c1);
    } else {
      value_rows<T, R, 1>(t, s, ns, inv, r0, d0, c0, c1);
    }
  }
}

// The whole tile over keys and values of element type T (F16: tile_f16, F32: tile).
template <typename T>
void rows_tile(const AttnTile& t) {
  float* kt = t.scratch;                                // hd rounded up to 8, times 8
  float* s = t.scratch + (t.hd + 15) / 16 * 16 * 16;    // rows * ns (the AVX-512 layout's offset)
  const int64_t ns = (t.n + kW - 1) / kW * kW;
  if (t.rows < kFewRows) {
    score_few<T>(t, s, ns);
  } else {
    for (int64_t c0 = 0; c0 < t.n; c0 += kW) {
      transpose_keys<T>(t, c0, kt);
      for_row_chunks(t.rows, [&](auto r, int r0) { score_rows<decltype(r)::value>(t, kt, r0, s, ns, c0); });
    }
  }
  float inv[kAttnRows];
  for (int r = 0; r < t.rows; ++r) inv[r] = softmax_row(t, r, s + r * ns);
  for (int64_t c0 = 0; c0 < t.n; c0 += kValueCells) {
    const int64_t c1 = std::min(t.n, c0 + kValueCells);
    for_row_chunks(t.rows, [&](auto r, int r0) { values_for_rows<T, decltype(r)::value>(t, s, ns, inv, r0, c0, c1); });
  }
}

void tile(const AttnTile& t) { rows_tile<float>(t); }
void tile_f16(const AttnTile& t) { rows_tile<uint16_t>(t); }

}  // namespace

const AttnKernels kAttnKernels = {.isa = Isa::Avx2, .tile = tile, .tile_f16 = tile_f16};

}  // namespace tessera::cpu::avx2
