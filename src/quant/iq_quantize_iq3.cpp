// IQ3_XXS and IQ3_S quantizers (layouts in blocks.h). Each 4 values are a point of the
// format's grid (levels 0..7) times the scale of their sub-block of 32, signs stored
// apart; the fit of a sub-block is fit_grid's (iq_grid_fit.h) with the reference
// quantizer's choices:
//
//   format   signs           trials          refit
//   IQ3_XXS  7 bits per 8    -15..15 x 0.2   off-grid groups
//   IQ3_S    8 bits per 8    -9..9 x 0.2     every group, if any was off the grid
//
// An element's weight is q sqrt(sigma2 + x^2) with importance q (sigma2: twice the
// super-block's mean square), x^2 without. The sub-block scales are coded in 4 bits
// against max_scale / 31; the stored super-scale is that times 1.0125 (IQ3_XXS) or
// 1.033 (IQ3_S), factors of the reference.
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

constexpr float kEpsIq3xxs = 1e-8f;  // IQ3_XXS's smallest maximum of a non-zero sub-block

// Weights and their square roots for the sub-block of 32 at xs.
void sub_block_weights(const float* xs, const float* q, float sigma2, float* w, float* waux) {
  for (int i = 0; i < 32; ++i) w[i] = q ? q[i] * std::sqrt(sigma2 + xs[i] * xs[i]) : xs[i] * xs[i];
  for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(w[i]);
}

void quantize_iq3_xxs_impl(const float* x, void* vy, int64_t n, const float* importance) {
  static constexpr GridFit kFit = {IqGridKind::kIq3xxs, 32, 7, -15, 15, 0.2f, Refit::kOffGrid};
  auto* y = static_cast<BlockIQ3_XXS*>(vy);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + b * QK_K;
    const float sigma2 = 2 * sum_squares(xb, QK_K) / QK_K;
    // qs: a grid index byte per 4 values, then per sub-block a uint32 of four 7-bit sign
    // indices and the scale code in bits 28-31.
    uint8_t index_bytes[QK_K / 4] = {};
    uint32_t signs_scale[QK_K / 32] = {};
    float scales[QK_K / 32] = {};
    float max_scale = 0;
    for (int s = 0; s < QK_K / 32; ++s) {
      const float* xs = xb + 32 * s;
      float weight[32], waux[32], xval[32];
      sub_block_weights(xs, importance ? importance + b * QK_K + 32 * s : nullptr, sigma2, weight,
                        waux);
      uint8_t signs[4];
      for (int k = 0; k < 4; ++k) {
        signs[k] = split_signs_even(xs + 8 * k, weight + 8 * k, xval + 8 * k);
      }
      const float max = *std::max_element(xval, xval + 32);
      if (max < kEpsIq3xxs) continue;
      uint16_t index[8];
      float scale = fit_grid(kFit, xval, weight, waux, max, max / 15, index);
      if (scale < 0) {  // not expected; a positive scale with all signs flipped is the same
        scale = -scale;
        for (uint8_t& sg : signs) sg = uint8_t(~sg & 127);
      }
      for (int k = 0; k < 8; ++k) index_bytes[8 * s + k] = uint8_t(index[k]);
      signs_scale[s] = signs[0] | (signs[1] << 7) | (signs[2] << 14) | (uint32_t(signs[3]) << 21);
      scales[s] = scale;
      max_scale = std::max(max_scale, scale);
    }
    if (max_scale == 0) {
      y[b].d = f32_to_f16(0.0f);
      std::memset(y[b].qs, 0, sizeof(y[b].qs));
      continue;
    }
    const float d = max_scale / 31;
    y[b].d = f32_to_f16(d * 1.0125f);
    const float id = 1 / d;
    for (int s = 0; s < QK_K / 32; ++s) {
      signs_scale[s] |= uint32_t(scale_code(id, scales[s], 15)) << 28;
    }
    std::memcpy(y[b].qs, index_bytes, sizeof(index_bytes));
    std::memcpy(y[b].qs + sizeof(index_bytes), signs_scale, sizeof(signs_scale));
  }
}

void quantize_iq3_s_impl(const float* x, void* vy, int64_t n, const float* importance) {
  static constexpr GridFit kFit = {IqGridKind::kIq3s, 32, 7, -9, 9, 0.2f, Refit::kAllIfOffGrid};
  auto* y = static_cast<BlockIQ3_S*>(vy);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t b = 0; b < nb; ++b) {
    BlockIQ3_S& blk = y[b];
    std::memset(&blk, 0, sizeof(blk));
    const float* xb = x + b * QK_K;
    const float sigma2 = 2 * sum_squares(xb, QK_K) / QK_K;
    float scales[QK_K / 32] = {};
    float max_scale = 0;
    for (int s = 0; s < QK_K / 32; ++s) {
      const float* xs = xb + 32 * s;
      float weight[32], waux[32], xval[32];
      sub_block_weights(xs, importance ? importance + b * QK_K + 32 * s : nullptr, sigma2, weight,
                        waux);
      uint8_t signs[4];
      for (int k = 0; k < 4; ++k) signs[k] = split_signs(xs + 8 * k, xval + 8 * k);
      const float max = *std::max_element(xval, xval + 32);
      if (max == 0) continue;
      uint16_t index[8];
      float scale = fit_grid(kFit, xval, weight, waux, max, max / 15, index);
      if (scale < 0) {
        scale = -scale;
        for (uint8_t& sg : signs) sg = uint8_t(~sg);
      }
      // Group 8 s + k: low 8 index bits in qs, bit 8 at bit k of qh[s].
      for (int k = 0; k < 8; ++k) {
        blk.qs[8 * s + k] = uint8_t(index[k] & 255);
        blk.qh[s] |= uint8_t((index[k] >> 8) << k);
      }
      std::memcpy(blk.signs + 4 * s, signs, 4);
      scales[s] = scale;
      max_scale = std::max(max_scale, scale);
    }
    if (max_scale == 0) continue;
    const float d = max_scale / 31;
    blk.d = f32_to_f16(d * 1.033f);
    const float id = 1 / d;
    for (int s = 0; s < QK_K / 32; s += 2) {
      blk.scales[s / 2] =
          uint8_t(scale_code(id, scales[s], 15) | (scale_code(id, scales[s + 1], 15) << 4));
    }
  }
}

}  // namespace

void quantize_iq3_xxs(const float* x, void* y, int64_t n) {
  quantize_iq3_xxs_impl(x, y, n, nullptr);
}
void quantize_iq3_xxs_weighted(const float* x, void* y, int64_t n, const float* importance) {
  quantize_iq3_xxs_impl(x, y, n, importance);
}
void quantize_iq3_s(const float* x, void* y, int64_t n) { quantize_iq3_s_impl(x, y, n, nullptr); }
void quantize_iq3_s_weighted(const float* x, void* y, int64_t n, const float* importance) {
  quantize_iq3_s_impl(x, y, n, importance);
}

}  // namespace tessera::quant
