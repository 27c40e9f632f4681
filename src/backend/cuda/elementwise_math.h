// Scalar math of the CUDA elementwise, norm, rope, softmax and copy kernels that must
// agree with the CPU backend, written once for device and host (TESSERA_HD) so the host
// unit test (tests/unit/cuda_elementwise_math_test.cpp) checks it against the CPU code:
// the F16/BF16 conversions of core/fp16.h, the activations of the reference vec
// kernels, rope's angle and the Q8_0 quantizer's rounding.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/cuda/hd.h"

namespace tessera::cuda::math {

TESSERA_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

TESSERA_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// ---- F16 / BF16, bit for bit as core/fp16.h (round to nearest even) ------------------

TESSERA_HD float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    const float v = float(mant) * 5.9604644775390625e-8f;  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

TESSERA_HD uint16_t f32_to_f16(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return uint16_t(sign | 0x7e00);   // NaN
  if (abs >= 0x477ff000) return uint16_t(sign | 0x7c00);  // overflow -> inf
  if (abs < 0x38800000) {                                 // subnormal or zero
    const float scaled = bits_float(abs) * 16777216.0f;   // exact: a power of two
    uint32_t m = uint32_t(scaled);
    const float rem = scaled - float(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1))) ++m;
    return uint16_t(sign | m);
  }
  const uint32_t rounded = abs + 0x0fff + ((abs >> 13) & 1);  // nearest even at bit 13
  return uint16_t(sign | ((rounded - 0x38000000) >> 13));
}

TESSERA_HD float bf16_to_f32(uint16_t h) { return bits_float(uint32_t(h) << 16); }

TESSERA_HD uint16_t f32_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40);  // quiet NaN
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

// ---- activations, as the reference vec kernels (src/backend/cpu/kernels/reference) ----

/// x / (1 + exp(-x)).
TESSERA_HD float silu(float x) { return x / (1.0f + expf(-x)); }

/// 0.5x(1 + tanh(u)), u = sqrt(2/pi)(x + 0.044715x^3), as x / (1 + exp(-2u)).
TESSERA_HD float gelu(float x) {
  const float k_sqrt_2_over_pi = 0.7978845608028654f;
  const float k_coef = 0.044715f;
  const float u = k_sqrt_2_over_pi * x * (1.0f + k_coef * x * x);
  return x / (1.0f + expf(-2.0f * u));
}

/// max(x, 0)^2.
TESSERA_HD float relu_sqr(float x) {
  const float r = x > 0.0f ? x : 0.0f;
  return r * r;
}

/// min(max(x, lo), hi), NaN passing through as on the CPU.
TESSERA_HD float clamp(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }

// ---- rope ------------------------------------------------------------------------------

/// Angle of pair i (i < n_dims / 2) at position pos: pos * freq_scale *
/// freq_base^(-2i/n_dims) / factor, in double as the CPU (rounded to float only as cos/sin).
TESSERA_HD double rope_theta(int32_t pos, float freq_base, float freq_scale, int64_t i,
                             int32_t n_dims, float factor) {
  const double inv_freq = pow(double(freq_base), -2.0 * double(i) / double(n_dims));
  return double(pos) * double(freq_scale) * inv_freq / double(factor);
}

/// Rotates (x0, x1) by the angle with cosine c and sine s, each product and the sum
/// rounded separately (no fused multiply-add), as the CPU's rotate().
TESSERA_HD void rope_rotate(float x0, float x1, float c, float s, float* y0, float* y1) {
#if defined(__CUDA_ARCH__)
  *y0 = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
  *y1 = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
#else
  const float a = x0 * c;
  const float b = x1 * s;
  const float e = x0 * s;
  const float f = x1 * c;
  *y0 = a - b;
  *y1 = e + f;
#endif
}

// ---- Q8_0 (src/quant/legacy.cpp quantize_q8_0) ------------------------------------------

/// The block scale d = max|x| / 127 of a block whose largest magnitude is amax.
TESSERA_HD float q8_0_scale(float amax) { return amax / 127; }

/// 1 / d, or 0 for an all-zero block.
TESSERA_HD float q8_0_inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

/// round(x * id), halfway cases away from zero.
TESSERA_HD int8_t q8_0_quant(float x, float id) { return int8_t(roundf(x * id)); }

}  // namespace tessera::cuda::math
