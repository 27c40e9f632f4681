// AVX2 dot products of the ternary weights (TQ1_0, TQ2_0) with Q8_K activations: the
// integer sum sum_e (t_e + 1) y_e of the stored trits, less sum_e y_e (the Q8_K bsums),
// which is the reference's sum_e t_e y_e exactly; one float scale per block, added in the
// reference's order, so the results are bit-identical to it.
//
// TQ1_0's trit k of a byte b is ((b * 3^k mod 256) * 3) >> 8 (blocks.h). In 16-bit lanes
// holding b, one vpmullw by 3^k << 8 leaves (b * 3^k mod 256) << 8 and one vpmulhuw by 3
// takes ((...) * 3) >> 8: every byte value decodes exactly as the reference does.
// TQ2_0's trits are 2-bit fields: shift, mask, vpmaddubsw.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels/quant_dot_tq.h"
#include "backend/cpu/kernels/x86_common.h"
#include "quant/blocks.h"

namespace tessera::cpu::avx2 {
namespace {

using x86::fp16;
using x86::hsum_i32;
using x86::load128;
using x86::load256;

using quant::BlockQ8_K;
using quant::BlockTQ1_0;
using quant::BlockTQ2_0;
using quant::QK_K;

// sum (stored trit) * y over 16 elements: q holds the 16 packed bytes in 16-bit lanes,
// mul each lane's 3^k << 8, y points at the 16 activation quants.
inline __m256i trit_madd(__m256i q, __m256i mul, const int8_t* y) {
  const __m256i t = _mm256_mulhi_epu16(_mm256_mullo_epi16(q, mul), _mm256_set1_epi16(3));
  return _mm256_madd_epi16(t, _mm256_cvtepi8_epi16(load128(y)));
}

// sum_e y_e of a Q8_K block from its bsums.
inline __m256i bsums_i32(const BlockQ8_K& b) {
  return _mm256_madd_epi16(load256(b.bsums), _mm256_set1_epi16(1));
}

}  // namespace

float dot_tq1_0_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockTQ1_0*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = n / QK_K;
  // Lane 4 k + j of the qh group reads qh[j] (the byte broadcast four times) with 3^k.
  const __m256i qh_mul = _mm256_setr_epi16(1 << 8, 1 << 8, 1 << 8, 1 << 8, 3 << 8, 3 << 8, 3 << 8,
                                           3 << 8, 9 << 8, 9 << 8, 9 << 8, 9 << 8, 27 << 8,
                                           27 << 8, 27 << 8, 27 << 8);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* qs = a[i].qs;
    const int8_t* q8 = b[i].qs;
    __m256i acc = _mm256_setzero_si256();
    // Bytes 0..31: trit k of byte m is element 32 k + m.
    const __m256i w0 = _mm256_cvtepu8_epi16(load128(qs));
    const __m256i w1 = _mm256_cvtepu8_epi16(load128(qs + 16));
    // Bytes 32..47: trit k of byte 32 + m is element 160 + 16 k + m.
    const __m256i w2 = _mm256_cvtepu8_epi16(load128(qs + 32));
    int pow3 = 1;
    for (int k = 0; k < 5; ++k, pow3 *= 3) {
      const __m256i mul = _mm256_set1_epi16(int16_t(pow3 << 8));
      acc = _mm256_add_epi32(acc, trit_madd(w0, mul, q8 + 32 * k));
      acc = _mm256_add_epi32(acc, trit_madd(w1, mul, q8 + 32 * k + 16));
      acc = _mm256_add_epi32(acc, trit_madd(w2, mul, q8 + 160 + 16 * k));
    }
    // qh: trit k of qh[j] is element 240 + 4 k + j.
    int32_t qh;
    std::memcpy(&qh, a[i].qh, 4);
    acc = _mm256_add_epi32(acc, trit_madd(_mm256_cvtepu8_epi16(_mm_set1_epi32(qh)), qh_mul, q8 + 240));
    const int isum = hsum_i32(_mm256_sub_epi32(acc, bsums_i32(b[i])));
    sum += float(isum) * (fp16(a[i].d) * b[i].d);
  }
  return sum;
}

float dot_tq2_0_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockTQ2_0*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = n / QK_K;
  const __m256i mask = _mm256_set1_epi8(3);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    // Pairs of trit * y are at most 2 * 3 * 128 = 768 and each int16 lane adds 8 of them:
    // no saturation.
    __m256i acc16 = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i v = load256(a[i].qs + 32 * h);
      const int8_t* q8 = b[i].qs + 128 * h;
      acc16 = _mm256_add_epi16(acc16, _mm256_maddubs_epi16(_mm256_and_si256(v, mask), load256(q8)));
      acc16 = _mm256_add_epi16(
          acc16, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 2), mask), load256(q8 + 32)));
      acc16 = _mm256_add_epi16(
          acc16, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), mask), load256(q8 + 64)));
      acc16 = _mm256_add_epi16(
          acc16, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 6), mask), load256(q8 + 96)));
    }
    const __m256i acc = _mm256_madd_epi16(acc16, _mm256_set1_epi16(1));
    const int isum = hsum_i32(_mm256_sub_epi32(acc, bsums_i32(b[i])));
    sum += float(isum) * (fp16(a[i].d) * b[i].d);
  }
  return sum;
}

}  // namespace tessera::cpu::avx2
