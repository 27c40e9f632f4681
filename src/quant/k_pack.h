// Bit packing of quants into the block layouts (blocks.h), shared by the round-to-nearest
// reference quantizers and the importance-weighted ones, which differ only in how they
// choose the quants.
#pragma once

#include <cstdint>
#include <cstring>

#include "quant/blocks.h"

namespace tessera::quant::detail {

/// 2-bit fields of a Q2_K/Q3_K qs array: element 128 h + 32 k + l (values 0..3) goes to
/// bit 2 k of qs[32 h + l].
inline void pack_low2(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t* p = L + 128 * h + l;
      qs[32 * h + l] = uint8_t(p[0] | (p[32] << 2) | (p[64] << 4) | (p[96] << 6));
    }
  }
}

/// Q4_K/Q5_K nibbles: element e's low nibble goes to qs[32 * (e / 64) + e % 32], the high
/// half of that byte when (e % 64) >= 32.
inline void pack_nibbles(const uint8_t* L, uint8_t* qs) {
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      qs[32 * g + l] = uint8_t((L[64 * g + l] & 0x0f) | ((L[64 * g + l + 32] & 0x0f) << 4));
    }
  }
}

/// Q5_K's fifth bits (L in 0..31): element e at bit e / 32 of qh[e % 32].
inline void pack_q5_high(const uint8_t* L, uint8_t* qh) {
  std::memset(qh, 0, QK_K / 8);
  for (int e = 0; e < QK_K; ++e) {
    if (L[e] > 15) qh[e % 32] = uint8_t(qh[e % 32] | (1 << (e / 32)));
  }
}

/// Q3_K (L in 0..7): bit 2 of element e at bit e / 32 of hmask[e % 32], the low two bits
/// as pack_low2.
inline void pack_q3(const int8_t* L, BlockQ3_K& b) {
  uint8_t low[QK_K];
  std::memset(b.hmask, 0, sizeof(b.hmask));
  for (int e = 0; e < QK_K; ++e) {
    if (L[e] > 3) b.hmask[e % 32] = uint8_t(b.hmask[e % 32] | (1 << (e / 32)));
    low[e] = uint8_t(L[e] & 3);
  }
  pack_low2(low, b.qs);
}

/// Q6_K (L in 0..63): element e = 128 h + 32 k + l: low nibble in ql[64 h + 32 (k & 1) + l]
/// (high half for k >= 2), high 2 bits at bit 2 k of qh[32 h + l].
inline void pack_q6(const int8_t* L, BlockQ6_K& b) {
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int8_t* p = L + 128 * h + l;
      b.ql[64 * h + l] = uint8_t((p[0] & 0x0f) | ((p[64] & 0x0f) << 4));
      b.ql[64 * h + l + 32] = uint8_t((p[32] & 0x0f) | ((p[96] & 0x0f) << 4));
      b.qh[32 * h + l] =
          uint8_t((p[0] >> 4) | ((p[32] >> 4) << 2) | ((p[64] >> 4) << 4) | ((p[96] >> 4) << 6));
    }
  }
}

/// 32 4-bit values of a legacy block: element j in the low nibble of qs[j], j + 16 in the
/// high nibble.
template <typename T>
inline void pack4(const T* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
}

/// 32 5-bit values of a legacy block: low nibbles as pack4, fifth bits into qh (element j
/// at bit j of the little-endian 32-bit word).
template <typename T>
inline void pack5(const T* q, uint8_t* qs, uint8_t* qh) {
  uint32_t high = 0;
  for (int j = 0; j < 16; ++j) {
    high |= uint32_t((q[j] >> 4) & 1) << j;
    high |= uint32_t((q[j + 16] >> 4) & 1) << (j + 16);
  }
  pack4(q, qs);
  for (int k = 0; k < 4; ++k) qh[k] = uint8_t(high >> (8 * k));
}

}  // namespace tessera::quant::detail
