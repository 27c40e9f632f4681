// AVX-512 (F, BW, VNNI) dot products of the ternary weights (TQ1_0, TQ2_0) with Q8_K
// activations, the same integer sums as the AVX2 level (x86_avx2/quant_dot_tq.cpp says
// how the trits are read): sum_e (t_e + 1) y_e less the bsums, one float scale per block
// added in the reference's order, so results are bit-identical to it. 32 elements per
// register for TQ1_0 (16-bit lanes, vpdpwssd), 64 for TQ2_0 (vpdpbusd).
#include "backend/cpu/kernels/x86_intrin.h"

#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels/quant_dot_tq.h"
#include "backend/cpu/kernels/x86_common.h"
#include "quant/blocks.h"

namespace tessera::cpu::avx512 {
namespace {

using x86::fp16;
using x86::load128;
using x86::load256;

using quant::BlockQ8_K;
using quant::BlockTQ1_0;
using quant::BlockTQ2_0;
using quant::QK_K;

// acc + sum (stored trit) * y over 32 elements: q holds the packed bytes in 16-bit lanes,
// mul each lane's 3^k << 8, y the 32 activation quants.
inline __m512i trit_dot(__m512i acc, __m512i q, __m512i mul, const int8_t* y) {
  const __m512i t = _mm512_mulhi_epu16(_mm512_mullo_epi16(q, mul), _mm512_set1_epi16(3));
  return _mm512_dpwssd_epi32(acc, t, _mm512_cvtepi8_epi16(load256(y)));
}

// Each 16-bit lane's multiplier 3^k << 8, lanes 0..15 then 16..31.
inline __m512i pow3_lanes(int lo, int hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16(int16_t(lo << 8))),
                            _mm256_set1_epi16(int16_t(hi << 8)), 1);
}

// sum_e y_e of a Q8_K block from its bsums.
inline int bsum(const BlockQ8_K& b) {
  return _mm512_reduce_add_epi32(_mm512_cvtepi16_epi32(load256(b.bsums)));
}

}  // namespace

float dot_tq1_0_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockTQ1_0*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = n / QK_K;
  // The two narrow runs' trit pairs (0, 1) and (2, 3), and trit 4 next to qh, whose lane
  // 16 + 4 k + j reads qh[j] with 3^k.
  const __m512i mul01 = pow3_lanes(1, 3);
  const __m512i mul23 = pow3_lanes(9, 27);
  const __m512i mul4h = _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_set1_epi16(int16_t(81 << 8))),
      _mm256_setr_epi16(1 << 8, 1 << 8, 1 << 8, 1 << 8, 3 << 8, 3 << 8, 3 << 8, 3 << 8, 9 << 8,
                        9 << 8, 9 << 8, 9 << 8, 27 << 8, 27 << 8, 27 << 8, 27 << 8),
      1);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* qs = a[i].qs;
    const int8_t* q8 = b[i].qs;
    __m512i acc = _mm512_setzero_si512();
    // Bytes 0..31: trit k of byte m is element 32 k + m.
    const __m512i wide = _mm512_cvtepu8_epi16(load256(qs));
    int pow3 = 1;
    for (int k = 0; k < 5; ++k, pow3 *= 3) {
      acc = trit_dot(acc, wide, _mm512_set1_epi16(int16_t(pow3 << 8)), q8 + 32 * k);
    }
    // Bytes 32..47 twice: trit k of byte 32 + m is element 160 + 16 k + m, so trits k and
    // k + 1 cover 32 consecutive elements.
    const __m128i narrow = load128(qs + 32);
    const __m512i twice = _mm512_cvtepu8_epi16(_mm256_broadcastsi128_si256(narrow));
    acc = trit_dot(acc, twice, mul01, q8 + 160);
    acc = trit_dot(acc, twice, mul23, q8 + 192);
    // Trit 4 of bytes 32..47 (elements 224..239), then qh: trit k of qh[j] is element
    // 240 + 4 k + j.
    int32_t qh;
    std::memcpy(&qh, a[i].qh, 4);
    const __m512i last =
        _mm512_cvtepu8_epi16(_mm256_inserti128_si256(_mm256_castsi128_si256(narrow), _mm_set1_epi32(qh), 1));
    acc = trit_dot(acc, last, mul4h, q8 + 224);
    const int isum = _mm512_reduce_add_epi32(acc) - bsum(b[i]);
    sum += float(isum) * (fp16(a[i].d) * b[i].d);
  }
  return sum;
}

float dot_tq2_0_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockTQ2_0*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = n / QK_K;
  const __m512i mask = _mm512_set1_epi8(3);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    // All 64 bytes: bits 2 l of byte 32 h + m is element 128 h + 32 l + m, so the low and
    // high halves of the register pair with activations 32 l and 128 + 32 l.
    const __m512i v = _mm512_loadu_si512(a[i].qs);
    const int8_t* q8 = b[i].qs;
    __m512i acc = _mm512_setzero_si512();
    for (int l = 0; l < 4; ++l) {
      const __m512i t = _mm512_and_si512(_mm512_srli_epi16(v, unsigned(2 * l)), mask);
      const __m512i y8 =
          _mm512_inserti64x4(_mm512_castsi256_si512(load256(q8 + 32 * l)), load256(q8 + 128 + 32 * l), 1);
      acc = _mm512_dpbusd_epi32(acc, t, y8);
    }
    const int isum = _mm512_reduce_add_epi32(acc) - bsum(b[i]);
    sum += float(isum) * (fp16(a[i].d) * b[i].d);
  }
  return sum;
}

}  // namespace tessera::cpu::avx512
