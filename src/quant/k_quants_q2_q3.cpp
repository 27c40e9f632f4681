// Q2_K and Q3_K: 2- and 3-bit k-quants with 16 sub-blocks of 16 elements (layouts in
// blocks.h).
//
// Q2_K reference quantizer: each sub-block gets a scale and a min from search_scale_min
// (nmax 3, weights |x|, absolute errors, 16 trials from (3 - 0.5) in steps of 0.1); the
// scales and mins are quantized to 4 bits against max/15, and the quants are recomputed
// from the stored (fp16-rounded) scales.
//
// Q3_K reference quantizer: each sub-block's scale comes from search_scale_q3 (nmax 4);
// the signed scales are quantized to 6 bits against max/-32, and the quants recomputed
// from the stored scales.
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
using detail::pack_low2;

void unpack_low2(const uint8_t* qs, int* q) {
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 32; ++l) q[128 * h + 32 * k + l] = (qs[32 * h + l] >> (2 * k)) & 3;
    }
  }
}

int dot16(const int* q, const int8_t* p) {
  int sum = 0;
  for (int l = 0; l < 16; ++l) sum += q[l] * p[l];
  return sum;
}

// Quantizes the 16 sub-block scales (or mins) v to 4 bits against max / 15, OR-ing them
// into bits `shift`..`shift + 3` of out. Returns the fp16 super-scale.
uint16_t quantize_4bit_scales(const float* v, float max, int shift, uint8_t* out) {
  if (!(max > 0)) return f32_to_f16(0.0f);
  const float iscale = 15.0f / max;
  for (int j = 0; j < 16; ++j) out[j] = uint8_t(out[j] | (nearest_int(iscale * v[j]) << shift));
  return f32_to_f16(max / 15.0f);
}

void quantize_block_q2_K(const float* x, BlockQ2_K& b) {
  uint8_t L[QK_K];
  uint8_t laux[16];
  float weights[16];
  float scales[16];
  float mins[16];
  const detail::ScaleMinSearch opt{3, -0.5f, 0.1f, 15, true};
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < 16; ++j) {
    for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
    scales[j] = detail::search_scale_min(16, x + 16 * j, weights, opt, L + 16 * j, laux, &mins[j]);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  std::memset(b.scales, 0, sizeof(b.scales));
  b.d = quantize_4bit_scales(scales, max_scale, 0, b.scales);
  b.dmin = quantize_4bit_scales(mins, max_min, 4, b.scales);
  const float d_all = f16_to_f32(b.d);
  const float m_all = f16_to_f32(b.dmin);
  for (int j = 0; j < 16; ++j) {
    const float d = d_all * float(b.scales[j] & 0x0f);
    if (d == 0.0f) continue;  // keep the quants of the search
    const float dm = m_all * float(b.scales[j] >> 4);
    for (int l = 0; l < 16; ++l) {
      L[16 * j + l] = uint8_t(std::clamp(nearest_int((x[16 * j + l] + dm) / d), 0, 3));
    }
  }
  pack_low2(L, b.qs);
}

void quantize_block_q3_K(const float* x, BlockQ3_K& b) {
  int8_t L[QK_K];
  float scales[16];
  float max_scale = 0;
  float amax = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j] = detail::search_scale_q3(16, 4, x + 16 * j, L + 16 * j);
    if (std::fabs(scales[j]) > amax) {
      amax = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  std::memset(b.scales, 0, sizeof(b.scales));
  if (max_scale != 0.0f) {
    const float iscale = -32.0f / max_scale;
    for (int j = 0; j < 16; ++j) {
      detail::set_scale_q3(j, std::clamp(nearest_int(iscale * scales[j]), -32, 31) + 32, b.scales);
    }
    b.d = f32_to_f16(1 / iscale);
  } else {
    b.d = f32_to_f16(0.0f);
  }
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

// The 256 signed quants (q - 4) of a Q3_K block.
void unpack_q3(const BlockQ3_K& b, int* q) {
  unpack_low2(b.qs, q);
  for (int e = 0; e < QK_K; ++e) q[e] -= ((b.hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4;
}

}  // namespace

// ---- Q2_K ---------------------------------------------------------------------------

void quantize_q2_K(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockQ2_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) quantize_block_q2_K(x + i * QK_K, out[i]);
}

void dequantize_q2_K(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockQ2_K*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i, y += QK_K) {
    const float d = f16_to_f32(in[i].d);
    const float min = f16_to_f32(in[i].dmin);
    int q[QK_K];
    unpack_low2(in[i].qs, q);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * float(in[i].scales[j] & 0x0f);
      const float ml = min * float(in[i].scales[j] >> 4);
      for (int l = 0; l < 16; ++l) y[16 * j + l] = dl * float(q[16 * j + l]) - ml;
    }
  }
}

// Per block: d_y * (d * sum_j sc_j (q_j . p_j) - dmin * sum_j m_j * bsum_j).
float vec_dot_q2_K_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ2_K*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int q[QK_K];
    unpack_low2(a[i].qs, q);
    int isum = 0;
    int summs = 0;
    for (int j = 0; j < 16; ++j) {
      isum += (a[i].scales[j] & 0x0f) * dot16(q + 16 * j, b[i].qs + 16 * j);
      summs += (a[i].scales[j] >> 4) * b[i].bsums[j];
    }
    const float dall = b[i].d * f16_to_f32(a[i].d);
    const float dmin = b[i].d * f16_to_f32(a[i].dmin);
    sum += dall * float(isum) - dmin * float(summs);
  }
  return sum;
}

// ---- Q3_K ---------------------------------------------------------------------------

void quantize_q3_K(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockQ3_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) quantize_block_q3_K(x + i * QK_K, out[i]);
}

void dequantize_q3_K(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockQ3_K*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i, y += QK_K) {
    const float d_all = f16_to_f32(in[i].d);
    int q[QK_K];
    unpack_q3(in[i], q);
    for (int j = 0; j < 16; ++j) {
      const float dl = d_all * float(detail::get_scale_q3(j, in[i].scales) - 32);
      for (int l = 0; l < 16; ++l) y[16 * j + l] = dl * float(q[16 * j + l]);
    }
  }
}

// Per block: d * d_y * sum_j (sc_j - 32) (q_j . p_j).
float vec_dot_q3_K_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ3_K*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int q[QK_K];
    unpack_q3(a[i], q);
    int isum = 0;
    for (int j = 0; j < 16; ++j) {
      isum += (detail::get_scale_q3(j, a[i].scales) - 32) * dot16(q + 16 * j, b[i].qs + 16 * j);
    }
    sum += (f16_to_f32(a[i].d) * b[i].d) * float(isum);
  }
  return sum;
}

}  // namespace tessera::quant
