// AVX-512 rows to float of the block formats a KV cache may hold (Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, IQ4_NL), 16 elements a vector: the quants widened to int32 lanes, converted,
// then multiplied by the block's scale (and the minimum added, unfused), which is the
// reference's float(q) * d (+ m) to the bit. The fifth bits of Q5 set bit 4 of the lanes
// their mask selects; IQ4_NL's nibbles index its 16 values with vpshufb.
// Compiled with the level's target flags, reached through its kQuantKernels table.
#include "backend/cpu/kernels/x86_intrin.h"

#include <cstdint>

#include "backend/cpu/kernels/x86_common.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace tessera::cpu::avx512 {
namespace {

using x86::fp16;

// Bytes qs[0, 16) as int32 lanes: their low nibbles (lo) and high nibbles (hi).
inline void nibbles(const uint8_t* qs, __m512i* lo, __m512i* hi) {
  const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  *lo = _mm512_and_si512(b, _mm512_set1_epi32(0x0f));
  *hi = _mm512_srli_epi32(b, 4);
}

inline uint32_t bits32(const uint8_t* qh) {
  return uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
}

// q * d, then + m where the format has a minimum (a separate add, as the reference).
template <bool kMin>
inline void store(float* y, __m512i q, __m512 d, __m512 m) {
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(q), d);
  if constexpr (kMin) v = _mm512_add_ps(v, m);
  _mm512_storeu_ps(y, v);
}

}  // namespace

void to_float_q8_0(const void* x, float* y, int64_t n) {
  const auto* b = static_cast<const quant::BlockQ8_0*>(x);
  for (int64_t i = 0; i < n / quant::QK8_0; ++i, y += quant::QK8_0) {
    const __m512 d = _mm512_set1_ps(fp16(b[i].d));
    for (int h = 0; h < 2; ++h) {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs + 16 * h));
      store<false>(y + 16 * h, _mm512_cvtepi8_epi32(q), d, d);
    }
  }
}

template <typename Block, bool kMin>
void to_float_q4(const void* x, float* y, int64_t n) {
  const auto* b = static_cast<const Block*>(x);
  const __m512i offset = _mm512_set1_epi32(kMin ? 0 : 8);
  for (int64_t i = 0; i < n / 32; ++i, y += 32) {
    const __m512 d = _mm512_set1_ps(fp16(b[i].d));
    __m512 m = d;
    if constexpr (kMin) m = _mm512_set1_ps(fp16(b[i].m));
    __m512i lo, hi;
    nibbles(b[i].qs, &lo, &hi);
    store<kMin>(y, _mm512_sub_epi32(lo, offset), d, m);
    store<kMin>(y + 16, _mm512_sub_epi32(hi, offset), d, m);
  }
}

template <typename Block, bool kMin>
void to_float_q5(const void* x, float* y, int64_t n) {
  const auto* b = static_cast<const Block*>(x);
  const __m512i offset = _mm512_set1_epi32(kMin ? 0 : 16);
  const __m512i bit4 = _mm512_set1_epi32(16);
  for (int64_t i = 0; i < n / 32; ++i, y += 32) {
    const __m512 d = _mm512_set1_ps(fp16(b[i].d));
    __m512 m = d;
    if constexpr (kMin) m = _mm512_set1_ps(fp16(b[i].m));
    const uint32_t high = bits32(b[i].qh);
    __m512i lo, hi;
    nibbles(b[i].qs, &lo, &hi);
    lo = _mm512_mask_or_epi32(lo, __mmask16(high & 0xffff), lo, bit4);
    hi = _mm512_mask_or_epi32(hi, __mmask16(high >> 16), hi, bit4);
    store<kMin>(y, _mm512_sub_epi32(lo, offset), d, m);
    store<kMin>(y + 16, _mm512_sub_epi32(hi, offset), d, m);
  }
}

void to_float_q4_0(const void* x, float* y, int64_t n) { to_float_q4<quant::BlockQ4_0, false>(x, y, n); }
void to_float_q4_1(const void* x, float* y, int64_t n) { to_float_q4<quant::BlockQ4_1, true>(x, y, n); }
void to_float_q5_0(const void* x, float* y, int64_t n) { to_float_q5<quant::BlockQ5_0, false>(x, y, n); }
void to_float_q5_1(const void* x, float* y, int64_t n) { to_float_q5<quant::BlockQ5_1, true>(x, y, n); }

void to_float_iq4_nl(const void* x, float* y, int64_t n) {
  const auto* b = static_cast<const quant::BlockIQ4_NL*>(x);
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIq4nlValues));
  const __m128i low4 = _mm_set1_epi8(0x0f);
  for (int64_t i = 0; i < n / quant::QK4_NL; ++i, y += quant::QK4_NL) {
    const __m512 d = _mm512_set1_ps(fp16(b[i].d));
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
    const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(q, low4));
    const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(q, 4), low4));
    store<false>(y, _mm512_cvtepi8_epi32(lo), d, d);
    store<false>(y + 16, _mm512_cvtepi8_epi32(hi), d, d);
  }
}

}  // namespace tessera::cpu::avx512
