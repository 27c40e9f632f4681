// Importance-weighted quantizers of the k-quants (the reference quantizer's algorithms when
// it is given an importance matrix). Per 256-element super-block, with sigma2 the block's
// mean square (Q2_K) or twice it (Q3_K, Q4_K, Q5_K), each element's error counts with
// weight w = importance * sqrt(sigma2 + x^2) (Q6_K: the importance alone):
//  - Q2_K: scale and min of each 16-element sub-block by the scale-and-min search
//    (nmax 3, 37 trials from 2.1 in steps of 0.05, squared errors); the 16 scales and 16
//    mins are then quantized to 4 bits by the non-negative search, each sub-block weighted
//    by the sum of its w;
//  - Q3_K: symmetric search per sub-block (nmax 4), the signed scales quantized to 6 bits
//    by the symmetric search weighted by the sub-blocks' sums of w;
//  - Q4_K / Q5_K: scale-and-min search per 32-element sub-block (nmax 15 / 31, 37 trials
//    from nmax - 0.9), scales and mins quantized to 6 bits by the non-negative search;
//  - Q6_K: symmetric search per 16-element sub-block (nmax 32) with the importance as the
//    weights; scales stored as the round-to-nearest quantizer stores them.
// Every quantizer then recomputes the quants from the stored (fp16-rounded) scales.
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

float mean_square(const float* x) {
  float sum_x2 = 0;
  for (int j = 0; j < QK_K; ++j) sum_x2 += x[j] * x[j];
  return sum_x2 / QK_K;
}

// w = qw * sqrt(sigma2 + x^2) over n elements; returns the sum of w.
float element_weights(int n, const float* x, const float* qw, float sigma2, float* w) {
  float sum = 0;
  for (int l = 0; l < n; ++l) w[l] = qw[l] * std::sqrt(sigma2 + x[l] * x[l]);
  for (int l = 0; l < n; ++l) sum += w[l];
  return sum;
}

void quantize_block_q2_K(const float* x, const float* qw, BlockQ2_K& b) {
  uint8_t L[QK_K];
  uint8_t laux[16];
  float w[16];
  float scales[16];
  float mins[16];
  float sw[16];
  const float sigma2 = mean_square(x);
  const detail::ScaleMinSearch opt{3, -0.9f, 0.05f, 36, false};
  for (int j = 0; j < 16; ++j) {
    sw[j] = element_weights(16, x + 16 * j, qw + 16 * j, sigma2, w);
    scales[j] = detail::search_scale_min(16, x + 16 * j, w, opt, L + 16 * j, laux, &mins[j]);
  }
  uint8_t ls[16];
  uint8_t lm[16];
  b.d = f32_to_f16(detail::search_scale_pos(16, 15, scales, sw, ls));
  b.dmin = f32_to_f16(detail::search_scale_pos(16, 15, mins, sw, lm));
  for (int j = 0; j < 16; ++j) b.scales[j] = uint8_t(ls[j] | (lm[j] << 4));
  const float d_all = f16_to_f32(b.d);
  const float m_all = f16_to_f32(b.dmin);
  for (int j = 0; j < 16; ++j) {
    const float d = d_all * float(b.scales[j] & 0x0f);
    if (d == 0.0f) continue;  // keep the quants of the search
    const float m = m_all * float(b.scales[j] >> 4);
    for (int l = 0; l < 16; ++l) {
      L[16 * j + l] = uint8_t(std::clamp(nearest_int((x[16 * j + l] + m) / d), 0, 3));
    }
  }
  detail::pack_low2(L, b.qs);
}

void quantize_block_q3_K(const float* x, const float* qw, BlockQ3_K& b) {
  int8_t L[QK_K];
  float w[16];
  float scales[16];
  float sw[16];
  const float sigma2 = 2 * mean_square(x);
  for (int j = 0; j < 16; ++j) {
    sw[j] = element_weights(16, x + 16 * j, qw + 16 * j, sigma2, w);
    scales[j] = detail::search_scale_sym(16, 4, x + 16 * j, L + 16 * j, w);
  }
  int8_t ls[16];  // 0..63: the 6-bit scales with their offset of 32
  std::memset(b.scales, 0, sizeof(b.scales));
  b.d = f32_to_f16(detail::search_scale_sym(16, 32, scales, ls, sw));
  for (int j = 0; j < 16; ++j) detail::set_scale_q3(j, ls[j], b.scales);
  const float d_all = f16_to_f32(b.d);
  for (int j = 0; j < 16; ++j) {
    const float d = d_all * float(detail::get_scale_q3(j, b.scales) - 32);
    if (d == 0.0f) continue;  // keep the quants of the search
    for (int l = 0; l < 16; ++l) {
      L[16 * j + l] = int8_t(std::clamp(nearest_int(x[16 * j + l] / d), -4, 3) + 4);
    }
  }
  detail::pack_q3(L, b);
}

// The scales and quants shared by Q4_K and Q5_K; L gets the quants (0..nmax).
template <typename Block>
void quantize_block_k4(const float* x, const float* qw, int nmax, Block& b, uint8_t* L) {
  uint8_t laux[32];
  float w[32];
  float scales[8];
  float mins[8];
  float sw[8];
  const float sigma2 = 2 * mean_square(x);
  const detail::ScaleMinSearch opt{nmax, -0.9f, 0.05f, 36, false};
  for (int j = 0; j < 8; ++j) {
    sw[j] = element_weights(32, x + 32 * j, qw + 32 * j, sigma2, w);
    scales[j] = detail::search_scale_min(32, x + 32 * j, w, opt, L + 32 * j, laux, &mins[j]);
  }
  uint8_t ls[8];
  uint8_t lm[8];
  const float d_block = detail::search_scale_pos(8, 63, scales, sw, ls);
  const float m_block = detail::search_scale_pos(8, 63, mins, sw, lm);
  std::memset(b.scales, 0, sizeof(b.scales));
  for (int j = 0; j < 8; ++j) detail::set_scale_min_k4(j, ls[j], lm[j], b.scales);
  b.d = f32_to_f16(d_block);
  b.dmin = f32_to_f16(m_block);
  const float d_all = f16_to_f32(b.d);
  const float m_all = f16_to_f32(b.dmin);
  for (int j = 0; j < 8; ++j) {
    int sc = 0;
    int m = 0;
    detail::get_scale_min_k4(j, b.scales, &sc, &m);
    const float d = d_all * float(sc);
    if (d == 0.0f) continue;  // keep the quants of the search
    const float dm = m_all * float(m);
    for (int l = 0; l < 32; ++l) {
      L[32 * j + l] = uint8_t(std::clamp(nearest_int((x[32 * j + l] + dm) / d), 0, nmax));
    }
  }
}

}  // namespace

void quantize_q2_K_weighted(const float* x, void* y, int64_t n, const float* importance) {
  auto* out = static_cast<BlockQ2_K*>(y);
  for (int64_t i = 0; i < block_count(n, QK_K); ++i) {
    quantize_block_q2_K(x + QK_K * i, importance + QK_K * i, out[i]);
  }
}

void quantize_q3_K_weighted(const float* x, void* y, int64_t n, const float* importance) {
  auto* out = static_cast<BlockQ3_K*>(y);
  for (int64_t i = 0; i < block_count(n, QK_K); ++i) {
    quantize_block_q3_K(x + QK_K * i, importance + QK_K * i, out[i]);
  }
}

void quantize_q4_K_weighted(const float* x, void* y, int64_t n, const float* importance) {
  auto* out = static_cast<BlockQ4_K*>(y);
  for (int64_t i = 0; i < block_count(n, QK_K); ++i) {
    uint8_t L[QK_K];
    quantize_block_k4(x + QK_K * i, importance + QK_K * i, 15, out[i], L);
    detail::pack_nibbles(L, out[i].qs);
  }
}

void quantize_q5_K_weighted(const float* x, void* y, int64_t n, const float* importance) {
  auto* out = static_cast<BlockQ5_K*>(y);
  for (int64_t i = 0; i < block_count(n, QK_K); ++i) {
    uint8_t L[QK_K];
    quantize_block_k4(x + QK_K * i, importance + QK_K * i, 31, out[i], L);
    detail::pack_nibbles(L, out[i].qs);
    detail::pack_q5_high(L, out[i].qh);
  }
}

}  // namespace tessera::quant
