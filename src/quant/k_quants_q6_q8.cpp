// Q6_K (6-bit k-quant, 16 sub-blocks of 16 with int8 scales) and Q8_K (the 8-bit
// activation partner of every k-quant). Layouts in blocks.h.
//
// Q6_K reference quantizer: each sub-block's scale comes from search_scale_sym (nmax 32,
// weights x^2); the signed scales are quantized to int8 against max/-128, and the quants
// recomputed from the stored (fp16-rounded) scales.
// Q8_K: d = v / -127 where v is the value of largest magnitude, q = round(x / d)
// (ties to even), plus the sum of each 16 quants in bsums.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/k_pack.h"
#include "quant/k_search.h"
#include "quant/quant.h"
#include "quant/strict_fp.h"  // last: applies to everything below

namespace tessera::quant {
namespace {

using detail::block_count;
using detail::pack_q6;

// The 256 signed quants (q - 32) of a Q6_K block.
void unpack_q6(const BlockQ6_K& b, int* q) {
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 32; ++l) {
        const int low = (b.ql[64 * h + 32 * (k & 1) + l] >> (4 * (k >> 1))) & 0x0f;
        const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
        q[128 * h + 32 * k + l] = (low | (high << 4)) - 32;
      }
    }
  }
}

// qw: importance weights of the 256 elements, or null (quantize_q6_K_weighted, weighted_k.cpp
// holds the other formats' weighted searches; Q6_K's differs only in the weights).
void quantize_block_q6_K(const float* x, const float* qw, BlockQ6_K& b) {
  int8_t L[QK_K];
  float scales[16];
  float max_scale = 0;
  float max_abs_scale = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j] = detail::search_scale_sym(16, 32, x + 16 * j, L + 16 * j, qw == nullptr ? nullptr : qw + 16 * j);
    if (std::fabs(scales[j]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  if (max_abs_scale < detail::kGroupMaxEps) {
    std::memset(&b, 0, sizeof(b));
    return;
  }
  const float iscale = -128.0f / max_scale;
  b.d = f32_to_f16(1 / iscale);
  for (int j = 0; j < 16; ++j) b.scales[j] = int8_t(std::min(127, nearest_int(iscale * scales[j])));
  const float d_all = f16_to_f32(b.d);
  for (int j = 0; j < 16; ++j) {
    const float d = d_all * float(b.scales[j]);
    if (d == 0.0f) continue;  // keep the quants of the search
    for (int l = 0; l < 16; ++l) {
      L[16 * j + l] = int8_t(std::clamp(nearest_int(x[16 * j + l] / d), -32, 31) + 32);
    }
  }
  pack_q6(L, b);
}

void quantize_block_q8_K(const float* x, BlockQ8_K& b) {
  float max = 0;
  float amax = 0;
  for (int j = 0; j < QK_K; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax == 0.0f) {
    std::memset(&b, 0, sizeof(b));
    return;
  }
  const float iscale = -127.0f / max;
  for (int j = 0; j < QK_K; ++j) b.qs[j] = int8_t(std::min(127, nearest_int(iscale * x[j])));
  for (int j = 0; j < 16; ++j) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) sum += b.qs[16 * j + l];
    b.bsums[j] = int16_t(sum);
  }
  b.d = 1 / iscale;
}

}  // namespace

// ---- Q6_K ---------------------------------------------------------------------------

void quantize_q6_K(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockQ6_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) quantize_block_q6_K(x + i * QK_K, nullptr, out[i]);
}

void quantize_q6_K_weighted(const float* x, void* y, int64_t n, const float* importance) {
  auto* out = static_cast<BlockQ6_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) quantize_block_q6_K(x + i * QK_K, importance + i * QK_K, out[i]);
}

void dequantize_q6_K(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockQ6_K*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i, y += QK_K) {
    const float d = f16_to_f32(in[i].d);
    int q[QK_K];
    unpack_q6(in[i], q);
    for (int e = 0; e < QK_K; ++e) y[e] = d * float(in[i].scales[e / 16]) * float(q[e]);
  }
}

// Per block: d * d_y * sum_j sc_j ((q_j - 32) . p_j).
float vec_dot_q6_K_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ6_K*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int q[QK_K];
    unpack_q6(a[i], q);
    int isum = 0;
    for (int j = 0; j < 16; ++j) {
      int dot = 0;
      for (int l = 0; l < 16; ++l) dot += q[16 * j + l] * b[i].qs[16 * j + l];
      isum += a[i].scales[j] * dot;
    }
    sum += (f16_to_f32(a[i].d) * b[i].d) * float(isum);
  }
  return sum;
}

// ---- Q8_K ---------------------------------------------------------------------------

void quantize_q8_K(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) quantize_block_q8_K(x + i * QK_K, out[i]);
}

void dequantize_q8_K(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockQ8_K*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i, y += QK_K) {
    for (int j = 0; j < QK_K; ++j) y[j] = in[i].d * float(in[i].qs[j]);
  }
}

float vec_dot_q8_K_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ8_K*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int sumi = 0;
    for (int j = 0; j < QK_K; ++j) sumi += int(a[i].qs[j]) * int(b[i].qs[j]);
    sum += (a[i].d * b[i].d) * float(sumi);
  }
  return sum;
}

}  // namespace tessera::quant
