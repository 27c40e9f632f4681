// GGUF quantized block layouts, byte for byte as they are stored in files.
//
// Every block covers a fixed number of consecutive elements of a row. Scales marked
// "fp16" are IEEE half floats stored as raw bits (little-endian, like everything in
// GGUF). The "32-element" (legacy) formats hold one scale per 32 elements; the k-quants
// group QK_K = 256 elements into a super-block of sub-blocks whose scales are themselves
// quantized against one or two fp16 super-scales.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/dtype.h"

namespace tessera::quant {

inline constexpr int QK4_0 = 32;
inline constexpr int QK4_1 = 32;
inline constexpr int QK5_0 = 32;
inline constexpr int QK5_1 = 32;
inline constexpr int QK8_0 = 32;
inline constexpr int QK8_1 = 32;
inline constexpr int QK_K = 256;
/// Bytes of the packed 6-bit scales and mins of Q4_K and Q5_K.
inline constexpr int K_SCALE_SIZE = 12;

/// Q4_0: x = d * (q - 8), q in [0, 15].
/// qs[j] holds element j in its low nibble and element j + 16 in its high nibble.
struct BlockQ4_0 {
  uint16_t d;             // fp16 scale
  uint8_t qs[QK4_0 / 2];  // nibbles
};

/// Q4_1: x = d * q + m, q in [0, 15]; nibbles packed as in Q4_0.
struct BlockQ4_1 {
  uint16_t d;  // fp16 scale
  uint16_t m;  // fp16 minimum (added)
  uint8_t qs[QK4_1 / 2];
};

/// Q5_0: x = d * (q - 16), q in [0, 31]. The low 4 bits are nibbles packed as in Q4_0;
/// bit 4 of element j is bit j of qh read as a little-endian uint32.
struct BlockQ5_0 {
  uint16_t d;             // fp16 scale
  uint8_t qh[4];          // fifth bits, element j at bit j
  uint8_t qs[QK5_0 / 2];  // low nibbles
};

/// Q5_1: x = d * q + m, q in [0, 31]; bits packed as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;  // fp16 scale
  uint16_t m;  // fp16 minimum (added)
  uint8_t qh[4];
  uint8_t qs[QK5_1 / 2];
};

/// Q8_0: x = d * q, q in [-127, 127], elements in order.
struct BlockQ8_0 {
  uint16_t d;  // fp16 scale
  int8_t qs[QK8_0];
};

/// Q8_1: as Q8_0, plus s = fp16(d * sum(qs)), which lets a dot product with a format
/// that has a minimum (Q4_1, Q5_1) account for it without summing qs again.
struct BlockQ8_1 {
  uint16_t d;  // fp16 scale
  uint16_t s;  // fp16 of d * sum(qs)
  int8_t qs[QK8_1];
};

/// Q2_K: 16 sub-blocks of 16 elements; x = d * sc * q - dmin * m, q in [0, 3], where
/// scales[i] holds sc (low nibble) and m (high nibble) of sub-block i.
/// Element e (0..255) lives in qs[32 * (e / 128) + e % 32] at bit 2 * ((e % 128) / 32).
struct BlockQ2_K {
  uint8_t scales[QK_K / 16];  // 4-bit scale | 4-bit min << 4
  uint8_t qs[QK_K / 4];       // 2-bit quants
  uint16_t d;                 // fp16 super-scale of the scales
  uint16_t dmin;              // fp16 super-scale of the mins
};

/// Q3_K: 16 sub-blocks of 16 elements; x = d * (sc - 32) * (q - 4), q in [0, 7], sc a
/// 6-bit scale. The two low bits of q are packed as in Q2_K; the third is bit e / 32 of
/// hmask[e % 32]. Scale i: low 4 bits in scales[i] (i < 8, low nibble) or scales[i - 8]
/// (high nibble); high 2 bits at bit 2 * (i / 4) of scales[8 + i % 4].
struct BlockQ3_K {
  uint8_t hmask[QK_K / 8];  // high bits of q
  uint8_t qs[QK_K / 4];     // low 2 bits of q
  uint8_t scales[12];       // 16 packed 6-bit scales
  uint16_t d;               // fp16 super-scale
};

/// Q4_K: 8 sub-blocks of 32 elements; x = d * sc * q - dmin * m, q in [0, 15], sc and m
/// 6-bit. scales (K_SCALE_SIZE bytes), for sub-block j:
///   j < 4: sc = scales[j] & 63, m = scales[j + 4] & 63;
///   j >= 4: sc = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4,
///           m = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4.
/// Element e: qs[32 * (e / 64) + e % 32], low nibble when (e % 64) < 32, else high.
struct BlockQ4_K {
  uint16_t d;     // fp16 super-scale of the scales
  uint16_t dmin;  // fp16 super-scale of the mins
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qs[QK_K / 2];
};

/// Q5_K: as Q4_K with q in [0, 31]; bit 4 of element e is bit e / 32 of qh[e % 32].
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qh[QK_K / 8];  // fifth bits
  uint8_t qs[QK_K / 2];  // low nibbles
};

/// Q6_K: 16 sub-blocks of 16 elements; x = d * sc * (q - 32), q in [0, 63], sc int8.
/// Element e, with h = e / 128, r = e % 128, quarter k = r / 32, l = e % 32:
/// low 4 bits in ql[64 * h + 32 * (k & 1) + l] (low nibble for k < 2, else high);
/// high 2 bits at bit 2 * k of qh[32 * h + l].
struct BlockQ6_K {
  uint8_t ql[QK_K / 2];      // low 4 bits
  uint8_t qh[QK_K / 4];      // high 2 bits
  int8_t scales[QK_K / 16];  // 8-bit sub-block scales
  uint16_t d;                // fp16 super-scale
};

/// Q8_K: activation partner of the k-quants; x = d * q with a float scale, plus the
/// sums of each 16 consecutive q (used for the minimum terms of Q2_K, Q4_K, Q5_K).
struct BlockQ8_K {
  float d;
  int8_t qs[QK_K];
  int16_t bsums[QK_K / 16];
};

// ---- i-quants and ternary formats --------------------------------------------------------
// The element layout of each is at its struct; the code is in iq*.cpp and ternary.cpp, and
// the grids and tables they index are in iq_tables.h.
inline constexpr int QK4_NL = 32;

/// IQ4_NL: x = d * kIq4nlValues[q], q a 4-bit index (iq_tables.h: 16 non-linear values
/// in [-127, 113]). qs[j] holds element j in its low nibble and element j + 16 in its high
/// nibble, as in Q4_0.
struct BlockIQ4_NL {
  uint16_t d;  // fp16 scale
  uint8_t qs[QK4_NL / 2];
};

/// IQ4_XS: 8 sub-blocks of 32; element l of sub-block ib is
/// x = d * (ls_ib - 32) * kIq4nlValues[q], ls_ib a 6-bit scale: its low 4 bits are the low
/// (ib even) or high (ib odd) nibble of scales_l[ib / 2], its high 2 bits are bits 2 ib and
/// 2 ib + 1 of scales_h. Sub-block ib's indices are qs[16 ib .. 16 ib + 15], packed as in
/// Q4_0 (element l in the low nibble of qs[16 ib + l % 16] for l < 16, else the high one).
struct BlockIQ4_XS {
  uint16_t d;  // fp16 super-scale
  uint16_t scales_h;
  uint8_t scales_l[QK_K / 64];
  uint8_t qs[QK_K / 2];
};

// The IQ2 formats store each group of 8 elements (group g = elements 8 g .. 8 g + 7) as
// an index into a grid of points (8 unsigned magnitudes, kIq2*Grid) and 8 sign bits
// (bit j set: element 8 g + j is negative); a 4-bit scale s covers 16 or 32 elements:
//   x = d * (0.5 + s) / 4 * grid[j] * sign_j.
// Sign indices of 7 bits stand for the 8-bit pattern kIq2Signs[index].

/// IQ2_XXS: 2.0625 bits per weight; 8 sub-blocks of 32 (groups 4 ib .. 4 ib + 3), each
/// stored in qs[4 ib .. 4 ib + 3] read as two little-endian uint32 a0 (qs[4 ib],
/// qs[4 ib + 1]) and a1 (qs[4 ib + 2], qs[4 ib + 3]):
///   byte l of a0: kIq2xxsGrid index of group 4 ib + l;
///   bits 7 l .. 7 l + 6 of a1: sign index of group 4 ib + l (l < 4);
///   bits 28..31 of a1: the scale s of the whole sub-block.
struct BlockIQ2_XXS {
  uint16_t d;  // fp16 super-scale
  uint16_t qs[QK_K / 8];
};

/// IQ2_XS: 2.3125 bits per weight. qs[g] is group g: bits 0..8 its kIq2xsGrid index,
/// bits 9..15 its sign index. scales[ib]: the scale s of elements 32 ib .. 32 ib + 15
/// (groups 4 ib, 4 ib + 1) in the low nibble, of the next 16 in the high nibble.
struct BlockIQ2_XS {
  uint16_t d;  // fp16 super-scale
  uint16_t qs[QK_K / 8];
  uint8_t scales[QK_K / 32];
};

/// IQ2_S: 2.5625 bits per weight. Group g: kIq2sGrid index qs[g] | (bits 2 (g % 4) ..
/// 2 (g % 4) + 1 of qh[g / 4]) << 8; its 8 sign bits are qs[QK_K / 8 + g] (bit j: element
/// j, no parity rule). scales as in IQ2_XS.
struct BlockIQ2_S {
  uint16_t d;             // fp16 super-scale
  uint8_t qs[QK_K / 4];   // 32 low index bytes, then 32 sign bytes
  uint8_t qh[QK_K / 32];  // high 2 bits of the indices, four groups a byte
  uint8_t scales[QK_K / 32];
};

/// IQ3_XXS: 3.0625 bits per weight; 8 sub-blocks of 32, each 8 groups of 4 on kIq3xxsGrid.
/// qs[0..63]: grid index of group k of sub-block ib at qs[8 ib + k] (element e of the block:
/// ib = e / 32, k = (e % 32) / 4, coordinate e % 4). qs[64..95]: one little-endian uint32
/// per sub-block, at qs[64 + 4 ib]: bits 7 l..7 l + 6 are the kIq2Signs index of its 8
/// elements 8 l..8 l + 7 (bit j of the mask set: element 8 l + j negative), bits 28..31 a
/// scale s. x = d * (s + 1/2) / 2 * (+-grid).
struct BlockIQ3_XXS {
  uint16_t d;  // fp16
  uint8_t qs[3 * QK_K / 8];
};

/// IQ3_S: 3.4375 bits per weight; 8 sub-blocks of 32, each 8 groups of 4 on kIq3sGrid.
/// Group k (0..7) of sub-block ib has the 9-bit index qs[8 ib + k] | (bit k of qh[ib]) << 8;
/// element e is negative when bit e % 8 of signs[e / 8] is set; sub-block ib's 4-bit
/// scale s is the low (ib even) or high (ib odd) nibble of scales[ib / 2].
/// x = d * (2 s + 1) * (+-grid).
struct BlockIQ3_S {
  uint16_t d;  // fp16
  uint8_t qs[QK_K / 4];
  uint8_t qh[QK_K / 32];
  uint8_t signs[QK_K / 8];
  uint8_t scales[QK_K / 64];
};

/// IQ1_S: 1.5625 bits per weight; 8 sub-blocks of 32, each 4 groups of 8 on kIq1sGrid
/// (values -1, 0, +1). Group l (0..3) of sub-block ib has the 11-bit index
/// qs[4 ib + l] | ((qh[ib] >> 3 l) & 7) << 8; bits 12..14 of qh[ib] are the sub-block's
/// scale s, bit 15 the sign of its shift delta = +-kIq1Delta (set: negative).
/// x = d * (2 s + 1) * (grid + delta).
struct BlockIQ1_S {
  uint16_t d;  // fp16
  uint8_t qs[QK_K / 8];
  uint16_t qh[QK_K / 32];
};

/// IQ1_M: 1.75 bits per weight; 32 groups of 8 on kIq1sGrid (values -1, 0, +1). Group g
/// has the 11-bit index qs[g] | (n & 7) << 8 and the shift delta = +-kIq1Delta (bit 3 of n
/// set: negative), n the low (g even) or high (g odd) nibble of qh[g / 2]. scales is read
/// as four little-endian uint16 words w[0..3]: the 3-bit scale s of elements 16 h..16 h + 15
/// is (w[h / 4] >> 3 (h % 4)) & 7, and the fp16 super-scale d has its nibble k (low first)
/// in bits 12..15 of w[k]. x = d * (2 s + 1) * (grid + delta).
struct BlockIQ1_M {
  uint8_t qs[QK_K / 8];
  uint8_t qh[QK_K / 16];
  uint8_t scales[QK_K / 32];
};

/// TQ1_0: ternary, 1.6875 bits per weight, x = d * t with t in {-1, 0, 1}, d the block's
/// largest magnitude. Each t is stored as the trit t + 1 in {0, 1, 2}; a byte holds up to
/// five trits as a base-3 fraction: trits a0..a4 (a0 most significant) give
/// v = sum a_k 3^(4-k) and the byte ceil(v * 256 / 243); trit k reads back as
/// ((byte * 3^k mod 256) * 3) >> 8.
/// Element order: trit k of qs[m], m < 32, is element 32 k + m (elements 0..159); trit k
/// of qs[32 + m], m < 16, is element 160 + 16 k + m (160..239); trit k (k < 4) of qh[j]
/// is element 240 + 4 k + j (240..255; qh's fifth trit is 0).
struct BlockTQ1_0 {
  uint8_t qs[(QK_K - 4 * QK_K / 64) / 5];
  uint8_t qh[QK_K / 64];
  uint16_t d;  // fp16
};

/// TQ2_0: ternary, 2.0625 bits per weight: q in {0, 1, 2} two bits each, x = d * (q - 1),
/// d the block's largest magnitude. Element 128 h + 32 l + m (h < 2, l < 4, m < 32) sits at
/// bits 2 l of qs[32 h + m]. (q = 3 is never written; it reads as x = 2 d.)
struct BlockTQ2_0 {
  uint8_t qs[QK_K / 4];
  uint16_t d;  // fp16
};

/// Offsets of a weight block's fp16 fields: the scale, then the min where there is one
/// (Q4_1, Q5_1: m; Q2_K, Q4_K, Q5_K: dmin). IQ1_M has none: its scale is spread over
/// nibbles (blocks.h at BlockIQ1_M).
inline std::vector<size_t> fp16_fields(DType t) {
  switch (t) {
    case DType::Q4_0:
      return {offsetof(BlockQ4_0, d)};
    case DType::Q4_1:
      return {offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)};
    case DType::Q5_0:
      return {offsetof(BlockQ5_0, d)};
    case DType::Q5_1:
      return {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)};
    case DType::Q8_0:
      return {offsetof(BlockQ8_0, d)};
    case DType::Q2_K:
      return {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
    case DType::Q3_K:
      return {offsetof(BlockQ3_K, d)};
    case DType::Q4_K:
      return {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
    case DType::Q5_K:
      return {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)};
    case DType::Q6_K:
      return {offsetof(BlockQ6_K, d)};
    case DType::IQ2_XXS:
      return {offsetof(BlockIQ2_XXS, d)};
    case DType::IQ2_XS:
      return {offsetof(BlockIQ2_XS, d)};
    case DType::IQ2_S:
      return {offsetof(BlockIQ2_S, d)};
    case DType::IQ3_XXS:
      return {offsetof(BlockIQ3_XXS, d)};
    case DType::IQ3_S:
      return {offsetof(BlockIQ3_S, d)};
    case DType::IQ1_S:
      return {offsetof(BlockIQ1_S, d)};
    case DType::IQ4_NL:
      return {offsetof(BlockIQ4_NL, d)};
    case DType::IQ4_XS:
      return {offsetof(BlockIQ4_XS, d)};
    case DType::TQ1_0:
      return {offsetof(BlockTQ1_0, d)};
    case DType::TQ2_0:
      return {offsetof(BlockTQ2_0, d)};
    default:
      return {};
  }
}

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockIQ2_XXS) == 66);
static_assert(sizeof(BlockIQ2_XS) == 74);
static_assert(sizeof(BlockIQ2_S) == 82);
static_assert(sizeof(BlockIQ3_XXS) == 98);
static_assert(sizeof(BlockIQ3_S) == 110);
static_assert(sizeof(BlockIQ1_S) == 50);
static_assert(sizeof(BlockIQ1_M) == 56);
static_assert(sizeof(BlockTQ1_0) == 54);
static_assert(sizeof(BlockTQ2_0) == 66);

}  // namespace tessera::quant
