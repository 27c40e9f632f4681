// AVX-512 VNNI kernels for the repacked _X16 weights (gemm_kernels.h, layout in
// repack.h). A tile is the group's 16 rows (one 512-bit lane per row) x up to 8
// activation columns: per block the weight words are loaded (and, for Q4_0, split into
// nibbles) once and reused for every column; each column's block sum is 8 vpdpbusd
// against broadcast activation words, started from the block's bias, then converted and
// scaled into the column's float accumulator with one fmadd.
// Compiled with per-file target flags, reached only through gemm_dispatch.cpp.
#include "backend/cpu/kernels/x86_intrin.h"

#include <cstring>
#include <type_traits>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/kernels/x86_tile_loops.h"
#include "backend/cpu/quant_kernels.h"
#include "backend/cpu/repack.h"
#include "quant/blocks.h"

namespace tessera::cpu::avx512 {
namespace {

using x86::for_each_tile;
using x86::prefetch_stream;
using x86::through_l1;

constexpr int kMaxCols = 8;

// acc += w . broadcast(*word), with the broadcast folded into the instruction's memory
// operand (GCC 12 otherwise emits a separate vpbroadcastd per word).
inline __m512i dp(__m512i acc, __m512i w, const int32_t* word) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*word));
  return acc;
}

// Adds block b's contribution of one column to acc: 8 weight registers against the
// column's 8 activation words.
inline __m512 column_step(__m512 acc, const __m512i (&w)[8], __m512 dw, const BlockQ8X& a) {
  const auto* q = reinterpret_cast<const int32_t*>(a.qs);
  __m512i s = _mm512_set1_epi32(a.bias);
  s = dp(s, w[0], q + 0);
  s = dp(s, w[1], q + 1);
  s = dp(s, w[2], q + 2);
  s = dp(s, w[3], q + 3);
  s = dp(s, w[4], q + 4);
  s = dp(s, w[5], q + 5);
  s = dp(s, w[6], q + 6);
  s = dp(s, w[7], q + 7);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(a.d)), acc);
}

// Register w[j] holds, for each of the 16 rows, the 4 weights that meet activation word j.
inline void load_q4_0(const uint8_t* quants, __m512i (&w)[8]) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  for (int i = 0; i < 4; ++i) {
    const __m512i raw = _mm512_loadu_si512(quants + i * 64);
    w[i] = _mm512_and_si512(raw, low);
    w[i + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
  }
}

inline void load_q8_0(const uint8_t* quants, __m512i (&w)[8]) {
  for (int i = 0; i < 8; ++i) w[i] = _mm512_loadu_si512(quants + i * 64);
}

template <int N, int kBlockBytes, bool kQ4, bool kL1 = false>
void tile(const uint8_t* quants, const uint16_t* scales, int64_t nb, const char* act,
          size_t act_stride, float* dst, size_t dst_stride) {
  __m512 acc[N];
  const BlockQ8X* cols[N];
  for (int c = 0; c < N; ++c) {
    acc[c] = _mm512_setzero_ps();
    cols[c] = reinterpret_cast<const BlockQ8X*>(act + size_t(c) * act_stride);
  }
  for (int64_t b = 0; b < nb; ++b) {
    constexpr size_t kShare = kBlockBytes + kGroupRows * sizeof(uint16_t);  // quants + scales
    prefetch_stream(quants, size_t(b) * kShare, kShare);
    __m512i w[8];
    if constexpr (kQ4) {
      load_q4_0(quants + b * kBlockBytes, w);
    } else {
      load_q8_0(quants + b * kBlockBytes, w);
    }
    if constexpr (kL1) through_l1(w);  // Q4_0 decode on AMD (x86::decode_through_l1); Q8_0: no gain
    const __m512 dw = _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + b * kGroupRows)));
    for (int c = 0; c < N; ++c) acc[c] = column_step(acc[c], w, dw, cols[c][b]);
  }
  for (int c = 0; c < N; ++c) _mm512_storeu_ps(dst + size_t(c) * dst_stride, acc[c]);
}

template <int kBlockBytes, bool kQ4>
void gemm(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols,
          float* dst, size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const auto* scales = reinterpret_cast<const uint16_t*>(quants + nb * kBlockBytes);
  const auto* a = static_cast<const char*>(act);
  for_each_tile<kMaxCols>(n_cols, [&](auto n, int64_t c) {
    constexpr int N = decltype(n)::value;
    if constexpr (N == 1 && kQ4) {
      if (x86::decode_through_l1()) {
        return tile<1, kBlockBytes, true, true>(quants, scales, nb, a + c * act_stride, act_stride,
                                                dst + c * dst_stride, dst_stride);
      }
    }
    tile<N, kBlockBytes, kQ4>(quants, scales, nb, a + c * act_stride, act_stride, dst + c * dst_stride, dst_stride);
  });
}

// ---- Q4_K -----------------------------------------------------------------------------
// Per super-block, the packed scale words of the 16 rows decode in registers into the
// 8 sub-block scales (int32 lanes) and the mins as int16 pairs; per 64-element chunk the
// weights are split into the two sub-blocks' nibbles once, and each column's two
// sub-block sums are scaled (vpmulld) into one integer sum. The mins meet the
// activation sub-block sums with vpdpwssd.

struct Q4KScales {
  __m512i sc[8];  // sub-block scales, one int32 per row
  __m512i m[4];   // mins of sub-blocks 2j, 2j + 1 as int16 pairs
};

inline Q4KScales decode_q4_K(const uint8_t* words) {
  const __m512i w0 = _mm512_loadu_si512(words);
  const __m512i w1 = _mm512_loadu_si512(words + 64);
  const __m512i w2 = _mm512_loadu_si512(words + 128);
  const __m512i low6 = _mm512_set1_epi8(0x3F);
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i top2 = _mm512_set1_epi8(char(0xC0));
  // Bytes j of these words are the scales / mins of sub-blocks j (lo) and 4 + j (hi).
  const __m512i sc_lo = _mm512_and_si512(w0, low6);
  const __m512i m_lo = _mm512_and_si512(w1, low6);
  const __m512i sc_hi = _mm512_or_si512(_mm512_and_si512(w2, low4),
                                        _mm512_srli_epi32(_mm512_and_si512(w0, top2), 2));
  const __m512i m_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w2, 4), low4),
                                       _mm512_srli_epi32(_mm512_and_si512(w1, top2), 2));
  const __m512i byte = _mm512_set1_epi32(0xFF);
  Q4KScales s;
  for (int j = 0; j < 4; ++j) {
    s.sc[j] = _mm512_and_si512(_mm512_srli_epi32(sc_lo, 8 * j), byte);
    s.sc[4 + j] = _mm512_and_si512(_mm512_srli_epi32(sc_hi, 8 * j), byte);
  }
  // int16 pairs: bytes (0, 1) and (2, 3) of each word moved to the two halves.
  const __m512i pair_lo = _mm512_set1_epi32(0x000000FF);
  const __m512i pair_hi = _mm512_set1_epi32(0x00FF0000);
  for (int h = 0; h < 2; ++h) {
    const __m512i src = h == 0 ? m_lo : m_hi;
    s.m[2 * h] = _mm512_or_si512(_mm512_and_si512(src, pair_lo),
                                 _mm512_and_si512(_mm512_slli_epi32(src, 8), pair_hi));
    s.m[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(src, 16), pair_lo),
                                     _mm512_and_si512(_mm512_srli_epi32(src, 8), pair_hi));
  }
  return s;
}

inline __m512i dp_words(__m512i acc, const __m512i* w, const int32_t* words) {
  for (int i = 0; i < 8; ++i) acc = dp(acc, w[i], words + i);
  return acc;
}

// The contract's two fmas of a super-block for one column: acc plus the scaled dots
// minus the scaled mins (activation sub-block sums against the mins); mb: its meta.
inline __m512 q4_K_block_end(__m512 acc, __m512i isum, const Q4KScales& s, const uint8_t* mb, const BlockQ8KX& a) {
  const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mb)));
  const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mb + 32)));
  __m512i imin = _mm512_setzero_si512();
  for (int j = 0; j < 4; ++j) imin = _mm512_dpwssd_epi32(imin, s.m[j], _mm512_set1_epi32(a.sums32[j]));
  const __m512 da = _mm512_set1_ps(a.d);
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, da), acc);
  return _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imin), _mm512_mul_ps(dmin, da), acc);
}

// One column's chunk i (64 elements at q) of a decode tile: isum + the two scaled
// sub-block dots, the unpacked nibbles through L1 (x86::through_l1).
inline __m512i q4_K_chunk(const uint8_t* words, const int8_t* q, const Q4KScales& s, int i, __m512i isum) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  __m512i lo[8], hi[8];
  for (int w = 0; w < 8; ++w) {
    const __m512i raw = _mm512_loadu_si512(words + w * 64);
    lo[w] = _mm512_and_si512(raw, low);
    hi[w] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
  }
  through_l1(lo);
  through_l1(hi);
  const auto* q32 = reinterpret_cast<const int32_t*>(q);
  const __m512i sa = dp_words(_mm512_setzero_si512(), lo, q32);
  const __m512i sb = dp_words(_mm512_setzero_si512(), hi, q32 + 8);
  return _mm512_add_epi32(isum, _mm512_add_epi32(_mm512_mullo_epi32(sa, s.sc[2 * i]),
                                                 _mm512_mullo_epi32(sb, s.sc[2 * i + 1])));
}

// Decode in pairs, as the AVX2 level's decode_q4_K_groups (kernels/x86_avx2/gemm_x16.cpp):
// two groups read side by side, chunk by chunk, so that the hardware prefetchers follow
// two streams. Each output's operations and their order are those of tile_q4_K.
void decode_q4_K_pair(const uint8_t* w, size_t group_bytes, int64_t nb, const BlockQ8KX* a, float* dst) {
  x86::PairPrefetch<2048, 256> pf(w, group_bytes, nb);
  __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t b = 0; b < nb; ++b) {
    Q4KScales s[2];
    __m512i isum[2];
    for (int g = 0; g < 2; ++g) {
      s[g] = decode_q4_K(w + g * group_bytes + nb * 2048 + b * 256 + 64);
      isum[g] = _mm512_setzero_si512();
    }
    for (int i = 0; i < 4; ++i) {
      for (int g = 0; g < 2; ++g) {
        const uint8_t* quants = w + g * group_bytes;
        pf.group[g].part(i, 4);
        isum[g] = q4_K_chunk(quants + b * 2048 + i * 512, a[b].qs + 64 * i, s[g], i, isum[g]);
      }
    }
    for (int g = 0; g < 2; ++g) {
      acc[g] = q4_K_block_end(acc[g], isum[g], s[g], w + g * group_bytes + nb * 2048 + b * 256, a[b]);
      pf.group[g].advance();
    }
  }
  for (int g = 0; g < 2; ++g) _mm512_storeu_ps(dst + g * kGroupRows, acc[g]);
}

template <int N>
void tile_q4_K(const uint8_t* quants, const uint8_t* meta, int64_t nb, const char* act,
               size_t act_stride, float* dst, size_t dst_stride) {
  __m512 acc[N];
  const BlockQ8KX* cols[N];
  for (int c = 0; c < N; ++c) {
    acc[c] = _mm512_setzero_ps();
    cols[c] = reinterpret_cast<const BlockQ8KX*>(act + size_t(c) * act_stride);
  }
  const __m512i low = _mm512_set1_epi8(0x0F);
  x86::BlockPrefetch<2048, 256> pf(quants, size_t(nb) * (2048 + 256), nb, x86::kAhead);
  for (int64_t b = 0; b < nb; ++b, pf.advance()) {
    const uint8_t* mb = meta + b * 256;
    pf.all();
    const Q4KScales s = decode_q4_K(mb + 64);
    __m512i isum[N];
    for (int c = 0; c < N; ++c) isum[c] = _mm512_setzero_si512();
    for (int i = 0; i < 4; ++i) {
      __m512i lo[8], hi[8];
      for (int w = 0; w < 8; ++w) {
        const __m512i raw = _mm512_loadu_si512(quants + b * 2048 + i * 512 + w * 64);
        lo[w] = _mm512_and_si512(raw, low);
        hi[w] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
      }
      if constexpr (N == 1) {
        through_l1(lo);
        through_l1(hi);
      }
      for (int c = 0; c < N; ++c) {
        const auto* q = reinterpret_cast<const int32_t*>(cols[c][b].qs + 64 * i);
        const __m512i sa = dp_words(_mm512_setzero_si512(), lo, q);
        const __m512i sb = dp_words(_mm512_setzero_si512(), hi, q + 8);
        isum[c] = _mm512_add_epi32(isum[c], _mm512_add_epi32(_mm512_mullo_epi32(sa, s.sc[2 * i]),
                                                             _mm512_mullo_epi32(sb, s.sc[2 * i + 1])));
      }
    }
    for (int c = 0; c < N; ++c) acc[c] = q4_K_block_end(acc[c], isum[c], s, mb, cols[c][b]);
  }
  for (int c = 0; c < N; ++c) _mm512_storeu_ps(dst + size_t(c) * dst_stride, acc[c]);
}

void gemm_q4_K_group(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols,
                     float* dst, size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const uint8_t* meta = quants + nb * 2048;
  const auto* a = static_cast<const char*>(act);
  for_each_tile<kMaxCols>(n_cols, [&](auto n, int64_t c) {
    tile_q4_K<decltype(n)::value>(quants, meta, nb, a + c * act_stride, act_stride,
                                  dst + c * dst_stride, dst_stride);
  });
}

void gemm_q4_K(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
               int64_t n_cols, float* dst, size_t dst_stride) {
  x86::pairs_then_groups(w, size_t(16 * nb) * sizeof(quant::BlockQ4_K), n_groups, nb, act, act_stride, n_cols, dst,
                         dst_stride, decode_q4_K_pair, gemm_q4_K_group);
}

// ---- Q6_K -----------------------------------------------------------------------------
// Per quarter (32 elements, two 16-element sub-blocks) of each half, the 6-bit quants
// are assembled from the ql and qh words once per tile; each column's two sub-block
// sums are scaled (vpmulld) into one integer sum, and the -32 offset comes back as
// 32 * sum_s sc_s asum_s through vpdpwssd over int16 pairs.

struct Q6KScales {
  __m512i sc[16];    // sub-block scales, one int32 per row
  __m512i pairs[8];  // scales of sub-blocks 2j, 2j + 1 as int16 pairs
};

inline void decode_q6_K(const uint8_t* meta, Q6KScales& s) {
  const __m512i low16 = _mm512_set1_epi32(0xFFFF);
  for (int j = 0; j < 16; ++j) {
    s.sc[j] = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 16 * j)));
  }
  for (int j = 0; j < 8; ++j) {
    s.pairs[j] = _mm512_or_si512(_mm512_and_si512(s.sc[2 * j], low16), _mm512_slli_epi32(s.sc[2 * j + 1], 16));
  }
}

// The 8 weight words of quarter k of half h: (low or high nibble of ql) | (2 qh bits) << 4.
inline void load_q6_K_quarter(const uint8_t* sb, int h, int k, __m512i (&op)[8]) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  const __m512i bits45 = _mm512_set1_epi8(0x30);
  for (int w = 0; w < 8; ++w) {
    __m512i x = _mm512_loadu_si512(sb + (16 * h + 8 * (k & 1) + w) * 64);
    const __m512i hb = _mm512_loadu_si512(sb + 2048 + (8 * h + w) * 64);
    if (k >= 2) x = _mm512_srli_epi16(x, 4);
    __m512i hs = hb;
    if (k == 0) hs = _mm512_slli_epi16(hb, 4);
    if (k == 1) hs = _mm512_slli_epi16(hb, 2);
    if (k == 3) hs = _mm512_srli_epi16(hb, 2);
    op[w] = _mm512_or_si512(_mm512_and_si512(x, low), _mm512_and_si512(hs, bits45));
  }
}

inline __m512i dp4(const __m512i* w, const int32_t* words) {
  __m512i acc = _mm512_setzero_si512();
  for (int i = 0; i < 4; ++i) acc = dp(acc, w[i], words + i);
  return acc;
}

// The -32 offset and the contract's fma of a super-block for one column; mb: its meta.
inline __m512 q6_K_block_end(__m512 acc, __m512i isum, const Q6KScales& s, const uint8_t* mb, const BlockQ8KX& a) {
  const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mb + 256)));
  __m512i offset = _mm512_setzero_si512();
  for (int j = 0; j < 8; ++j) offset = _mm512_dpwssd_epi32(offset, s.pairs[j], _mm512_set1_epi32(a.sums16[j]));
  const __m512i total = _mm512_sub_epi32(isum, _mm512_slli_epi32(offset, 5));
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_mul_ps(d, _mm512_set1_ps(a.d)), acc);
}

// Decode in pairs (see decode_q4_K_pair): quarter by quarter, the two groups in turn.
// Each output's operations and their order are those of tile_q6_K.
void decode_q6_K_pair(const uint8_t* w, size_t group_bytes, int64_t nb, const BlockQ8KX* a, float* dst) {
  x86::PairPrefetch<3072, 288> pf(w, group_bytes, nb);
  __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t b = 0; b < nb; ++b) {
    Q6KScales s[2];
    __m512i isum[2];
    for (int g = 0; g < 2; ++g) {
      decode_q6_K(w + g * group_bytes + nb * 3072 + b * 288, s[g]);
      isum[g] = _mm512_setzero_si512();
    }
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 4; ++k) {
        for (int g = 0; g < 2; ++g) {
          const uint8_t* quants = w + g * group_bytes;
          pf.group[g].part(4 * h + k, 8);
          const uint8_t* sb = quants + b * 3072;
          asm volatile("" : "+r"(sb));  // one base register, not an induction variable per word
          __m512i op[8];
          load_q6_K_quarter(sb, h, k, op);
          through_l1(op);
          const auto* q = reinterpret_cast<const int32_t*>(a[b].qs) + 32 * h + 8 * k;
          isum[g] = _mm512_add_epi32(isum[g], _mm512_add_epi32(_mm512_mullo_epi32(dp4(op, q), s[g].sc[8 * h + 2 * k]),
                                                               _mm512_mullo_epi32(dp4(op + 4, q + 4), s[g].sc[8 * h + 2 * k + 1])));
        }
      }
    }
    for (int g = 0; g < 2; ++g) {
      acc[g] = q6_K_block_end(acc[g], isum[g], s[g], w + g * group_bytes + nb * 3072 + b * 288, a[b]);
      pf.group[g].advance();
    }
  }
  for (int g = 0; g < 2; ++g) _mm512_storeu_ps(dst + g * kGroupRows, acc[g]);
}

template <int N>
void tile_q6_K(const uint8_t* quants, const uint8_t* meta, int64_t nb, const char* act,
               size_t act_stride, float* dst, size_t dst_stride) {
  __m512 acc[N];
  const BlockQ8KX* cols[N];
  for (int c = 0; c < N; ++c) {
    acc[c] = _mm512_setzero_ps();
    cols[c] = reinterpret_cast<const BlockQ8KX*>(act + size_t(c) * act_stride);
  }
  x86::BlockPrefetch<3072, 288> pf(quants, size_t(nb) * (3072 + 288), nb, x86::kAhead);
  for (int64_t b = 0; b < nb; ++b, pf.advance()) {
    const uint8_t* sb = quants + b * 3072;
    pf.all();
    Q6KScales s;
    decode_q6_K(meta + b * 288, s);
    __m512i isum[N];
    for (int c = 0; c < N; ++c) isum[c] = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 4; ++k) {
        __m512i op[8];
        load_q6_K_quarter(sb, h, k, op);
        if constexpr (N == 1) through_l1(op);
        const __m512i sa = s.sc[8 * h + 2 * k];
        const __m512i sb2 = s.sc[8 * h + 2 * k + 1];
        for (int c = 0; c < N; ++c) {
          const auto* q = reinterpret_cast<const int32_t*>(cols[c][b].qs) + 32 * h + 8 * k;
          isum[c] = _mm512_add_epi32(isum[c], _mm512_add_epi32(_mm512_mullo_epi32(dp4(op, q), sa),
                                                               _mm512_mullo_epi32(dp4(op + 4, q + 4), sb2)));
        }
      }
    }
    for (int c = 0; c < N; ++c) acc[c] = q6_K_block_end(acc[c], isum[c], s, meta + b * 288, cols[c][b]);
  }
  for (int c = 0; c < N; ++c) _mm512_storeu_ps(dst + size_t(c) * dst_stride, acc[c]);
}

void gemm_q6_K_group(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols,
                     float* dst, size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const uint8_t* meta = quants + nb * 3072;
  const auto* a = static_cast<const char*>(act);
  for_each_tile<kMaxCols>(n_cols, [&](auto n, int64_t c) {
    tile_q6_K<decltype(n)::value>(quants, meta, nb, a + c * act_stride, act_stride,
                                  dst + c * dst_stride, dst_stride);
  });
}

void gemm_q6_K(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
               int64_t n_cols, float* dst, size_t dst_stride) {
  x86::pairs_then_groups(w, size_t(16 * nb) * sizeof(quant::BlockQ6_K), n_groups, nb, act, act_stride, n_cols, dst,
                         dst_stride, decode_q6_K_pair, gemm_q6_K_group);
}

// F16: per element e, the 16 rows' halves convert with one instruction and meet each
// column's x[e] (a broadcast) in one fmadd; even and odd elements go to two accumulators
// per column (the contract's two chains); 12 columns per tile of one group (decode, an
// odd last group), 6 per tile of two groups (prompts, below).
constexpr int kF16Cols = 12;

inline __m512 halves(const uint16_t* h, int64_t e) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + e * kGroupRows)));
}

template <int N>
void tile_f16(const uint16_t* h, int64_t k, const float* x, size_t x_stride, float* dst,
              size_t dst_stride) {
  __m512 even[N], odd[N];
  for (int c = 0; c < N; ++c) even[c] = odd[c] = _mm512_setzero_ps();
  int64_t e = 0;
  if constexpr (N == 1) {  // decode: 8 elements at a time through L1 (see through_l1)
    for (; e + 8 <= k; e += 8) {
      prefetch_stream(reinterpret_cast<const uint8_t*>(h), size_t(e) * 32, 256);
      __m512 w[8];
      for (int i = 0; i < 8; ++i) w[i] = halves(h, e + i);
      through_l1(w);
      for (int i = 0; i < 8; i += 2) {
        even[0] = _mm512_fmadd_ps(w[i], _mm512_set1_ps(x[e + i]), even[0]);
        odd[0] = _mm512_fmadd_ps(w[i + 1], _mm512_set1_ps(x[e + i + 1]), odd[0]);
      }
    }
  }
  for (; e + 2 <= k; e += 2) {
    if (e % 2 == 0) prefetch_stream(reinterpret_cast<const uint8_t*>(h), size_t(e) * 32, 64);
    const __m512 w0 = halves(h, e);
    const __m512 w1 = halves(h, e + 1);
    for (int c = 0; c < N; ++c) {
      const float* xc = x + size_t(c) * x_stride + size_t(e);
      even[c] = _mm512_fmadd_ps(w0, _mm512_set1_ps(xc[0]), even[c]);
      odd[c] = _mm512_fmadd_ps(w1, _mm512_set1_ps(xc[1]), odd[c]);
    }
  }
  if (e < k) {
    const __m512 w0 = halves(h, e);
    for (int c = 0; c < N; ++c) {
      even[c] = _mm512_fmadd_ps(w0, _mm512_set1_ps(x[size_t(c) * x_stride + size_t(e)]), even[c]);
    }
  }
  for (int c = 0; c < N; ++c) _mm512_storeu_ps(dst + size_t(c) * dst_stride, _mm512_add_ps(even[c], odd[c]));
}

// Two groups (32 rows) x up to 6 columns: per element pair, 4 converted weight loads and
// 12 broadcasts feed 24 fmadds (one group x 12 columns: 2 and 24). In cache, one core, a
// loop outside the repo: 76-79 GMAC/s one group x 12, 106-107 two x 6 (the FMA peak).
constexpr int kF16PairCols = 6;
constexpr int64_t kF16DecodeCols = 2;  // up to this many columns, one group at a time (streams)

template <int N>
void tile_f16_pair(const uint16_t* h, const uint16_t* g, int64_t k, const float* x, size_t x_stride, float* dst,
                   size_t dst_stride) {
  __m512 acc[N][2][2];  // [column][group][chain]
  for (auto& c : acc) {
    for (auto& q : c) q[0] = q[1] = _mm512_setzero_ps();
  }
  int64_t e = 0;
  for (; e + 2 <= k; e += 2) {
    prefetch_stream(reinterpret_cast<const uint8_t*>(h), size_t(e) * 32, 64);
    prefetch_stream(reinterpret_cast<const uint8_t*>(g), size_t(e) * 32, 64);
    const __m512 w0 = halves(h, e), w1 = halves(h, e + 1);
    const __m512 v0 = halves(g, e), v1 = halves(g, e + 1);
    for (int c = 0; c < N; ++c) {
      const float* xc = x + size_t(c) * x_stride + size_t(e);
      const __m512 x0 = _mm512_set1_ps(xc[0]), x1 = _mm512_set1_ps(xc[1]);
      acc[c][0][0] = _mm512_fmadd_ps(w0, x0, acc[c][0][0]);
      acc[c][0][1] = _mm512_fmadd_ps(w1, x1, acc[c][0][1]);
      acc[c][1][0] = _mm512_fmadd_ps(v0, x0, acc[c][1][0]);
      acc[c][1][1] = _mm512_fmadd_ps(v1, x1, acc[c][1][1]);
    }
  }
  if (e < k) {
    const __m512 w0 = halves(h, e), v0 = halves(g, e);
    for (int c = 0; c < N; ++c) {
      const __m512 x0 = _mm512_set1_ps(x[size_t(c) * x_stride + size_t(e)]);
      acc[c][0][0] = _mm512_fmadd_ps(w0, x0, acc[c][0][0]);
      acc[c][1][0] = _mm512_fmadd_ps(v0, x0, acc[c][1][0]);
    }
  }
  for (int c = 0; c < N; ++c) {
    for (int q = 0; q < 2; ++q) {
      _mm512_storeu_ps(dst + size_t(c) * dst_stride + size_t(q * kGroupRows), _mm512_add_ps(acc[c][q][0], acc[c][q][1]));
    }
  }
}

void gemm_f16(const void* w, int64_t n_groups, int64_t k, const float* x, size_t x_stride, int64_t n_cols,
              float* dst, size_t dst_stride) {
  x86::pairs_of_groups<kF16PairCols, kF16Cols>(
      static_cast<const uint16_t*>(w), n_groups, kGroupRows * k, n_cols, n_cols > kF16DecodeCols,
      [&](auto n, const uint16_t* a, const uint16_t* b, int64_t c, int64_t g) {
        tile_f16_pair<decltype(n)::value>(a, b, k, x + c * x_stride, x_stride, dst + c * dst_stride + g * kGroupRows,
                                          dst_stride);
      },
      [&](auto n, const uint16_t* a, int64_t c, int64_t g) {
        tile_f16<decltype(n)::value>(a, k, x + c * x_stride, x_stride, dst + c * dst_stride + g * kGroupRows, dst_stride);
      });
}

}  // namespace

// The 4-bit non-linear formats (gemm_x16_iq4.cpp).
void gemm_iq4_nl_x16(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
                     int64_t n_cols, float* dst, size_t dst_stride);
void gemm_iq4_xs_x16(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
                     int64_t n_cols, float* dst, size_t dst_stride);

// BF16 with vdpbf16ps (gemm_x16_bf16.cpp).
void gemm_bf16_x16(const void* w, int64_t n_groups, int64_t k, const uint16_t* x, size_t x_stride, int64_t n_cols,
                   float* dst, size_t dst_stride);

const GemmKernels kGemmKernels = {
    .isa = Isa::Avx512,
    .quantize_q8x = x86::quantize_q8x<kQuantKernels>,
    .gemm_q4_0_x16 = each_group<gemm<256, true>, sizeof(quant::BlockQ4_0)>,
    .gemm_q8_0_x16 = each_group<gemm<512, false>, sizeof(quant::BlockQ8_0)>,
    .gemm_f16_x16 = gemm_f16,
    .quantize_q8kx = x86::quantize_q8kx<kQuantKernels>,
    .gemm_q4_K_x16 = gemm_q4_K,
    .gemm_q6_K_x16 = gemm_q6_K,
    .gemm_iq4_nl_x16 = gemm_iq4_nl_x16,
    .gemm_iq4_xs_x16 = gemm_iq4_xs_x16,
    .gemm_bf16_x16 = gemm_bf16_x16,
};

}  // namespace tessera::cpu::avx512
