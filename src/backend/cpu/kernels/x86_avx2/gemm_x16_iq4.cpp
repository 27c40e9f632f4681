// AVX2 kernels for the repacked IQ4_NL_X16 and IQ4_XS_X16 weights (gemm_kernels.h, layout
// in repack.h; the reference is kernels/reference/gemm_x16_iq4.cpp). As in gemm_x16.cpp, a
// 256-bit register holds 4 bytes of 8 rows: a group is two halves of 8 rows, and a tile is
// one half x up to kMaxCols activation columns (both halves in one pass up to two columns,
// so decode streams the group once).
//
// The nibbles become weight values with one vpshufb into a 16-byte table per lane:
//  - with AVX-VNNI (this file compiled again by gemm_x16_iq4_vnni.cpp, __AVXVNNI__): the
//    unsigned bytes u = kIq4nlValues[q] + 128 (1..241) meet the activation bytes in
//    vpdpbusd. IQ4_NL's sum starts from the block's bias -128 sum(a) (zero point 128),
//    which is the contract's sum itself; IQ4_XS's sub-block sums sum(u a) are scaled, and
//    128 sum_s (ls_s - 32) asum_s is taken back out with the activation sub-block sums;
//  - without: vpmaddubsw of |value| (<= 127) with the activation byte carrying the value's
//    sign (vpsignb), at most 2 * 127 * 127 = 32258 per int16 lane, widened per word by
//    vpmaddwd (with ones, or with IQ4_XS's sub-block scale as an int16 pair, which also
//    multiplies: <= 2 * 32258 * 32 per int32 lane). That is sum(value a) directly.
// Both give the same integer sums (the reference's; bounds: |sum(u a)| <= 32 * 241 * 127
// per sub-block, and the IQ4_XS super-block sums stay below 8 * 32 * 32 * 241 * 127 < 2^31),
// so every level gives the same bits.
// Compiled with per-file target flags, reached only through gemm_dispatch.cpp.
#include "backend/cpu/kernels/x86_intrin.h"

#include <cstring>
#include <type_traits>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/kernels/x86_tile_loops.h"
#include "backend/cpu/repack.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

#ifdef __AVXVNNI__
namespace tessera::cpu::avx2_vnni {
#else
namespace tessera::cpu::avx2 {
#endif
namespace {

using x86::for_each_tile;
using x86::prefetch_stream;

constexpr int kMaxCols = 8;
constexpr int kOnePassCols = 2;
constexpr int kHalfRows = 8;

// Runs a tile of N columns over halves: one pass with both (H = 2) for narrow tiles,
// else two passes of one half (H = 1, starting at half h0).
template <int N, typename Pass>
void over_halves(Pass pass) {
  if constexpr (N <= kOnePassCols) {
    pass(std::integral_constant<int, 2>{}, 0);
  } else {
    pass(std::integral_constant<int, 1>{}, 0);
    pass(std::integral_constant<int, 1>{}, 1);
  }
}

// The 4 activation bytes at q in every int32 lane.
inline __m256i bcast(const int8_t* q) {
  int32_t v;
  std::memcpy(&v, q, sizeof(v));
  return _mm256_set1_epi32(v);
}

inline __m256 scales8(const void* halves) {
  return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(halves)));
}

inline __m256i load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// A word of 4 nibbles per row as what meets the activations (see the top of the file).
struct Word {
#ifdef __AVXVNNI__
  __m256i u;  // value + 128
#else
  __m256i v, abs;  // value, |value|
#endif
};

struct Tables {
  __m256i value = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIq4nlValues)));
  __m256i abs = _mm256_abs_epi8(value);
  __m256i biased = _mm256_xor_si256(value, _mm256_set1_epi8(char(0x80)));  // value + 128 as a byte
};

inline Word word_of(__m256i nibbles, const Tables& t) {
#ifdef __AVXVNNI__
  return {_mm256_shuffle_epi8(t.biased, nibbles)};
#else
  return {_mm256_shuffle_epi8(t.value, nibbles), _mm256_shuffle_epi8(t.abs, nibbles)};
#endif
}

// The low and high nibbles of the raw bytes at p (words j and j + 4 of a 16-byte block).
inline void nibbles(const uint8_t* p, __m256i& lo, __m256i& hi) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i raw = load(p);
  lo = _mm256_and_si256(raw, low);
  hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);
}

#ifndef __AVXVNNI__
// s + the word's products with the activation word at a, each int16 pair times `pair`
// (ones, or an IQ4_XS scale in both halves).
inline __m256i word_step(__m256i s, const Word& w, const int8_t* a, __m256i pair) {
  const __m256i p = _mm256_maddubs_epi16(w.abs, _mm256_sign_epi8(bcast(a), w.v));
  return _mm256_add_epi32(s, _mm256_madd_epi16(p, pair));
}
#endif

// ---- IQ4_NL ---------------------------------------------------------------------------

template <int N, int H>
void tile_nl(const uint8_t* quants, const uint16_t* scales, int64_t nb, int h0, const char* act, size_t act_stride,
             float* dst, size_t dst_stride) {
  const Tables t;
  __m256 acc[H][N];
  const BlockQ8X* cols[N];
  for (int c = 0; c < N; ++c) cols[c] = reinterpret_cast<const BlockQ8X*>(act + size_t(c) * act_stride);
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < N; ++c) acc[h][c] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    constexpr size_t kShare = 256 + kGroupRows * sizeof(uint16_t);  // quants + scales
    prefetch_stream(quants, size_t(b) * kShare, kShare);
    for (int h = 0; h < H; ++h) {
      const uint8_t* q = quants + b * 256 + (h0 + h) * 32;
      __m256i s[N];
#ifdef __AVXVNNI__
      Word w[8];
      for (int i = 0; i < 4; ++i) {
        __m256i lo, hi;
        nibbles(q + i * 64, lo, hi);
        w[i] = word_of(lo, t);
        w[i + 4] = word_of(hi, t);
      }
      for (int c = 0; c < N; ++c) {
        s[c] = _mm256_set1_epi32(cols[c][b].bias);
        for (int j = 0; j < 8; ++j) s[c] = _mm256_dpbusd_avx_epi32(s[c], w[j].u, bcast(cols[c][b].qs + 4 * j));
      }
#else
      const __m256i ones = _mm256_set1_epi16(1);
      for (int c = 0; c < N; ++c) s[c] = _mm256_setzero_si256();
      for (int i = 0; i < 4; ++i) {
        __m256i lo, hi;
        nibbles(q + i * 64, lo, hi);
        const Word wl = word_of(lo, t), wh = word_of(hi, t);
        for (int c = 0; c < N; ++c) {
          s[c] = word_step(s[c], wl, cols[c][b].qs + 4 * i, ones);
          s[c] = word_step(s[c], wh, cols[c][b].qs + 16 + 4 * i, ones);
        }
      }
#endif
      const __m256 dw = scales8(scales + b * kGroupRows + (h0 + h) * kHalfRows);
      for (int c = 0; c < N; ++c) {
        acc[h][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[c]), _mm256_mul_ps(dw, _mm256_set1_ps(cols[c][b].d)), acc[h][c]);
      }
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < N; ++c) _mm256_storeu_ps(dst + size_t(c) * dst_stride + size_t((h0 + h) * kHalfRows), acc[h][c]);
  }
}

void gemm_nl(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols, float* dst,
             size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const auto* scales = reinterpret_cast<const uint16_t*>(quants + nb * 256);
  const auto* a = static_cast<const char*>(act);
  for_each_tile<kMaxCols>(n_cols, [&](auto n, int64_t c) {
    constexpr int N = decltype(n)::value;
    over_halves<N>([&](auto halves, int h0) {
      tile_nl<N, decltype(halves)::value>(quants, scales, nb, h0, a + c * act_stride, act_stride, dst + c * dst_stride,
                                          dst_stride);
    });
  });
}

// ---- IQ4_XS ---------------------------------------------------------------------------

// The 8 sub-block scales (ls - 32) of a half's rows, from the super-block's metadata mb.
struct XsScales {
  __m256i sc[8];  // int32 lanes (VNNI); else the int16 pair (sc, sc)
#ifdef __AVXVNNI__
  __m256i pairs[4];  // (sc_2j, sc_2j+1) as int16 pairs, against the activation sub-block sums
#endif
};

inline XsScales decode_xs(const uint8_t* mb, int half) {
  const __m256i low = load(mb + 32 + half * 32);  // scales_l of row r in lane r
  const __m256i high = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mb + 96 + half * 16)));
  const __m256i m16 = _mm256_set1_epi32(0xFFFF);
  __m256i sc[8];
  for (int s = 0; s < 8; ++s) {
    const __m256i lo4 = _mm256_and_si256(_mm256_srli_epi32(low, 4 * s), _mm256_set1_epi32(0x0F));
    const __m256i hi2 = _mm256_and_si256(_mm256_srli_epi32(high, 2 * s), _mm256_set1_epi32(3));
    sc[s] = _mm256_sub_epi32(_mm256_or_si256(lo4, _mm256_slli_epi32(hi2, 4)), _mm256_set1_epi32(32));
  }
  XsScales x;
  for (int s = 0; s < 8; ++s) {
#ifdef __AVXVNNI__
    x.sc[s] = sc[s];
#else
    x.sc[s] = _mm256_or_si256(_mm256_and_si256(sc[s], m16), _mm256_slli_epi32(sc[s], 16));
#endif
  }
#ifdef __AVXVNNI__
  for (int j = 0; j < 4; ++j) x.pairs[j] = _mm256_or_si256(_mm256_and_si256(sc[2 * j], m16), _mm256_slli_epi32(sc[2 * j + 1], 16));
#else
  (void)m16;
#endif
  return x;
}

template <int N, int H>
void tile_xs(const uint8_t* quants, const uint8_t* meta, int64_t nb, int h0, const char* act, size_t act_stride,
             float* dst, size_t dst_stride) {
  const Tables t;
  __m256 acc[H][N];
  const BlockQ8KX* cols[N];
  for (int c = 0; c < N; ++c) cols[c] = reinterpret_cast<const BlockQ8KX*>(act + size_t(c) * act_stride);
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < N; ++c) acc[h][c] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_stream(quants, size_t(b) * 2048, 2048);
    prefetch_stream(meta, size_t(b) * 128, 128);
    const uint8_t* mb = meta + b * 128;
    for (int h = 0; h < H; ++h) {
      const int half = h0 + h;
      const XsScales x = decode_xs(mb, half);
      __m256i isum[N];
      for (int c = 0; c < N; ++c) isum[c] = _mm256_setzero_si256();
      for (int s = 0; s < 8; ++s) {
        const uint8_t* q = quants + b * 2048 + s * 256 + half * 32;  // words 4s..4s+3
#ifdef __AVXVNNI__
        Word w[8];
        for (int m = 0; m < 4; ++m) {
          __m256i lo, hi;
          nibbles(q + m * 64, lo, hi);
          w[m] = word_of(lo, t);
          w[m + 4] = word_of(hi, t);
        }
        for (int c = 0; c < N; ++c) {
          const int8_t* a = cols[c][b].qs + 32 * s;
          __m256i d = _mm256_setzero_si256();
          for (int j = 0; j < 8; ++j) d = _mm256_dpbusd_avx_epi32(d, w[j].u, bcast(a + 4 * j));
          isum[c] = _mm256_add_epi32(isum[c], _mm256_mullo_epi32(d, x.sc[s]));
        }
#else
        for (int m = 0; m < 4; ++m) {
          __m256i lo, hi;
          nibbles(q + m * 64, lo, hi);
          const Word wl = word_of(lo, t), wh = word_of(hi, t);
          for (int c = 0; c < N; ++c) {
            const int8_t* a = cols[c][b].qs + 32 * s;
            isum[c] = word_step(isum[c], wl, a + 4 * m, x.sc[s]);
            isum[c] = word_step(isum[c], wh, a + 16 + 4 * m, x.sc[s]);
          }
        }
#endif
      }
      const __m256 d = scales8(mb + half * 16);
      for (int c = 0; c < N; ++c) {
        const BlockQ8KX& a = cols[c][b];
#ifdef __AVXVNNI__
        __m256i offset = _mm256_madd_epi16(x.pairs[0], _mm256_set1_epi32(a.sums32[0]));
        for (int j = 1; j < 4; ++j) offset = _mm256_add_epi32(offset, _mm256_madd_epi16(x.pairs[j], _mm256_set1_epi32(a.sums32[j])));
        isum[c] = _mm256_sub_epi32(isum[c], _mm256_slli_epi32(offset, 7));
#endif
        acc[h][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(d, _mm256_set1_ps(a.d)), acc[h][c]);
      }
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < N; ++c) _mm256_storeu_ps(dst + size_t(c) * dst_stride + size_t((h0 + h) * kHalfRows), acc[h][c]);
  }
}

void gemm_xs(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols, float* dst,
             size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const uint8_t* meta = quants + nb * 2048;
  const auto* a = static_cast<const char*>(act);
  for_each_tile<kMaxCols>(n_cols, [&](auto n, int64_t c) {
    constexpr int N = decltype(n)::value;
    over_halves<N>([&](auto halves, int h0) {
      tile_xs<N, decltype(halves)::value>(quants, meta, nb, h0, a + c * act_stride, act_stride, dst + c * dst_stride,
                                          dst_stride);
    });
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

}  // namespace tessera::cpu::avx2 (or avx2_vnni)
