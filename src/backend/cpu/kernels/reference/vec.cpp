// Plain scalar vector kernels: the specification every SIMD level is tested against.
// Sums keep 8 partial accumulators (lane j takes elements i with i % 8 == j) so the
// loops vectorise without reassociation and long rows lose little precision.
#include "backend/cpu/vec.h"

#include <cmath>
#include <limits>

#include "core/fp16.h"

namespace tessera::cpu::reference {
namespace {

constexpr int kLanes = 8;

float reduce_lanes(const float* acc) {
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// Dot product with lane-wise partial sums; the one order all dot variants share.
float dot_f32(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] += a[i + j] * b[i + j];
  }
  for (int j = 0; i + j < n; ++j) acc[j] += a[i + j] * b[i + j];
  return reduce_lanes(acc);
}

void dot_f32_x4(const float* a, const float* const* b, int64_t n, float* out) {
  for (int r = 0; r < 4; ++r) out[r] = dot_f32(a, b[r], n);
}

// dot_f32's order over 16-bit elements converted by Cvt (IEEE half or bfloat16).
template <float (*Cvt)(uint16_t)>
float dot_half(const uint16_t* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] += Cvt(a[i + j]) * b[i + j];
  }
  for (int j = 0; i + j < n; ++j) acc[j] += Cvt(a[i + j]) * b[i + j];
  return reduce_lanes(acc);
}

float dot_f16_f32(const uint16_t* a, const float* b, int64_t n) { return dot_half<f16_to_f32>(a, b, n); }
float dot_bf16_f32(const uint16_t* a, const float* b, int64_t n) { return dot_half<bf16_to_f32>(a, b, n); }

void f16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f16_to_f32(x[i]);
}
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16(x[i]);
}
void bf16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_f32(x[i]);
}
void f32_to_bf16_row(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_bf16(x[i]);
}

float sum_f32(const float* x, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] += x[i + j];
  }
  for (int j = 0; i + j < n; ++j) acc[j] += x[i + j];
  return reduce_lanes(acc);
}

float sumsq_f32(const float* x, int64_t n) { return dot_f32(x, x, n); }

float max_f32(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

void add_f32(float* y, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}
void mul_f32(float* y, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}
void scale_f32(float* y, const float* x, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
}
void add_scalar_f32(float* y, const float* x, float c, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] + c;
}

float exp_sum_f32(float* y, const float* x, float m, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      y[i + j] = std::exp(x[i + j] - m);
      acc[j] += y[i + j];
    }
  }
  for (int j = 0; i + j < n; ++j) {
    y[i + j] = std::exp(x[i + j] - m);
    acc[j] += y[i + j];
  }
  return reduce_lanes(acc);
}

void silu_f32(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

// 0.5x(1 + tanh(u)) == x * sigmoid(2u): the sigmoid form has no cancellation for x << 0.
void gelu_f32(float* y, const float* x, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCoef = 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float u = kSqrt2OverPi * v * (1.0f + kCoef * v * v);
    y[i] = v / (1.0f + std::exp(-2.0f * u));
  }
}

}  // namespace

const VecKernels kKernels = {
    Isa::Reference,  dot_f32,         dot_f32_x4,     dot_f16_f32, dot_bf16_f32, f16_to_f32_row, f32_to_f16_row,
    bf16_to_f32_row, f32_to_bf16_row, sum_f32,        sumsq_f32,   max_f32,        add_f32,
    mul_f32,         scale_f32,       add_scalar_f32, exp_sum_f32, silu_f32,       gelu_f32,
};

}  // namespace tessera::cpu::reference
