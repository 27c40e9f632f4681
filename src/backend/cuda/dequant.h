// One element of a GGUF block decoded to float, for every type with a reference
// dequantizer in src/quant (Q4_0 .. Q8_1, Q2_K .. Q8_K): byte offsets from the block
// structs of quant/blocks.h, and the reference's float operations in its order, each
// rounded (no fused multiply-add), so get_rows gives the CPU's bits. Written once for
// device and host (TESSERA_HD): tests/unit/cuda_quant_math_test.cpp checks every type
// against src/quant without a GPU. Blocks are read byte by byte (any alignment).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cuda/elementwise_math.h"
#include "core/hd.h"
#include "quant/blocks.h"

namespace tessera::cuda::dq {

// ---- reading a block ------------------------------------------------------------------

TESSERA_HD uint32_t ld16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
TESSERA_HD uint32_t ld32(const uint8_t* p) { return ld16(p) | ld16(p + 2) << 16; }
TESSERA_HD float ld_f16(const uint8_t* p) { return math::f16_to_f32(uint16_t(ld16(p))); }
TESSERA_HD float ld_f32(const uint8_t* p) { return math::bits_float(ld32(p)); }

// Rounded float operations: nvcc would contract a * b + c into an FMA, the reference
// quantizers are built with -ffp-contract=off.
TESSERA_HD float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
TESSERA_HD float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
TESSERA_HD float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// ---- packed scales (src/quant/k_search.cpp) ----------------------------------------------

/// 6-bit scale and min of sub-block j (0..7) of Q4_K/Q5_K.
TESSERA_HD void scale_min_k4(int j, const uint8_t* s, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

/// 6-bit scale j (0..15) of Q3_K, without its offset of 32.
TESSERA_HD int scale_q3(int j, const uint8_t* s) {
  const int low = j < 8 ? s[j] & 0x0f : s[j - 8] >> 4;
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return low | (high << 4);
}

// ---- element e of one block ---------------------------------------------------------------

using quant::BlockQ2_K;
using quant::BlockQ3_K;
using quant::BlockQ4_0;
using quant::BlockQ4_1;
using quant::BlockQ4_K;
using quant::BlockQ5_0;
using quant::BlockQ5_1;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_0;
using quant::BlockQ8_1;
using quant::BlockQ8_K;

TESSERA_HD float q4_0(const uint8_t* b, int e) {
  const uint8_t* qs = b + offsetof(BlockQ4_0, qs);
  const int q = e < 16 ? qs[e] & 0x0f : qs[e - 16] >> 4;
  return mul(float(q - 8), ld_f16(b + offsetof(BlockQ4_0, d)));
}

TESSERA_HD float q4_1(const uint8_t* b, int e) {
  const uint8_t* qs = b + offsetof(BlockQ4_1, qs);
  const int q = e < 16 ? qs[e] & 0x0f : qs[e - 16] >> 4;
  return add(mul(float(q), ld_f16(b + offsetof(BlockQ4_1, d))), ld_f16(b + offsetof(BlockQ4_1, m)));
}

// The 5-bit value of element e: low nibble as Q4_0, bit 4 at bit e of qh.
TESSERA_HD int q5_value(const uint8_t* qs, const uint8_t* qh, int e) {
  const int low = e < 16 ? qs[e] & 0x0f : qs[e - 16] >> 4;
  return low | int((ld32(qh) >> e) & 1) << 4;
}

TESSERA_HD float q5_0(const uint8_t* b, int e) {
  const int q = q5_value(b + offsetof(BlockQ5_0, qs), b + offsetof(BlockQ5_0, qh), e);
  return mul(float(q - 16), ld_f16(b + offsetof(BlockQ5_0, d)));
}

TESSERA_HD float q5_1(const uint8_t* b, int e) {
  const int q = q5_value(b + offsetof(BlockQ5_1, qs), b + offsetof(BlockQ5_1, qh), e);
  return add(mul(float(q), ld_f16(b + offsetof(BlockQ5_1, d))), ld_f16(b + offsetof(BlockQ5_1, m)));
}

TESSERA_HD float q8_0(const uint8_t* b, int e) {
  return mul(float(int8_t(b[offsetof(BlockQ8_0, qs) + e])), ld_f16(b + offsetof(BlockQ8_0, d)));
}

TESSERA_HD float q8_1(const uint8_t* b, int e) {
  return mul(float(int8_t(b[offsetof(BlockQ8_1, qs) + e])), ld_f16(b + offsetof(BlockQ8_1, d)));
}

// The 2 low bits of element e of Q2_K/Q3_K: qs[32 * (e / 128) + e % 32], at bit
// 2 * ((e % 128) / 32).
TESSERA_HD int low2(const uint8_t* qs, int e) {
  return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

TESSERA_HD float q2_K(const uint8_t* b, int e) {
  const int sc = b[offsetof(BlockQ2_K, scales) + e / 16];
  const float dl = mul(ld_f16(b + offsetof(BlockQ2_K, d)), float(sc & 0x0f));
  const float ml = mul(ld_f16(b + offsetof(BlockQ2_K, dmin)), float(sc >> 4));
  return sub(mul(dl, float(low2(b + offsetof(BlockQ2_K, qs), e))), ml);
}

TESSERA_HD float q3_K(const uint8_t* b, int e) {
  const int high = (b[offsetof(BlockQ3_K, hmask) + e % 32] >> (e / 32)) & 1;
  const int q = low2(b + offsetof(BlockQ3_K, qs), e) - (high ? 0 : 4);
  const float dl = mul(ld_f16(b + offsetof(BlockQ3_K, d)),
                       float(scale_q3(e / 16, b + offsetof(BlockQ3_K, scales)) - 32));
  return mul(dl, float(q));
}

// Element e's nibble in Q4_K/Q5_K: qs[32 * (e / 64) + e % 32], high half when (e % 64) >= 32.
TESSERA_HD int k4_nibble(const uint8_t* qs, int e) {
  return (qs[32 * (e / 64) + e % 32] >> (e % 64 >= 32 ? 4 : 0)) & 0x0f;
}

// dl * q - ml with the sub-block's scale and min, as dequantize_k4.
TESSERA_HD float k4_value(const uint8_t* scales, float d, float dmin, int e, int q) {
  int sc = 0, m = 0;
  scale_min_k4(e / 32, scales, &sc, &m);
  return sub(mul(mul(d, float(sc)), float(q)), mul(dmin, float(m)));
}

TESSERA_HD float q4_K(const uint8_t* b, int e) {
  return k4_value(b + offsetof(BlockQ4_K, scales), ld_f16(b + offsetof(BlockQ4_K, d)),
                  ld_f16(b + offsetof(BlockQ4_K, dmin)), e,
                  k4_nibble(b + offsetof(BlockQ4_K, qs), e));
}

TESSERA_HD float q5_K(const uint8_t* b, int e) {
  const int high = (b[offsetof(BlockQ5_K, qh) + e % 32] >> (e / 32)) & 1;
  return k4_value(b + offsetof(BlockQ5_K, scales), ld_f16(b + offsetof(BlockQ5_K, d)),
                  ld_f16(b + offsetof(BlockQ5_K, dmin)), e,
                  k4_nibble(b + offsetof(BlockQ5_K, qs), e) | high << 4);
}

TESSERA_HD float q6_K(const uint8_t* b, int e) {
  const int h = e / 128, k = (e % 128) / 32, l = e % 32;
  const int low = (b[offsetof(BlockQ6_K, ql) + 64 * h + 32 * (k & 1) + l] >> (4 * (k >> 1))) & 0x0f;
  const int high = (b[offsetof(BlockQ6_K, qh) + 32 * h + l] >> (2 * k)) & 3;
  const float sc = float(int8_t(b[offsetof(BlockQ6_K, scales) + e / 16]));
  return mul(mul(ld_f16(b + offsetof(BlockQ6_K, d)), sc), float((low | high << 4) - 32));
}

TESSERA_HD float q8_K(const uint8_t* b, int e) {
  return mul(ld_f32(b + offsetof(BlockQ8_K, d)), float(int8_t(b[offsetof(BlockQ8_K, qs) + e])));
}

// ---- by type ----------------------------------------------------------------------------

/// The types with a decoder: those src/quant can dequantize (not the IQ/TQ families,
/// nor the CPU's repacked _X16 layouts).
template <DType... Ts>
struct Types {};
using QuantTypes =
    Types<DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q8_1, DType::Q2_K,
          DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K>;

template <DType... Ts>
constexpr bool in(DType t, Types<Ts...>) {
  return ((t == Ts) || ...);
}
constexpr bool has_decoder(DType t) { return in(t, QuantTypes{}); }

/// Elements per block.
template <DType T>
inline constexpr int kQK = (T == DType::Q2_K || T == DType::Q3_K || T == DType::Q4_K ||
                            T == DType::Q5_K || T == DType::Q6_K || T == DType::Q8_K)
                               ? quant::QK_K
                               : 32;

/// Element e (< kQK<T>) of the block at b.
template <DType T>
TESSERA_HD float decode(const uint8_t* b, int e) {
  if constexpr (T == DType::Q4_0) return q4_0(b, e);
  if constexpr (T == DType::Q4_1) return q4_1(b, e);
  if constexpr (T == DType::Q5_0) return q5_0(b, e);
  if constexpr (T == DType::Q5_1) return q5_1(b, e);
  if constexpr (T == DType::Q8_0) return q8_0(b, e);
  if constexpr (T == DType::Q8_1) return q8_1(b, e);
  if constexpr (T == DType::Q2_K) return q2_K(b, e);
  if constexpr (T == DType::Q3_K) return q3_K(b, e);
  if constexpr (T == DType::Q4_K) return q4_K(b, e);
  if constexpr (T == DType::Q5_K) return q5_K(b, e);
  if constexpr (T == DType::Q6_K) return q6_K(b, e);
  if constexpr (T == DType::Q8_K) return q8_K(b, e);
  return 0.0f;
}

/// Bytes per block.
template <DType T>
inline constexpr int kBlockBytes = T == DType::Q4_0   ? int(sizeof(BlockQ4_0))
                                   : T == DType::Q4_1 ? int(sizeof(BlockQ4_1))
                                   : T == DType::Q5_0 ? int(sizeof(BlockQ5_0))
                                   : T == DType::Q5_1 ? int(sizeof(BlockQ5_1))
                                   : T == DType::Q8_0 ? int(sizeof(BlockQ8_0))
                                   : T == DType::Q8_1 ? int(sizeof(BlockQ8_1))
                                   : T == DType::Q2_K ? int(sizeof(BlockQ2_K))
                                   : T == DType::Q3_K ? int(sizeof(BlockQ3_K))
                                   : T == DType::Q4_K ? int(sizeof(BlockQ4_K))
                                   : T == DType::Q5_K ? int(sizeof(BlockQ5_K))
                                   : T == DType::Q6_K ? int(sizeof(BlockQ6_K))
                                   : T == DType::Q8_K ? int(sizeof(BlockQ8_K))
                                                      : 0;

/// Element i of a row of blocks (dense) starting at row.
template <DType T>
TESSERA_HD float decode_row(const uint8_t* row, int64_t i) {
  constexpr int64_t kElems = kQK<T>, kBytes = kBlockBytes<T>;
  return decode<T>(row + i / kElems * kBytes, int(i % kElems));
}

template <typename F, DType... Ts>
bool with_type_in(DType t, F& f, Types<Ts...>) {
  return ((t == Ts && (f.template operator()<Ts>(), true)) || ...);
}

/// Calls f.template operator()<T>() with the type t as a template argument; false when t
/// has no decoder.
template <typename F>
bool with_quant_type(DType t, F&& f) {
  return with_type_in(t, f, QuantTypes{});
}

}  // namespace tessera::cuda::dq
