// IQ3_XXS and IQ3_S, read side: dequantization and the dot product with Q8_K (layouts in
// blocks.h, grids in iq_tables.h). Both store groups of 4 weights as an index into a grid
// of 4 unsigned magnitudes, with one sign bit per weight and a 4-bit scale per 32
// weights. The dot keeps the reference engine's integer sums: per 32 weights the signed
// grid values times the Q8_K quants, times the odd scale (2 s + 1); the block's sum of
// those is scaled once by d * d_y (IQ3_XXS: and by 1/4 at the end, its scale being
// (s + 1/2) / 2).
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

// Coordinate j (0..3) of an IQ3 grid entry.
inline int grid_value(uint32_t entry, int j) { return int((entry >> (8 * j)) & 0xff); }

// IQ3_XXS: the 32-bit word of sub-block ib (sign indices and scale; blocks.h).
inline uint32_t xxs_aux(const BlockIQ3_XXS& b, int ib) {
  uint32_t aux;
  std::memcpy(&aux, b.qs + QK_K / 4 + 4 * ib, 4);
  return aux;
}

// IQ3_XXS: the 32 signed grid values of sub-block ib (without the scale).
void xxs_values(const BlockIQ3_XXS& b, int ib, int* v) {
  const uint32_t aux = xxs_aux(b, ib);
  const uint8_t* idx = b.qs + 8 * ib;
  for (int l = 0; l < 4; ++l) {
    const uint8_t signs = kIq2Signs[(aux >> (7 * l)) & 127];
    for (int j = 0; j < 8; ++j) {
      const int g = grid_value(kIq3xxsGrid[idx[2 * l + j / 4]], j % 4);
      v[8 * l + j] = (signs >> j) & 1 ? -g : g;
    }
  }
}

// IQ3_S: the 9-bit grid index k (0..7) of sub-block ib.
inline int s_index(const BlockIQ3_S& b, int ib, int k) {
  return b.qs[8 * ib + k] | (((b.qh[ib] >> k) & 1) << 8);
}

// IQ3_S: the 4-bit scale of sub-block ib.
inline int s_scale(const BlockIQ3_S& b, int ib) {
  return (b.scales[ib / 2] >> (4 * (ib % 2))) & 0xf;
}

// IQ3_S: the 32 signed grid values of sub-block ib (without the scale).
void s_values(const BlockIQ3_S& b, int ib, int* v) {
  for (int l = 0; l < 4; ++l) {
    const uint8_t signs = b.signs[4 * ib + l];
    for (int j = 0; j < 8; ++j) {
      const int g = grid_value(kIq3sGrid[s_index(b, ib, 2 * l + j / 4)], j % 4);
      v[8 * l + j] = (signs >> j) & 1 ? -g : g;
    }
  }
}

int dot32(const int* v, const int8_t* q) {
  int sum = 0;
  for (int e = 0; e < 32; ++e) sum += v[e] * q[e];
  return sum;
}

}  // namespace

// ---- IQ3_XXS --------------------------------------------------------------------------

void dequantize_iq3_xxs(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockIQ3_XXS*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(in[i].d);
    for (int ib = 0; ib < QK_K / 32; ++ib, y += 32) {
      const float db = d * (0.5f + float(xxs_aux(in[i], ib) >> 28)) * 0.5f;
      int v[32];
      xxs_values(in[i], ib, v);
      for (int e = 0; e < 32; ++e) y[e] = db * float(v[e]);
    }
  }
}

// Per block: d * d_y * sum_ib (2 s_ib + 1) (v_ib . q_ib); the row's sum times 1/4.
float vec_dot_iq3_xxs_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockIQ3_XXS*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int bsum = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      int v[32];
      xxs_values(a[i], ib, v);
      bsum += int(2 * (xxs_aux(a[i], ib) >> 28) + 1) * dot32(v, b[i].qs + 32 * ib);
    }
    sum += (f16_to_f32(a[i].d) * b[i].d) * float(bsum);
  }
  return 0.25f * sum;
}

// ---- IQ3_S ----------------------------------------------------------------------------

void dequantize_iq3_s(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockIQ3_S*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(in[i].d);
    for (int ib = 0; ib < QK_K / 32; ++ib, y += 32) {
      const float db = d * float(1 + 2 * s_scale(in[i], ib));
      int v[32];
      s_values(in[i], ib, v);
      for (int e = 0; e < 32; ++e) y[e] = db * float(v[e]);
    }
  }
}

// Per block: d * d_y * sum_ib (2 s_ib + 1) (v_ib . q_ib).
float vec_dot_iq3_s_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockIQ3_S*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int bsum = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      int v[32];
      s_values(a[i], ib, v);
      bsum += (2 * s_scale(a[i], ib) + 1) * dot32(v, b[i].qs + 32 * ib);
    }
    sum += (f16_to_f32(a[i].d) * b[i].d) * float(bsum);
  }
  return sum;
}

}  // namespace tessera::quant
