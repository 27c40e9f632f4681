// IQ1_S and IQ1_M quantizers (layouts in blocks.h). Each 8 values are a point of the
// ternary grid kIq1sGrid (-1, 0, +1) shifted by +-kIq1Delta, times a 3-bit sub-block
// scale: value = d (2 l + 1) (g + delta). The reference quantizer's search, kept here:
//
// * A sub-block (IQ1_S: 32 values, one shift; IQ1_M: 16 values, a shift per 8) is split
//   exactly: with the values sorted, every pair of boundaries i1 <= i2 puts the lowest i1
//   at level 0, the next at 1, the rest at 2; each split and shift choice gets its
//   weighted least-squares scale, and the one explaining most of sum w x^2 wins.
// * A group of 8 whose levels are not a grid point takes its best neighbour (the grid's
//   candidates at the 3 smallest distances, weighted error at that scale); the scale is
//   then refitted.
// * Scales are coded in 3 bits against max_scale / 15. IQ1_S stores that super-scale times
//   1.125; IQ1_M refits it over the whole super-block with the coded scales and stores it
//   times 1.1125 (both factors of the reference).
//
// Weights: q sqrt(sigma2 + x^2) with importance q (sigma2: twice the super-block's mean
// square). Without importance IQ1_M uses x^2 (the reference's choice) and IQ1_S an
// importance of 1 (the reference has none: it refuses to run). Where the reference leaves
// a zero sub-block (below its threshold) as grid point 0 (all -1, so d (-1 +- 1/8)
// after the scale code rounds to 1), these store the all-zero point with a + shift:
// d / 8, the closest this format comes to zero.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_grid_fit.h"
#include "quant/iq_grid_search.h"
#include "quant/iq_quantize.h"
#include "quant/iq_tables.h"
#include "quant/k_search.h"
#include "quant/strict_fp.h"  // last: applies to everything below

namespace tessera::quant {
namespace {

using detail::block_count;
using detail::iq_grid;
using detail::IqGrid;
using detail::IqGridKind;
using detail::scale_code;
using detail::sum_squares;

constexpr float kEpsIq1s = 1e-12f;  // smallest maximum |x| of a non-zero sub-block
constexpr float kEpsIq1m = 1e-7f;
constexpr int kZeroPoint = 1029;  // kIq1sGrid's all-zero point

// What levels 0, 1, 2 stand for with a + or a - shift.
constexpr float kPlus[3] = {-1 + kIq1Delta, kIq1Delta, 1 + kIq1Delta};
constexpr float kMinus[3] = {-1 - kIq1Delta, -kIq1Delta, 1 - kIq1Delta};

float abs_max(const float* x, int n) {
  float m = std::fabs(x[0]);
  for (int i = 1; i < n; ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}

// Element indices in ascending order of x, ties in index order (the reference sorts
// with the C library's merge sort, which keeps that order).
template <int N>
void sort_order(const float* x, int* order) {
  std::iota(order, order + N, 0);
  std::stable_sort(order, order + N, [x](int a, int b) { return x[a] < x[b]; });
}

// Moves each group of 8 (levels in L, shift values value[g]) onto the grid; where one
// was off it, refits the scale. Writes the grid indices.
void snap_groups(int n_groups, const float* x, const float* w, const float* const* value, int8_t* L,
                 float* scale, uint16_t* index) {
  const IqGrid& grid = iq_grid(IqGridKind::kIq1s);
  bool all_on_grid = true;
  for (int g = 0; g < n_groups; ++g) {
    const int key = grid.key(L + 8 * g);
    int j = grid.index_of(key);
    if (j < 0) {
      all_on_grid = false;
      j = grid.best_neighbour(key, x + 8 * g, w + 8 * g, *scale, value[g], L + 8 * g);
    }
    index[g] = uint16_t(j);
  }
  if (all_on_grid) return;
  float sumqx = 0, sumq2 = 0;
  for (int g = 0; g < n_groups; ++g) {
    const uint8_t* lv = grid.levels(index[g]);
    for (int i = 0; i < 8; ++i) {
      const float wi = w[8 * g + i];
      const float q = value[g][lv[i]];
      sumqx += wi * q * x[8 * g + i];
      sumq2 += wi * q * q;
    }
  }
  if (sumqx > 0 && sumq2 > 0) *scale = sumqx / sumq2;
}

void set_levels(const int* order, int n, int i1, int i2, int8_t* L) {
  for (int j = 0; j < n; ++j) L[order[j]] = int8_t(j < i1 ? 0 : j < i2 ? 1 : 2);
}

void quantize_iq1_s_impl(const float* x, void* vy, int64_t n, const float* importance) {
  constexpr int kSub = 32;
  auto* y = static_cast<BlockIQ1_S*>(vy);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t b = 0; b < nb; ++b) {
    BlockIQ1_S& blk = y[b];
    std::memset(&blk, 0, sizeof(blk));
    const float* xb = x + b * QK_K;
    const float sigma2 = 2 * sum_squares(xb, QK_K) / QK_K;
    float scales[QK_K / kSub] = {};
    bool minus[QK_K / kSub] = {};
    float max_scale = 0;
    for (int s = 0; s < QK_K / kSub; ++s) {
      const float* xs = xb + kSub * s;
      const float* qs = importance ? importance + b * QK_K + kSub * s : nullptr;
      float weight[kSub];
      for (int i = 0; i < kSub; ++i) {
        weight[i] = (qs ? qs[i] : 1.0f) * std::sqrt(sigma2 + xs[i] * xs[i]);
      }
      uint16_t index[kSub / 8] = {kZeroPoint, kZeroPoint, kZeroPoint, kZeroPoint};
      const float max = abs_max(xs, kSub);
      int i1 = -1, i2 = -1, shift = 0;
      float scale = max;
      int order[kSub];
      if (max >= kEpsIq1s) {
        sort_order<kSub>(xs, order);
        float sumx[kSub + 1], sumw[kSub + 1];
        sumx[0] = sumw[0] = 0;
        for (int j = 0; j < kSub; ++j) {
          const int i = order[j];
          sumx[j + 1] = sumx[j] + weight[i] * xs[i];
          sumw[j + 1] = sumw[j] + weight[i];
        }
        float best = -FLT_MIN;
        for (int a = 0; a <= kSub; ++a) {
          for (int c = a; c <= kSub; ++c) {
            for (const int sh : {1, -1}) {
              const float* v = sh == 1 ? kPlus : kMinus;
              const float sumqx = (sumx[a] - sumx[0]) * v[0] + (sumx[c] - sumx[a]) * v[1] +
                                  (sumx[kSub] - sumx[c]) * v[2];
              const float sumq2 = (sumw[a] - sumw[0]) * v[0] * v[0] +
                                  (sumw[c] - sumw[a]) * v[1] * v[1] +
                                  (sumw[kSub] - sumw[c]) * v[2] * v[2];
              if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                i1 = a;
                i2 = c;
                shift = sh;
              }
            }
          }
        }
      }
      if (i1 >= 0) {  // else a zero (or non-finite) sub-block: the zero point
        int8_t L[kSub];
        set_levels(order, kSub, i1, i2, L);
        if (scale < 0) {  // the mirrored levels and shift with a positive scale
          for (int8_t& l : L) l = int8_t(2 - l);
          scale = -scale;
          shift = -shift;
        }
        const float* v = shift == 1 ? kPlus : kMinus;
        const float* values[kSub / 8] = {v, v, v, v};
        snap_groups(kSub / 8, xs, weight, values, L, &scale, index);
        scales[s] = scale;
        minus[s] = shift == -1;
        max_scale = std::max(max_scale, scale);
      }
      // Group k of the sub-block: low 8 index bits in qs[4 s + k], bits 8-10 at 3 k of qh[s].
      uint16_t h = 0;
      for (int k = 0; k < kSub / 8; ++k) {
        blk.qs[4 * s + k] = uint8_t(index[k] & 255);
        h = uint16_t(h | ((index[k] >> 8) << (3 * k)));
      }
      blk.qh[s] = h;
    }
    if (max_scale == 0) {
      std::memset(&blk, 0, sizeof(blk));
      continue;
    }
    const float d = max_scale / 15;
    blk.d = f32_to_f16(d * 1.125f);
    const float id = 1 / d;
    for (int s = 0; s < QK_K / kSub; ++s) {
      const int l = scale_code(id, scales[s], 7) | (minus[s] ? 8 : 0);
      blk.qh[s] = uint16_t(blk.qh[s] | (l << 12));
    }
  }
}

// IQ1_M sub-block weights (16 values).
void iq1_m_weights(const float* xs, const float* q, float sigma2, float* w) {
  for (int i = 0; i < 16; ++i) w[i] = q ? q[i] * std::sqrt(sigma2 + xs[i] * xs[i]) : xs[i] * xs[i];
}

// IQ1_M's shift choices of a sub-block: bit 1 is the first 8's shift, bit 0 the second's
// (set: minus); the bits of qh that mark a minus shift, per choice.
const float* iq1_m_shift(int choice, int half) {
  const bool neg = half == 0 ? choice >= 2 : choice % 2 == 1;
  return neg ? kMinus : kPlus;
}
constexpr uint8_t kIq1mShiftBits[4] = {0x00, 0x80, 0x08, 0x88};

void quantize_iq1_m_impl(const float* x, void* vy, int64_t n, const float* importance) {
  constexpr int kSub = 16;
  auto* y = static_cast<BlockIQ1_M*>(vy);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t b = 0; b < nb; ++b) {
    BlockIQ1_M& blk = y[b];
    std::memset(&blk, 0, sizeof(blk));
    const float* xb = x + b * QK_K;
    const float* qb = importance ? importance + b * QK_K : nullptr;
    const float sigma2 = 2 * sum_squares(xb, QK_K) / QK_K;
    float scales[QK_K / kSub] = {};
    int choices[QK_K / kSub] = {};
    float max_scale = 0;
    for (int s = 0; s < QK_K / kSub; ++s) {
      const float* xs = xb + kSub * s;
      float weight[kSub];
      iq1_m_weights(xs, qb ? qb + kSub * s : nullptr, sigma2, weight);
      uint16_t index[2] = {kZeroPoint, kZeroPoint};
      const float max = abs_max(xs, kSub);
      int i1 = -1, i2 = -1, choice = -1;
      float scale = max;
      int order[kSub];
      if (max >= kEpsIq1m) {
        sort_order<kSub>(xs, order);
        float best = -FLT_MIN;
        for (int a = 0; a <= kSub; ++a) {
          for (int c = a; c <= kSub; ++c) {
            // Sums in the sorted order, per shift choice (the reference's order).
            float sumqx[4] = {}, sumq2[4] = {};
            for (int j = 0; j < kSub; ++j) {
              const int i = order[j];
              const int level = j < a ? 0 : j < c ? 1 : 2;
              for (int k = 0; k < 4; ++k) {
                const float v = iq1_m_shift(k, i < kSub / 2 ? 0 : 1)[level];
                sumqx[k] += weight[i] * v * xs[i];
                sumq2[k] += weight[i] * v * v;
              }
            }
            for (int k = 0; k < 4; ++k) {
              if (sumq2[k] > 0 && sumqx[k] * sumqx[k] > best * sumq2[k]) {
                scale = sumqx[k] / sumq2[k];
                best = scale * sumqx[k];
                i1 = a;
                i2 = c;
                choice = k;
              }
            }
          }
        }
      }
      if (i1 >= 0) {
        int8_t L[kSub];
        set_levels(order, kSub, i1, i2, L);
        if (scale < 0) {  // mirrored levels, both shifts swapped, positive scale
          for (int8_t& l : L) l = int8_t(2 - l);
          scale = -scale;
          choice = 3 - choice;
        }
        const float* values[2] = {iq1_m_shift(choice, 0), iq1_m_shift(choice, 1)};
        snap_groups(2, xs, weight, values, L, &scale, index);
        scales[s] = scale;
        choices[s] = choice;
        max_scale = std::max(max_scale, scale);
      }
      // Groups 2 s and 2 s + 1: low index bits in qs, bits 8-10 in the nibbles of qh[s].
      blk.qs[2 * s] = uint8_t(index[0] & 255);
      blk.qs[2 * s + 1] = uint8_t(index[1] & 255);
      blk.qh[s] = uint8_t((index[0] >> 8) | ((index[1] >> 8) << 4));
    }
    if (max_scale == 0) {
      std::memset(&blk, 0, sizeof(blk));
      continue;
    }
    // The 3-bit scales fill the low 12 bits of four uint16 words; the fp16 super-scale
    // goes into their top nibbles, refitted over the super-block with the coded scales.
    uint16_t sc[4] = {};
    float d = max_scale / 15;
    const float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    const IqGrid& grid = iq_grid(IqGridKind::kIq1s);
    for (int s = 0; s < QK_K / kSub; ++s) {
      const int l = scale_code(id, scales[s], 7);
      sc[s / 4] = uint16_t(sc[s / 4] | (l << (3 * (s % 4))));
      blk.qh[s] |= kIq1mShiftBits[choices[s]];
      const float* xs = xb + kSub * s;
      float weight[kSub];
      iq1_m_weights(xs, qb ? qb + kSub * s : nullptr, sigma2, weight);
      for (int k = 0; k < 2; ++k) {
        const float* v = iq1_m_shift(choices[s], k);
        const int j = blk.qs[2 * s + k] | ((blk.qh[s] << (8 - 4 * k)) & 0x700);
        const uint8_t* lv = grid.levels(j);
        for (int i = 0; i < 8; ++i) {
          const float w = weight[8 * k + i];
          const float q = v[lv[i]] * float(2 * l + 1);
          sumqx += w * q * xs[8 * k + i];
          sumq2 += w * q * q;
        }
      }
    }
    if (sumq2 > 0) d = sumqx / sumq2;
    const uint16_t h = f32_to_f16(d * 1.1125f);
    sc[0] = uint16_t(sc[0] | ((h & 0x000f) << 12));
    sc[1] = uint16_t(sc[1] | ((h & 0x00f0) << 8));
    sc[2] = uint16_t(sc[2] | ((h & 0x0f00) << 4));
    sc[3] = uint16_t(sc[3] | (h & 0xf000));
    std::memcpy(blk.scales, sc, sizeof(sc));
  }
}

}  // namespace

void quantize_iq1_s(const float* x, void* y, int64_t n) { quantize_iq1_s_impl(x, y, n, nullptr); }
void quantize_iq1_s_weighted(const float* x, void* y, int64_t n, const float* importance) {
  quantize_iq1_s_impl(x, y, n, importance);
}
void quantize_iq1_m(const float* x, void* y, int64_t n) { quantize_iq1_m_impl(x, y, n, nullptr); }
void quantize_iq1_m_weighted(const float* x, void* y, int64_t n, const float* importance) {
  quantize_iq1_m_impl(x, y, n, importance);
}

}  // namespace tessera::quant
