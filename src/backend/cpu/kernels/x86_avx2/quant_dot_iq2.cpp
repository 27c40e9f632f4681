// AVX2 dots of the 2-bit i-quants (IQ2_XXS, IQ2_XS, IQ2_S) with Q8_K, 32 elements (one
// sub-block) a step: the 4 grid points of the sub-block are looked up (one 64-bit load
// each), the signs are applied to the activations (vpsignb with +-1 bytes, also looked
// up), maddubs multiplies the unsigned grid bytes by the signed activations into int16
// pairs, and madd multiplies those by the scales 2 s + 1 of each 16 elements into int32.
// Exact: a pair is at most 2 * 43 * 127 = 10922, a block's int32 lane at most
// 8 sub-blocks * 2 pairs * 10922 * 31 < 2^24 (so also exact as a float). The reference's final
// factor 1/8 is applied once at the end (a power of two: exact).
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels/quant_dot_iq2.h"
#include "backend/cpu/kernels/x86_common.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace tessera::cpu::avx2 {
namespace {

using x86::fp16;
using x86::hsum;
using x86::load256;

using quant::BlockIQ2_S;
using quant::BlockIQ2_XS;
using quant::BlockIQ2_XXS;
using quant::BlockQ8_K;
using quant::QK_K;

// Sign bytes for vpsignb: byte j of entry s is -1 where bit j of s is set, else +1.
constexpr std::array<uint64_t, 256> kSignBytes = [] {
  std::array<uint64_t, 256> t{};
  for (int s = 0; s < 256; ++s) {
    for (int j = 0; j < 8; ++j) t[s] |= uint64_t(((s >> j) & 1) ? 0xff : 0x01) << (8 * j);
  }
  return t;
}();

// The same, indexed by IQ2_XXS / IQ2_XS's 7-bit sign index (its parity bit added).
constexpr std::array<uint64_t, 128> kSignIndexBytes = [] {
  std::array<uint64_t, 128> t{};
  for (int i = 0; i < 128; ++i) t[i] = kSignBytes[quant::kIq2Signs[i]];
  return t;
}();

// Byte shuffles that spread a block's 16 scale bytes (2 s + 1 for each 16 elements, in
// order, in both 128-bit lanes) to int16: for sub-block ib, the low lane gets scale 2 ib
// (elements 0..15) and the high lane scale 2 ib + 1 (16..31).
alignas(32) constexpr std::array<std::array<uint8_t, 32>, 8> kScalePick = [] {
  std::array<std::array<uint8_t, 32>, 8> t{};
  for (int ib = 0; ib < 8; ++ib) {
    for (int b = 0; b < 32; ++b) t[ib][b] = (b & 1) ? 0x80 : uint8_t(2 * ib + b / 16);
  }
  return t;
}();

// The 4 entries of `grid` (8 bytes each) at a, b, c, d, a in the low bytes.
inline __m256i grid4(const uint64_t* grid, unsigned a, unsigned b, unsigned c, unsigned d) {
  return _mm256_set_epi64x(int64_t(grid[d]), int64_t(grid[c]), int64_t(grid[b]), int64_t(grid[a]));
}

// The 16 scale bytes 2 s + 1 of a block whose 8 scale bytes hold s in nibbles (low
// nibble first), in both lanes.
inline __m256i nibble_scales(const uint8_t* scales) {
  uint64_t packed;
  std::memcpy(&packed, scales, 8);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  const __m128i v = _mm_cvtsi64_si128(int64_t(packed));
  const __m128i s = _mm_unpacklo_epi8(_mm_and_si128(v, m4), _mm_and_si128(_mm_srli_epi16(v, 4), m4));
  const __m128i odd = _mm_add_epi8(_mm_add_epi8(s, s), _mm_set1_epi8(1));
  return _mm256_broadcastsi128_si256(odd);
}

inline __m256i pick_scales(__m256i scales, int ib) {
  return _mm256_shuffle_epi8(scales, load256(kScalePick[size_t(ib)].data()));
}

// One sub-block: sum over its 32 elements of grid * sign * q8, each 16 weighted by its
// scale (int16 lanes of `scales`), as 8 int32 partial sums.
inline __m256i sub_block(__m256i grid, __m256i signs, const int8_t* q8, __m256i scales) {
  const __m256i p = _mm256_maddubs_epi16(grid, _mm256_sign_epi8(load256(q8), signs));
  return _mm256_madd_epi16(p, scales);
}

}  // namespace

float dot_iq2_xxs_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ2_XXS*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const uint64_t* g = quant::kIq2xxsGrid;
  const uint64_t* sg = kSignIndexBytes.data();
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int ib = 0; ib < 8; ++ib) {
      uint32_t idx;
      uint32_t meta;
      std::memcpy(&idx, &x[i].qs[4 * ib], 4);
      std::memcpy(&meta, &x[i].qs[4 * ib + 2], 4);
      const __m256i grid = grid4(g, idx & 0xff, (idx >> 8) & 0xff, (idx >> 16) & 0xff, idx >> 24);
      const __m256i signs = _mm256_set_epi64x(int64_t(sg[(meta >> 21) & 127]), int64_t(sg[(meta >> 14) & 127]),
                                              int64_t(sg[(meta >> 7) & 127]), int64_t(sg[meta & 127]));
      const __m256i scale = _mm256_set1_epi16(int16_t(2 * (meta >> 28) + 1));
      sumi[ib & 1] = _mm256_add_epi32(sumi[ib & 1], sub_block(grid, signs, y[i].qs + 32 * ib, scale));
    }
    const __m256 d = _mm256_set1_ps(fp16(x[i].d) * y[i].d);
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_add_epi32(sumi[0], sumi[1])), acc);
  }
  return 0.125f * hsum(acc);
}

float dot_iq2_xs_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ2_XS*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const uint64_t* g = quant::kIq2xsGrid;
  const uint64_t* sg = kSignIndexBytes.data();
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const __m256i scales = nibble_scales(x[i].scales);
    const uint16_t* q = x[i].qs;
    __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int ib = 0; ib < 8; ++ib, q += 4) {
      const __m256i grid = grid4(g, q[0] & 511u, q[1] & 511u, q[2] & 511u, q[3] & 511u);
      const __m256i signs = _mm256_set_epi64x(int64_t(sg[q[3] >> 9]), int64_t(sg[q[2] >> 9]),
                                              int64_t(sg[q[1] >> 9]), int64_t(sg[q[0] >> 9]));
      sumi[ib & 1] = _mm256_add_epi32(
          sumi[ib & 1], sub_block(grid, signs, y[i].qs + 32 * ib, pick_scales(scales, ib)));
    }
    const __m256 d = _mm256_set1_ps(fp16(x[i].d) * y[i].d);
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_add_epi32(sumi[0], sumi[1])), acc);
  }
  return 0.125f * hsum(acc);
}

float dot_iq2_s_q8_K(int64_t n, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIQ2_S*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  const uint64_t* g = quant::kIq2sGrid;
  const uint64_t* sg = kSignBytes.data();
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const __m256i scales = nibble_scales(x[i].scales);
    const uint8_t* qs = x[i].qs;
    const uint8_t* sb = x[i].qs + QK_K / 8;
    __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int ib = 0; ib < 8; ++ib, qs += 4, sb += 4) {
      const unsigned h = x[i].qh[ib];
      const __m256i grid = grid4(g, qs[0] | ((h << 8) & 0x300), qs[1] | ((h << 6) & 0x300),
                                 qs[2] | ((h << 4) & 0x300), qs[3] | ((h << 2) & 0x300));
      const __m256i signs = _mm256_set_epi64x(int64_t(sg[sb[3]]), int64_t(sg[sb[2]]),
                                              int64_t(sg[sb[1]]), int64_t(sg[sb[0]]));
      sumi[ib & 1] = _mm256_add_epi32(
          sumi[ib & 1], sub_block(grid, signs, y[i].qs + 32 * ib, pick_scales(scales, ib)));
    }
    const __m256 d = _mm256_set1_ps(fp16(x[i].d) * y[i].d);
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_add_epi32(sumi[0], sumi[1])), acc);
  }
  return 0.125f * hsum(acc);
}

}  // namespace tessera::cpu::avx2
