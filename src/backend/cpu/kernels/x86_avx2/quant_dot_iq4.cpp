// AVX2 dots of the 4-bit non-linear formats: IQ4_NL x Q8_0 and IQ4_XS x Q8_K. A vpshufb of
// the nibbles into the 16-byte table kIq4nlValues gives the signed weight values (-127..113)
// in element order; their products with the activation bytes go through vpmaddubsw as
// |value| times the activation with the value's sign (vpsignb), at most 2 * 127 * 127 =
// 32258 per int16 lane, so the integer sums are exact (partner quants in [-127, 127]).
// Compiled with the level's target flags, reached through its kQuantKernels table
// (quant_dot.cpp); the helpers have internal linkage.
#include "backend/cpu/kernels/x86_intrin.h"

#include <cstdint>

#include "backend/cpu/kernels/x86_common.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace tessera::cpu::avx2 {
namespace {

using quant::BlockIQ4_NL;
using quant::BlockIQ4_XS;
using quant::BlockQ8_0;
using quant::BlockQ8_K;
using quant::QK_K;
using x86::fp16;
using x86::hsum;
using x86::load128;
using x86::load256;

// The 32 weight values of a 16-byte block of nibbles (low nibbles, then high), as int8.
inline __m256i values32(const uint8_t* qs, __m256i table) {
  const __m128i raw = load128(qs);
  const __m256i nibbles =
      _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0f));
  return _mm256_shuffle_epi8(table, nibbles);
}

// Products of signed x and y bytes, adjacent pairs summed into int16 (exact, see above).
inline __m256i products16(__m256i x, __m256i y) {
  return _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

inline __m256i table() {
  return _mm256_broadcastsi128_si256(load128(quant::kIq4nlValues));
}

}  // namespace

// IQ4_NL x Q8_0: value . y per block, scaled by dx * dy.
float dot_iq4_nl_q8_0(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ4_NL*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const int64_t nb = n / 32;
  const __m256i t = table();
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t i = 0; i < nb; ++i) {
    const __m256i p = _mm256_madd_epi16(products16(values32(x[i].qs, t), load256(y[i].qs)), ones);
    const float d = fp16(x[i].d) * fp16(y[i].d);
    acc[i & 1] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(p), acc[i & 1]);
  }
  return hsum(_mm256_add_ps(acc[0], acc[1]));
}

// IQ4_XS x Q8_K: d dy sum_j (ls_j - 32) (value_j . y_j); vpmaddwd with the scale both
// widens a sub-block's int16 pair sums and scales them (|.| <= 2 * 32258 * 32).
float dot_iq4_xs_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ4_XS*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const __m256i t = table();
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const uint32_t h = x[i].scales_h;
    __m256i isum = _mm256_setzero_si256();
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = (((x[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f) | (((h >> (2 * ib)) & 3) << 4)) - 32;
      const __m256i p = products16(values32(x[i].qs + 16 * ib, t), load256(y[i].qs + 32 * ib));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, _mm256_set1_epi16(int16_t(ls))));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16(x[i].d) * y[i].d), _mm256_cvtepi32_ps(isum), acc);
  }
  return hsum(acc);
}

}  // namespace tessera::cpu::avx2
