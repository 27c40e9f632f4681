// IQ2_XXS, IQ2_XS and IQ2_S quantizers (layouts in blocks.h). Each 8 values are a point
// of the format's grid (levels 0..2, values 8, 25, 43) times a sub-block scale, with their
// signs stored apart; the fit of a sub-block is fit_grid's (iq_grid_fit.h) with the
// reference quantizer's choices:
//
//   format   sub-block  weights without importance  signs         trials          refit
//   IQ2_XXS  32         (importance 1)              7 bits/8      -6..6 x 0.1 (*) all groups
//   IQ2_XS   16         (importance 1)              7 bits/8      -9..9 x 0.1     off-grid groups
//   IQ2_S    16         sigma2 / 4 + x^2            8 bits/8      -9..9 x 0.1     off-grid groups
//
// (*) IQ2_XXS scales its trials by the maximum of a 0..3 integer fit (qp_scale) instead of
// the sub-block's maximum. With importance q, an element's weight is q sqrt(sigma2 + x^2),
// sigma2 the super-block's mean square (IQ2_S: twice that). The sub-block scales are
// coded in 4 bits against max_scale / 31 (IQ2_S stores that super-scale times 0.9875, a
// factor of the reference).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_grid_fit.h"
#include "quant/iq_quantize.h"
#include "quant/k_search.h"
#include "quant/strict_fp.h"  // last: applies to everything below

namespace tessera::quant {
namespace {

using detail::block_count;
using detail::fit_grid;
using detail::GridFit;
using detail::IqGridKind;
using detail::Refit;
using detail::scale_code;
using detail::split_signs;
using detail::split_signs_even;
using detail::sum_squares;

constexpr float kEpsIq2S = 1e-8f;  // IQ2_S's smallest maximum of a non-zero sub-block

// Weighted fit of x by scale * L, L in 0..nmax, over a few trial scales and then by
// moving single levels (the reference's make_qp_quants); returns the scale. Levels are
// kept in bytes as the reference keeps them: a negative x (an odd-parity flip) may round
// to -1 and wrap, which changes the result, and identical blocks need the same.
float qp_scale(int n, int nmax, const float* x, const float* w) {
  float max = 0;
  for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (max == 0) return 0;
  uint8_t L[32];
  float iscale = float(nmax) / max;
  for (int i = 0; i < n; ++i) L[i] = uint8_t(nearest_int(iscale * x[i]));
  const float scale = 1 / iscale;
  float best_mse = 0;
  for (int i = 0; i < n; ++i) {
    const float diff = x[i] - scale * float(L[i]);
    best_mse += w[i] * diff * diff;
  }
  for (int t = -4; t <= 4; ++t) {
    if (t == 0) continue;
    const float iscale_t = (0.1f * float(t) + float(nmax)) / max;
    const float scale_t = 1 / iscale_t;
    float mse = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::min(nmax, nearest_int(iscale_t * x[i]));
      const float diff = x[i] - scale_t * float(l);
      mse += w[i] * diff * diff;
    }
    if (mse < best_mse) {
      best_mse = mse;
      iscale = iscale_t;
    }
  }
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, nearest_int(iscale * x[i]));
    L[i] = uint8_t(l);
    sumlx += w[i] * x[i] * float(l);
    suml2 += w[i] * float(l) * float(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      float slx = sumlx - w[i] * x[i] * float(L[i]);
      float sl2 = suml2 - w[i] * float(L[i]) * float(L[i]);
      if (slx > 0 && sl2 > 0) {
        const int l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
        if (l != L[i]) {
          slx += w[i] * x[i] * float(l);
          sl2 += w[i] * float(l) * float(l);
          if (slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = uint8_t(l);
            sumlx = slx;
            suml2 = sl2;
            ++changed;
          }
        }
      }
    }
    if (changed == 0) break;
  }
  return sumlx / suml2;
}

// Weights of a sub-block: q sqrt(sigma2 + x^2) with importance q (1 without).
void importance_weights(const float* x, const float* q, float sigma2, int n, float* w) {
  for (int i = 0; i < n; ++i) w[i] = (q ? q[i] : 1.0f) * std::sqrt(sigma2 + x[i] * x[i]);
}

void sqrt_all(const float* w, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = std::sqrt(w[i]);
}

void quantize_iq2_xxs_impl(const float* x, void* vy, int64_t n, const float* importance) {
  static constexpr GridFit kFit = {IqGridKind::kIq2xxs, 32, 2, -6, 6, 0.1f, Refit::kAll};
  auto* y = static_cast<BlockIQ2_XXS*>(vy);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + b * QK_K;
    const float* qb = importance ? importance + b * QK_K : nullptr;
    const float sigma2 = sum_squares(xb, QK_K) / QK_K;
    // Per 32: four grid indices (bytes), then four 7-bit sign indices and the scale code.
    uint32_t q2[QK_K / 16] = {};
    float scales[QK_K / 32] = {};
    float max_scale = 0;
    for (int s = 0; s < QK_K / 32; ++s) {
      const float* xs = xb + 32 * s;
      float weight[32], waux[32], xval[32];
      importance_weights(xs, qb ? qb + 32 * s : nullptr, sigma2, 32, weight);
      sqrt_all(weight, 32, waux);
      uint8_t signs[4];
      for (int k = 0; k < 4; ++k) {
        signs[k] = split_signs_even(xs + 8 * k, weight + 8 * k, xval + 8 * k);
      }
      const float max = *std::max_element(xval, xval + 32);
      if (max < detail::kGroupMaxEps) continue;
      const float qp = qp_scale(32, 4, xval, weight);
      uint16_t index[4];
      float scale = fit_grid(kFit, xval, weight, waux, qp * 3, qp, index);
      if (scale < 0) {  // not expected; a positive scale with all signs flipped is the same
        scale = -scale;
        for (uint8_t& sg : signs) sg = uint8_t(~sg & 127);
      }
      for (int k = 0; k < 4; ++k) {
        q2[2 * s] |= uint32_t(index[k]) << (8 * k);
        q2[2 * s + 1] |= uint32_t(signs[k]) << (7 * k);
      }
      scales[s] = scale;
      max_scale = std::max(max_scale, scale);
    }
    if (max_scale == 0) {
      y[b].d = f32_to_f16(0.0f);
      std::memset(y[b].qs, 0, sizeof(y[b].qs));
      continue;
    }
    const float d = max_scale / 31;
    y[b].d = f32_to_f16(d);
    const float id = 1 / d;
    for (int s = 0; s < QK_K / 32; ++s) {
      q2[2 * s + 1] |= uint32_t(scale_code(id, scales[s], 15)) << 28;
    }
    std::memcpy(y[b].qs, q2, sizeof(q2));
  }
}

// IQ2_XS and IQ2_S share the sub-blocks of 16 and differ in weights and signs.
void quantize_iq2_xs_impl(const float* x, void* vy, int64_t n, const float* importance) {
  static constexpr GridFit kFit = {IqGridKind::kIq2xs, 16, 2, -9, 9, 0.1f, Refit::kOffGrid};
  auto* y = static_cast<BlockIQ2_XS*>(vy);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + b * QK_K;
    const float* qb = importance ? importance + b * QK_K : nullptr;
    const float sigma2 = sum_squares(xb, QK_K) / QK_K;
    uint16_t q2[QK_K / 8] = {};  // per 8: grid index | 7 sign bits << 9
    float scales[QK_K / 16] = {};
    float max_scale = 0;
    for (int s = 0; s < QK_K / 16; ++s) {
      const float* xs = xb + 16 * s;
      float weight[16], waux[16], xval[16];
      importance_weights(xs, qb ? qb + 16 * s : nullptr, sigma2, 16, weight);
      sqrt_all(weight, 16, waux);
      uint8_t signs[2];
      for (int k = 0; k < 2; ++k) {
        signs[k] = split_signs_even(xs + 8 * k, weight + 8 * k, xval + 8 * k);
      }
      const float max = *std::max_element(xval, xval + 16);
      if (max < detail::kGroupMaxEps) continue;
      uint16_t index[2];
      float scale = fit_grid(kFit, xval, weight, waux, max, max / 5, index);
      if (scale < 0) {
        scale = -scale;
        for (uint8_t& sg : signs) sg = uint8_t(~sg & 127);
      }
      for (int k = 0; k < 2; ++k) q2[2 * s + k] = uint16_t(index[k] | (signs[k] << 9));
      scales[s] = scale;
      max_scale = std::max(max_scale, scale);
    }
    std::memset(y[b].scales, 0, sizeof(y[b].scales));
    if (max_scale == 0) {
      y[b].d = f32_to_f16(0.0f);
      std::memset(y[b].qs, 0, sizeof(y[b].qs));
      continue;
    }
    const float d = max_scale / 31;
    y[b].d = f32_to_f16(d);
    const float id = 1 / d;
    for (int s = 0; s < QK_K / 16; ++s) {
      y[b].scales[s / 2] |= uint8_t(scale_code(id, scales[s], 15) << (4 * (s % 2)));
    }
    std::memcpy(y[b].qs, q2, sizeof(q2));
  }
}

void quantize_iq2_s_impl(const float* x, void* vy, int64_t n, const float* importance) {
  static constexpr GridFit kFit = {IqGridKind::kIq2s, 16, 2, -9, 9, 0.1f, Refit::kOffGrid};
  auto* y = static_cast<BlockIQ2_S*>(vy);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t b = 0; b < nb; ++b) {
    BlockIQ2_S& blk = y[b];
    std::memset(&blk, 0, sizeof(blk));
    const float* xb = x + b * QK_K;
    const float sigma2 = 2 * sum_squares(xb, QK_K) / QK_K;
    float scales[QK_K / 16] = {};
    float max_scale = 0;
    for (int s = 0; s < QK_K / 16; ++s) {
      const float* xs = xb + 16 * s;
      float weight[16], waux[16], xval[16];
      if (importance) {
        importance_weights(xs, importance + b * QK_K + 16 * s, sigma2, 16, weight);
      } else {
        for (int i = 0; i < 16; ++i) weight[i] = 0.25f * sigma2 + xs[i] * xs[i];
      }
      sqrt_all(weight, 16, waux);
      uint8_t signs[2];
      for (int k = 0; k < 2; ++k) signs[k] = split_signs(xs + 8 * k, xval + 8 * k);
      const float max = *std::max_element(xval, xval + 16);
      if (max < kEpsIq2S) continue;
      uint16_t index[2];
      float scale = fit_grid(kFit, xval, weight, waux, max, max / 5, index);
      if (scale < 0) {
        scale = -scale;
        for (uint8_t& sg : signs) sg = uint8_t(~sg);
      }
      // Group g = 2 s + k: low 8 index bits in qs[g], bits 8-9 at 2 (g % 4) of qh[g / 4],
      // its signs in qs[QK_K / 8 + g].
      for (int k = 0; k < 2; ++k) {
        const int g = 2 * s + k;
        blk.qs[g] = uint8_t(index[k] & 255);
        blk.qh[g / 4] |= uint8_t((index[k] >> 8) << (2 * (g % 4)));
        blk.qs[QK_K / 8 + g] = signs[k];
      }
      scales[s] = scale;
      max_scale = std::max(max_scale, scale);
    }
    if (max_scale == 0) continue;
    const float d = max_scale / 31;
    blk.d = f32_to_f16(d * 0.9875f);
    const float id = 1 / d;
    for (int s = 0; s < QK_K / 16; ++s) {
      blk.scales[s / 2] |= uint8_t(scale_code(id, scales[s], 15) << (4 * (s % 2)));
    }
  }
}

}  // namespace

void quantize_iq2_xxs(const float* x, void* y, int64_t n) {
  quantize_iq2_xxs_impl(x, y, n, nullptr);
}
void quantize_iq2_xxs_weighted(const float* x, void* y, int64_t n, const float* importance) {
  quantize_iq2_xxs_impl(x, y, n, importance);
}
void quantize_iq2_xs(const float* x, void* y, int64_t n) { quantize_iq2_xs_impl(x, y, n, nullptr); }
void quantize_iq2_xs_weighted(const float* x, void* y, int64_t n, const float* importance) {
  quantize_iq2_xs_impl(x, y, n, importance);
}
void quantize_iq2_s(const float* x, void* y, int64_t n) { quantize_iq2_s_impl(x, y, n, nullptr); }
void quantize_iq2_s_weighted(const float* x, void* y, int64_t n, const float* importance) {
  quantize_iq2_s_impl(x, y, n, importance);
}

}  // namespace tessera::quant
