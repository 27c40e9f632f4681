// AVX2 kernels for the repacked _X16 weights (gemm_kernels.h, layout in repack.h), for
// CPUs without AVX-512: AVX2, FMA and F16C only.
//
// Register blocking. A 256-bit register holds 4 bytes of 8 rows, so a group's 16 rows
// are two halves (rows 0-7 and 8-15: the first and second 32 bytes of each 64-byte
// weight word). With 16 ymm registers a tile is one half (8 rows, one int32 / float lane
// per row) x up to kMaxCols activation columns: per block the half's weight words are
// loaded (and unpacked) once and reused for every column, each column keeps one float
// accumulator and one 16-bit partial sum, and the activation words are broadcast from
// memory. The two halves are two passes over the group (the second one from cache).
// Decode (one or two columns) does both halves in one pass instead, so the group is
// streamed from memory once, with the software prefetch running ahead of it.
//
// Integer products without VNNI: vpmaddubsw multiplies unsigned weight bytes by signed
// activation bytes and adds adjacent pairs into saturating int16; vpmaddwd then adds
// int16 pairs into int32 (with ones, or with a scale). Every sum below is exact: the
// bounds are given per layout, with |activation quant| <= 127 (BlockQ8X / BlockQ8KX come
// from the Q8_0 / Q8_K quantizers, which round x / (max|x| / 127)).
//
// Compiled with per-file target flags, reached only through gemm_dispatch.cpp; the loops
// and helpers it shares with the AVX-512 file are in kernels/x86_tile_loops.h.
//
// AVX-VNNI (vpdpbusd on ymm: Intel Alder Lake and later, some AMD client parts) is a
// variant of this level, not a level of its own: kernels/x86_avx2/gemm_x16_vnni.cpp
// compiles this file again with -mavxvnni, where __AVXVNNI__ turns the vpmaddubsw /
// vpmaddwd sums below into vpdpbusd (same integer sums, so the same bits), and
// gemm_dispatch.cpp hands that table out for the AVX2 level on CPUs that have it.
#include "backend/cpu/kernels/x86_intrin.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/kernels/x86_tile_loops.h"
#include "backend/cpu/quant_kernels.h"
#include "backend/cpu/repack.h"
#include "quant/blocks.h"

// BF16 (gemm_x16_bf16.cpp): FMAs only, one kernel for both AVX2 tables.
namespace tessera::cpu::avx2 {
void gemm_bf16_x16(const void* w, int64_t n_groups, int64_t k, const uint16_t* x, size_t x_stride, int64_t n_cols,
                   float* dst, size_t dst_stride);
}

#ifdef __AVXVNNI__
namespace tessera::cpu::avx2_vnni {
using avx2::kQuantKernels;  // the activation quantizers are the AVX2 level's
#else
namespace tessera::cpu::avx2 {
#endif
namespace {

// Columns per tile of the integer kernels: 8 weight registers (the half's unpacked words
// of a block, chunk or quarter) plus, per column, a float accumulator and an int16 /
// int32 partial sum. That is more than 16 registers from 4 columns on, but the compiler's
// spills (accumulators kept in L1 between blocks) cost less than unpacking the weights
// for fewer columns (tile widths measured: docs/performance.md, "Kernel history").
using x86::for_each_tile;
using x86::prefetch_stream;
using x86::through_l1;

constexpr int kMaxCols = 8;
// Up to this many columns a tile does both halves in one pass (decode streams the group
// from memory once).
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

// ---- Q4_0 and Q8_0 ------------------------------------------------------------------
// Register w[j] holds, for each of the half's 8 rows, the 4 weights that meet activation
// word j (elements 4j..4j+3).
//
// Q4_0: weights are nibbles 0..15. One vpmaddubsw lane is at most 2 * 15 * 127 = 3810,
// so the 8 words of a block add up in int16 to at most 8 * 3810 = 30480 < 32767; one
// vpmaddwd with ones gives the int32 sum, which starts from the block's bias.
inline void load_q4_0(const uint8_t* q, __m256i (&w)[8]) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  for (int i = 0; i < 4; ++i) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + i * 64));
    w[i] = _mm256_and_si256(raw, low);
    w[i + 4] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);
  }
}

inline __m256i block_sum_q4_0(const __m256i (&w)[8], const BlockQ8X& a) {
#ifdef __AVXVNNI__
  __m256i s = _mm256_set1_epi32(a.bias);
  for (int j = 0; j < 8; ++j) s = _mm256_dpbusd_avx_epi32(s, w[j], bcast(a.qs + 4 * j));
  return s;
#else
  __m256i s16 = _mm256_maddubs_epi16(w[0], bcast(a.qs));
  for (int j = 1; j < 8; ++j)
    s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(w[j], bcast(a.qs + 4 * j)));
  return _mm256_add_epi32(_mm256_set1_epi32(a.bias), _mm256_madd_epi16(s16, _mm256_set1_epi16(1)));
#endif
}

// Q8_0: bytes are u = q + 128 (0..255), and 255 * 127 * 2 would saturate vpmaddubsw.
// The signed weight q = u ^ 0x80 (-128..127) is split into |q| (unsigned, at most 128)
// and its sign, which moves onto the activation byte (vpsignb: a * sign(q), still within
// -127..127). One lane is then at most 2 * 128 * 127 = 32512 < 32767 (one word only:
// two would not fit), widened per word with vpmaddwd. The result is sum(q a), which is
// the contract's bias + sum(u a) because the activation quantizer sets
// bias = -128 * sum(a) (repack.h), so the bias is not added again.
//
// The block is walked word by word, each word against every column: the word's |q| and
// sign are two registers, next to the N int32 sums (all 8 words' |q| and signs at once
// fill the 16 registers, and the compiler then spills around every column).
template <int N>
inline void block_sums_q8_0(const uint8_t* q, const BlockQ8X* const (&cols)[N], int64_t b, __m256i (&s)[N]) {
#ifdef __AVXVNNI__
  // The unsigned bytes u meet the activations directly: bias + sum(u a), the contract's
  // sum itself.
  for (int c = 0; c < N; ++c) s[c] = _mm256_set1_epi32(cols[c][b].bias);
  for (int j = 0; j < 8; ++j) {
    const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + j * 64));
    for (int c = 0; c < N; ++c) s[c] = _mm256_dpbusd_avx_epi32(s[c], u, bcast(cols[c][b].qs + 4 * j));
  }
#else
  const __m256i flip = _mm256_set1_epi8(char(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  for (int c = 0; c < N; ++c) s[c] = _mm256_setzero_si256();
  for (int j = 0; j < 8; ++j) {
    const __m256i sign = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + j * 64)), flip);
    const __m256i abs = _mm256_abs_epi8(sign);
    for (int c = 0; c < N; ++c) {
      const __m256i p = _mm256_maddubs_epi16(abs, _mm256_sign_epi8(bcast(cols[c][b].qs + 4 * j), sign));
      s[c] = _mm256_add_epi32(s[c], _mm256_madd_epi16(p, ones));
    }
  }
#endif
}

// s + the products of one Q8_0 weight word (bytes u) with the activation word a4, as above
// (for decode: one column, so the sign and |q| serve once).
inline __m256i q8_0_word(__m256i s, __m256i u, __m256i a4) {
#ifdef __AVXVNNI__
  return _mm256_dpbusd_avx_epi32(s, u, a4);
#else
  const __m256i sign = _mm256_xor_si256(u, _mm256_set1_epi8(char(0x80)));
  const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(sign), _mm256_sign_epi8(a4, sign));
  return _mm256_add_epi32(s, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
#endif
}

// acc = fma(float(sum), dw * da, acc): the contract's order.
inline __m256 scale_add(__m256 acc, __m256i sum, __m256 dw, float da) {
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(da)), acc);
}

template <int N, int H, bool kQ4, bool kL1 = false>
void tile(const uint8_t* quants, const uint16_t* scales, int64_t nb, int h0, const char* act,
          size_t act_stride, float* dst, size_t dst_stride) {
  constexpr int kBlockBytes = kQ4 ? 256 : 512;
  __m256 acc[H][N];
  const BlockQ8X* cols[N];
  for (int c = 0; c < N; ++c)
    cols[c] = reinterpret_cast<const BlockQ8X*>(act + size_t(c) * act_stride);
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < N; ++c) acc[h][c] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    constexpr size_t kShare = kBlockBytes + kGroupRows * sizeof(uint16_t);  // quants + scales
    prefetch_stream(quants, size_t(b) * kShare, kShare);
    for (int h = 0; h < H; ++h) {
      const uint8_t* q = quants + b * kBlockBytes + (h0 + h) * 32;
      const __m256 dw = scales8(scales + b * kGroupRows + (h0 + h) * kHalfRows);
      if constexpr (kQ4) {
        __m256i w[8];
        load_q4_0(q, w);
        if constexpr (kL1) through_l1(w);
        for (int c = 0; c < N; ++c)
          acc[h][c] = scale_add(acc[h][c], block_sum_q4_0(w, cols[c][b]), dw, cols[c][b].d);
      } else {
        __m256i s[N];
        block_sums_q8_0<N>(q, cols, b, s);
        for (int c = 0; c < N; ++c) acc[h][c] = scale_add(acc[h][c], s[c], dw, cols[c][b].d);
      }
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < N; ++c)
      _mm256_storeu_ps(dst + size_t(c) * dst_stride + size_t((h0 + h) * kHalfRows), acc[h][c]);
  }
}

// Decode (one column): the block's lines in order, both halves of each at once, with
// the prefetch one line per line read (x86::LineCursor): it streams faster than the tile
// above, which reads a block half by half (each line twice, 32 bytes at a time) with its
// prefetch at the block's start (docs/performance.md, "Kernel history"). The integer
// sums are exact, so they match the tile's in any order.
template <bool kQ4>
void decode_tile(const uint8_t* quants, const uint16_t* scales, int64_t nb, const BlockQ8X* col, float* dst) {
  constexpr int kBlockBytes = kQ4 ? 256 : 512;
  constexpr size_t kShare = kBlockBytes + kGroupRows * sizeof(uint16_t);  // quants + scales
  x86::LineCursor prefetch(quants);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q = quants + b * kBlockBytes;
    const uint8_t* upto = quants + size_t(b + 1) * kShare + x86::kAhead;
    const BlockQ8X& a = col[b];
#ifdef __AVXVNNI__
    __m256i s[2] = {_mm256_set1_epi32(a.bias), _mm256_set1_epi32(a.bias)};
#else
    __m256i s[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};  // Q4_0: int16 (block_sum_q4_0)
#endif
    for (int l = 0; l < kBlockBytes / 64; ++l) {
      prefetch.step(upto);
      for (int h = 0; h < 2; ++h) {
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + l * 64 + h * 32));
        if constexpr (kQ4) {  // words l and l + 4 (load_q4_0)
          const __m256i low = _mm256_set1_epi8(0x0F);
          const __m256i lo = _mm256_and_si256(raw, low), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);
#ifdef __AVXVNNI__
          s[h] = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(s[h], lo, bcast(a.qs + 4 * l)), hi,
                                         bcast(a.qs + 4 * (l + 4)));
#else
          s[h] = _mm256_add_epi16(s[h], _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast(a.qs + 4 * l)),
                                                         _mm256_maddubs_epi16(hi, bcast(a.qs + 4 * (l + 4)))));
#endif
        } else {
          s[h] = q8_0_word(s[h], raw, bcast(a.qs + 4 * l));
        }
      }
    }
    prefetch.step(upto);
    for (int h = 0; h < 2; ++h) {
#ifndef __AVXVNNI__
      if constexpr (kQ4) s[h] = _mm256_add_epi32(_mm256_set1_epi32(a.bias), _mm256_madd_epi16(s[h], _mm256_set1_epi16(1)));
#endif
      acc[h] = scale_add(acc[h], s[h], scales8(scales + b * kGroupRows + h * kHalfRows), a.d);
    }
  }
  for (int h = 0; h < 2; ++h) _mm256_storeu_ps(dst + h * kHalfRows, acc[h]);
}

template <int kBlockBytes, bool kQ4>
void gemm(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols, float* dst,
          size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const auto* scales = reinterpret_cast<const uint16_t*>(quants + nb * kBlockBytes);
  const auto* a = static_cast<const char*>(act);
  for_each_tile<kMaxCols>(n_cols, [&](auto n, int64_t c) {
    constexpr int N = decltype(n)::value;
    if constexpr (N == 1) {
      if (kQ4 && x86::decode_through_l1()) {  // Q4_0 decode on AMD: see x86::decode_through_l1
        return tile<1, 2, true, true>(quants, scales, nb, 0, a + c * act_stride, act_stride, dst + c * dst_stride,
                                      dst_stride);
      }
      return decode_tile<kQ4>(quants, scales, nb, reinterpret_cast<const BlockQ8X*>(a + c * act_stride),
                              dst + c * dst_stride);
    }
    over_halves<N>([&](auto halves, int h0) {
      tile<N, decltype(halves)::value, kQ4>(quants, scales, nb, h0, a + c * act_stride, act_stride,
                                            dst + c * dst_stride, dst_stride);
    });
  });
}

// ---- Q4_K -----------------------------------------------------------------------------
// Per super-block, the packed scale words of the half's rows decode in registers into
// the 8 sub-block scales and the 8 mins, each as the int16 pair (x, x) or (m_2j, m_2j+1)
// of a row's int32 lane. Per 64-element chunk each column's two sub-block sums are
// vpmaddubsw of nibbles (lane <= 2 * 15 * 127 = 3810) over 8 words, in int16 at most
// 8 * 3810 = 30480 < 32767; vpmaddwd with the (sc, sc) pair then gives sc * dot in int32
// (<= 2 * 63 * 30480), added into the super-block's sum (<= 8 * 63 * 32 * 15 * 127,
// about 3.1e7). The mins meet the activation sub-block sums (int16 pairs, |.| <= 32 * 127)
// with vpmaddwd.
//
// With AVX-VNNI each column's sub-block dot is a vpdpbusd sum in int32 (<= 32 * 15 * 127)
// and vpmulld scales it; the scales are then int32 lanes.
struct Q4KScales {
  __m256i sc[8];  // sub-block scale j as the int16 pair (sc_j, sc_j) of each row (VNNI: int32)
  __m256i m[4];   // mins of sub-blocks 2j, 2j + 1 as an int16 pair
};

// vpshufb control taking bytes lo and hi of each int32 lane into its two int16 halves.
inline __m256i pair_control(int lo, int hi) {
  const auto z = char(0x80);
  return _mm256_setr_epi8(char(lo), z, char(hi), z, char(4 + lo), z, char(4 + hi), z, char(8 + lo),
                          z, char(8 + hi), z, char(12 + lo), z, char(12 + hi), z, char(lo), z,
                          char(hi), z, char(4 + lo), z, char(4 + hi), z, char(8 + lo), z,
                          char(8 + hi), z, char(12 + lo), z, char(12 + hi), z);
}

#ifdef __AVXVNNI__
// vpshufb control taking byte j of each int32 lane into the whole lane (zero-extended).
inline __m256i int32_control(int j) {
  const auto z = char(0x80);
  const __m128i half = _mm_setr_epi8(char(j), z, z, z, char(4 + j), z, z, z, char(8 + j), z, z, z, char(12 + j), z, z, z);
  return _mm256_set_m128i(half, half);
}
#endif

inline void decode_q4_K(const uint8_t* words, Q4KScales& s) {
  const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words));
  const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 64));
  const __m256i w2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 128));
  const __m256i low6 = _mm256_set1_epi8(0x3F);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i top2 = _mm256_set1_epi8(char(0xC0));
  // Bytes j of these words are the scales / mins of sub-blocks j (lo) and 4 + j (hi).
  const __m256i sc_lo = _mm256_and_si256(w0, low6);
  const __m256i m_lo = _mm256_and_si256(w1, low6);
  const __m256i sc_hi =
      _mm256_or_si256(_mm256_and_si256(w2, low4), _mm256_srli_epi32(_mm256_and_si256(w0, top2), 2));
  const __m256i m_hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, 4), low4),
                                       _mm256_srli_epi32(_mm256_and_si256(w1, top2), 2));
  for (int j = 0; j < 4; ++j) {
#ifdef __AVXVNNI__
    const __m256i dup = int32_control(j);
#else
    const __m256i dup = pair_control(j, j);
#endif
    s.sc[j] = _mm256_shuffle_epi8(sc_lo, dup);
    s.sc[4 + j] = _mm256_shuffle_epi8(sc_hi, dup);
  }
  s.m[0] = _mm256_shuffle_epi8(m_lo, pair_control(0, 1));
  s.m[1] = _mm256_shuffle_epi8(m_lo, pair_control(2, 3));
  s.m[2] = _mm256_shuffle_epi8(m_hi, pair_control(0, 1));
  s.m[3] = _mm256_shuffle_epi8(m_hi, pair_control(2, 3));
}

// A sub-block's running dot of nibbles with activation bytes: int16 lanes (vpmaddubsw,
// bounds above), with AVX-VNNI int32 ones (vpdpbusd); scaled() widens it times the scale.
inline __m256i sub_sum(__m256i sum, __m256i nibbles, __m256i a) {
#ifdef __AVXVNNI__
  return _mm256_dpbusd_avx_epi32(sum, nibbles, a);
#else
  return _mm256_add_epi16(sum, _mm256_maddubs_epi16(nibbles, a));
#endif
}

inline __m256i scaled(__m256i sum, __m256i sc) {
#ifdef __AVXVNNI__
  return _mm256_mullo_epi32(sum, sc);
#else
  return _mm256_madd_epi16(sum, sc);
#endif
}

// Chunk i (64 elements at q) of one half against one column, word by word (nothing held
// across words; the 16 unpacked registers of a chunk through L1 are slower): isum + the
// chunk's two scaled sub-block dots.
inline __m256i q4_K_chunk(const uint8_t* words, const int8_t* q, const Q4KScales& s, int i, __m256i isum) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  // The compiler would otherwise share the broadcasts between the halves and groups that
  // meet the same activations, keeping 16 registers of them live across chunks, most
  // spilled to the stack; broadcast from memory, they are loads.
  asm volatile("" : "+r"(q));
  __m256i slo = _mm256_setzero_si256(), shi = _mm256_setzero_si256();
  for (int w = 0; w < 8; ++w) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + w * 64));
    slo = sub_sum(slo, _mm256_and_si256(raw, low), bcast(q + 4 * w));
    shi = sub_sum(shi, _mm256_and_si256(_mm256_srli_epi16(raw, 4), low), bcast(q + 32 + 4 * w));
  }
  return _mm256_add_epi32(isum, _mm256_add_epi32(scaled(slo, s.sc[2 * i]), scaled(shi, s.sc[2 * i + 1])));
}

// The contract's two fmas of a super-block for one half and one column: acc plus the
// scaled dots minus the scaled mins (activation sub-block sums against the mins).
inline __m256 q4_K_block_end(__m256 acc, __m256i isum, const Q4KScales& s, const uint8_t* mb, int half,
                             const BlockQ8KX& a) {
  __m256i imin = _mm256_madd_epi16(s.m[0], _mm256_set1_epi32(a.sums32[0]));
  for (int j = 1; j < 4; ++j) imin = _mm256_add_epi32(imin, _mm256_madd_epi16(s.m[j], _mm256_set1_epi32(a.sums32[j])));
  const __m256 da = _mm256_set1_ps(a.d);
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(scales8(mb + half * 16), da), acc);
  return _mm256_fnmadd_ps(_mm256_cvtepi32_ps(imin), _mm256_mul_ps(scales8(mb + 32 + half * 16), da), acc);
}

// One super-block of one half: isum[c] (scaled sub-block dots) for every column.
// step(i) is called before chunk i (the decode tile's prefetch).
template <int N, typename Step>
inline void q4_K_sums(const uint8_t* sb, const Q4KScales& s, const BlockQ8KX* const (&a)[N],
                      __m256i (&isum)[N], Step step) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  for (int c = 0; c < N; ++c) isum[c] = _mm256_setzero_si256();
  if constexpr (N == 1) {
    for (int i = 0; i < 4; ++i) {
      step(i);
      isum[0] = q4_K_chunk(sb + i * 512, a[0]->qs + 64 * i, s, i, isum[0]);
    }
    return;
  }
  for (int i = 0; i < 4; ++i) {
    step(i);
    __m256i lo[8], hi[8];
    for (int w = 0; w < 8; ++w) {
      const __m256i raw =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + i * 512 + w * 64));
      lo[w] = _mm256_and_si256(raw, low);
      hi[w] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);
    }
    for (int c = 0; c < N; ++c) {
      const int8_t* q = a[c]->qs + 64 * i;
      __m256i slo = _mm256_setzero_si256(), shi = _mm256_setzero_si256();
      for (int w = 0; w < 8; ++w) {
        slo = sub_sum(slo, lo[w], bcast(q + 4 * w));
        shi = sub_sum(shi, hi[w], bcast(q + 32 + 4 * w));
      }
      isum[c] = _mm256_add_epi32(isum[c], _mm256_add_epi32(scaled(slo, s.sc[2 * i]), scaled(shi, s.sc[2 * i + 1])));
    }
  }
}

template <int N, int H>
void tile_q4_K(const uint8_t* quants, const uint8_t* meta, int64_t nb, int h0, const char* act,
               size_t act_stride, float* dst, size_t dst_stride) {
  __m256 acc[H][N];
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < N; ++c) acc[h][c] = _mm256_setzero_ps();
  }
  x86::BlockPrefetch<2048, 256> pf(quants, size_t(nb) * (2048 + 256), nb, x86::kAhead);
  for (int64_t b = 0; b < nb; ++b, pf.advance()) {
    const uint8_t* mb = meta + b * 256;
    if constexpr (H == 1) pf.all();
    const BlockQ8KX* cols[N];
    for (int c = 0; c < N; ++c)
      cols[c] = reinterpret_cast<const BlockQ8KX*>(act + size_t(c) * act_stride) + b;
    for (int h = 0; h < H; ++h) {
      const int half = h0 + h;
      Q4KScales s;
      decode_q4_K(mb + 64 + half * 32, s);
      __m256i isum[N];
      q4_K_sums<N>(quants + b * 2048 + half * 32, s, cols, isum, [&](int i) {
        // Decode streams: the block's prefetch spread over its 8 chunks (x86_tile_loops.h).
        if constexpr (H == 2) pf.part(4 * h + i, 8);
      });
      for (int c = 0; c < N; ++c) acc[h][c] = q4_K_block_end(acc[h][c], isum[c], s, mb, half, *cols[c]);
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < N; ++c)
      _mm256_storeu_ps(dst + size_t(c) * dst_stride + size_t((h0 + h) * kHalfRows), acc[h][c]);
  }
}

// Decode in pairs: one column against G = 2 groups at once, chunk by chunk
// (512 bytes of each group in turn). Reading one stream, one core overlaps little of
// these tiles' compute with its memory reads; the hardware prefetchers follow each group
// as a stream of its own, and two side by side keep more lines in flight. Q4_0 and Q8_0
// gain nothing that way and stay one group at a time (both measured:
// docs/performance.md, "Kernel history").
// Each output's operations and their order are those of tile_q4_K.
template <int G>
void decode_q4_K_groups(const uint8_t* w, size_t group_bytes, int64_t nb, const BlockQ8KX* a, float* dst) {
  __m256 acc[G][2];
  static_assert(G == 2, "the prefetch below is written for pairs");
  x86::PairPrefetch<2048, 256> pf(w, group_bytes, nb);
  for (int g = 0; g < G; ++g) acc[g][0] = acc[g][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    Q4KScales s[G][2];
    __m256i isum[G][2];
    for (int g = 0; g < G; ++g) {
      const uint8_t* mb = w + g * group_bytes + nb * 2048 + b * 256;
      for (int h = 0; h < 2; ++h) {
        decode_q4_K(mb + 64 + h * 32, s[g][h]);
        isum[g][h] = _mm256_setzero_si256();
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        const uint8_t* quants = w + g * group_bytes;
        pf.group[g].part(i, 4);
        for (int h = 0; h < 2; ++h)
          isum[g][h] = q4_K_chunk(quants + b * 2048 + i * 512 + h * 32, a[b].qs + 64 * i, s[g][h], i, isum[g][h]);
      }
    }
    for (int g = 0; g < G; ++g) {
      const uint8_t* mb = w + g * group_bytes + nb * 2048 + b * 256;
      for (int h = 0; h < 2; ++h) acc[g][h] = q4_K_block_end(acc[g][h], isum[g][h], s[g][h], mb, h, a[b]);
      pf.group[g].advance();
    }
  }
  for (int g = 0; g < G; ++g) {
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(dst + g * kGroupRows + h * kHalfRows, acc[g][h]);
  }
}

void gemm_q4_K_group(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols,
                     float* dst, size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const uint8_t* meta = quants + nb * 2048;
  const auto* a = static_cast<const char*>(act);
  for_each_tile<kMaxCols>(n_cols, [&](auto n, int64_t c) {
    constexpr int N = decltype(n)::value;
    over_halves<N>([&](auto halves, int h0) {
      tile_q4_K<N, decltype(halves)::value>(quants, meta, nb, h0, a + c * act_stride, act_stride,
                                            dst + c * dst_stride, dst_stride);
    });
  });
}

void gemm_q4_K(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
               int64_t n_cols, float* dst, size_t dst_stride) {
  x86::pairs_then_groups(w, size_t(16 * nb) * sizeof(quant::BlockQ4_K), n_groups, nb, act, act_stride, n_cols, dst,
                         dst_stride, decode_q4_K_groups<2>, gemm_q4_K_group);
}

// ---- Q6_K -----------------------------------------------------------------------------
// Per quarter (32 elements, two 16-element sub-blocks) of each half of the super-block,
// the 6-bit quants (0..63) are assembled from the ql and qh words once per tile. One
// vpmaddubsw lane is at most 2 * 63 * 127 = 16002, so two words add up in int16 to at
// most 32004 < 32767; vpmaddwd with the sub-block's (sc, sc) pair (|sc| <= 128) gives
// sc * dot in int32. The -32 offset comes back as 32 * sum_s sc_s asum_s through
// vpmaddwd of the (sc_2j, sc_2j+1) pairs with the activation's 16-element sums
// (|.| <= 16 * 127). |isum| <= 16 * 128 * 16 * 63 * 127 (about 2.6e8) < 2^31.

struct Q6KScales {
  __m256i sc[16];    // sub-block scale as the int16 pair (sc, sc) of each row (VNNI: int32)
  __m256i pairs[8];  // scales of sub-blocks 2j, 2j + 1 as an int16 pair
};

inline void decode_q6_K(const uint8_t* meta, int half, Q6KScales& s) {
  const __m256i low16 = _mm256_set1_epi32(0xFFFF);
  __m256i sc32[16];
  for (int j = 0; j < 16; ++j) {
    sc32[j] = _mm256_cvtepi8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(meta + 16 * j + half * kHalfRows)));
#ifdef __AVXVNNI__
    s.sc[j] = sc32[j];
#else
    s.sc[j] = _mm256_or_si256(_mm256_and_si256(sc32[j], low16), _mm256_slli_epi32(sc32[j], 16));
#endif
  }
  for (int j = 0; j < 8; ++j) {
    s.pairs[j] = _mm256_or_si256(_mm256_and_si256(sc32[2 * j], low16),
                                 _mm256_slli_epi32(sc32[2 * j + 1], 16));
  }
}

// The 8 weight words of quarter k of part p: (low or high nibble of ql) | (2 qh bits) << 4.
inline void load_q6_K_quarter(const uint8_t* sb, int p, int k, __m256i (&op)[8]) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  for (int w = 0; w < 8; ++w) {
    __m256i x =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + (16 * p + 8 * (k & 1) + w) * 64));
    const __m256i hb =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 2048 + (8 * p + w) * 64));
    if (k >= 2) x = _mm256_srli_epi16(x, 4);
    __m256i hs = hb;
    if (k == 0) hs = _mm256_slli_epi16(hb, 4);
    if (k == 1) hs = _mm256_slli_epi16(hb, 2);
    if (k == 3) hs = _mm256_srli_epi16(hb, 2);
    op[w] = _mm256_or_si256(_mm256_and_si256(x, low), _mm256_and_si256(hs, bits45));
  }
}

// sc * (dot of one 16-element sub-block): words op[0..3] against activation words q.
inline __m256i sub_block_q6_K(const __m256i* op, const int8_t* q, __m256i sc) {
#ifdef __AVXVNNI__
  __m256i s = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), op[0], bcast(q));
  for (int w = 1; w < 4; ++w) s = _mm256_dpbusd_avx_epi32(s, op[w], bcast(q + 4 * w));
  return _mm256_mullo_epi32(s, sc);  // |s| <= 16 * 63 * 127
#else
  const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(op[0], bcast(q)),
                                       _mm256_maddubs_epi16(op[1], bcast(q + 4)));
  const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(op[2], bcast(q + 8)),
                                       _mm256_maddubs_epi16(op[3], bcast(q + 12)));
  return _mm256_add_epi32(_mm256_madd_epi16(s01, sc), _mm256_madd_epi16(s23, sc));
#endif
}

// The -32 offset and the contract's fma of a super-block for one half and one column.
inline __m256 q6_K_block_end(__m256 acc, __m256i isum, const Q6KScales& s, __m256 d, const BlockQ8KX& a) {
  __m256i offset = _mm256_madd_epi16(s.pairs[0], _mm256_set1_epi32(a.sums16[0]));
  for (int j = 1; j < 8; ++j) offset = _mm256_add_epi32(offset, _mm256_madd_epi16(s.pairs[j], _mm256_set1_epi32(a.sums16[j])));
  const __m256i total = _mm256_sub_epi32(isum, _mm256_slli_epi32(offset, 5));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_mul_ps(d, _mm256_set1_ps(a.d)), acc);
}

template <int N, int H>
void tile_q6_K(const uint8_t* quants, const uint8_t* meta, int64_t nb, int h0, const char* act,
               size_t act_stride, float* dst, size_t dst_stride) {
  __m256 acc[H][N];
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < N; ++c) acc[h][c] = _mm256_setzero_ps();
  }
  x86::BlockPrefetch<3072, 288> pf(quants, size_t(nb) * (3072 + 288), nb, x86::kAhead);
  for (int64_t b = 0; b < nb; ++b, pf.advance()) {
    if constexpr (H == 1) pf.all();
    const BlockQ8KX* cols[N];
    for (int c = 0; c < N; ++c)
      cols[c] = reinterpret_cast<const BlockQ8KX*>(act + size_t(c) * act_stride) + b;
    for (int h = 0; h < H; ++h) {
      const int half = h0 + h;
      const uint8_t* sb = quants + b * 3072 + half * 32;
      Q6KScales s;
      decode_q6_K(meta + b * 288, half, s);
      __m256i isum[N];
      for (int c = 0; c < N; ++c) isum[c] = _mm256_setzero_si256();
      for (int p = 0; p < 2; ++p) {
        for (int k = 0; k < 4; ++k) {
          // Decode streams: the block's prefetch spread over its 16 quarters (x86_tile_loops.h).
          if constexpr (H == 2) pf.part(8 * h + 4 * p + k, 16);
          __m256i op[8];
          load_q6_K_quarter(sb, p, k, op);
          if constexpr (N == 1) through_l1(op);
          const int sub = 8 * p + 2 * k;
          for (int c = 0; c < N; ++c) {
            const int8_t* q = cols[c]->qs + 128 * p + 32 * k;
            isum[c] = _mm256_add_epi32(
                isum[c], _mm256_add_epi32(sub_block_q6_K(op, q, s.sc[sub]),
                                          sub_block_q6_K(op + 4, q + 16, s.sc[sub + 1])));
          }
        }
      }
      const __m256 d = scales8(meta + b * 288 + 256 + half * 16);
      for (int c = 0; c < N; ++c) acc[h][c] = q6_K_block_end(acc[h][c], isum[c], s, d, *cols[c]);
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < N; ++c)
      _mm256_storeu_ps(dst + size_t(c) * dst_stride + size_t((h0 + h) * kHalfRows), acc[h][c]);
  }
}

// Decode in pairs, as decode_q4_K_groups: quarter by quarter, both halves of each group
// in turn. Each output's operations and their order are those of tile_q6_K. The L1
// round trip of the assembled quants (x86::decode_through_l1) only where the CPU is
// AMD's: on the Intel Xeon measured the pairs run faster without it.
template <int G, bool kL1>
void decode_q6_K_groups(const uint8_t* w, size_t group_bytes, int64_t nb, const BlockQ8KX* a, float* dst) {
  __m256 acc[G][2];
  static_assert(G == 2, "the prefetch below is written for pairs");
  x86::PairPrefetch<3072, 288> pf(w, group_bytes, nb);
  for (int g = 0; g < G; ++g) acc[g][0] = acc[g][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    Q6KScales s[G][2];
    __m256i isum[G][2];
    for (int g = 0; g < G; ++g) {
      for (int h = 0; h < 2; ++h) {
        decode_q6_K(w + g * group_bytes + nb * 3072 + b * 288, h, s[g][h]);
        isum[g][h] = _mm256_setzero_si256();
      }
    }
    for (int p = 0; p < 2; ++p) {
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {  // unrolled: each quarter k assembles its quants its own way
        const int sub = 8 * p + 2 * k;
        for (int g = 0; g < G; ++g) {
          const uint8_t* quants = w + g * group_bytes;
          pf.group[g].part(4 * p + k, 8);
          for (int h = 0; h < 2; ++h) {
            __m256i op[8];
            const uint8_t* sb = quants + b * 3072 + h * 32;
            asm volatile("" : "+r"(sb));  // one base register, not an induction variable per word
            load_q6_K_quarter(sb, p, k, op);
            if constexpr (kL1) through_l1(op);
            const int8_t* q = a[b].qs + 128 * p + 32 * k;
            asm volatile("" : "+r"(q));  // as in q4_K_chunk: broadcasts are loads, not registers
            isum[g][h] = _mm256_add_epi32(isum[g][h], _mm256_add_epi32(sub_block_q6_K(op, q, s[g][h].sc[sub]),
                                                                       sub_block_q6_K(op + 4, q + 16, s[g][h].sc[sub + 1])));
          }
        }
      }
    }
    for (int g = 0; g < G; ++g) {
      for (int h = 0; h < 2; ++h) {
        const __m256 d = scales8(w + g * group_bytes + nb * 3072 + b * 288 + 256 + h * 16);
        acc[g][h] = q6_K_block_end(acc[g][h], isum[g][h], s[g][h], d, a[b]);
      }
      pf.group[g].advance();
    }
  }
  for (int g = 0; g < G; ++g) {
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(dst + g * kGroupRows + h * kHalfRows, acc[g][h]);
  }
}

void gemm_q6_K_group(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols,
                     float* dst, size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const uint8_t* meta = quants + nb * 3072;
  const auto* a = static_cast<const char*>(act);
  for_each_tile<kMaxCols>(n_cols, [&](auto n, int64_t c) {
    constexpr int N = decltype(n)::value;
    over_halves<N>([&](auto halves, int h0) {
      tile_q6_K<N, decltype(halves)::value>(quants, meta, nb, h0, a + c * act_stride, act_stride,
                                            dst + c * dst_stride, dst_stride);
    });
  });
}

void gemm_q6_K(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
               int64_t n_cols, float* dst, size_t dst_stride) {
  x86::pairs_then_groups(w, size_t(16 * nb) * sizeof(quant::BlockQ6_K), n_groups, nb, act, act_stride, n_cols, dst,
                         dst_stride,
                         x86::decode_through_l1() ? decode_q6_K_groups<2, true> : decode_q6_K_groups<2, false>,
                         gemm_q6_K_group);
}

// ---- F16 ------------------------------------------------------------------------------
// Decode (one or two columns) streams the group from memory once: per element e, the
// half's 8 halves convert with one instruction and meet each column's x[e] (a broadcast)
// in one fmadd; even and odd elements go to two accumulators per column (the contract's
// two chains).
//
// Prompts (three columns or more) are blocked instead: the group's weights are converted
// to floats one K-block at a time (kF16Block elements x 16 rows, 16 KiB, in L1) and
// reused by every column of a column block, and the tile is all 16 rows x kF16Cols
// columns: per element two weight loads and three broadcasts feed six fmadds, with no
// conversion in the loop (one conversion per element and row per column block instead of
// one per tile). Both chains of every output of the column block live in `chains` between
// K-blocks, stored and reloaded exactly, so each output is still the contract's two
// chains in element order. The first column block of a group reads its weights from
// memory, one 8 KiB K-block at a time: left to the conversion loop, each K-block's 128
// lines come in one burst the core waits for. So the tiles of one K-block prefetch the
// next one into L2, each a few lines in its first element pairs, spread over the column
// block (measured: docs/performance.md, "Kernel history").
constexpr int kF16Block = 256;      // elements per K-block (even: the chains keep their parity)
constexpr int kF16Cols = 3;         // columns per prompt tile: 12 accumulators, 2 weights, 1 broadcast
constexpr int kF16ColBlock = 120;   // columns per column block (their chains: 15 KiB)
constexpr int kF16DecodeCols = 2;   // up to this many columns, the streaming decode tile
constexpr int64_t kF16Lines = kF16Block * kGroupRows * 2 / 64;  // cache lines of one K-block

inline __m256 halves8(const uint16_t* h, int64_t e, int half) {
  return scales8(h + e * kGroupRows + half * kHalfRows);
}

template <int N>
void decode_tile_f16(const uint16_t* h, int64_t k, const float* x, size_t x_stride, float* dst,
                     size_t dst_stride) {
  constexpr int H = 2;
  __m256 even[H][N], odd[H][N];
  for (int r = 0; r < H; ++r) {
    for (int c = 0; c < N; ++c) even[r][c] = odd[r][c] = _mm256_setzero_ps();
  }
  int64_t e = 0;
  for (; e + 2 <= k; e += 2) {
    prefetch_stream(reinterpret_cast<const uint8_t*>(h), size_t(e) * 32, 64);
    for (int r = 0; r < H; ++r) {
      const __m256 w0 = halves8(h, e, r);
      const __m256 w1 = halves8(h, e + 1, r);
      for (int c = 0; c < N; ++c) {
        const float* xc = x + size_t(c) * x_stride + size_t(e);
        even[r][c] = _mm256_fmadd_ps(w0, _mm256_broadcast_ss(xc), even[r][c]);
        odd[r][c] = _mm256_fmadd_ps(w1, _mm256_broadcast_ss(xc + 1), odd[r][c]);
      }
    }
  }
  if (e < k) {
    for (int r = 0; r < H; ++r) {
      const __m256 w0 = halves8(h, e, r);
      for (int c = 0; c < N; ++c) {
        even[r][c] = _mm256_fmadd_ps(w0, _mm256_broadcast_ss(x + size_t(c) * x_stride + size_t(e)),
                                     even[r][c]);
      }
    }
  }
  for (int r = 0; r < H; ++r) {
    for (int c = 0; c < N; ++c) {
      _mm256_storeu_ps(dst + size_t(c) * dst_stride + size_t(r * kHalfRows), _mm256_add_ps(even[r][c], odd[r][c]));
    }
  }
}

// The chains of one output column across K-blocks: [chain][row].
struct F16Chains {
  alignas(32) float v[2][kGroupRows];
};

// Elements [e0, e0 + n) of N columns against the converted block wf ([n][16] floats),
// continuing the chains in ch; prefetches pf_lines lines from pf (one per element pair).
template <int N>
void prompt_tile_f16(const float* wf, int64_t n, const float* x, size_t x_stride, F16Chains* ch,
                     const char* pf, int64_t pf_lines) {
  __m256 acc[N][2][2];  // [column][half][chain]
  for (int c = 0; c < N; ++c) {
    for (int h = 0; h < 2; ++h) {
      for (int p = 0; p < 2; ++p) acc[c][h][p] = _mm256_load_ps(ch[c].v[p] + h * kHalfRows);
    }
  }
  auto step = [&](int64_t e, int p) {
    const __m256 lo = _mm256_load_ps(wf + e * kGroupRows);
    const __m256 hi = _mm256_load_ps(wf + e * kGroupRows + kHalfRows);
    for (int c = 0; c < N; ++c) {
      const __m256 xb = _mm256_broadcast_ss(x + size_t(c) * x_stride + size_t(e));
      acc[c][0][p] = _mm256_fmadd_ps(lo, xb, acc[c][0][p]);
      acc[c][1][p] = _mm256_fmadd_ps(hi, xb, acc[c][1][p]);
    }
  };
  int64_t e = 0;
  for (; e + 2 <= n; e += 2) {
    if (e / 2 < pf_lines) _mm_prefetch(pf + e / 2 * 64, _MM_HINT_T1);
    step(e, 0);
    step(e + 1, 1);
  }
  if (e < n) step(e, 0);
  for (int c = 0; c < N; ++c) {
    for (int h = 0; h < 2; ++h) {
      for (int p = 0; p < 2; ++p) _mm256_store_ps(ch[c].v[p] + h * kHalfRows, acc[c][h][p]);
    }
  }
}

// Three or more columns: column blocks of kF16ColBlock, K-blocks of kF16Block.
void prompt_gemm_f16(const uint16_t* h, int64_t k, const float* x, size_t x_stride, int64_t n_cols,
                     float* dst, size_t dst_stride) {
  alignas(32) float wf[kF16Block * kGroupRows];
  F16Chains chains[kF16ColBlock];
  for (int64_t c0 = 0; c0 < n_cols; c0 += kF16ColBlock) {
    const int64_t nc = std::min<int64_t>(kF16ColBlock, n_cols - c0);
    for (int64_t c = 0; c < nc; ++c) chains[c] = F16Chains{};
    for (int64_t e0 = 0; e0 < k; e0 += kF16Block) {
      const int64_t n = std::min<int64_t>(kF16Block, k - e0);
      for (int64_t i = 0; i < n * 2; ++i) {
        _mm256_store_ps(wf + i * kHalfRows, scales8(h + (e0 * 2 + i) * kHalfRows));
      }
      const float* xb = x + size_t(c0) * x_stride + size_t(e0);
      const char* next = reinterpret_cast<const char*>(h + (e0 + kF16Block) * kGroupRows);
      const int64_t per_tile = (kF16Lines * kF16Cols + nc - 1) / nc;
      for_each_tile<kF16Cols>(nc, [&](auto cols, int64_t c) {
        const int64_t l0 = std::min(kF16Lines, c / kF16Cols * per_tile);
        prompt_tile_f16<decltype(cols)::value>(wf, n, xb + size_t(c) * x_stride, x_stride, chains + c,
                                               next + l0 * 64, std::min(per_tile, kF16Lines - l0));
      });
    }
    for (int64_t c = 0; c < nc; ++c) {
      for (int hh = 0; hh < 2; ++hh) {
        _mm256_storeu_ps(dst + size_t(c0 + c) * dst_stride + size_t(hh * kHalfRows),
                         _mm256_add_ps(_mm256_load_ps(chains[c].v[0] + hh * kHalfRows),
                                       _mm256_load_ps(chains[c].v[1] + hh * kHalfRows)));
      }
    }
  }
}

void gemm_f16(const void* w, int64_t n_groups, int64_t k, const float* x, size_t x_stride, int64_t n_cols,
              float* dst, size_t dst_stride) {
  for (int64_t g = 0; g < n_groups; ++g) {
    const uint16_t* h = static_cast<const uint16_t*>(w) + g * kGroupRows * k;
    float* d = dst + g * kGroupRows;
    if (n_cols > kF16DecodeCols) {
      prompt_gemm_f16(h, k, x, x_stride, n_cols, d, dst_stride);
    } else if (n_cols == 2) {
      decode_tile_f16<2>(h, k, x, x_stride, d, dst_stride);
    } else if (n_cols == 1) {
      decode_tile_f16<1>(h, k, x, x_stride, d, dst_stride);
    }
  }
}

}  // namespace

// The 4-bit non-linear formats (gemm_x16_iq4.cpp).
void gemm_iq4_nl_x16(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
                     int64_t n_cols, float* dst, size_t dst_stride);
void gemm_iq4_xs_x16(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
                     int64_t n_cols, float* dst, size_t dst_stride);

const GemmKernels kGemmKernels = {
    .isa = Isa::Avx2,
    .quantize_q8x = x86::quantize_q8x<kQuantKernels>,
    .gemm_q4_0_x16 = each_group<gemm<256, true>, sizeof(quant::BlockQ4_0)>,
    .gemm_q8_0_x16 = each_group<gemm<512, false>, sizeof(quant::BlockQ8_0)>,
    .gemm_f16_x16 = gemm_f16,
    .quantize_q8kx = x86::quantize_q8kx<kQuantKernels>,
    .gemm_q4_K_x16 = gemm_q4_K,
    .gemm_q6_K_x16 = gemm_q6_K,
    .gemm_iq4_nl_x16 = gemm_iq4_nl_x16,
    .gemm_iq4_xs_x16 = gemm_iq4_xs_x16,
    .gemm_bf16_x16 = avx2::gemm_bf16_x16,
};

}  // namespace tessera::cpu::avx2 (or avx2_vnni)
