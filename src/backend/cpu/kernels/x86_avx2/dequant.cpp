// AVX2 rows to float of the block formats a KV cache may hold (Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, IQ4_NL), 8 elements a vector: the quants widened to int32 lanes, converted, then
// multiplied by the block's scale (and the minimum added, unfused), which is the
// reference's float(q) * d (+ m) to the bit. Q5's fifth bits are shifted into bit 4 of
// their lanes; IQ4_NL's nibbles index its 16 values with pshufb.
// Compiled with the level's target flags, reached through its kQuantKernels table.
#include "backend/cpu/kernels/x86_intrin.h"

#include <cstdint>

#include "backend/cpu/kernels/x86_common.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace tessera::cpu::avx2 {
namespace {

using x86::fp16;

inline __m128i load_bytes(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

inline uint32_t bits32(const uint8_t* qh) {
  return uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
}

// 16 int8 lanes q (as the block's values, offset and fifth bit applied) times d (+ m)
// into y[0, 16).
template <bool kMin>
inline void store16(float* y, __m128i q, __m256 d, __m256 m) {
  for (int h = 0; h < 2; ++h) {
    const __m128i part = h == 0 ? q : _mm_srli_si128(q, 8);
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(part)), d);
    if constexpr (kMin) v = _mm256_add_ps(v, m);
    _mm256_storeu_ps(y + 8 * h, v);
  }
}

// Bit j of `bits` (j < 16) as 0x10 in byte j.
inline __m128i fifth_bits(uint32_t bits) {
  // Byte j takes byte j / 8 of the 16 bits, then keeps its bit j % 8.
  const __m128i spread = _mm_shuffle_epi8(_mm_cvtsi32_si128(int(bits & 0xffff)),
                                          _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
  const __m128i select = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  const __m128i set = _mm_cmpeq_epi8(_mm_and_si128(spread, select), select);
  return _mm_and_si128(set, _mm_set1_epi8(0x10));
}

}  // namespace

void to_float_q8_0(const void* x, float* y, int64_t n) {
  const auto* b = static_cast<const quant::BlockQ8_0*>(x);
  for (int64_t i = 0; i < n / quant::QK8_0; ++i, y += quant::QK8_0) {
    const __m256 d = _mm256_set1_ps(fp16(b[i].d));
    store16<false>(y, load_bytes(b[i].qs), d, d);
    store16<false>(y + 16, load_bytes(b[i].qs + 16), d, d);
  }
}

// Q4 and Q5 (kFive): low nibbles are elements 0..15, high nibbles 16..31; the quant is
// the nibble (| fifth bit << 4) minus the format's offset.
template <typename Block, bool kMin, bool kFive>
void to_float_nibbles(const void* x, float* y, int64_t n) {
  const auto* b = static_cast<const Block*>(x);
  const __m128i low4 = _mm_set1_epi8(0x0f);
  const __m128i offset = _mm_set1_epi8(kMin ? 0 : (kFive ? 16 : 8));
  for (int64_t i = 0; i < n / 32; ++i, y += 32) {
    const __m256 d = _mm256_set1_ps(fp16(b[i].d));
    __m256 m = d;
    if constexpr (kMin) m = _mm256_set1_ps(fp16(b[i].m));
    const __m128i q = load_bytes(b[i].qs);
    __m128i lo = _mm_and_si128(q, low4);
    __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), low4);
    if constexpr (kFive) {
      const uint32_t high = bits32(b[i].qh);
      lo = _mm_or_si128(lo, fifth_bits(high));
      hi = _mm_or_si128(hi, fifth_bits(high >> 16));
    }
    // Values 0..31 minus 0, 8 or 16 fit a signed byte.
    store16<kMin>(y, _mm_sub_epi8(lo, offset), d, m);
    store16<kMin>(y + 16, _mm_sub_epi8(hi, offset), d, m);
  }
}

void to_float_q4_0(const void* x, float* y, int64_t n) { to_float_nibbles<quant::BlockQ4_0, false, false>(x, y, n); }
void to_float_q4_1(const void* x, float* y, int64_t n) { to_float_nibbles<quant::BlockQ4_1, true, false>(x, y, n); }
void to_float_q5_0(const void* x, float* y, int64_t n) { to_float_nibbles<quant::BlockQ5_0, false, true>(x, y, n); }
void to_float_q5_1(const void* x, float* y, int64_t n) { to_float_nibbles<quant::BlockQ5_1, true, true>(x, y, n); }

void to_float_iq4_nl(const void* x, float* y, int64_t n) {
  const auto* b = static_cast<const quant::BlockIQ4_NL*>(x);
  const __m128i table = load_bytes(quant::kIq4nlValues);
  const __m128i low4 = _mm_set1_epi8(0x0f);
  for (int64_t i = 0; i < n / quant::QK4_NL; ++i, y += quant::QK4_NL) {
    const __m256 d = _mm256_set1_ps(fp16(b[i].d));
    const __m128i q = load_bytes(b[i].qs);
    store16<false>(y, _mm_shuffle_epi8(table, _mm_and_si128(q, low4)), d, d);
    store16<false>(y + 16, _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(q, 4), low4)), d, d);
  }
}

}  // namespace tessera::cpu::avx2
