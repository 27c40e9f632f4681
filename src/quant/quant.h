// Reference (scalar) quantization of every GGUF block format: quantize, dequantize and
// the dot product against the format's activation partner. This code is the
// specification: it produces the same blocks as the reference quantizer of the GGUF
// ecosystem (with an importance matrix or without), and fast kernels are tested against it.
//
// All row functions take n = number of elements, a multiple of the format's block size
// (32 for the legacy formats and IQ4_NL, QK_K = 256 for the k-quants, the other i-quants
// and the ternary formats).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tessera/dtype.h"

namespace tessera::quant {

using QuantizeFn = void (*)(const float* x, void* y, int64_t n);
using DequantizeFn = void (*)(const void* x, float* y, int64_t n);
/// Dot product of n elements: x in the format, y in its dot_partner format.
using VecDotFn = float (*)(int64_t n, const void* x, const void* y);
/// Quantizes n elements with importance weights: importance[i] (>= 0, n of them: an
/// importance matrix's values for the row's columns, see `tessera imatrix`) is how much
/// element i's squared error counts in the format's search.
using QuantizeWeightedFn = void (*)(const float* x, void* y, int64_t n, const float* importance);

/// One quantized format.
struct Format {
  DType type;
  DType dot_partner;  // the type activations are quantized to for vec_dot
  QuantizeFn quantize;  // null where the engine only reads the format
  DequantizeFn dequantize;
  VecDotFn vec_dot;
  /// The search with importance weights; null where the format has none (then the
  /// weights are not used).
  QuantizeWeightedFn quantize_weighted = nullptr;
  /// The format is only written with importance weights (the low-bit i-quants: without
  /// them the reference quantizer refuses, and the result is poor).
  bool needs_importance = false;
};

/// The format of a quantized type, or nullptr for types that are not block-quantized
/// (F32, F16, BF16, the integer types, the repacked layouts).
const Format* format(DType t);

/// Quantizes n_rows rows of n_per_row floats (row-major, dense) into dst, row after row.
/// n_per_row must be a multiple of the block size. Returns the bytes written. With
/// `importance` (n_per_row values, the same for every row) the format's weighted search is
/// used where it has one; a format that needs_importance must be given them.
size_t quantize_rows(DType t, const float* src, void* dst, int64_t n_rows, int64_t n_per_row,
                     const float* importance = nullptr);
/// Inverse of quantize_rows: n_rows dense rows of n_per_row elements to floats.
void dequantize_rows(DType t, const void* src, float* dst, int64_t n_rows, int64_t n_per_row);

/// Rounds to the nearest integer, ties to even (|v| < 2^22), as the reference
/// quantizer does for the k-quant searches.
inline int nearest_int(float v) {
  const float biased = v + 12582912.0f;  // 1.5 * 2^23: the float's ulp becomes 1
  uint32_t bits;
  std::memcpy(&bits, &biased, 4);
  return int(bits & 0x007fffff) - 0x00400000;
}

// ---- the per-format reference functions (what `format()` points at) ----------------
// Legacy formats (legacy.cpp).
void quantize_q4_0(const float* x, void* y, int64_t n);
void quantize_q4_1(const float* x, void* y, int64_t n);
void quantize_q5_0(const float* x, void* y, int64_t n);
void quantize_q5_1(const float* x, void* y, int64_t n);
void quantize_q8_0(const float* x, void* y, int64_t n);
void quantize_q8_1(const float* x, void* y, int64_t n);
void dequantize_q4_0(const void* x, float* y, int64_t n);
void dequantize_q4_1(const void* x, float* y, int64_t n);
void dequantize_q5_0(const void* x, float* y, int64_t n);
void dequantize_q5_1(const void* x, float* y, int64_t n);
void dequantize_q8_0(const void* x, float* y, int64_t n);
void dequantize_q8_1(const void* x, float* y, int64_t n);
float vec_dot_q4_0_q8_0(int64_t n, const void* x, const void* y);
float vec_dot_q4_1_q8_1(int64_t n, const void* x, const void* y);
float vec_dot_q5_0_q8_0(int64_t n, const void* x, const void* y);
float vec_dot_q5_1_q8_1(int64_t n, const void* x, const void* y);
float vec_dot_q8_0_q8_0(int64_t n, const void* x, const void* y);
float vec_dot_q8_1_q8_1(int64_t n, const void* x, const void* y);

// k-quants (k_quants_q2_q3.cpp, k_quants_q4_q5.cpp, k_quants_q6_q8.cpp).
void quantize_q2_K(const float* x, void* y, int64_t n);
void quantize_q3_K(const float* x, void* y, int64_t n);
void quantize_q4_K(const float* x, void* y, int64_t n);
void quantize_q5_K(const float* x, void* y, int64_t n);
void quantize_q6_K(const float* x, void* y, int64_t n);
void quantize_q8_K(const float* x, void* y, int64_t n);
void dequantize_q2_K(const void* x, float* y, int64_t n);
void dequantize_q3_K(const void* x, float* y, int64_t n);
void dequantize_q4_K(const void* x, float* y, int64_t n);
void dequantize_q5_K(const void* x, float* y, int64_t n);
void dequantize_q6_K(const void* x, float* y, int64_t n);
void dequantize_q8_K(const void* x, float* y, int64_t n);
float vec_dot_q2_K_q8_K(int64_t n, const void* x, const void* y);
float vec_dot_q3_K_q8_K(int64_t n, const void* x, const void* y);
float vec_dot_q4_K_q8_K(int64_t n, const void* x, const void* y);
float vec_dot_q5_K_q8_K(int64_t n, const void* x, const void* y);
float vec_dot_q6_K_q8_K(int64_t n, const void* x, const void* y);
float vec_dot_q8_K_q8_K(int64_t n, const void* x, const void* y);

// i-quants, read side (iq3.cpp, iq1.cpp); dot partner Q8_K.
void dequantize_iq3_xxs(const void* x, float* y, int64_t n);
void dequantize_iq3_s(const void* x, float* y, int64_t n);
void dequantize_iq1_s(const void* x, float* y, int64_t n);
void dequantize_iq1_m(const void* x, float* y, int64_t n);
float vec_dot_iq3_xxs_q8_K(int64_t n, const void* x, const void* y);
float vec_dot_iq3_s_q8_K(int64_t n, const void* x, const void* y);
float vec_dot_iq1_s_q8_K(int64_t n, const void* x, const void* y);
float vec_dot_iq1_m_q8_K(int64_t n, const void* x, const void* y);

// 2-bit i-quants, read side (iq2.cpp).
void dequantize_iq2_xxs(const void* x, float* y, int64_t n);
void dequantize_iq2_xs(const void* x, float* y, int64_t n);
void dequantize_iq2_s(const void* x, float* y, int64_t n);
float vec_dot_iq2_xxs_q8_K(int64_t n, const void* x, const void* y);
float vec_dot_iq2_xs_q8_K(int64_t n, const void* x, const void* y);
float vec_dot_iq2_s_q8_K(int64_t n, const void* x, const void* y);
// 4-bit non-linear formats (iq4.cpp): IQ4_NL pairs with Q8_0, IQ4_XS with Q8_K.
void quantize_iq4_nl(const float* x, void* y, int64_t n);
void quantize_iq4_xs(const float* x, void* y, int64_t n);
void quantize_iq4_nl_weighted(const float* x, void* y, int64_t n, const float* importance);
void quantize_iq4_xs_weighted(const float* x, void* y, int64_t n, const float* importance);
void dequantize_iq4_nl(const void* x, float* y, int64_t n);
void dequantize_iq4_xs(const void* x, float* y, int64_t n);
float vec_dot_iq4_nl_q8_0(int64_t n, const void* x, const void* y);
float vec_dot_iq4_xs_q8_K(int64_t n, const void* x, const void* y);

// Importance-weighted searches (weighted_legacy.cpp, weighted_k.cpp): one row of n
// elements, importance[0..n) for its columns (Q4_0 .. Q5_1 use the row's mean square, so
// a call is one whole row).
void quantize_q4_0_weighted(const float* x, void* y, int64_t n, const float* importance);
void quantize_q4_1_weighted(const float* x, void* y, int64_t n, const float* importance);
void quantize_q5_0_weighted(const float* x, void* y, int64_t n, const float* importance);
void quantize_q5_1_weighted(const float* x, void* y, int64_t n, const float* importance);
void quantize_q2_K_weighted(const float* x, void* y, int64_t n, const float* importance);
void quantize_q3_K_weighted(const float* x, void* y, int64_t n, const float* importance);
void quantize_q4_K_weighted(const float* x, void* y, int64_t n, const float* importance);
void quantize_q5_K_weighted(const float* x, void* y, int64_t n, const float* importance);
void quantize_q6_K_weighted(const float* x, void* y, int64_t n, const float* importance);

// Ternary formats (ternary.cpp).
void quantize_tq1_0(const float* x, void* y, int64_t n);
void quantize_tq2_0(const float* x, void* y, int64_t n);
void dequantize_tq1_0(const void* x, float* y, int64_t n);
void dequantize_tq2_0(const void* x, float* y, int64_t n);
float vec_dot_tq1_0_q8_K(int64_t n, const void* x, const void* y);
float vec_dot_tq2_0_q8_K(int64_t n, const void* x, const void* y);

}  // namespace tessera::quant
