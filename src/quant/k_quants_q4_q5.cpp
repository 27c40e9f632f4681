// Q4_K and Q5_K: 4- and 5-bit k-quants with 8 sub-blocks of 32 elements, each with a
// 6-bit scale and a 6-bit min packed into K_SCALE_SIZE = 12 bytes (layouts in blocks.h).
//
// Reference quantizer: each sub-block gets a scale and a min from search_scale_min with
// weights rms(sub-block) + |x| and squared errors (Q4_K: nmax 15, 21 trials from
// (15 - 1) in steps of 0.1; Q5_K: nmax 31, 16 trials from (31 - 0.5)); scales and mins
// are quantized to 6 bits against max/63, and the quants recomputed from the stored
// (fp16-rounded) values.
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
using detail::pack_nibbles;

// The scales shared by the Q4_K and Q5_K layouts.
struct KScales {
  uint8_t packed[K_SCALE_SIZE];
  uint16_t d;
  uint16_t dmin;
};

// Scale and min search of each of the 8 sub-blocks; L gets the quants found.
void search_sub_blocks(const float* x, const detail::ScaleMinSearch& opt, float* scales,
                       float* mins, uint8_t* L) {
  uint8_t laux[32];
  float weights[32];
  for (int j = 0; j < 8; ++j) {
    const float* xj = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xj[l] * xj[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xj[l]);
    scales[j] = detail::search_scale_min(32, xj, weights, opt, L + 32 * j, laux, &mins[j]);
  }
}

// Reference rounding of a scale or min to 6 bits (the result passes through a byte).
int to_6bit(float inv, float v) { return std::min(63, int(uint8_t(nearest_int(inv * v)))); }

// Everything of a Q4_K/Q5_K block but the packing of the quants L[0..256) (0..nmax).
KScales quantize_k4(const float* x, const detail::ScaleMinSearch& opt, uint8_t* L) {
  float scales[8];
  float mins[8];
  search_sub_blocks(x, opt, scales, mins, L);
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < 8; ++j) {
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  KScales k{};
  for (int j = 0; j < 8; ++j) {
    detail::set_scale_min_k4(j, to_6bit(inv_scale, scales[j]), to_6bit(inv_min, mins[j]), k.packed);
  }
  k.d = f32_to_f16(max_scale / 63.0f);
  k.dmin = f32_to_f16(max_min / 63.0f);
  const float d_all = f16_to_f32(k.d);
  const float m_all = f16_to_f32(k.dmin);
  for (int j = 0; j < 8; ++j) {
    int sc = 0;
    int m = 0;
    detail::get_scale_min_k4(j, k.packed, &sc, &m);
    const float d = d_all * float(sc);
    if (d == 0.0f) continue;  // keep the quants of the search
    const float dm = m_all * float(m);
    for (int l = 0; l < 32; ++l) {
      L[32 * j + l] = uint8_t(std::clamp(nearest_int((x[32 * j + l] + dm) / d), 0, opt.nmax));
    }
  }
  return k;
}

void unpack_nibbles(const uint8_t* qs, int* q) {
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      q[64 * g + l] = qs[32 * g + l] & 0x0f;
      q[64 * g + l + 32] = qs[32 * g + l] >> 4;
    }
  }
}

// Q5_K's fifth bits: element e at bit e / 32 of qh[e % 32].
void unpack_q5(const BlockQ5_K& b, int* q) {
  unpack_nibbles(b.qs, q);
  for (int e = 0; e < QK_K; ++e) q[e] |= ((b.qh[e % 32] >> (e / 32)) & 1) << 4;
}

// The 8 sub-block scales and mins of a Q4_K/Q5_K block as floats.
void sub_block_scales(const uint8_t* packed, uint16_t d, uint16_t dmin, float* dl, float* ml) {
  const float d_all = f16_to_f32(d);
  const float m_all = f16_to_f32(dmin);
  for (int j = 0; j < 8; ++j) {
    int sc = 0;
    int m = 0;
    detail::get_scale_min_k4(j, packed, &sc, &m);
    dl[j] = d_all * float(sc);
    ml[j] = m_all * float(m);
  }
}

void dequantize_k4(const int* q, const float* dl, const float* ml, float* y) {
  for (int j = 0; j < 8; ++j) {
    for (int l = 0; l < 32; ++l) y[32 * j + l] = dl[j] * float(q[32 * j + l]) - ml[j];
  }
}

// d_y * (d * sum_j sc_j (q_j . p_j) - dmin * sum_j m_j sum(p_j)) for one block.
float dot_k4(const int* q, const uint8_t* packed, uint16_t d, uint16_t dmin, const BlockQ8_K& b) {
  int isum = 0;
  int summ = 0;
  for (int j = 0; j < 8; ++j) {
    int sc = 0;
    int m = 0;
    detail::get_scale_min_k4(j, packed, &sc, &m);
    int dot = 0;
    for (int l = 0; l < 32; ++l) dot += q[32 * j + l] * b.qs[32 * j + l];
    isum += sc * dot;
    summ += m * (b.bsums[2 * j] + b.bsums[2 * j + 1]);
  }
  return (b.d * f16_to_f32(d)) * float(isum) - (b.d * f16_to_f32(dmin)) * float(summ);
}

}  // namespace

// ---- Q4_K ---------------------------------------------------------------------------

void quantize_q4_K(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockQ4_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  const detail::ScaleMinSearch opt{15, -1.0f, 0.1f, 20, false};
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    uint8_t L[QK_K];
    const KScales k = quantize_k4(x, opt, L);
    out[i].d = k.d;
    out[i].dmin = k.dmin;
    std::memcpy(out[i].scales, k.packed, K_SCALE_SIZE);
    pack_nibbles(L, out[i].qs);
  }
}

void dequantize_q4_K(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockQ4_K*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i, y += QK_K) {
    float dl[8];
    float ml[8];
    sub_block_scales(in[i].scales, in[i].d, in[i].dmin, dl, ml);
    int q[QK_K];
    unpack_nibbles(in[i].qs, q);
    dequantize_k4(q, dl, ml, y);
  }
}

float vec_dot_q4_K_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ4_K*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int q[QK_K];
    unpack_nibbles(a[i].qs, q);
    sum += dot_k4(q, a[i].scales, a[i].d, a[i].dmin, b[i]);
  }
  return sum;
}

// ---- Q5_K ---------------------------------------------------------------------------

void quantize_q5_K(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockQ5_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  const detail::ScaleMinSearch opt{31, -0.5f, 0.1f, 15, false};
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    uint8_t L[QK_K];
    const KScales k = quantize_k4(x, opt, L);
    out[i].d = k.d;
    out[i].dmin = k.dmin;
    std::memcpy(out[i].scales, k.packed, K_SCALE_SIZE);
    pack_nibbles(L, out[i].qs);
    detail::pack_q5_high(L, out[i].qh);
  }
}

void dequantize_q5_K(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockQ5_K*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i, y += QK_K) {
    float dl[8];
    float ml[8];
    sub_block_scales(in[i].scales, in[i].d, in[i].dmin, dl, ml);
    int q[QK_K];
    unpack_q5(in[i], q);
    dequantize_k4(q, dl, ml, y);
  }
}

float vec_dot_q5_K_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockQ5_K*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int q[QK_K];
    unpack_q5(a[i], q);
    sum += dot_k4(q, a[i].scales, a[i].d, a[i].dmin, b[i]);
  }
  return sum;
}

}  // namespace tessera::quant
