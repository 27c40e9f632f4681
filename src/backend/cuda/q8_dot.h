// The 8-bit dot products of the quantized matrix-vector kernels (mmvq.cu): activations
// are quantized to Q8Act blocks of 32 (int8 quants, a float scale and the exact integer
// sum of the quants), and a weight row is multiplied 32 elements (a "piece") at a time:
// one piece is one block of the 32-element formats or one of the 8 pieces of a k-quant
// super-block, against one Q8Act block. Integer sums are exact (__dp4a); the weight
// layouts are those of quant/blocks.h, as in dequant.h. Written for device and host, so
// tests/unit/cuda_quant_math_test.cpp checks the pieces against the dequantized weights.
//
// The CPU multiplies k-quants against Q8_K activations (blocks of 256); here every type
// takes blocks of 32, so one activation row format serves all weight types. Results agree
// with the CPU to the rounding of the activations, not bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/cuda/dequant.h"

namespace tessera::cuda::q8 {

inline constexpr int kQK = 32;

/// 32 activations: x ~= d * qs[i]; sum = sum of qs (for the minimum terms).
struct alignas(8) Q8Act {
  float d;
  int32_t sum;
  int8_t qs[kQK];
};
static_assert(sizeof(Q8Act) == 40);

/// Four signed bytes a . b, plus c.
TESSERA_HD int dp4a(int a, int b, int c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(a, b, c);
#else
  for (int i = 0; i < 4; ++i)
    c += int(int8_t(uint32_t(a) >> (8 * i))) * int(int8_t(uint32_t(b) >> (8 * i)));
  return c;
#endif
}

/// Quants 4i..4i+3 of a as one int (Q8Act is 8-aligned, its quants at offset 8).
TESSERA_HD int act4(const Q8Act& a, int i) {
#if defined(__CUDA_ARCH__)
  return reinterpret_cast<const int*>(a.qs)[i];
#else
  int v;
  std::memcpy(&v, a.qs + 4 * i, 4);
  return v;
#endif
}

/// Four weight bytes at p, which is 2-aligned (every block size is even and every
/// field offset used is even; rows start at even addresses): two 16-bit loads.
TESSERA_HD int w4(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  const auto* h = reinterpret_cast<const uint16_t*>(p);
  return int(uint32_t(h[0]) | uint32_t(h[1]) << 16);
#else
  return int(dq::ld32(p));
#endif
}

/// Bit i (0..3) of a 4-bit value moved to bit 4 of byte i: the fifth bits of Q5_0/Q5_1.
TESSERA_HD int spread4(uint32_t b) {
  return int(((b & 1) << 4) | ((b & 2) << 11) | ((b & 4) << 18) | ((b & 8) << 25));
}

constexpr int kOnes = 0x01010101;

/// Sum over the elements of a 32-quant weight piece given as 8 ints of bytes (unsigned
/// values < 128) times the activations: the exact integer dot product.
TESSERA_HD int dot8(const int* w, const Q8Act& a) {
  int s = 0;
  for (int i = 0; i < 8; ++i) s = dp4a(w[i], act4(a, i), s);
  return s;
}

/// As dot8 for the halves (elements 0..15 and 16..31), and the activation sums of the halves.
struct Halves {
  int dot[2];
  int asum[2];
};
TESSERA_HD Halves dot_halves(const int* w, const Q8Act& a) {
  Halves h{{0, 0}, {0, 0}};
  for (int i = 0; i < 8; ++i) {
    h.dot[i / 4] = dp4a(w[i], act4(a, i), h.dot[i / 4]);
    h.asum[i / 4] = dp4a(kOnes, act4(a, i), h.asum[i / 4]);
  }
  return h;
}

using dq::BlockQ2_K;
using dq::BlockQ3_K;
using dq::BlockQ4_0;
using dq::BlockQ4_1;
using dq::BlockQ4_K;
using dq::BlockQ5_0;
using dq::BlockQ5_1;
using dq::BlockQ5_K;
using dq::BlockQ6_K;
using dq::BlockQ8_0;
using dq::BlockQ8_1;
using dq::BlockQ8_K;

// ---- the 32-element formats (sub is always 0) ------------------------------------------

// Nibbles of 16 bytes at qs: elements 0..15 low, 16..31 high, as 8 ints.
TESSERA_HD void nibbles(const uint8_t* qs, int* w) {
  for (int i = 0; i < 4; ++i) {
    const int v = w4(qs + 4 * i);
    w[i] = v & 0x0f0f0f0f;
    w[4 + i] = (v >> 4) & 0x0f0f0f0f;
  }
}

// Adds the fifth bits (element j at bit j of qh) to the nibbles.
TESSERA_HD void fifth_bits(const uint8_t* qh, int* w) {
  const uint32_t h = uint32_t(w4(qh));
  for (int i = 0; i < 8; ++i) w[i] |= spread4((h >> (4 * i)) & 0x0f);
}

TESSERA_HD float dot_q4_0(const uint8_t* b, int, const Q8Act& a) {
  int w[8];
  nibbles(b + offsetof(BlockQ4_0, qs), w);
  return float(dot8(w, a) - 8 * a.sum) * (dq::ld_f16(b + offsetof(BlockQ4_0, d)) * a.d);
}

TESSERA_HD float dot_q4_1(const uint8_t* b, int, const Q8Act& a) {
  int w[8];
  nibbles(b + offsetof(BlockQ4_1, qs), w);
  return float(dot8(w, a)) * (dq::ld_f16(b + offsetof(BlockQ4_1, d)) * a.d) +
         float(a.sum) * (dq::ld_f16(b + offsetof(BlockQ4_1, m)) * a.d);
}

TESSERA_HD float dot_q5_0(const uint8_t* b, int, const Q8Act& a) {
  int w[8];
  nibbles(b + offsetof(BlockQ5_0, qs), w);
  fifth_bits(b + offsetof(BlockQ5_0, qh), w);
  return float(dot8(w, a) - 16 * a.sum) * (dq::ld_f16(b + offsetof(BlockQ5_0, d)) * a.d);
}

TESSERA_HD float dot_q5_1(const uint8_t* b, int, const Q8Act& a) {
  int w[8];
  nibbles(b + offsetof(BlockQ5_1, qs), w);
  fifth_bits(b + offsetof(BlockQ5_1, qh), w);
  return float(dot8(w, a)) * (dq::ld_f16(b + offsetof(BlockQ5_1, d)) * a.d) +
         float(a.sum) * (dq::ld_f16(b + offsetof(BlockQ5_1, m)) * a.d);
}

// Signed bytes: dp4a reads them as int8 directly.
TESSERA_HD float dot_int8(const uint8_t* qs, float d, const Q8Act& a) {
  int w[8];
  for (int i = 0; i < 8; ++i) w[i] = w4(qs + 4 * i);
  return float(dot8(w, a)) * (d * a.d);
}

TESSERA_HD float dot_q8_0(const uint8_t* b, int, const Q8Act& a) {
  return dot_int8(b + offsetof(BlockQ8_0, qs), dq::ld_f16(b + offsetof(BlockQ8_0, d)), a);
}

TESSERA_HD float dot_q8_1(const uint8_t* b, int, const Q8Act& a) {
  return dot_int8(b + offsetof(BlockQ8_1, qs), dq::ld_f16(b + offsetof(BlockQ8_1, d)), a);
}

// ---- k-quants: piece s (0..7) is elements 32s..32s+31 of the super-block -------------

// The 2 low bits of piece s of Q2_K/Q3_K: qs[32 * (s / 4) + l] at bit 2 * (s % 4).
TESSERA_HD void low2_piece(const uint8_t* qs, int s, int* w) {
  for (int i = 0; i < 8; ++i) w[i] = (w4(qs + 32 * (s / 4) + 4 * i) >> (2 * (s % 4))) & 0x03030303;
}

// Bit s of 32 bytes at bits, moved to bit `to` of each byte (Q3_K hmask, Q5_K qh).
TESSERA_HD void high_bit_piece(const uint8_t* bits, int s, int to, int* w) {
  for (int i = 0; i < 8; ++i) w[i] |= ((w4(bits + 4 * i) >> s) & kOnes) << to;
}

// Sub-blocks 2s and 2s+1 (16 elements each): sc & 15 scales, sc >> 4 mins.
TESSERA_HD float dot_q2_K(const uint8_t* b, int s, const Q8Act& a) {
  int w[8];
  low2_piece(b + offsetof(BlockQ2_K, qs), s, w);
  const Halves h = dot_halves(w, a);
  const uint8_t* sc = b + offsetof(BlockQ2_K, scales) + 2 * s;
  const int isum = (sc[0] & 0x0f) * h.dot[0] + (sc[1] & 0x0f) * h.dot[1];
  const int msum = (sc[0] >> 4) * h.asum[0] + (sc[1] >> 4) * h.asum[1];
  return (a.d * dq::ld_f16(b + offsetof(BlockQ2_K, d))) * float(isum) -
         (a.d * dq::ld_f16(b + offsetof(BlockQ2_K, dmin))) * float(msum);
}

// q - 4 with q = low 2 bits | hmask bit << 2: the dot of q, less 4 times the activations.
TESSERA_HD float dot_q3_K(const uint8_t* b, int s, const Q8Act& a) {
  int w[8];
  low2_piece(b + offsetof(BlockQ3_K, qs), s, w);
  high_bit_piece(b + offsetof(BlockQ3_K, hmask), s, 2, w);
  const Halves h = dot_halves(w, a);
  const uint8_t* scales = b + offsetof(BlockQ3_K, scales);
  const int isum = (dq::scale_q3(2 * s, scales) - 32) * (h.dot[0] - 4 * h.asum[0]) +
                   (dq::scale_q3(2 * s + 1, scales) - 32) * (h.dot[1] - 4 * h.asum[1]);
  return (dq::ld_f16(b + offsetof(BlockQ3_K, d)) * a.d) * float(isum);
}

// Q4_K/Q5_K: one sub-block per piece, scale and min from the packed 6-bit fields.
TESSERA_HD float k4_piece(const uint8_t* scales, float d, float dmin, int s, const int* w,
                          const Q8Act& a) {
  int sc = 0, m = 0;
  dq::scale_min_k4(s, scales, &sc, &m);
  return (a.d * d) * float(sc * dot8(w, a)) - (a.d * dmin) * float(m * a.sum);
}

// Nibbles of piece s: qs[32 * (s / 2) + l], high halves for odd s.
TESSERA_HD void k4_nibbles(const uint8_t* qs, int s, int* w) {
  for (int i = 0; i < 8; ++i) w[i] = (w4(qs + 32 * (s / 2) + 4 * i) >> (4 * (s % 2))) & 0x0f0f0f0f;
}

TESSERA_HD float dot_q4_K(const uint8_t* b, int s, const Q8Act& a) {
  int w[8];
  k4_nibbles(b + offsetof(BlockQ4_K, qs), s, w);
  return k4_piece(b + offsetof(BlockQ4_K, scales), dq::ld_f16(b + offsetof(BlockQ4_K, d)),
                  dq::ld_f16(b + offsetof(BlockQ4_K, dmin)), s, w, a);
}

TESSERA_HD float dot_q5_K(const uint8_t* b, int s, const Q8Act& a) {
  int w[8];
  k4_nibbles(b + offsetof(BlockQ5_K, qs), s, w);
  high_bit_piece(b + offsetof(BlockQ5_K, qh), s, 4, w);
  return k4_piece(b + offsetof(BlockQ5_K, scales), dq::ld_f16(b + offsetof(BlockQ5_K, d)),
                  dq::ld_f16(b + offsetof(BlockQ5_K, dmin)), s, w, a);
}

// q - 32, q = low nibble (ql) | 2 high bits (qh) << 4; int8 scales per 16 elements.
TESSERA_HD float dot_q6_K(const uint8_t* b, int s, const Q8Act& a) {
  const int h = s / 4, k = s % 4;
  const uint8_t* ql = b + offsetof(BlockQ6_K, ql) + 64 * h + 32 * (k & 1);
  const uint8_t* qh = b + offsetof(BlockQ6_K, qh) + 32 * h;
  int w[8];
  for (int i = 0; i < 8; ++i) {
    w[i] = ((w4(ql + 4 * i) >> (4 * (k >> 1))) & 0x0f0f0f0f) |
           (((w4(qh + 4 * i) >> (2 * k)) & 0x03030303) << 4);
  }
  const Halves hv = dot_halves(w, a);
  const auto* sc = reinterpret_cast<const int8_t*>(b + offsetof(BlockQ6_K, scales) + 2 * s);
  const int isum = sc[0] * (hv.dot[0] - 32 * hv.asum[0]) + sc[1] * (hv.dot[1] - 32 * hv.asum[1]);
  return (dq::ld_f16(b + offsetof(BlockQ6_K, d)) * a.d) * float(isum);
}

TESSERA_HD float dot_q8_K(const uint8_t* b, int s, const Q8Act& a) {
  return dot_int8(b + offsetof(BlockQ8_K, qs) + 32 * s, dq::ld_f32(b + offsetof(BlockQ8_K, d)), a);
}

/// Piece `sub` (< kQK<T> / 32) of the weight block at b against 32 activations.
template <DType T>
TESSERA_HD float dot_piece(const uint8_t* b, int sub, const Q8Act& a) {
  if constexpr (T == DType::Q4_0) return dot_q4_0(b, sub, a);
  if constexpr (T == DType::Q4_1) return dot_q4_1(b, sub, a);
  if constexpr (T == DType::Q5_0) return dot_q5_0(b, sub, a);
  if constexpr (T == DType::Q5_1) return dot_q5_1(b, sub, a);
  if constexpr (T == DType::Q8_0) return dot_q8_0(b, sub, a);
  if constexpr (T == DType::Q8_1) return dot_q8_1(b, sub, a);
  if constexpr (T == DType::Q2_K) return dot_q2_K(b, sub, a);
  if constexpr (T == DType::Q3_K) return dot_q3_K(b, sub, a);
  if constexpr (T == DType::Q4_K) return dot_q4_K(b, sub, a);
  if constexpr (T == DType::Q5_K) return dot_q5_K(b, sub, a);
  if constexpr (T == DType::Q6_K) return dot_q6_K(b, sub, a);
  if constexpr (T == DType::Q8_K) return dot_q8_K(b, sub, a);
  return 0.0f;
}

// ---- quantizing activations ----------------------------------------------------------------

/// The scale of a block whose largest magnitude is amax (as quantize_q8_1), 1 / d (0 for
/// an all-zero block), and one quant.
TESSERA_HD float scale_of(float amax) { return amax / 127; }
TESSERA_HD float inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }
TESSERA_HD int8_t quantize_one(float x, float id) { return int8_t(roundf(x * id)); }

}  // namespace tessera::cuda::q8
