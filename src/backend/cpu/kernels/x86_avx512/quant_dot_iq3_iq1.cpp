// AVX-512 (F, BW, DQ, VL, VNNI) dots of IQ3_XXS, IQ3_S, IQ1_S and IQ1_M with Q8_K, 64
// weights (two sub-blocks) per register. The IQ3 signs become a 64-bit mask that negates
// the activations in one masked subtract; vpdpbusd sums 4 products of unsigned grid
// bytes and signed activations into int32 (no int16 step), and vpdpwssd multiplies those
// sums by the sub-block scales (each 4-product sum fits int16 and a scale sits in the low
// half of an int32 lane with a zero high half, so it is an exact 32 x 16-bit
// multiply-add). IQ1's grid bytes g in {-1, 0, +1} go in as g + 1 (unsigned), the sum of
// the activations taken back out: sum(g y) = sum((g + 1) y) - sum(y), the latter also
// IQ1's delta term.
//
// Every integer sum is the reference's (src/quant/iq3.cpp, iq1.cpp), and each block's
// float step is the reference's too, in its order: the results are the reference's bits. The
// largest 4-product sums, with partner quants in [-127, 127]: IQ3_XXS 4 * 62 * 127 = 31496 (fits
// int16), IQ3_S 4 * 15 * 127, IQ1 4 * 2 * 127.
#include "backend/cpu/kernels/x86_intrin.h"

#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels/quant_dot_iq3_iq1.h"
#include "backend/cpu/kernels/x86_common.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace tessera::cpu::avx512 {
namespace {

using x86::fp16;
using x86::load128;

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

inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }

inline uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline uint64_t load_u64(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Sums of 4 products of unsigned x and signed y bytes, as 16 int32.
inline __m512i dot_u8(__m512i x, __m512i y) {
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), x, y);
}

// Scale a in lanes 0..7 and b in lanes 8..15 (int32 lanes, high int16 halves zero).
inline __m512i lane_pair(int a, int b) {
  return _mm512_mask_blend_epi32(__mmask16(0xff00), _mm512_set1_epi32(a), _mm512_set1_epi32(b));
}

// sumi + p * scale per int32 lane, for |p| < 2^15 and scales as lane_pair makes them.
inline __m512i add_scaled(__m512i sumi, __m512i p, __m512i scales) {
  return _mm512_dpwssd_epi32(sumi, p, scales);
}

// IQ3_XXS: the 32 sign bits of a sub-block from its four 7-bit sign indices.
inline uint64_t xxs_sign_bits(uint32_t aux) {
  return uint64_t(kIq2Signs[aux & 127]) | uint64_t(kIq2Signs[(aux >> 7) & 127]) << 8 |
         uint64_t(kIq2Signs[(aux >> 14) & 127]) << 16 |
         uint64_t(kIq2Signs[(aux >> 21) & 127]) << 24;
}

// The grids are looked up one index at a time, the entries inserted into the vector:
// measured here (AMD EPYC, shared machine) this beats vpgatherdd / vpgatherdq (IQ3_S:
// about 32 against 42 ns a block).

// IQ3: the 16 grid entries at idx[0..15] (bytes or int32 indices).
template <typename Index>
inline __m512i grid16(const uint32_t* grid, const Index* idx) {
  const __m256i lo =
      _mm256_setr_epi32(int(grid[idx[0]]), int(grid[idx[1]]), int(grid[idx[2]]), int(grid[idx[3]]),
                        int(grid[idx[4]]), int(grid[idx[5]]), int(grid[idx[6]]), int(grid[idx[7]]));
  const __m256i hi = _mm256_setr_epi32(int(grid[idx[8]]), int(grid[idx[9]]), int(grid[idx[10]]),
                                       int(grid[idx[11]]), int(grid[idx[12]]), int(grid[idx[13]]),
                                       int(grid[idx[14]]), int(grid[idx[15]]));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// IQ3_S: the 64 9-bit grid indices of a block (qs byte k of sub-block ib, bit k of qh[ib]
// as bit 8), 16 at a time: two sub-blocks' qh bytes are a 16-bit lane mask.
inline void s_indices(const BlockIQ3_S& b, uint32_t* idx) {
  for (int ib = 0; ib < QK_K / 32; ib += 2) {
    const __mmask16 high = __mmask16(b.qh[ib] | b.qh[ib + 1] << 8);
    const __m512i low = _mm512_cvtepu8_epi32(load128(b.qs + 8 * ib));
    _mm512_storeu_si512(idx + 8 * ib, _mm512_mask_or_epi32(low, high, low, _mm512_set1_epi32(256)));
  }
}

// IQ1: the 8 grid entries at the int32 indices idx, plus 1 in every byte (0..2).
inline __m512i iq1_grid_plus1(__m256i idx) {
  alignas(32) uint32_t i[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(i), idx);
  const __m512i g = _mm512_setr_epi64(int64_t(kIq1sGrid[i[0]]), int64_t(kIq1sGrid[i[1]]),
                                      int64_t(kIq1sGrid[i[2]]), int64_t(kIq1sGrid[i[3]]),
                                      int64_t(kIq1sGrid[i[4]]), int64_t(kIq1sGrid[i[5]]),
                                      int64_t(kIq1sGrid[i[6]]), int64_t(kIq1sGrid[i[7]]));
  return _mm512_add_epi8(g, _mm512_set1_epi8(1));
}

inline int hsum16(__m512i v) { return _mm512_reduce_add_epi32(v); }

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

// Per block: d dy sum_ib (2 s_ib + 1) (signed grid . y)_ib; the row's sum times 1/4.
float dot_iq3_xxs_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ3_XXS*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* qs = x[i].qs;
    __m512i sumi = _mm512_setzero_si512();
    for (int ib = 0; ib < QK_K / 32; ib += 2) {
      const __m512i g = grid16(kIq3xxsGrid, qs + 8 * ib);
      const uint32_t aux0 = load_u32(qs + QK_K / 4 + 4 * ib);
      const uint32_t aux1 = load_u32(qs + QK_K / 4 + 4 * ib + 4);
      const __mmask64 neg = xxs_sign_bits(aux0) | xxs_sign_bits(aux1) << 32;
      const __m512i qy = load512(y[i].qs + 32 * ib);
      const __m512i qs_signed = _mm512_mask_sub_epi8(qy, neg, _mm512_setzero_si512(), qy);
      sumi = add_scaled(sumi, dot_u8(g, qs_signed),
                        lane_pair(int(2 * (aux0 >> 28) + 1), int(2 * (aux1 >> 28) + 1)));
    }
    sum += mul(mul(fp16(x[i].d), y[i].d), float(hsum16(sumi)));
  }
  return 0.25f * sum;
}

// Per block: d dy sum_ib (2 s_ib + 1) (signed grid . y)_ib.
float dot_iq3_s_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ3_S*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    uint32_t idx[QK_K / 4];
    s_indices(x[i], idx);
    __m512i sumi = _mm512_setzero_si512();
    for (int ib = 0; ib < QK_K / 32; ib += 2) {
      const __m512i g = grid16(kIq3sGrid, idx + 8 * ib);
      const __mmask64 neg = load_u64(x[i].signs + 4 * ib);
      const __m512i qy = load512(y[i].qs + 32 * ib);
      const __m512i qs_signed = _mm512_mask_sub_epi8(qy, neg, _mm512_setzero_si512(), qy);
      const int sc = x[i].scales[ib / 2];
      sumi =
          add_scaled(sumi, dot_u8(g, qs_signed), lane_pair(2 * (sc & 0xf) + 1, 2 * (sc >> 4) + 1));
    }
    sum += mul(mul(fp16(x[i].d), y[i].d), float(hsum16(sumi)));
  }
  return sum;
}

// Per block: d dy (sum_g + delta sum_d), sum_g = sum_ib ls_ib (grid . y)_ib and
// sum_d = sum_ib ls_ib sign_ib sum(y_ib).
float dot_iq1_s_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ1_S*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const __m256i shifts = _mm256_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9);
  const __m512i ones = _mm512_set1_epi8(1);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    __m512i sum_g = _mm512_setzero_si512();
    __m512i sum_d = _mm512_setzero_si512();
    for (int ib = 0; ib < QK_K / 32; ib += 2) {
      const unsigned h0 = x[i].qh[ib], h1 = x[i].qh[ib + 1];
      // Index l of the two sub-blocks: qs byte | 3 bits of qh at 3 (l % 4), as bit 8.
      const __m256i hi =
          _mm256_and_si256(_mm256_srlv_epi32(_mm256_setr_epi32(int(h0), int(h0), int(h0), int(h0),
                                                               int(h1), int(h1), int(h1), int(h1)),
                                             shifts),
                           _mm256_set1_epi32(7));
      uint64_t lo8;
      std::memcpy(&lo8, x[i].qs + 4 * ib, 8);
      const __m256i idx = _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(lo8))),
                                          _mm256_slli_epi32(hi, 8));
      const __m512i qy = load512(y[i].qs + 32 * ib);
      const __m512i ysum = dot_u8(ones, qy);
      const __m512i scales =
          lane_pair(int(2 * ((h0 >> 12) & 7) + 1), int(2 * ((h1 >> 12) & 7) + 1));
      sum_g = add_scaled(sum_g, _mm512_sub_epi32(dot_u8(iq1_grid_plus1(idx), qy), ysum), scales);
      const __mmask16 neg = __mmask16((h0 & 0x8000 ? 0x00ff : 0) | (h1 & 0x8000 ? 0xff00 : 0));
      sum_d =
          add_scaled(sum_d, _mm512_mask_sub_epi32(ysum, neg, _mm512_setzero_si512(), ysum), scales);
    }
    sum += iq1_block(fp16(x[i].d), y[i].d, hsum16(sum_g), hsum16(sum_d));
  }
  return sum;
}

// As IQ1_S with a scale per 16 weights (4 int32 lanes) and the delta's sign per 8 (2 lanes).
float dot_iq1_m_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ1_M*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const __m256i index_shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m512i sign_shifts =
      _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28);
  const __m512i scale_shifts = _mm512_setr_epi32(0, 0, 0, 0, 3, 3, 3, 3, 6, 6, 6, 6, 9, 9, 9, 9);
  const __m512i ones = _mm512_set1_epi8(1);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    uint16_t w[4];
    std::memcpy(w, x[i].scales, 8);
    const uint16_t d16 =
        uint16_t((w[0] >> 12) | ((w[1] >> 8) & 0x00f0) | ((w[2] >> 4) & 0x0f00) | (w[3] & 0xf000));
    __m512i sum_g = _mm512_setzero_si512();
    __m512i sum_d = _mm512_setzero_si512();
    for (int ib = 0; ib < QK_K / 32; ib += 2) {
      // Nibble k of `nib` belongs to group k of the two sub-blocks: index bits 8..10 in
      // bits 0..2, the delta sign in bit 3.
      const __m512i nib = _mm512_set1_epi32(int(load_u32(x[i].qh + 2 * ib)));
      const __m256i hi = _mm256_and_si256(
          _mm256_srlv_epi32(_mm512_castsi512_si256(nib), index_shifts), _mm256_set1_epi32(7));
      uint64_t lo8;
      std::memcpy(&lo8, x[i].qs + 4 * ib, 8);
      const __m256i idx = _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(lo8))),
                                          _mm256_slli_epi32(hi, 8));
      const __mmask16 neg =
          _mm512_test_epi32_mask(_mm512_srlv_epi32(nib, sign_shifts), _mm512_set1_epi32(8));
      // Both sub-blocks' four 3-bit scales are in word ib / 2, bits 0..11.
      const __m512i ls = _mm512_and_si512(
          _mm512_srlv_epi32(_mm512_set1_epi32(w[ib / 2]), scale_shifts), _mm512_set1_epi32(7));
      const __m512i scales = _mm512_add_epi32(_mm512_add_epi32(ls, ls), _mm512_set1_epi32(1));
      const __m512i qy = load512(y[i].qs + 32 * ib);
      const __m512i ysum = dot_u8(ones, qy);
      sum_g = add_scaled(sum_g, _mm512_sub_epi32(dot_u8(iq1_grid_plus1(idx), qy), ysum), scales);
      sum_d =
          add_scaled(sum_d, _mm512_mask_sub_epi32(ysum, neg, _mm512_setzero_si512(), ysum), scales);
    }
    sum += iq1_block(fp16(d16), y[i].d, hsum16(sum_g), hsum16(sum_d));
  }
  return sum;
}

}  // namespace tessera::cpu::avx512
