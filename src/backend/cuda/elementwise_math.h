// Scalar math of the CUDA elementwise, norm, rope, softmax and copy kernels that must
// agree with the CPU backend, written once for device and host (TESSERA_HD) so the host
// unit test (tests/unit/cuda_elementwise_math_test.cpp) checks it against the CPU code:
// the activations of the reference vec kernels, rope's angle and the Q8_0 quantizer's
// rounding.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/fp16.h"
#include "core/hd.h"

namespace tessera::cuda::math {

// F16 / BF16 and float bits: core/fp16.h's, which run on the GPU too.
using tessera::bf16_to_f32;
using tessera::f16_to_f32;
using tessera::f32_to_bf16;
using tessera::f32_to_f16;
TESSERA_HD uint32_t float_bits(float f) { return tessera::f32_to_bits(f); }
TESSERA_HD float bits_float(uint32_t u) { return tessera::bits_to_f32(u); }

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
