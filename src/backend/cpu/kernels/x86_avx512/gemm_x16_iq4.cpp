// AVX-512 VNNI kernels for the repacked IQ4_NL_X16 and IQ4_XS_X16 weights (gemm_kernels.h,
// layout in repack.h; the reference is kernels/reference/gemm_x16_iq4.cpp). A tile is the
// group's 16 rows (one 512-bit lane per row) x up to 8 activation columns: per block (or
// IQ4_XS sub-block) the weight words are split into nibbles and looked up once, one vpshufb
// into the table of u = kIq4nlValues[q] + 128 (1..241) in every 128-bit lane, and reused
// for every column's vpdpbusd against broadcast activation words.
//  - IQ4_NL: the block sum starts from the bias -128 sum(a) (zero point 128), so it is the
//    contract's sum(value a) itself, scaled into the float accumulator by one fmadd.
//  - IQ4_XS: each sub-block's sum(u a) is scaled by ls - 32 (vpmulld), and after the
//    super-block 128 sum_s (ls_s - 32) asum_s comes back out (vpdpwssd of the scales as
//    int16 pairs with the activation sub-block sums). Integer bounds: gemm_x16_iq4.cpp of
//    the AVX2 level.
// Compiled with per-file target flags, reached only through gemm_dispatch.cpp.
#include "backend/cpu/kernels/x86_intrin.h"

#include <cstring>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/kernels/x86_tile_loops.h"
#include "backend/cpu/repack.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace tessera::cpu::avx512 {
namespace {

using x86::for_each_tile;
using x86::prefetch_stream;

constexpr int kMaxCols = 8;

// acc += w . broadcast(*word), with the broadcast folded into the instruction's memory
// operand (as gemm_x16.cpp does).
inline __m512i dp(__m512i acc, __m512i w, const int32_t* word) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*word));
  return acc;
}

// kIq4nlValues + 128 as unsigned bytes, in every 128-bit lane.
inline __m512i biased_table() {
  const __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIq4nlValues)));
  return _mm512_xor_si512(v, _mm512_set1_epi8(char(0x80)));
}

// Words j and j + 4 of a 16-byte block (the 64 bytes at p: 4 bytes of each of 16 rows) as
// u bytes: u[lo] the low nibbles, u[hi] the high ones.
inline void load_words(const uint8_t* p, __m512i table, __m512i& lo, __m512i& hi) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  const __m512i raw = _mm512_loadu_si512(p);
  lo = _mm512_shuffle_epi8(table, _mm512_and_si512(raw, low));
  hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(raw, 4), low));
}

// ---- IQ4_NL ---------------------------------------------------------------------------

template <int N>
void tile_nl(const uint8_t* quants, const uint16_t* scales, int64_t nb, const char* act, size_t act_stride,
             float* dst, size_t dst_stride) {
  const __m512i table = biased_table();
  __m512 acc[N];
  const BlockQ8X* cols[N];
  for (int c = 0; c < N; ++c) {
    acc[c] = _mm512_setzero_ps();
    cols[c] = reinterpret_cast<const BlockQ8X*>(act + size_t(c) * act_stride);
  }
  for (int64_t b = 0; b < nb; ++b) {
    constexpr size_t kShare = 256 + kGroupRows * sizeof(uint16_t);  // quants + scales
    prefetch_stream(quants, size_t(b) * kShare, kShare);
    __m512i w[8];
    for (int i = 0; i < 4; ++i) load_words(quants + b * 256 + i * 64, table, w[i], w[i + 4]);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + b * kGroupRows)));
    for (int c = 0; c < N; ++c) {
      const BlockQ8X& a = cols[c][b];
      const auto* q = reinterpret_cast<const int32_t*>(a.qs);
      __m512i s = _mm512_set1_epi32(a.bias);
      for (int j = 0; j < 8; ++j) s = dp(s, w[j], q + j);
      acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(a.d)), acc[c]);
    }
  }
  for (int c = 0; c < N; ++c) _mm512_storeu_ps(dst + size_t(c) * dst_stride, acc[c]);
}

void gemm_nl(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols, float* dst,
             size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const auto* scales = reinterpret_cast<const uint16_t*>(quants + nb * 256);
  const auto* a = static_cast<const char*>(act);
  for_each_tile<kMaxCols>(n_cols, [&](auto n, int64_t c) {
    tile_nl<decltype(n)::value>(quants, scales, nb, a + c * act_stride, act_stride, dst + c * dst_stride, dst_stride);
  });
}

// ---- IQ4_XS ---------------------------------------------------------------------------

struct XsScales {
  __m512i sc[8];     // ls - 32 of sub-block s, one int32 per row
  __m512i pairs[4];  // (sc_2j, sc_2j+1) as int16 pairs
};

inline XsScales decode_xs(const uint8_t* mb) {
  const __m512i low = _mm512_loadu_si512(mb + 32);  // scales_l of row r in lane r
  const __m512i high = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mb + 96)));
  const __m512i m16 = _mm512_set1_epi32(0xFFFF);
  XsScales x;
  for (int s = 0; s < 8; ++s) {
    const __m512i lo4 = _mm512_and_si512(_mm512_srli_epi32(low, 4 * s), _mm512_set1_epi32(0x0F));
    const __m512i hi2 = _mm512_and_si512(_mm512_srli_epi32(high, 2 * s), _mm512_set1_epi32(3));
    x.sc[s] = _mm512_sub_epi32(_mm512_or_si512(lo4, _mm512_slli_epi32(hi2, 4)), _mm512_set1_epi32(32));
  }
  for (int j = 0; j < 4; ++j) {
    x.pairs[j] = _mm512_or_si512(_mm512_and_si512(x.sc[2 * j], m16), _mm512_slli_epi32(x.sc[2 * j + 1], 16));
  }
  return x;
}

template <int N>
void tile_xs(const uint8_t* quants, const uint8_t* meta, int64_t nb, const char* act, size_t act_stride,
             float* dst, size_t dst_stride) {
  const __m512i table = biased_table();
  __m512 acc[N];
  const BlockQ8KX* cols[N];
  for (int c = 0; c < N; ++c) {
    acc[c] = _mm512_setzero_ps();
    cols[c] = reinterpret_cast<const BlockQ8KX*>(act + size_t(c) * act_stride);
  }
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_stream(quants, size_t(b) * 2048, 2048);
    prefetch_stream(meta, size_t(b) * 128, 128);
    const uint8_t* mb = meta + b * 128;
    const XsScales x = decode_xs(mb);
    __m512i isum[N];
    for (int c = 0; c < N; ++c) isum[c] = _mm512_setzero_si512();
    for (int s = 0; s < 8; ++s) {
      __m512i w[8];
      for (int m = 0; m < 4; ++m) load_words(quants + b * 2048 + (4 * s + m) * 64, table, w[m], w[m + 4]);
      for (int c = 0; c < N; ++c) {
        const auto* q = reinterpret_cast<const int32_t*>(cols[c][b].qs + 32 * s);
        __m512i d = _mm512_setzero_si512();
        for (int j = 0; j < 8; ++j) d = dp(d, w[j], q + j);
        isum[c] = _mm512_add_epi32(isum[c], _mm512_mullo_epi32(d, x.sc[s]));
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mb)));
    for (int c = 0; c < N; ++c) {
      const BlockQ8KX& a = cols[c][b];
      __m512i offset = _mm512_setzero_si512();
      for (int j = 0; j < 4; ++j) offset = _mm512_dpwssd_epi32(offset, x.pairs[j], _mm512_set1_epi32(a.sums32[j]));
      const __m512i total = _mm512_sub_epi32(isum[c], _mm512_slli_epi32(offset, 7));
      acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_mul_ps(d, _mm512_set1_ps(a.d)), acc[c]);
    }
  }
  for (int c = 0; c < N; ++c) _mm512_storeu_ps(dst + size_t(c) * dst_stride, acc[c]);
}

void gemm_xs(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols, float* dst,
             size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const uint8_t* meta = quants + nb * 2048;
  const auto* a = static_cast<const char*>(act);
  for_each_tile<kMaxCols>(n_cols, [&](auto n, int64_t c) {
    tile_xs<decltype(n)::value>(quants, meta, nb, a + c * act_stride, act_stride, dst + c * dst_stride, dst_stride);
  });
}

}  // namespace

// The GemmX16Fn entries of the level's table (gemm_x16.cpp).
void gemm_iq4_nl_x16(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
                     int64_t n_cols, float* dst, size_t dst_stride) {
  each_group<gemm_nl, sizeof(quant::BlockIQ4_NL)>(w, n_groups, nb, act, act_stride, n_cols, dst, dst_stride);
}

void gemm_iq4_xs_x16(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
                     int64_t n_cols, float* dst, size_t dst_stride) {
  each_group<gemm_xs, sizeof(quant::BlockIQ4_XS)>(w, n_groups, nb, act, act_stride, n_cols, dst, dst_stride);
}

}  // namespace tessera::cpu::avx512
