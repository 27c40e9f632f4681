// AVX2 (+ FMA, F16C) dots of IQ3_XXS, IQ3_S, IQ1_S and IQ1_M with Q8_K, 32 weights (one
// sub-block) per register. The grid points are looked up one index at a time (scalar
// loads inserted into the vector: vpgatherdd measured slower here), the signs
// of IQ3 are applied to the activations (negated where a sign bit is set), and maddubs
// sums pairs of unsigned grid bytes times signed activations into int16, madd times the
// sub-block scale into int32. IQ1's grid bytes are -1, 0 or +1: vpsignb forms the
// products directly.
//
// Every integer sum is the reference's (src/quant/iq3.cpp, iq1.cpp). The block float steps
// of IQ3_S and IQ1 are the reference's too, in its order (their results are the reference's
// bits); IQ3_XXS keeps its block sums in vector lanes (see dot_iq3_xxs_q8_K). Exactness
// of the int16 steps, with partner quants in [-127, 127]: IQ3_XXS pairs reach 2 * 62 * 127 = 15748,
// IQ3_S 2 * 15 * 127, IQ1 2 * 127; madd's products of those with scales <= 31 (IQ3) or 15 (IQ1) are
// int32.
#include "backend/cpu/kernels/quant_dot_iq3_iq1.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels/x86_common.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace tessera::cpu::avx2 {
namespace {

using x86::fp16;
using x86::hsum;
using x86::hsum_i32;
using x86::load256;

using quant::BlockIQ1_M;
using quant::BlockIQ1_S;
using quant::BlockIQ3_S;
using quant::BlockIQ3_XXS;
using quant::BlockQ8_K;
using quant::kIq1Delta;
using quant::kIq1sGrid;
using quant::kIq2Signs;
using quant::kIq3sGrid;
using quant::kIq3xxsGrid;
using quant::QK_K;

inline uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline uint16_t load_u16(const void* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// 0xff in byte j where bit j of `bits` is set, else 0.
inline __m256i bit_bytes(uint32_t bits) {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(int(bits)), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                      0x0101010101010101, 0x0000000000000000));
  const __m256i probe = _mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  return _mm256_cmpeq_epi8(probe, _mm256_set1_epi64x(-1));
}

// y with the bytes negated where bit j of `bits` is set.
inline __m256i apply_signs(__m256i y, uint32_t bits) {
  const __m256i m = bit_bytes(bits);
  return _mm256_sub_epi8(_mm256_xor_si256(y, m), m);
}

// sum over the 32 bytes of unsigned grid values g times signed y, each int16 pair sum
// times `scale`, as 8 int32.
inline __m256i scaled_dot(__m256i g, __m256i y, int scale) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(g, y), _mm256_set1_epi16(short(scale)));
}

// IQ1: sums of grid values in {-1, 0, +1} times y as 16 int16 (pairs).
inline __m256i ternary_dot16(__m256i g, __m256i y) {
  return _mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_sign_epi8(y, g));
}

// IQ3_XXS: the 32 sign bits of a sub-block from its four 7-bit sign indices.
inline uint32_t xxs_sign_bits(uint32_t aux) {
  return uint32_t(kIq2Signs[aux & 127]) | uint32_t(kIq2Signs[(aux >> 7) & 127]) << 8 |
         uint32_t(kIq2Signs[(aux >> 14) & 127]) << 16 |
         uint32_t(kIq2Signs[(aux >> 21) & 127]) << 24;
}

// IQ3: the 8 grid entries at idx[0..7] (bytes or int32 indices).
template <typename Index>
inline __m256i grid8(const uint32_t* grid, const Index* idx) {
  return _mm256_setr_epi32(int(grid[idx[0]]), int(grid[idx[1]]), int(grid[idx[2]]),
                           int(grid[idx[3]]), int(grid[idx[4]]), int(grid[idx[5]]),
                           int(grid[idx[6]]), int(grid[idx[7]]));
}

// IQ3_S: the 64 9-bit grid indices of a block (qs byte k of sub-block ib, bit k of qh[ib]
// as bit 8), computed 8 at a time in vectors: cheaper than one by one in scalar code.
inline void s_indices(const BlockIQ3_S& b, uint32_t* idx) {
  const __m256i shifts = _mm256_setr_epi32(8, 7, 6, 5, 4, 3, 2, 1);
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    const __m256i low =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * ib)));
    const __m256i high = _mm256_and_si256(_mm256_sllv_epi32(_mm256_set1_epi32(b.qh[ib]), shifts),
                                          _mm256_set1_epi32(256));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx + 8 * ib), _mm256_or_si256(low, high));
  }
}

// IQ1: grid entry of index (low 8 bits `lo`, high 3 bits `hi`).
inline int64_t iq1_grid(unsigned lo, unsigned hi) { return int64_t(kIq1sGrid[lo | (hi & 7) << 8]); }

// A float product rounded on its own: the reference's per-block float steps are products
// and sums, and the build may contract a * b + c into one FMA (rounded once), which
// would move the result off the reference's bits.
inline float mul(float a, float b) {
  return _mm_cvtss_f32(_mm_mul_ss(_mm_set_ss(a), _mm_set_ss(b)));
}

// An IQ1 block's contribution, the reference's d dy (sum_g + delta sum_d) step by step.
inline float iq1_block(float d, float dy, int sum_g, int sum_d) {
  return mul(mul(d, dy), float(sum_g) + mul(kIq1Delta, float(sum_d)));
}

}  // namespace

// Per block: d dy sum_ib (2 s_ib + 1) (signed grid . y)_ib; the row's sum times 1/4. The
// block sums stay in 8 float lanes (one FMA a block, no horizontal sum until the end), as
// quant_kernels.h's contract allows: 7% faster than the reference's scalar float order
// (quant_dot/iq3_xxs/avx2, Zen 5).
float dot_iq3_xxs_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ3_XXS*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* qs = x[i].qs;
    __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const __m256i g = grid8(kIq3xxsGrid, qs + 8 * ib);
      const uint32_t aux = load_u32(qs + QK_K / 4 + 4 * ib);
      const __m256i qy = apply_signs(load256(y[i].qs + 32 * ib), xxs_sign_bits(aux));
      sumi[ib & 1] = _mm256_add_epi32(sumi[ib & 1], scaled_dot(g, qy, int(2 * (aux >> 28) + 1)));
    }
    const __m256 d = _mm256_set1_ps(fp16(x[i].d) * y[i].d);
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_add_epi32(sumi[0], sumi[1])), acc);
  }
  return 0.25f * hsum(acc);
}

// Per block: d dy sum_ib (2 s_ib + 1) (signed grid . y)_ib, the block float steps in the
// reference's order (lanes as in IQ3_XXS measured 6% slower here: the index
// computation, not the tail, bounds this loop).
float dot_iq3_s_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ3_S*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    uint32_t idx[QK_K / 4];
    s_indices(x[i], idx);
    __m256i sumi = _mm256_setzero_si256();
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const __m256i g = grid8(kIq3sGrid, idx + 8 * ib);
      const __m256i qy = apply_signs(load256(y[i].qs + 32 * ib), load_u32(x[i].signs + 4 * ib));
      const int scale = (x[i].scales[ib / 2] >> (4 * (ib % 2))) & 0xf;
      sumi = _mm256_add_epi32(sumi, scaled_dot(g, qy, 2 * scale + 1));
    }
    sum += mul(mul(fp16(x[i].d), y[i].d), float(hsum_i32(sumi)));
  }
  return sum;
}

// Per block: d dy (sum_g + delta sum_d), sum_g = sum_ib ls_ib (grid . y)_ib and
// sum_d = sum_ib ls_ib sign_ib sum(y_ib) from the bsums.
float dot_iq1_s_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ1_S*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    __m256i sumi = _mm256_setzero_si256();
    int sum_d = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const uint8_t* q = x[i].qs + 4 * ib;
      const unsigned qh = x[i].qh[ib];
      const __m256i g = _mm256_setr_epi64x(iq1_grid(q[0], qh), iq1_grid(q[1], qh >> 3),
                                           iq1_grid(q[2], qh >> 6), iq1_grid(q[3], qh >> 9));
      const int ls = 2 * ((qh >> 12) & 7) + 1;
      const __m256i p = ternary_dot16(g, load256(y[i].qs + 32 * ib));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_set1_epi16(short(ls))));
      const int bsum = y[i].bsums[2 * ib] + y[i].bsums[2 * ib + 1];
      sum_d += ls * (qh & 0x8000 ? -bsum : bsum);
    }
    sum += iq1_block(fp16(x[i].d), y[i].d, hsum_i32(sumi), sum_d);
  }
  return sum;
}

// As IQ1_S with a scale per 16 weights (the two 128-bit lanes of a sub-block) and the
// delta's sign per 8: sum_d is the sums of y's groups of 8, signed, times the scales.
float dot_iq1_m_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ1_M*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  // Group l's delta sign is bit 4 l + 3 of qh[2 ib] | qh[2 ib + 1] << 8: tested in the
  // four int16 of 64-bit lane l, giving bytes -1 (set) or +1 over its 8 weights.
  const __m256i sign_bits = _mm256_setr_epi64x(0x0008000800080008, 0x0080008000800080,
                                               0x0800080008000800, int64_t(0x8000800080008000));
  const __m256i spread_pair = _mm256_setr_epi64x(0x0100010001000100, 0x0100010001000100,
                                                 0x0302030203020302, 0x0302030203020302);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    uint16_t w[4];
    std::memcpy(w, x[i].scales, 8);
    const uint16_t d16 =
        uint16_t((w[0] >> 12) | ((w[1] >> 8) & 0x00f0) | ((w[2] >> 4) & 0x0f00) | (w[3] & 0xf000));
    __m256i sum_g = _mm256_setzero_si256();
    __m256i sum_d = _mm256_setzero_si256();
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const uint8_t* q = x[i].qs + 4 * ib;
      const unsigned h0 = x[i].qh[2 * ib], h1 = x[i].qh[2 * ib + 1];
      const __m256i g = _mm256_setr_epi64x(iq1_grid(q[0], h0), iq1_grid(q[1], h0 >> 4),
                                           iq1_grid(q[2], h1), iq1_grid(q[3], h1 >> 4));
      const __m256i hh = _mm256_and_si256(_mm256_set1_epi16(short(h0 | h1 << 8)), sign_bits);
      const __m256i delta = _mm256_or_si256(_mm256_cmpeq_epi16(hh, sign_bits), _mm256_set1_epi8(1));
      // The two scales as int16 0 and 1 of one int32, spread to the low and high lane.
      const unsigned sc = w[ib / 2] >> (6 * (ib % 2));
      const unsigned pair = (2 * (sc & 7) + 1) | (2 * ((sc >> 3) & 7) + 1) << 16;
      const __m256i scales = _mm256_shuffle_epi8(_mm256_set1_epi32(int(pair)), spread_pair);
      const __m256i qy = load256(y[i].qs + 32 * ib);
      sum_g = _mm256_add_epi32(sum_g, _mm256_madd_epi16(ternary_dot16(g, qy), scales));
      sum_d = _mm256_add_epi32(sum_d, _mm256_madd_epi16(ternary_dot16(delta, qy), scales));
    }
    sum += iq1_block(fp16(d16), y[i].d, hsum_i32(sum_g), hsum_i32(sum_d));
  }
  return sum;
}

}  // namespace tessera::cpu::avx2
