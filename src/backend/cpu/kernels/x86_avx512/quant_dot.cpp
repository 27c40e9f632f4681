// AVX-512 (F, BW, DQ, VL, VNNI) quantized kernels. Integer dot products use VNNI:
// vpdpbusd sums 4 products of unsigned weight bytes and signed activation bytes into
// int32 (no int16 saturation), and vpdpwssd multiplies those sums by the sub-block
// scales (each 4-product sum fits int16, so a scale in the low half of an int32 lane
// with a zero high half makes vpdpwssd an exact 32 x 16-bit multiply-add). The 32-element
// formats take two blocks per 512-bit register. Signed weights are made unsigned with an
// offset that is taken back out exactly: sum((q + c) y) - c sum(y).
// Compiled with per-file target flags, reached only through quant_dispatch.cpp after a
// cpuid check; all helpers have internal linkage (no AVX-512 code in shared symbols).
#include "backend/cpu/kernels/x86_intrin.h"

#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels/quant_dot_iq2.h"
#include "backend/cpu/kernels/quant_dot_iq3_iq1.h"
#include "backend/cpu/kernels/quant_dot_tq.h"
#include "backend/cpu/kernels/x86_common.h"
#include "backend/cpu/quant_kernels.h"
#include "quant/blocks.h"

namespace tessera::cpu::avx512 {
namespace {

using x86::fp16;
using x86::halves;
using x86::hsum;
using x86::k4_scales_mins;
using x86::load128;
using x86::load256;
using x86::q3_scales;
using x86::to_fp16;

using quant::BlockQ2_K;
using quant::BlockQ3_K;
using quant::BlockQ4_0;
using quant::BlockQ4_1;
using quant::BlockQ4_K;
using quant::BlockQ5_0;
using quant::BlockQ5_1;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_0;
using quant::BlockQ8_1;
using quant::BlockQ8_K;
using quant::QK_K;

// ---- helpers --------------------------------------------------------------------------

inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }

inline float hsum512(__m512 v) {
  return hsum(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

// Two 256-bit halves as one register.
inline __m512i join(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// Lane j of a 128-bit vector in the low 8 lanes of a 512-bit one, lane j + 1 in the
// high 8.
inline __m512 spread_pair(__m128 v, int j) {
  const __m512i sel = _mm512_add_epi32(
      _mm512_set1_epi32(j), _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
  return _mm512_permutexvar_ps(sel, _mm512_castps128_ps512(v));
}

// The scales of a pair of blocks, dx_a dy_a (low 8 lanes) and dx_b dy_b (high 8), from
// their fp16 fields: one conversion for all four (the scalar work runs on integer ports).
inline __m512 pair_scales(uint16_t xa, uint16_t xb, uint16_t ya, uint16_t yb) {
  const __m128 f = _mm_cvtph_ps(_mm_cvtsi64_si128(int64_t(halves(xa, xb, ya, yb))));
  return spread_pair(_mm_mul_ps(f, _mm_movehl_ps(f, f)), 0);
}

// For formats with a min: scale pair (dx dy) and min pair (mx dy) of two blocks.
struct ScaleMin {
  __m512 d, m;
};
inline ScaleMin pair_scales_mins(uint16_t dxa, uint16_t dxb, uint16_t mxa, uint16_t mxb,
                                 uint16_t dya, uint16_t dyb) {
  const __m128i h =
      _mm_set_epi64x(int64_t(halves(dya, dyb, dya, dyb)), int64_t(halves(dxa, dxb, mxa, mxb)));
  const __m256 f = _mm256_cvtph_ps(h);  // dxa dxb mxa mxb | dya dyb dya dyb
  const __m128 prod = _mm_mul_ps(_mm256_castps256_ps128(f), _mm256_extractf128_ps(f, 1));
  return {spread_pair(prod, 0), spread_pair(prod, 2)};
}

// The nibbles of two legacy blocks (16 bytes each) as elements 0..31 of the first block
// (low nibbles, then high ones) followed by elements 0..31 of the second.
inline __m512i nibbles64(const uint8_t* p0, const uint8_t* p1) {
  const __m256i raw = _mm256_inserti128_si256(_mm256_castsi128_si256(load128(p0)), load128(p1), 1);
  const __m512i both = join(raw, _mm256_srli_epi16(raw, 4));  // [lo0 lo1 hi0 hi1] before masking
  const __m512i ordered = _mm512_shuffle_i64x2(both, both, _MM_SHUFFLE(3, 1, 2, 0));
  return _mm512_and_si512(ordered, _mm512_set1_epi8(0x0f));
}

// The fifth bits of two legacy blocks as a mask over the 64 bytes of nibbles64.
inline __mmask64 fifth_bits(const uint8_t* qh0, const uint8_t* qh1) {
  uint32_t h0, h1;
  std::memcpy(&h0, qh0, 4);
  std::memcpy(&h1, qh1, 4);
  return __mmask64(uint64_t(h0) | uint64_t(h1) << 32);
}

// Sums of 4 products of unsigned x and signed y bytes, as 16 int32.
inline __m512i dot_u8(__m512i x, __m512i y) {
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), x, y);
}

// The same for x - c with x unsigned (c a byte constant): sum(x y) - c sum(y).
inline __m512i dot_u8_minus(__m512i x, __m512i y, char c) {
  return _mm512_sub_epi32(dot_u8(x, y), dot_u8(_mm512_set1_epi8(c), y));
}

// Lane selectors for _mm512_permutexvar_epi32 over a register of scales, one per lane:
// 32-element sub-blocks (j, j + 1 over 8 lanes each) and 16-element ones (4 lanes each).
inline __m512i sel32(int j) {
  return _mm512_add_epi32(_mm512_set1_epi32(j),
                          _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
}
inline __m512i sel16(int j) {
  return _mm512_add_epi32(_mm512_set1_epi32(j),
                          _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
}

// sumi + p * scale per lane, for |p| < 2^15 and scales zero-extended int16 lanes.
inline __m512i add_scaled(__m512i sumi, __m512i p, __m512i scales, __m512i sel) {
  return _mm512_dpwssd_epi32(sumi, p, _mm512_permutexvar_epi32(sel, scales));
}

// ---- legacy formats: two 32-element blocks per 512-bit register ------------------------
// Each kernel has a `step(a, b, two)` over blocks a and b; an odd last block is paired
// with itself (two = false) under a zero scale (fp16 bits 0), which adds exact zeros.

// Q4_0 x Q8_0: (q - 8) . y per block, scaled by dx * dy.
float dot_q4_0_q8_0(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ4_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const int64_t nb = n / 32;
  __m512 acc = _mm512_setzero_ps();
  auto step = [&](int64_t a, int64_t b, bool two) {
    const __m512i qy = join(load256(y[a].qs), load256(y[b].qs));
    const __m512i dot = dot_u8_minus(nibbles64(x[a].qs, x[b].qs), qy, 8);
    const __m512 d = pair_scales(x[a].d, two ? x[b].d : 0, y[a].d, two ? y[b].d : 0);
    acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot), acc);
  };
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) step(i, i + 1, true);
  if (i < nb) step(i, i, false);
  return hsum512(acc);
}

// Q4_1 x Q8_1: dx dy (q . y) + mx dy sum(y), with the exact integer sum(y).
float dot_q4_1_q8_1(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ4_1*>(vx);
  const auto* y = static_cast<const BlockQ8_1*>(vy);
  const int64_t nb = n / 32;
  __m512 acc = _mm512_setzero_ps();
  auto step = [&](int64_t a, int64_t b, bool two) {
    const __m512i qy = join(load256(y[a].qs), load256(y[b].qs));
    const __m512i dot = dot_u8(nibbles64(x[a].qs, x[b].qs), qy);
    const __m512i sum = dot_u8(_mm512_set1_epi8(1), qy);
    const ScaleMin sm = pair_scales_mins(x[a].d, two ? x[b].d : 0, x[a].m, two ? x[b].m : 0, y[a].d,
                                         two ? y[b].d : 0);
    acc = _mm512_fmadd_ps(sm.d, _mm512_cvtepi32_ps(dot), acc);
    acc = _mm512_fmadd_ps(sm.m, _mm512_cvtepi32_ps(sum), acc);
  };
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) step(i, i + 1, true);
  if (i < nb) step(i, i, false);
  return hsum512(acc);
}

// Q5_0 x Q8_0: (q - 16) . y, q = nibble + 16 where the fifth bit is set.
float dot_q5_0_q8_0(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ5_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const int64_t nb = n / 32;
  const __m512i sixteen = _mm512_set1_epi8(16);
  __m512 acc = _mm512_setzero_ps();
  auto step = [&](int64_t a, int64_t b, bool two) {
    const __m512i qy = join(load256(y[a].qs), load256(y[b].qs));
    const __m512i low = nibbles64(x[a].qs, x[b].qs);
    const __m512i q = _mm512_mask_add_epi8(low, fifth_bits(x[a].qh, x[b].qh), low, sixteen);
    const __m512 d = pair_scales(x[a].d, two ? x[b].d : 0, y[a].d, two ? y[b].d : 0);
    acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot_u8_minus(q, qy, 16)), acc);
  };
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) step(i, i + 1, true);
  if (i < nb) step(i, i, false);
  return hsum512(acc);
}

// Q5_1 x Q8_1: dx dy (q . y) + mx dy sum(y), q = nibble + 16 where the fifth bit is set.
float dot_q5_1_q8_1(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ5_1*>(vx);
  const auto* y = static_cast<const BlockQ8_1*>(vy);
  const int64_t nb = n / 32;
  const __m512i sixteen = _mm512_set1_epi8(16);
  __m512 acc = _mm512_setzero_ps();
  auto step = [&](int64_t a, int64_t b, bool two) {
    const __m512i qy = join(load256(y[a].qs), load256(y[b].qs));
    const __m512i low = nibbles64(x[a].qs, x[b].qs);
    const __m512i q = _mm512_mask_add_epi8(low, fifth_bits(x[a].qh, x[b].qh), low, sixteen);
    const __m512i dot = dot_u8(q, qy);
    const __m512i sum = dot_u8(_mm512_set1_epi8(1), qy);
    const ScaleMin sm = pair_scales_mins(x[a].d, two ? x[b].d : 0, x[a].m, two ? x[b].m : 0, y[a].d,
                                         two ? y[b].d : 0);
    acc = _mm512_fmadd_ps(sm.d, _mm512_cvtepi32_ps(dot), acc);
    acc = _mm512_fmadd_ps(sm.m, _mm512_cvtepi32_ps(sum), acc);
  };
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) step(i, i + 1, true);
  if (i < nb) step(i, i, false);
  return hsum512(acc);
}

// Q8_0 x Q8_0: x . y as (x + 128) . y - 128 sum(y), x + 128 being x ^ 0x80 unsigned.
float dot_q8_0_q8_0(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ8_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const int64_t nb = n / 32;
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  __m512 acc = _mm512_setzero_ps();
  auto step = [&](int64_t a, int64_t b, bool two) {
    const __m512i qy = join(load256(y[a].qs), load256(y[b].qs));
    const __m512i qx = _mm512_xor_si512(join(load256(x[a].qs), load256(x[b].qs)), flip);
    const __m512 d = pair_scales(x[a].d, two ? x[b].d : 0, y[a].d, two ? y[b].d : 0);
    acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot_u8_minus(qx, qy, char(0x80))), acc);
  };
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) step(i, i + 1, true);
  if (i < nb) step(i, i, false);
  return hsum512(acc);
}

// ---- k-quants (256-element super-blocks), 64 elements per 512-bit register -----------

// The 2-bit fields of 32 bytes (elements 128h + 32k + l at bit 2k of byte l) as two
// registers of 64 elements each: k = 0, 1 and k = 2, 3.
struct Crumbs {
  __m512i k01, k23;
};
inline Crumbs crumbs(const uint8_t* qs) {
  const __m256i raw = load256(qs);
  const __m512i both = join(raw, _mm256_srli_epi16(raw, 2));
  const __m512i m3 = _mm512_set1_epi8(3);
  return {_mm512_and_si512(both, m3), _mm512_and_si512(_mm512_srli_epi16(both, 4), m3)};
}

// Q2_K x Q8_K: d dy sum_j sc_j (q_j . y_j) - dmin dy sum_j m_j bsum_j, 16-element groups.
float dot_q2_K_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ2_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const __m128i m4 = _mm_set1_epi8(0x0f);
  __m512 acc = _mm512_setzero_ps();
  __m256 acc_m = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const __m128i packed = load128(x[i].scales);
    const __m512i scales = _mm512_cvtepu8_epi32(_mm_and_si128(packed, m4));
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), m4));
    const __m256i msum = _mm256_madd_epi16(mins, load256(y[i].bsums));
    __m512i sumi = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const Crumbs q = crumbs(x[i].qs + 32 * h);
      sumi = add_scaled(sumi, dot_u8(q.k01, load512(y[i].qs + 128 * h)), scales, sel16(8 * h));
      sumi = add_scaled(sumi, dot_u8(q.k23, load512(y[i].qs + 128 * h + 64)), scales,
                        sel16(8 * h + 4));
    }
    acc = _mm512_fmadd_ps(_mm512_set1_ps(y[i].d * fp16(x[i].d)), _mm512_cvtepi32_ps(sumi), acc);
    acc_m =
        _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * fp16(x[i].dmin)), _mm256_cvtepi32_ps(msum), acc_m);
  }
  return hsum512(acc) - hsum(acc_m);
}

// Q3_K x Q8_K: d dy sum_j s_j ((q_j - 4) . y_j) = d dy (sum_j s_j (q_j . y_j) -
// 4 sum_j s_j bsum_j) with s_j = sc_j - 32 and q = low bits + 4 where the high bit is set.
float dot_q3_K_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ3_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const __m512i four = _mm512_set1_epi8(4);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const __m256i sc16 = _mm256_cvtepi8_epi16(q3_scales(x[i].scales));
    const __m512i scales = _mm512_cvtepu16_epi32(sc16);
    const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(sc16, load256(y[i].bsums)), 2);
    __m512i sumi = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(offset));
    const __m512i hmask = _mm512_broadcast_i64x4(load256(x[i].hmask));
    for (int h = 0; h < 2; ++h) {
      Crumbs q = crumbs(x[i].qs + 32 * h);
      // Element 128h + 32k + l has its high bit at bit 4h + k of hmask[l].
      const __m512i bit01 =
          join(_mm256_set1_epi8(char(1 << (4 * h))), _mm256_set1_epi8(char(1 << (4 * h + 1))));
      const __m512i bit23 =
          join(_mm256_set1_epi8(char(1 << (4 * h + 2))), _mm256_set1_epi8(char(1 << (4 * h + 3))));
      q.k01 = _mm512_mask_add_epi8(q.k01, _mm512_test_epi8_mask(hmask, bit01), q.k01, four);
      q.k23 = _mm512_mask_add_epi8(q.k23, _mm512_test_epi8_mask(hmask, bit23), q.k23, four);
      sumi = add_scaled(sumi, dot_u8(q.k01, load512(y[i].qs + 128 * h)), scales, sel16(8 * h));
      sumi = add_scaled(sumi, dot_u8(q.k23, load512(y[i].qs + 128 * h + 64)), scales,
                        sel16(8 * h + 4));
    }
    acc = _mm512_fmadd_ps(_mm512_set1_ps(y[i].d * fp16(x[i].d)), _mm512_cvtepi32_ps(sumi), acc);
  }
  return hsum512(acc);
}

// Q4_K/Q5_K per block: the min term's integer sum_j m_j (bsum_2j + bsum_2j+1) (8 int32)
// and the 8 scales as int32 lanes 0..7.
struct K4Block {
  __m512i scales;
  __m256i msum;
};
inline K4Block k4_block(const uint8_t* packed, const BlockQ8_K& y) {
  const __m128i sm = k4_scales_mins(packed);
  const __m128i mins = _mm_unpackhi_epi8(sm, sm);  // m0 m0 m1 m1 ... m7 m7
  return {_mm512_cvtepu8_epi32(sm),
          _mm256_madd_epi16(_mm256_cvtepu8_epi16(mins), load256(y.bsums))};
}

// The 64 nibbles of 32 bytes: low nibbles (32 elements), then high ones.
inline __m512i nibbles_k(const uint8_t* qs) {
  const __m256i raw = load256(qs);
  return _mm512_and_si512(join(raw, _mm256_srli_epi16(raw, 4)), _mm512_set1_epi8(0x0f));
}

// Q4_K x Q8_K: d dy sum_j sc_j (q_j . y_j) - dmin dy sum_j m_j sum(y_j), 32-element groups.
float dot_q4_K_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ4_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  __m512 acc = _mm512_setzero_ps();
  __m256 acc_m = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const K4Block kb = k4_block(x[i].scales, y[i]);
    __m512i sumi = _mm512_setzero_si512();
    for (int j = 0; j < 4; ++j) {
      const __m512i p = dot_u8(nibbles_k(x[i].qs + 32 * j), load512(y[i].qs + 64 * j));
      sumi = add_scaled(sumi, p, kb.scales, sel32(2 * j));
    }
    acc = _mm512_fmadd_ps(_mm512_set1_ps(y[i].d * fp16(x[i].d)), _mm512_cvtepi32_ps(sumi), acc);
    acc_m = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * fp16(x[i].dmin)), _mm256_cvtepi32_ps(kb.msum),
                            acc_m);
  }
  return hsum512(acc) - hsum(acc_m);
}

// Q5_K x Q8_K: as Q4_K with q = nibble + 16 where the fifth bit is set.
float dot_q5_K_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ5_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const __m512i sixteen = _mm512_set1_epi8(16);
  __m512 acc = _mm512_setzero_ps();
  __m256 acc_m = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const K4Block kb = k4_block(x[i].scales, y[i]);
    const __m512i qh = _mm512_broadcast_i64x4(load256(x[i].qh));
    __m512i sumi = _mm512_setzero_si512();
    for (int j = 0; j < 4; ++j) {
      // Element 64j + l has its fifth bit at bit 2j (l < 32) or 2j + 1 of qh[l % 32].
      const __m512i bits =
          join(_mm256_set1_epi8(char(1 << (2 * j))), _mm256_set1_epi8(char(1 << (2 * j + 1))));
      const __m512i low = nibbles_k(x[i].qs + 32 * j);
      const __m512i q = _mm512_mask_add_epi8(low, _mm512_test_epi8_mask(qh, bits), low, sixteen);
      sumi = add_scaled(sumi, dot_u8(q, load512(y[i].qs + 64 * j)), kb.scales, sel32(2 * j));
    }
    acc = _mm512_fmadd_ps(_mm512_set1_ps(y[i].d * fp16(x[i].d)), _mm512_cvtepi32_ps(sumi), acc);
    acc_m = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * fp16(x[i].dmin)), _mm256_cvtepi32_ps(kb.msum),
                            acc_m);
  }
  return hsum512(acc) - hsum(acc_m);
}

// Q6_K x Q8_K: d dy (sum_j sc_j (q_j . y_j) - 32 sum_j sc_j bsum_j), q in 0..63.
float dot_q6_K_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ6_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const __m512i m30 = _mm512_set1_epi8(0x30);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const __m256i sc16 = _mm256_cvtepi8_epi16(load128(x[i].scales));
    const __m512i scales = _mm512_cvtepu16_epi32(sc16);
    const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(sc16, load256(y[i].bsums)), 5);
    __m512i sumi = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(offset));
    for (int h = 0; h < 2; ++h) {
      // Elements 128h + 32k + l: low 4 bits in ql[64h + 32(k & 1) + l] (high nibble for
      // k >= 2), high 2 bits at bit 2k of qh[32h + l].
      const __m512i ql = load512(x[i].ql + 64 * h);
      const __m256i qh = load256(x[i].qh + 32 * h);
      const __m512i qh2 = join(qh, _mm256_srli_epi16(qh, 2));  // k = 0, 1 at bits 0-1, 4-5
      const __m512i q01 = _mm512_or_si512(_mm512_and_si512(ql, m4),
                                          _mm512_and_si512(_mm512_slli_epi16(qh2, 4), m30));
      const __m512i q23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                          _mm512_and_si512(qh2, m30));
      sumi = add_scaled(sumi, dot_u8(q01, load512(y[i].qs + 128 * h)), scales, sel16(8 * h));
      sumi =
          add_scaled(sumi, dot_u8(q23, load512(y[i].qs + 128 * h + 64)), scales, sel16(8 * h + 4));
    }
    acc = _mm512_fmadd_ps(_mm512_set1_ps(y[i].d * fp16(x[i].d)), _mm512_cvtepi32_ps(sumi), acc);
  }
  return hsum512(acc);
}

// ---- activation quantizers (bit-identical to src/quant) --------------------------------

// round(v), halves away from zero, exactly as std::round for |v| < 2^23.
inline __m512 round_half_away(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(v, t));  // exact
  const __mmask16 up = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 step = _mm512_or_ps(_mm512_and_ps(v, _mm512_set1_ps(-0.0f)), _mm512_set1_ps(1.0f));
  return _mm512_mask_add_ps(t, up, t, step);
}

// Quantizes 32 floats with d = max|x| / 127 into q (2 x 16 int32); returns d.
inline float q8_block(const float* x, __m512i* q) {
  const __m512 v0 = _mm512_loadu_ps(x);
  const __m512 v1 = _mm512_loadu_ps(x + 16);
  const float d = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1))) / 127;
  const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  q[0] = _mm512_cvtps_epi32(round_half_away(_mm512_mul_ps(v0, id)));
  q[1] = _mm512_cvtps_epi32(round_half_away(_mm512_mul_ps(v1, id)));
  return d;
}

inline void store_bytes(int8_t* p, const __m512i* q) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtsepi32_epi8(q[0]));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 16), _mm512_cvtsepi32_epi8(q[1]));
}

// Q8_0: d = max|x| / 127, q = round(x / d).
void quantize_q8_0(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(vy);
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    __m512i q[2];
    y[i].d = to_fp16(q8_block(x, q));
    store_bytes(y[i].qs, q);
  }
}

// Q8_1: as Q8_0, plus s = fp16(d * sum(q)).
void quantize_q8_1(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ8_1*>(vy);
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    __m512i q[2];
    const float d = q8_block(x, q);
    y[i].d = to_fp16(d);
    y[i].s = to_fp16(float(_mm512_reduce_add_epi32(_mm512_add_epi32(q[0], q[1]))) * d);
    store_bytes(y[i].qs, q);
  }
}

// Q8_K: d = v / -127 for v the first element of largest magnitude, q = nearest-even
// round(x / d) capped at 127, plus the sums of each 16 quants.
void quantize_q8_K(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ8_K*>(vy);
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    __m512 amax_v = _mm512_setzero_ps();
    for (int k = 0; k < QK_K; k += 16)
      amax_v = _mm512_max_ps(amax_v, _mm512_abs_ps(_mm512_loadu_ps(x + k)));
    const float amax = _mm512_reduce_max_ps(amax_v);
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    int first = 0;
    for (int k = 0; k < QK_K; k += 16) {
      const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + k)),
                                               _mm512_set1_ps(amax), _CMP_EQ_OQ);
      if (hit) {
        first = k + __builtin_ctz(unsigned(hit));
        break;
      }
    }
    const float iscale = -127.0f / x[first];
    const __m512 vs = _mm512_set1_ps(iscale);
    const __m512i cap = _mm512_set1_epi32(127);
    for (int g = 0; g < QK_K / 16; ++g) {
      const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + 16 * g), vs);
      const __m512i q = _mm512_min_epi32(
          _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), cap);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i].qs + 16 * g), _mm512_cvtsepi32_epi8(q));
      y[i].bsums[g] = int16_t(_mm512_reduce_add_epi32(q));
    }
    y[i].d = 1 / iscale;
  }
}

}  // namespace

// The 4-bit non-linear formats (quant_dot_iq4.cpp).
float dot_iq4_nl_q8_0(int64_t n, const void* x, const void* y);
float dot_iq4_xs_q8_K(int64_t n, const void* x, const void* y);

// Rows to float (dequant.cpp).
void to_float_q4_0(const void* x, float* y, int64_t n);
void to_float_q4_1(const void* x, float* y, int64_t n);
void to_float_q5_0(const void* x, float* y, int64_t n);
void to_float_q5_1(const void* x, float* y, int64_t n);
void to_float_q8_0(const void* x, float* y, int64_t n);
void to_float_iq4_nl(const void* x, float* y, int64_t n);

const QuantKernels kQuantKernels = {
    .isa = Isa::Avx512,
    .quantize_q8_0 = quantize_q8_0,
    .quantize_q8_1 = quantize_q8_1,
    .quantize_q8_K = quantize_q8_K,
    .dot_q4_0_q8_0 = dot_q4_0_q8_0,
    .dot_q4_1_q8_1 = dot_q4_1_q8_1,
    .dot_q5_0_q8_0 = dot_q5_0_q8_0,
    .dot_q5_1_q8_1 = dot_q5_1_q8_1,
    .dot_q8_0_q8_0 = dot_q8_0_q8_0,
    .dot_q2_K_q8_K = dot_q2_K_q8_K,
    .dot_q3_K_q8_K = dot_q3_K_q8_K,
    .dot_q4_K_q8_K = dot_q4_K_q8_K,
    .dot_q5_K_q8_K = dot_q5_K_q8_K,
    .dot_q6_K_q8_K = dot_q6_K_q8_K,
    .dot_iq2_xxs_q8_K = dot_iq2_xxs_q8_K,
    .dot_iq2_xs_q8_K = dot_iq2_xs_q8_K,
    .dot_iq2_s_q8_K = dot_iq2_s_q8_K,
    .dot_iq3_xxs_q8_K = dot_iq3_xxs_q8_K,  // quant_dot_iq3_iq1.cpp
    .dot_iq3_s_q8_K = dot_iq3_s_q8_K,
    .dot_iq1_s_q8_K = dot_iq1_s_q8_K,
    .dot_iq1_m_q8_K = dot_iq1_m_q8_K,
    .dot_iq4_nl_q8_0 = dot_iq4_nl_q8_0,
    .dot_iq4_xs_q8_K = dot_iq4_xs_q8_K,
    .dot_tq1_0_q8_K = dot_tq1_0_q8_K,
    .dot_tq2_0_q8_K = dot_tq2_0_q8_K,
    .to_float_q4_0 = to_float_q4_0,  // dequant.cpp
    .to_float_q4_1 = to_float_q4_1,
    .to_float_q5_0 = to_float_q5_0,
    .to_float_q5_1 = to_float_q5_1,
    .to_float_q8_0 = to_float_q8_0,
    .to_float_iq4_nl = to_float_iq4_nl,
};

}  // namespace tessera::cpu::avx512
