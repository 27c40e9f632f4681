// AVX-512 dots of the 4-bit non-linear formats: IQ4_NL x Q8_0 and IQ4_XS x Q8_K, 64
// elements a step (two IQ4_NL blocks, or two IQ4_XS sub-blocks) in one 512-bit register.
// A vpshufb of the nibbles into the table kIq4nlValues (in every 128-bit lane) gives the
// signed weight values (-127..113); vpdpbusd sums |value| times the activation byte with
// the value's sign, 4 products per int32 lane (exact: partner quants in [-127, 127]).
// Compiled with the level's target flags, reached through its kQuantKernels table
// (quant_dot.cpp); the helpers have internal linkage.
#include "backend/cpu/kernels/x86_intrin.h"

#include <cstdint>

#include "backend/cpu/kernels/x86_common.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace tessera::cpu::avx512 {
namespace {

using quant::BlockIQ4_NL;
using quant::BlockIQ4_XS;
using quant::BlockQ8_0;
using quant::BlockQ8_K;
using quant::QK_K;
using x86::fp16;
using x86::load128;
using x86::load256;

// Weight values of two 16-byte nibble blocks a and b: 128-bit lanes low(a), high(a),
// low(b), high(b), i.e. both blocks' 32 elements in order.
inline __m512i values64(__m128i a, __m128i b, __m512i table) {
  __m512i r = _mm512_castsi128_si512(a);
  r = _mm512_inserti32x4(r, a, 1);
  r = _mm512_inserti32x4(r, b, 2);
  r = _mm512_inserti32x4(r, b, 3);
  const __m512i nibbles = _mm512_and_si512(_mm512_mask_blend_epi64(0xcc, r, _mm512_srli_epi16(r, 4)),
                                           _mm512_set1_epi8(0x0f));
  return _mm512_shuffle_epi8(table, nibbles);
}

// acc + the sums of 4 products of signed x and y bytes per int32 lane.
inline __m512i dot_s8(__m512i acc, __m512i x, __m512i y) {
  const __m512i signed_y = _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(x), _mm512_setzero_si512(), y);
  return _mm512_dpbusd_epi32(acc, _mm512_abs_epi8(x), signed_y);
}

inline __m512i table() { return _mm512_broadcast_i32x4(load128(quant::kIq4nlValues)); }

inline float hsum512(__m512 v) {
  return x86::hsum(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

}  // namespace

// IQ4_NL x Q8_0: value . y per block, scaled by dx * dy; blocks 2k and 2k + 1 in the low
// and high halves of a register.
float dot_iq4_nl_q8_0(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ4_NL*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const int64_t nb = n / 32;
  const __m512i t = table();
  __m512 acc = _mm512_setzero_ps();
  // Blocks i and i + 1 (an odd last block pairs with zero activations and a zero scale).
  auto pair = [&](int64_t i, bool both) {
    const __m512i q = values64(load128(x[i].qs), load128(x[both ? i + 1 : i].qs), t);
    const __m256i a1 = both ? load256(y[i + 1].qs) : _mm256_setzero_si256();
    const __m512i a = _mm512_inserti64x4(_mm512_castsi256_si512(load256(y[i].qs)), a1, 1);
    const __m512i s = dot_s8(_mm512_setzero_si512(), q, a);
    const float d1 = both ? fp16(x[i + 1].d) * fp16(y[i + 1].d) : 0.0f;
    const __m512 d = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(fp16(x[i].d) * fp16(y[i].d))),
                                        _mm256_set1_ps(d1), 1);
    acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc);
  };
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) pair(i, true);
  if (i < nb) pair(i, false);
  return hsum512(acc);
}

// IQ4_XS x Q8_K: d dy sum_j (ls_j - 32) (value_j . y_j); sub-blocks 2k and 2k + 1 (32
// contiguous bytes of qs) per register, each half scaled by its ls - 32 (vpmulld).
float dot_iq4_xs_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ4_XS*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const __m512i t = table();
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const uint32_t h = x[i].scales_h;
    __m512i isum = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k) {
      const __m512i q = values64(load128(x[i].qs + 32 * k), load128(x[i].qs + 32 * k + 16), t);
      const __m512i s = dot_s8(_mm512_setzero_si512(), q, _mm512_loadu_si512(y[i].qs + 64 * k));
      const uint32_t sl = x[i].scales_l[k];
      const int ls0 = int((sl & 0x0f) | ((h >> (4 * k)) & 3) << 4) - 32;
      const int ls1 = int((sl >> 4) | ((h >> (4 * k + 2)) & 3) << 4) - 32;
      const __m512i ls = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(ls0)), _mm256_set1_epi32(ls1), 1);
      isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(s, ls));
    }
    acc = _mm512_fmadd_ps(_mm512_set1_ps(fp16(x[i].d) * y[i].d), _mm512_cvtepi32_ps(isum), acc);
  }
  return hsum512(acc);
}

}  // namespace tessera::cpu::avx512
