// The 32-element ("legacy") formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q8_1.
// Layouts are in blocks.h. The quantizers are the round-to-nearest reference ones:
//  - Q4_0 / Q5_0: d = v / -8 (resp. -16) where v is the value of largest magnitude (the
//    first such one), so that v itself maps to q = 0; q = min(qmax, trunc(x / d + 8.5)).
//  - Q4_1 / Q5_1: d = (max - min) / 15 (resp. 31), m = min, q = trunc((x - m) / d + 0.5).
//  - Q8_0 / Q8_1: d = max|x| / 127, q = round(x / d) (half away from zero).
// The float operations are written in the reference order so that blocks come out
// bit-identical to files made by the GGUF ecosystem's quantizer.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/k_pack.h"
#include "quant/k_search.h"
#include "quant/quant.h"
#include "quant/strict_fp.h"  // last: applies to everything below

namespace tessera::quant {
namespace {

using detail::block_count;
using detail::pack5;

// The value of largest magnitude in x[0..n) (the first one on ties), 0 when all are 0.
float signed_absmax(const float* x, int n) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

float absmax(const float* x, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}

struct Range {
  float min;
  float max;
};
Range range_of(const float* x, int n) {
  Range r{std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()};
  for (int j = 0; j < n; ++j) {
    if (x[j] < r.min) r.min = x[j];
    if (x[j] > r.max) r.max = x[j];
  }
  return r;
}

float inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// Reads the 32 5-bit values of a Q5 block into q[0..32).
void unpack5(const uint8_t* qs, const uint8_t* qh, int* q) {
  const uint32_t high =
      uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
  for (int j = 0; j < 16; ++j) {
    q[j] = (qs[j] & 0x0f) | int((high >> j) & 1) << 4;
    q[j + 16] = (qs[j] >> 4) | int((high >> (j + 16)) & 1) << 4;
  }
}

// Reads the 32 nibbles of a Q4 block into q[0..32).
void unpack4(const uint8_t* qs, int* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = qs[j] & 0x0f;
    q[j + 16] = qs[j] >> 4;
  }
}

int dot32(const int* a, const int8_t* b) {
  int sum = 0;
  for (int j = 0; j < 32; ++j) sum += a[j] * b[j];
  return sum;
}

int sum32(const int8_t* b) {
  int sum = 0;
  for (int j = 0; j < 32; ++j) sum += b[j];
  return sum;
}

}  // namespace

// ---- Q4_0 ---------------------------------------------------------------------------

void quantize_q4_0(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockQ4_0*>(y);
  const int64_t nb = block_count(n, QK4_0);
  for (int64_t i = 0; i < nb; ++i, x += QK4_0) {
    const float d = signed_absmax(x, QK4_0) / -8;
    const float id = inverse(d);
    out[i].d = f32_to_f16(d);
    for (int j = 0; j < 16; ++j) {
      const float v0 = x[j] * id;
      const float v1 = x[j + 16] * id;
      const int q0 = std::min(15, int(v0 + 8.5f));
      const int q1 = std::min(15, int(v1 + 8.5f));
      out[i].qs[j] = uint8_t(q0 | (q1 << 4));
    }
  }
}

void dequantize_q4_0(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockQ4_0*>(x);
  const int64_t nb = block_count(n, QK4_0);
  for (int64_t i = 0; i < nb; ++i, y += QK4_0) {
    const float d = f16_to_f32(in[i].d);
    int q[32];
    unpack4(in[i].qs, q);
    for (int j = 0; j < 32; ++j) y[j] = float(q[j] - 8) * d;
  }
}

float vec_dot_q4_0_q8_0(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ4_0*>(x);
  const auto* b = static_cast<const BlockQ8_0*>(y);
  const int64_t nb = block_count(n, QK4_0);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int q[32];
    unpack4(a[i].qs, q);
    for (int& v : q) v -= 8;
    sum += float(dot32(q, b[i].qs)) * (f16_to_f32(a[i].d) * f16_to_f32(b[i].d));
  }
  return sum;
}

// ---- Q4_1 ---------------------------------------------------------------------------

void quantize_q4_1(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockQ4_1*>(y);
  const int64_t nb = block_count(n, QK4_1);
  for (int64_t i = 0; i < nb; ++i, x += QK4_1) {
    const Range r = range_of(x, QK4_1);
    const float d = (r.max - r.min) / 15;
    const float id = inverse(d);
    out[i].d = f32_to_f16(d);
    out[i].m = f32_to_f16(r.min);
    for (int j = 0; j < 16; ++j) {
      const float v0 = (x[j] - r.min) * id;
      const float v1 = (x[j + 16] - r.min) * id;
      const int q0 = std::min(15, int(v0 + 0.5f));
      const int q1 = std::min(15, int(v1 + 0.5f));
      out[i].qs[j] = uint8_t(q0 | (q1 << 4));
    }
  }
}

void dequantize_q4_1(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockQ4_1*>(x);
  const int64_t nb = block_count(n, QK4_1);
  for (int64_t i = 0; i < nb; ++i, y += QK4_1) {
    const float d = f16_to_f32(in[i].d);
    const float m = f16_to_f32(in[i].m);
    int q[32];
    unpack4(in[i].qs, q);
    for (int j = 0; j < 32; ++j) y[j] = float(q[j]) * d + m;
  }
}

// sum_j (d_x q_j + m_x) d_y p_j = d_x d_y sum(q p) + m_x d_y sum(p). The exact integer
// sum(p) is used rather than the block's fp16 `s` (which is rounded to 11 bits).
float vec_dot_q4_1_q8_1(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ4_1*>(x);
  const auto* b = static_cast<const BlockQ8_1*>(y);
  const int64_t nb = block_count(n, QK4_1);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int q[32];
    unpack4(a[i].qs, q);
    const float dy = f16_to_f32(b[i].d);
    sum += float(dot32(q, b[i].qs)) * (f16_to_f32(a[i].d) * dy) +
           float(sum32(b[i].qs)) * (f16_to_f32(a[i].m) * dy);
  }
  return sum;
}

// ---- Q5_0 ---------------------------------------------------------------------------

void quantize_q5_0(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockQ5_0*>(y);
  const int64_t nb = block_count(n, QK5_0);
  for (int64_t i = 0; i < nb; ++i, x += QK5_0) {
    const float d = signed_absmax(x, QK5_0) / -16;
    const float id = inverse(d);
    out[i].d = f32_to_f16(d);
    int q[32];
    for (int j = 0; j < 32; ++j) {
      const float v = x[j] * id;
      q[j] = std::min(31, int(v + 16.5f));
    }
    pack5(q, out[i].qs, out[i].qh);
  }
}

void dequantize_q5_0(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockQ5_0*>(x);
  const int64_t nb = block_count(n, QK5_0);
  for (int64_t i = 0; i < nb; ++i, y += QK5_0) {
    const float d = f16_to_f32(in[i].d);
    int q[32];
    unpack5(in[i].qs, in[i].qh, q);
    for (int j = 0; j < 32; ++j) y[j] = float(q[j] - 16) * d;
  }
}

float vec_dot_q5_0_q8_0(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ5_0*>(x);
  const auto* b = static_cast<const BlockQ8_0*>(y);
  const int64_t nb = block_count(n, QK5_0);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int q[32];
    unpack5(a[i].qs, a[i].qh, q);
    for (int& v : q) v -= 16;
    sum += float(dot32(q, b[i].qs)) * (f16_to_f32(a[i].d) * f16_to_f32(b[i].d));
  }
  return sum;
}

// ---- Q5_1 ---------------------------------------------------------------------------

void quantize_q5_1(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockQ5_1*>(y);
  const int64_t nb = block_count(n, QK5_1);
  for (int64_t i = 0; i < nb; ++i, x += QK5_1) {
    const Range r = range_of(x, QK5_1);
    const float d = (r.max - r.min) / 31;
    const float id = inverse(d);
    out[i].d = f32_to_f16(d);
    out[i].m = f32_to_f16(r.min);
    int q[32];
    for (int j = 0; j < 32; ++j) {
      const float v = (x[j] - r.min) * id;
      q[j] = std::min(31, int(v + 0.5f));
    }
    pack5(q, out[i].qs, out[i].qh);
  }
}

void dequantize_q5_1(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockQ5_1*>(x);
  const int64_t nb = block_count(n, QK5_1);
  for (int64_t i = 0; i < nb; ++i, y += QK5_1) {
    const float d = f16_to_f32(in[i].d);
    const float m = f16_to_f32(in[i].m);
    int q[32];
    unpack5(in[i].qs, in[i].qh, q);
    for (int j = 0; j < 32; ++j) y[j] = float(q[j]) * d + m;
  }
}

// As Q4_1: the minimum term uses the exact integer sum of the Q8_1 quants.
float vec_dot_q5_1_q8_1(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ5_1*>(x);
  const auto* b = static_cast<const BlockQ8_1*>(y);
  const int64_t nb = block_count(n, QK5_1);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int q[32];
    unpack5(a[i].qs, a[i].qh, q);
    const float dy = f16_to_f32(b[i].d);
    sum += float(dot32(q, b[i].qs)) * (f16_to_f32(a[i].d) * dy) +
           float(sum32(b[i].qs)) * (f16_to_f32(a[i].m) * dy);
  }
  return sum;
}

// ---- Q8_0 and Q8_1 ------------------------------------------------------------------

void quantize_q8_0(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockQ8_0*>(y);
  const int64_t nb = block_count(n, QK8_0);
  for (int64_t i = 0; i < nb; ++i, x += QK8_0) {
    const float d = absmax(x, QK8_0) / 127;
    const float id = inverse(d);
    out[i].d = f32_to_f16(d);
    for (int j = 0; j < QK8_0; ++j) out[i].qs[j] = int8_t(std::round(x[j] * id));
  }
}

void quantize_q8_1(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockQ8_1*>(y);
  const int64_t nb = block_count(n, QK8_1);
  for (int64_t i = 0; i < nb; ++i, x += QK8_1) {
    const float d = absmax(x, QK8_1) / 127;
    const float id = inverse(d);
    out[i].d = f32_to_f16(d);
    int sum = 0;
    for (int j = 0; j < QK8_1; ++j) {
      out[i].qs[j] = int8_t(std::round(x[j] * id));
      sum += out[i].qs[j];
    }
    out[i].s = f32_to_f16(float(sum) * d);
  }
}

void dequantize_q8_0(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockQ8_0*>(x);
  const int64_t nb = block_count(n, QK8_0);
  for (int64_t i = 0; i < nb; ++i, y += QK8_0) {
    const float d = f16_to_f32(in[i].d);
    for (int j = 0; j < QK8_0; ++j) y[j] = float(in[i].qs[j]) * d;
  }
}

void dequantize_q8_1(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockQ8_1*>(x);
  const int64_t nb = block_count(n, QK8_1);
  for (int64_t i = 0; i < nb; ++i, y += QK8_1) {
    const float d = f16_to_f32(in[i].d);
    for (int j = 0; j < QK8_1; ++j) y[j] = float(in[i].qs[j]) * d;
  }
}

float vec_dot_q8_0_q8_0(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ8_0*>(x);
  const auto* b = static_cast<const BlockQ8_0*>(y);
  const int64_t nb = block_count(n, QK8_0);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int sumi = 0;
    for (int j = 0; j < QK8_0; ++j) sumi += int(a[i].qs[j]) * int(b[i].qs[j]);
    sum += float(sumi) * (f16_to_f32(a[i].d) * f16_to_f32(b[i].d));
  }
  return sum;
}

float vec_dot_q8_1_q8_1(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ8_1*>(x);
  const auto* b = static_cast<const BlockQ8_1*>(y);
  const int64_t nb = block_count(n, QK8_1);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int sumi = 0;
    for (int j = 0; j < QK8_1; ++j) sumi += int(a[i].qs[j]) * int(b[i].qs[j]);
    sum += float(sumi) * (f16_to_f32(a[i].d) * f16_to_f32(b[i].d));
  }
  return sum;
}

}  // namespace tessera::quant
