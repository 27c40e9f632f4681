// AVX2 (+ FMA, F16C) quantized kernels: integer dot products with maddubs/madd (unsigned
// weight bytes times signed activation bytes, pairs summed into int16, then int32), one
// float scale per block, and the Q8 activation quantizers. Compiled with per-file
// target flags and reached only through quant_dispatch.cpp after a cpuid check; all
// helpers have internal linkage so no AVX2 code leaks into a shared (COMDAT) symbol.
//
// Exactness of the integer parts: maddubs saturates int16 only beyond 32767, and every
// pair here stays below (largest: Q8_0 weights, 2 * 128 * 127 = 32512), given partner
// quants in [-127, 127].
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels/quant_dot_iq2.h"
#include "backend/cpu/kernels/quant_dot_iq3_iq1.h"
#include "backend/cpu/kernels/quant_dot_tq.h"
#include "backend/cpu/kernels/x86_common.h"
#include "backend/cpu/quant_kernels.h"
#include "quant/blocks.h"

namespace tessera::cpu::avx2 {
namespace {

using x86::fp16;
using x86::halves;
using x86::hmax;
using x86::hsum;
using x86::hsum_i32;
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

// The scales of two blocks, dx_a dy_a and dx_b dy_b, each broadcast, from their fp16
// fields: one conversion for all four (the scalar work runs on integer ports).
struct PairScales {
  __m256 a, b;
};
inline PairScales pair_scales(uint16_t xa, uint16_t xb, uint16_t ya, uint16_t yb) {
  const __m128 f = _mm_cvtph_ps(_mm_cvtsi64_si128(int64_t(halves(xa, xb, ya, yb))));
  const __m128 p = _mm_mul_ps(f, _mm_movehl_ps(f, f));
  return {_mm256_broadcastss_ps(p), _mm256_broadcastss_ps(_mm_movehdup_ps(p))};
}

// For formats with a min: scales (dx dy) and mins (mx dy) of two blocks, broadcast.
struct PairScalesMins {
  __m256 da, db, ma, mb;
};
inline PairScalesMins pair_scales_mins(uint16_t dxa, uint16_t dxb, uint16_t mxa, uint16_t mxb,
                                       uint16_t dya, uint16_t dyb) {
  const __m128i h =
      _mm_set_epi64x(int64_t(halves(dya, dyb, dya, dyb)), int64_t(halves(dxa, dxb, mxa, mxb)));
  const __m256 f = _mm256_cvtph_ps(h);  // dxa dxb mxa mxb | dya dyb dya dyb
  const __m128 p = _mm_mul_ps(_mm256_castps256_ps128(f), _mm256_extractf128_ps(f, 1));
  const __m128 odd = _mm_movehdup_ps(p);
  return {_mm256_broadcastss_ps(p), _mm256_broadcastss_ps(odd),
          _mm256_broadcastss_ps(_mm_movehl_ps(p, p)),
          _mm256_broadcastss_ps(_mm_movehl_ps(odd, odd))};
}

// The 32 nibbles of 16 bytes: low nibbles (elements 0..15), then high ones (16..31).
inline __m256i nibbles32(const uint8_t* p) {
  const __m128i raw = load128(p);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0f));
}

// 0xff in byte j where bit j of the little-endian uint32 at p is set, else 0.
inline __m256i bits_to_bytes(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(int(bits)), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                      0x0101010101010101, 0x0000000000000000));
  const __m256i probe = _mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  return _mm256_cmpeq_epi8(probe, _mm256_set1_epi64x(-1));
}

// Sums of 4 consecutive products of unsigned x and signed y bytes, as 8 int32.
inline __m256i dot_u8(__m256i x, __m256i y) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
}

// The same for signed x: |x| times y with x's sign.
inline __m256i dot_s8(__m256i x, __m256i y) {
  return dot_u8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

// Sums of 4 consecutive signed bytes, as 8 int32.
inline __m256i sum_s8(__m256i y) { return dot_u8(_mm256_set1_epi8(1), y); }

// Int16 scale i broadcast over a 256-bit register of 8 int16 scales held in each lane.
inline __m256i broadcast_scale(__m256i scales, int i) {
  return _mm256_shuffle_epi8(scales, _mm256_set1_epi16(short((2 * i + 1) << 8 | (2 * i))));
}

// Scale 2i in the low lane and 2i + 1 in the high lane, of 8 int16 scales in each lane.
inline __m256i lane_scales(__m256i scales, int i) {
  const __m128i lo = _mm_set1_epi16(short((4 * i + 1) << 8 | (4 * i)));
  const __m128i hi = _mm_set1_epi16(short((4 * i + 3) << 8 | (4 * i + 2)));
  return _mm256_shuffle_epi8(scales, _mm256_set_m128i(hi, lo));
}

// ---- legacy formats (32-element blocks), two blocks per iteration ----------------------

// Q4_0 x Q8_0: (q - 8) . y per block, scaled by dx * dy.
float dot_q4_0_q8_0(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ4_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const int64_t nb = n / 32;
  const __m256i eight = _mm256_set1_epi8(8);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  auto block = [&](int64_t i, __m256 d, __m256& a) {
    const __m256i qx = _mm256_sub_epi8(nibbles32(x[i].qs), eight);
    a = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_s8(qx, load256(y[i].qs))), a);
  };
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    const PairScales d = pair_scales(x[i].d, x[i + 1].d, y[i].d, y[i + 1].d);
    block(i, d.a, acc[0]);
    block(i + 1, d.b, acc[1]);
  }
  if (i < nb) block(i, pair_scales(x[i].d, 0, y[i].d, 0).a, acc[0]);
  return hsum(_mm256_add_ps(acc[0], acc[1]));
}

// Q4_1 x Q8_1: dx dy (q . y) + mx dy sum(y), with the exact integer sum(y).
float dot_q4_1_q8_1(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ4_1*>(vx);
  const auto* y = static_cast<const BlockQ8_1*>(vy);
  const int64_t nb = n / 32;
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  auto block = [&](int64_t i, __m256 d, __m256 m, __m256& a) {
    const __m256i qy = load256(y[i].qs);
    const __m256i dot = dot_u8(nibbles32(x[i].qs), qy);
    a = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot), a);
    a = _mm256_fmadd_ps(m, _mm256_cvtepi32_ps(sum_s8(qy)), a);
  };
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    const PairScalesMins s =
        pair_scales_mins(x[i].d, x[i + 1].d, x[i].m, x[i + 1].m, y[i].d, y[i + 1].d);
    block(i, s.da, s.ma, acc[0]);
    block(i + 1, s.db, s.mb, acc[1]);
  }
  if (i < nb) {
    const PairScalesMins s = pair_scales_mins(x[i].d, 0, x[i].m, 0, y[i].d, 0);
    block(i, s.da, s.ma, acc[0]);
  }
  return hsum(_mm256_add_ps(acc[0], acc[1]));
}

// Q5_0 x Q8_0: (q - 16) . y; a clear fifth bit makes the nibble q | 0xf0 = q - 16.
float dot_q5_0_q8_0(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ5_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const int64_t nb = n / 32;
  const __m256i high = _mm256_set1_epi8(char(0xf0));
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  auto block = [&](int64_t i, __m256 d, __m256& a) {
    const __m256i clear = _mm256_andnot_si256(bits_to_bytes(x[i].qh), high);
    const __m256i qx = _mm256_or_si256(nibbles32(x[i].qs), clear);
    a = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_s8(qx, load256(y[i].qs))), a);
  };
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    const PairScales d = pair_scales(x[i].d, x[i + 1].d, y[i].d, y[i + 1].d);
    block(i, d.a, acc[0]);
    block(i + 1, d.b, acc[1]);
  }
  if (i < nb) block(i, pair_scales(x[i].d, 0, y[i].d, 0).a, acc[0]);
  return hsum(_mm256_add_ps(acc[0], acc[1]));
}

// Q5_1 x Q8_1: dx dy (q . y) + mx dy sum(y), q = nibble | fifth bit << 4.
float dot_q5_1_q8_1(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ5_1*>(vx);
  const auto* y = static_cast<const BlockQ8_1*>(vy);
  const int64_t nb = n / 32;
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  auto block = [&](int64_t i, __m256 d, __m256 m, __m256& a) {
    const __m256i qy = load256(y[i].qs);
    const __m256i qx =
        _mm256_or_si256(nibbles32(x[i].qs), _mm256_and_si256(bits_to_bytes(x[i].qh), bit4));
    a = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_u8(qx, qy)), a);
    a = _mm256_fmadd_ps(m, _mm256_cvtepi32_ps(sum_s8(qy)), a);
  };
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    const PairScalesMins s =
        pair_scales_mins(x[i].d, x[i + 1].d, x[i].m, x[i + 1].m, y[i].d, y[i + 1].d);
    block(i, s.da, s.ma, acc[0]);
    block(i + 1, s.db, s.mb, acc[1]);
  }
  if (i < nb) {
    const PairScalesMins s = pair_scales_mins(x[i].d, 0, x[i].m, 0, y[i].d, 0);
    block(i, s.da, s.ma, acc[0]);
  }
  return hsum(_mm256_add_ps(acc[0], acc[1]));
}

// Q8_0 x Q8_0: signed x . signed y per block.
float dot_q8_0_q8_0(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ8_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const int64_t nb = n / 32;
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  auto block = [&](int64_t i, __m256 d, __m256& a) {
    a = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_s8(load256(x[i].qs), load256(y[i].qs))), a);
  };
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    const PairScales d = pair_scales(x[i].d, x[i + 1].d, y[i].d, y[i + 1].d);
    block(i, d.a, acc[0]);
    block(i + 1, d.b, acc[1]);
  }
  if (i < nb) block(i, pair_scales(x[i].d, 0, y[i].d, 0).a, acc[0]);
  return hsum(_mm256_add_ps(acc[0], acc[1]));
}

// ---- k-quants (256-element super-blocks) -----------------------------------------------

// Q2_K x Q8_K: d dy sum_j sc_j (q_j . y_j) - dmin dy sum_j m_j bsum_j, 16-element groups.
float dot_q2_K_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ2_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = y[i].d * fp16(x[i].d);
    const float dmin = -y[i].d * fp16(x[i].dmin);
    const __m128i packed = load128(x[i].scales);
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), m4));
    const __m256i msum = _mm256_madd_epi16(mins, load256(y[i].bsums));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(msum), acc);
    const __m256i all = _mm256_cvtepu8_epi16(_mm_and_si128(packed, m4));
    const __m256i scales[2] = {_mm256_permute2x128_si256(all, all, 0x00),
                               _mm256_permute2x128_si256(all, all, 0x11)};
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i bits = load256(x[i].qs + 32 * h);
      const int8_t* q8 = y[i].qs + 128 * h;
      for (int k = 0; k < 4; ++k) {
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * k), m3);
        const __m256i p = _mm256_maddubs_epi16(q, load256(q8 + 32 * k));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(lane_scales(scales[h], k), p));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
  }
  return hsum(acc);
}

// Q3_K x Q8_K: d dy sum_j (sc_j - 32) ((q_j - 4) . y_j); the "- 4" where the high bit is
// clear is a second maddubs subtracted in int16.
float dot_q3_K_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ3_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const __m256i m3 = _mm256_set1_epi8(3);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = y[i].d * fp16(x[i].d);
    const __m256i all = _mm256_cvtepi8_epi16(q3_scales(x[i].scales));
    const __m256i scales[2] = {_mm256_permute2x128_si256(all, all, 0x00),
                               _mm256_permute2x128_si256(all, all, 0x11)};
    const __m256i hbits = load256(x[i].hmask);
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i bits = load256(x[i].qs + 32 * h);
      const int8_t* q8 = y[i].qs + 128 * h;
      for (int k = 0; k < 4; ++k) {
        const int bit = 4 * h + k;
        const __m256i low = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * k), m3);
        const __m256i clear = _mm256_andnot_si256(hbits, _mm256_set1_epi8(char(1 << bit)));
        const __m256i minus4 = _mm256_slli_epi16(_mm256_srli_epi16(clear, bit), 2);
        const __m256i qy = load256(q8 + 32 * k);
        const __m256i p =
            _mm256_sub_epi16(_mm256_maddubs_epi16(low, qy), _mm256_maddubs_epi16(minus4, qy));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(lane_scales(scales[h], k), p));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
  }
  return hsum(acc);
}

// Shared by Q4_K and Q5_K: the min term -dmin dy sum_j m_j (bsum_2j + bsum_2j+1), and the
// 8 scales as int16 in both lanes.
struct K4Scales {
  __m256i scales;
  __m128 min_term;  // 4 partial sums
};
inline K4Scales k4_setup(const uint8_t* packed, const BlockQ8_K& y, float dmin) {
  const __m256i sm = _mm256_cvtepu8_epi16(k4_scales_mins(packed));
  const __m256i bsums = load256(y.bsums);
  const __m128i pair_sums =
      _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
  const __m128i prod = _mm_madd_epi16(_mm256_extracti128_si256(sm, 1), pair_sums);
  return {_mm256_permute2x128_si256(sm, sm, 0x00),
          _mm_mul_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod))};
}

// Q4_K x Q8_K: d dy sum_j sc_j (q_j . y_j) - dmin dy sum_j m_j sum(y_j), 32-element groups.
float dot_q4_K_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ4_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  __m256 acc = _mm256_setzero_ps();
  __m128 acc_m = _mm_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = y[i].d * fp16(x[i].d);
    const K4Scales s = k4_setup(x[i].scales, y[i], y[i].d * fp16(x[i].dmin));
    acc_m = _mm_add_ps(acc_m, s.min_term);
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i bits = load256(x[i].qs + 32 * j);
      const int8_t* q8 = y[i].qs + 64 * j;
      const __m256i lo = _mm256_maddubs_epi16(_mm256_and_si256(bits, m4), load256(q8));
      const __m256i hi =
          _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), load256(q8 + 32));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(broadcast_scale(s.scales, 2 * j), lo));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(broadcast_scale(s.scales, 2 * j + 1), hi));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
  }
  acc_m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
  acc_m = _mm_add_ss(acc_m, _mm_movehdup_ps(acc_m));
  return hsum(acc) - _mm_cvtss_f32(acc_m);
}

// Q5_K x Q8_K: as Q4_K with q = nibble | fifth bit << 4.
float dot_q5_K_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ5_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  __m256 acc = _mm256_setzero_ps();
  __m128 acc_m = _mm_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = y[i].d * fp16(x[i].d);
    const K4Scales s = k4_setup(x[i].scales, y[i], y[i].d * fp16(x[i].dmin));
    acc_m = _mm_add_ps(acc_m, s.min_term);
    const __m256i hbits = load256(x[i].qh);
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i bits = load256(x[i].qs + 32 * j);
      const int8_t* q8 = y[i].qs + 64 * j;
      const int b0 = 2 * j;
      const int b1 = 2 * j + 1;
      const __m256i h0 = _mm256_slli_epi16(
          _mm256_srli_epi16(_mm256_and_si256(hbits, _mm256_set1_epi8(char(1 << b0))), b0), 4);
      const __m256i h1 = _mm256_slli_epi16(
          _mm256_srli_epi16(_mm256_and_si256(hbits, _mm256_set1_epi8(char(1 << b1))), b1), 4);
      const __m256i q0 = _mm256_or_si256(_mm256_and_si256(bits, m4), h0);
      const __m256i q1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), h1);
      const __m256i lo = _mm256_maddubs_epi16(q0, load256(q8));
      const __m256i hi = _mm256_maddubs_epi16(q1, load256(q8 + 32));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(broadcast_scale(s.scales, b0), lo));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(broadcast_scale(s.scales, b1), hi));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
  }
  acc_m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
  acc_m = _mm_add_ss(acc_m, _mm_movehdup_ps(acc_m));
  return hsum(acc) - _mm_cvtss_f32(acc_m);
}

// Q6_K x Q8_K: d dy sum_j sc_j ((q_j - 32) . y_j); q . y and 32 . y are two maddubs.
float dot_q6_K_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ6_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i m2 = _mm256_set1_epi8(3);
  const __m256i m32 = _mm256_set1_epi8(32);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = y[i].d * fp16(x[i].d);
    const __m128i scales = load128(x[i].scales);
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load256(x[i].ql + 64 * h);
      const __m256i ql1 = load256(x[i].ql + 64 * h + 32);
      const __m256i qh = load256(x[i].qh + 32 * h);
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(ql0, m4),
                          _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4)),
          _mm256_or_si256(_mm256_and_si256(ql1, m4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4)),
      };
      for (int k = 0; k < 4; ++k) {
        const __m256i qy = load256(y[i].qs + 128 * h + 32 * k);
        const __m256i p =
            _mm256_sub_epi16(_mm256_maddubs_epi16(q[k], qy), _mm256_maddubs_epi16(m32, qy));
        // Sub-blocks 8h + 2k (low lane) and 8h + 2k + 1 (high lane).
        const int s = 8 * h + 2 * k;
        const __m128i pick =
            _mm_set_epi64x(0x0101010101010101LL * (s + 1), 0x0101010101010101LL * s);
        const __m256i sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, pick));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(sc, p));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
  }
  return hsum(acc);
}

// ---- activation quantizers (bit-identical to src/quant) --------------------------------

// round(v), halves away from zero, exactly as std::round for |v| < 2^23.
inline __m256 round_half_away(__m256 v) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_andnot_ps(sign_bit, _mm256_sub_ps(v, t));  // exact
  const __m256 step = _mm256_or_ps(_mm256_and_ps(v, sign_bit), _mm256_set1_ps(1.0f));
  const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm256_add_ps(t, _mm256_and_ps(up, step));
}

// 32 int32 in 4 registers to 32 bytes in order (saturating, values fit).
inline __m256i pack_bytes(const __m256i* q) {
  const __m256i a = _mm256_packs_epi32(q[0], q[1]);
  const __m256i b = _mm256_packs_epi32(q[2], q[3]);
  return _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, b),
                                     _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Quantizes 32 floats with d = max|x| / 127 into q (4 x 8 int32); returns d.
inline float q8_block(const float* x, __m256i* q) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_loadu_ps(x + 8 * k);
    amax = _mm256_max_ps(amax, _mm256_and_ps(v[k], abs_mask));
  }
  const float d = hmax(amax) / 127;
  const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  for (int k = 0; k < 4; ++k) q[k] = _mm256_cvtps_epi32(round_half_away(_mm256_mul_ps(v[k], id)));
  return d;
}

// Q8_0: d = max|x| / 127, q = round(x / d).
void quantize_q8_0(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(vy);
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    __m256i q[4];
    y[i].d = to_fp16(q8_block(x, q));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs), pack_bytes(q));
  }
}

// Q8_1: as Q8_0, plus s = fp16(d * sum(q)).
void quantize_q8_1(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ8_1*>(vy);
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    __m256i q[4];
    const float d = q8_block(x, q);
    y[i].d = to_fp16(d);
    const int sum =
        hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    y[i].s = to_fp16(float(sum) * d);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs), pack_bytes(q));
  }
}

// Q8_K: d = v / -127 for v the first element of largest magnitude, q = nearest-even
// round(x / d) capped at 127, plus the sums of each 16 quants.
void quantize_q8_K(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ8_K*>(vy);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    __m256 amax_v = _mm256_setzero_ps();
    for (int k = 0; k < QK_K; k += 8) {
      amax_v = _mm256_max_ps(amax_v, _mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask));
    }
    const float amax = hmax(amax_v);
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    int first = 0;
    for (int k = 0; k < QK_K; k += 8) {
      const __m256 hit = _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask),
                                       _mm256_set1_ps(amax), _CMP_EQ_OQ);
      const int mask = _mm256_movemask_ps(hit);
      if (mask) {
        first = k + __builtin_ctz(unsigned(mask));
        break;
      }
    }
    const float iscale = -127.0f / x[first];
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i cap = _mm256_set1_epi32(127);
    for (int g = 0; g < QK_K / 32; ++g) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + 32 * g + 8 * k), vs);
        q[k] = _mm256_min_epi32(
            _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)),
            cap);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs + 32 * g), pack_bytes(q));
      y[i].bsums[2 * g] = int16_t(hsum_i32(_mm256_add_epi32(q[0], q[1])));
      y[i].bsums[2 * g + 1] = int16_t(hsum_i32(_mm256_add_epi32(q[2], q[3])));
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
    .isa = Isa::Avx2,
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

}  // namespace tessera::cpu::avx2
