// IQ4_NL and IQ4_XS: 4-bit indices into the 16 non-linear values kIq4nlValues (denser
// near zero, where most weights are), times a block scale. Layouts in blocks.h.
//
// Reference quantizer (one routine for both; IQ4_NL is a "super-block" of one 32-element
// block with a plain fp16 scale, IQ4_XS one of eight with 6-bit scales):
//  - weights per element: with importance values w_i, w_i * sqrt(sigma2 + x_i^2), where
//    sigma2 = 2 * mean(x^2) over the super-block; without them x_i^2;
//  - per 32-element block: start from d = max / 127 (max: the signed value of largest
//    magnitude), take each element's nearest value at x / d, then the weighted
//    least-squares scale sum(w q x) / sum(w q^2); then try the 15 scales with
//    1 / d = (t - 127) / max, t = -7..7, each refit the same way, keeping the one with the
//    largest sum(w q x)^2 / sum(w q^2) (the smallest weighted error);
//  - IQ4_NL: d is stored as fp16 and the indices recomputed at x / d (d unrounded);
//  - IQ4_XS: the super-scale is D = -s / 32 for s the block scale of largest magnitude, each
//    block scale is rounded to l = nearest(scale / D) clamped to [-32, 31], stored as l + 32,
//    and the indices recomputed at x / (D l) (D unrounded).
// The float operations keep the reference's order so the blocks are bit-identical.
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/k_search.h"
#include "quant/quant.h"
#include "quant/strict_fp.h"  // last: applies to everything below

namespace tessera::quant {
namespace {

using detail::block_count;

// Trials on each side of the starting scale (the reference's ntry).
constexpr int kTrials = 7;

// Index of the value of kIq4nlValues nearest to v; the lower one on a tie.
int nearest_value(float v) {
  const int8_t* val = kIq4nlValues;
  if (v <= val[0]) return 0;
  if (v >= val[15]) return 15;
  int lo = 0;
  int hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < val[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return v - val[hi - 1] < val[hi] - v ? hi - 1 : hi;
}

// Weighted fit of x ~= d * value[index(x * id)]: sum(w q x) and sum(w q^2).
struct Fit {
  float sumqx = 0;
  float sumq2 = 0;
};
Fit fit(const float* x, const float* w, float id) {
  Fit f;
  for (int j = 0; j < 32; ++j) {
    const float q = kIq4nlValues[nearest_value(id * x[j])];
    f.sumqx += w[j] * q * x[j];
    f.sumq2 += w[j] * q * q;
  }
  return f;
}

// The scale of one 32-element block (0 for an all-zero block).
float block_scale(const float* x, const float* w) {
  float amax = 0;
  float max = 0;
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax < detail::kGroupMaxEps) return 0;
  float d = -max / kIq4nlValues[0];
  Fit f = fit(x, w, 1 / d);
  // The reference divides unguarded; all-zero importance values would make this 0 / 0.
  if (f.sumq2 > 0) d = f.sumqx / f.sumq2;
  float best = d * f.sumqx;
  for (int t = -kTrials; t <= kTrials; ++t) {
    f = fit(x, w, float(t + kIq4nlValues[0]) / max);
    if (f.sumq2 > 0 && f.sumqx * f.sumqx > best * f.sumq2) {
      d = f.sumqx / f.sumq2;
      best = d * f.sumqx;
    }
  }
  return d;
}

// Weights of the 32 elements at xb: importance[j] * sqrt(sigma2 + x_j^2), or x_j^2
// without importance values.
void block_weights(const float* xb, float sigma2, const float* importance, float* w) {
  for (int j = 0; j < 32; ++j) {
    w[j] = importance != nullptr ? importance[j] * std::sqrt(sigma2 + xb[j] * xb[j]) : xb[j] * xb[j];
  }
}

// 2 * mean(x^2) over a super-block of n elements.
float sigma2_of(const float* x, int n) {
  float sigma2 = 0;
  for (int j = 0; j < n; ++j) sigma2 += x[j] * x[j];
  return sigma2 * (2.f / float(n));
}

// Indices of 32 elements at scale d (none but the middle ones when d is 0).
void indices(const float* x, float d, uint8_t* L) {
  const float id = d != 0.0f ? 1 / d : 0.0f;
  for (int j = 0; j < 32; ++j) L[j] = uint8_t(nearest_value(id * x[j]));
}

// Element j of a 32-element block in the low nibble of qs[j], j + 16 in the high one.
void pack(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t(L[j] | (L[j + 16] << 4));
}

void quantize_block_nl(const float* x, BlockIQ4_NL& b, const float* importance) {
  float w[32];
  block_weights(x, sigma2_of(x, 32), importance, w);
  const float d = block_scale(x, w);
  b.d = f32_to_f16(d);
  uint8_t L[32];
  indices(x, d, L);
  pack(L, b.qs);
}

void quantize_block_xs(const float* x, BlockIQ4_XS& b, const float* importance) {
  float scales[8];
  float max_scale = 0;
  float amax_scale = 0;
  const float sigma2 = sigma2_of(x, QK_K);
  for (int ib = 0; ib < 8; ++ib) {
    float w[32];
    block_weights(x + 32 * ib, sigma2, importance != nullptr ? importance + 32 * ib : nullptr, w);
    scales[ib] = block_scale(x + 32 * ib, w);
    if (std::fabs(scales[ib]) > amax_scale) {
      amax_scale = std::fabs(scales[ib]);
      max_scale = scales[ib];
    }
  }
  const float d = -max_scale / 32;
  b.d = f32_to_f16(d);
  b.scales_h = 0;
  std::memset(b.scales_l, 0, sizeof(b.scales_l));
  const float id = d != 0.0f ? 1 / d : 0.0f;
  for (int ib = 0; ib < 8; ++ib) {
    int l = nearest_int(id * scales[ib]);
    l = l < -32 ? -32 : (l > 31 ? 31 : l);
    uint8_t L[32];
    indices(x + 32 * ib, d * float(l), L);
    pack(L, b.qs + 16 * ib);
    const int ls = l + 32;
    b.scales_l[ib / 2] = uint8_t(b.scales_l[ib / 2] | (ls & 0x0f) << (4 * (ib % 2)));
    b.scales_h = uint16_t(b.scales_h | (ls >> 4) << (2 * ib));
  }
}

// The 6-bit scale of block ib, minus 32.
int xs_scale(const BlockIQ4_XS& b, int ib) {
  const int ls = ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f) | (((b.scales_h >> (2 * ib)) & 3) << 4);
  return ls - 32;
}

// Sum of value[q_j] * y_j over a 32-element block of nibbles.
int dot32(const uint8_t* qs, const int8_t* y) {
  int sum = 0;
  for (int j = 0; j < 16; ++j) {
    sum += kIq4nlValues[qs[j] & 0x0f] * y[j] + kIq4nlValues[qs[j] >> 4] * y[j + 16];
  }
  return sum;
}

}  // namespace

// ---- IQ4_NL -------------------------------------------------------------------------

void quantize_iq4_nl(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockIQ4_NL*>(y);
  const int64_t nb = block_count(n, QK4_NL);
  for (int64_t i = 0; i < nb; ++i) quantize_block_nl(x + QK4_NL * i, out[i], nullptr);
}

void quantize_iq4_nl_weighted(const float* x, void* y, int64_t n, const float* importance) {
  auto* out = static_cast<BlockIQ4_NL*>(y);
  const int64_t nb = block_count(n, QK4_NL);
  for (int64_t i = 0; i < nb; ++i) quantize_block_nl(x + QK4_NL * i, out[i], importance + QK4_NL * i);
}

void dequantize_iq4_nl(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockIQ4_NL*>(x);
  const int64_t nb = block_count(n, QK4_NL);
  for (int64_t i = 0; i < nb; ++i, y += QK4_NL) {
    const float d = f16_to_f32(in[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * kIq4nlValues[in[i].qs[j] & 0x0f];
      y[j + 16] = d * kIq4nlValues[in[i].qs[j] >> 4];
    }
  }
}

float vec_dot_iq4_nl_q8_0(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockIQ4_NL*>(x);
  const auto* b = static_cast<const BlockQ8_0*>(y);
  const int64_t nb = block_count(n, QK4_NL);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    sum += float(dot32(a[i].qs, b[i].qs)) * (f16_to_f32(a[i].d) * f16_to_f32(b[i].d));
  }
  return sum;
}

// ---- IQ4_XS -------------------------------------------------------------------------

void quantize_iq4_xs(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockIQ4_XS*>(y);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) quantize_block_xs(x + QK_K * i, out[i], nullptr);
}

void quantize_iq4_xs_weighted(const float* x, void* y, int64_t n, const float* importance) {
  auto* out = static_cast<BlockIQ4_XS*>(y);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) quantize_block_xs(x + QK_K * i, out[i], importance + QK_K * i);
}

void dequantize_iq4_xs(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockIQ4_XS*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(in[i].d);
    for (int ib = 0; ib < 8; ++ib, y += 32) {
      const float dl = d * float(xs_scale(in[i], ib));
      const uint8_t* qs = in[i].qs + 16 * ib;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * kIq4nlValues[qs[j] & 0x0f];
        y[j + 16] = dl * kIq4nlValues[qs[j] >> 4];
      }
    }
  }
}

// d dy sum_j (ls_j - 32) (value[q_j] . y_j), the sum over the super-block in integers.
float vec_dot_iq4_xs_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockIQ4_XS*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int isum = 0;
    for (int ib = 0; ib < 8; ++ib) isum += xs_scale(a[i], ib) * dot32(a[i].qs + 16 * ib, b[i].qs + 32 * ib);
    sum += (f16_to_f32(a[i].d) * b[i].d) * float(isum);
  }
  return sum;
}

}  // namespace tessera::quant
