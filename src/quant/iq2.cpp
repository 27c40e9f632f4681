// IQ2_XXS, IQ2_XS and IQ2_S: reading the 2-bit i-quants (layouts in blocks.h) and their
// reference dot products with Q8_K.
//
// The three formats differ only in how a block spells, for each group of 8 elements, a
// grid point (8 unsigned magnitudes, kIq2*Grid), 8 sign bits and the 4-bit scale s of
// its 16 elements. Each block is first unpacked to that common form (Iq2Block), then
// dequantized or dotted by one piece of code:
//   x = d * (0.5 + s) / 4 * grid * sign, i.e. d * (2 s + 1) / 8 * grid * sign.
// The dot keeps the reference engine's integer sums: per block,
//   isum = sum over halves h of 32-element groups (2 s_h + 1) * sum_e grid_e sign_e q8_e,
// then sum += (d * d_y) * isum over blocks, times 1/8 at the end (exact: a power of 2).
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

constexpr int kGroups = QK_K / 8;  // groups of 8 elements in a block

// A block in the common form: per group of 8, its grid point and its sign bits (bit j
// set: element j is negative); per 16 elements, the 4-bit scale.
struct Iq2Block {
  float d;
  uint64_t grid[kGroups];
  uint8_t signs[kGroups];
  uint8_t scale[QK_K / 16];
};

Iq2Block unpack(const BlockIQ2_XXS& b) {
  Iq2Block u;
  u.d = f16_to_f32(b.d);
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    uint32_t idx;   // four grid indices, one a byte
    uint32_t meta;  // four 7-bit sign indices, then the scale in the top 4 bits
    std::memcpy(&idx, &b.qs[4 * ib], 4);
    std::memcpy(&meta, &b.qs[4 * ib + 2], 4);
    for (int l = 0; l < 4; ++l) {
      u.grid[4 * ib + l] = kIq2xxsGrid[(idx >> (8 * l)) & 0xff];
      u.signs[4 * ib + l] = kIq2Signs[(meta >> (7 * l)) & 127];
    }
    u.scale[2 * ib] = u.scale[2 * ib + 1] = uint8_t(meta >> 28);
  }
  return u;
}

Iq2Block unpack(const BlockIQ2_XS& b) {
  Iq2Block u;
  u.d = f16_to_f32(b.d);
  for (int g = 0; g < kGroups; ++g) {
    u.grid[g] = kIq2xsGrid[b.qs[g] & 511];
    u.signs[g] = kIq2Signs[b.qs[g] >> 9];
  }
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    u.scale[2 * ib] = b.scales[ib] & 0x0f;
    u.scale[2 * ib + 1] = b.scales[ib] >> 4;
  }
  return u;
}

Iq2Block unpack(const BlockIQ2_S& b) {
  Iq2Block u;
  u.d = f16_to_f32(b.d);
  for (int g = 0; g < kGroups; ++g) {
    const int high = (b.qh[g / 4] >> (2 * (g % 4))) & 3;
    u.grid[g] = kIq2sGrid[b.qs[g] | (high << 8)];
    u.signs[g] = b.qs[kGroups + g];
  }
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    u.scale[2 * ib] = b.scales[ib] & 0x0f;
    u.scale[2 * ib + 1] = b.scales[ib] >> 4;
  }
  return u;
}

uint8_t grid_value(uint64_t point, int j) { return uint8_t(point >> (8 * j)); }
bool negative(uint8_t signs, int j) { return (signs >> j) & 1; }

template <typename Block>
void dequantize_iq2(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const Block*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) {
    const Iq2Block u = unpack(in[i]);
    for (int g = 0; g < kGroups; ++g, y += 8) {
      // The reference's order of float operations: (d * (0.5 + s)) * 0.25, times the
      // grid value, times the sign.
      const float db = u.d * (0.5f + float(u.scale[g / 2])) * 0.25f;
      for (int j = 0; j < 8; ++j) {
        y[j] = db * float(grid_value(u.grid[g], j)) * (negative(u.signs[g], j) ? -1.0f : 1.0f);
      }
    }
  }
}

template <typename Block>
float vec_dot_iq2_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const Block*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const Iq2Block u = unpack(a[i]);
    int32_t isum = 0;
    for (int h = 0; h < QK_K / 16; ++h) {
      int32_t part = 0;
      for (int g = 2 * h; g < 2 * h + 2; ++g) {
        for (int j = 0; j < 8; ++j) {
          const int v = grid_value(u.grid[g], j) * b[i].qs[8 * g + j];
          part += negative(u.signs[g], j) ? -v : v;
        }
      }
      isum += (2 * u.scale[h] + 1) * part;
    }
    sum += (u.d * b[i].d) * float(isum);
  }
  return 0.125f * sum;
}

}  // namespace

void dequantize_iq2_xxs(const void* x, float* y, int64_t n) { dequantize_iq2<BlockIQ2_XXS>(x, y, n); }
void dequantize_iq2_xs(const void* x, float* y, int64_t n) { dequantize_iq2<BlockIQ2_XS>(x, y, n); }
void dequantize_iq2_s(const void* x, float* y, int64_t n) { dequantize_iq2<BlockIQ2_S>(x, y, n); }

float vec_dot_iq2_xxs_q8_K(int64_t n, const void* x, const void* y) {
  return vec_dot_iq2_q8_K<BlockIQ2_XXS>(n, x, y);
}
float vec_dot_iq2_xs_q8_K(int64_t n, const void* x, const void* y) {
  return vec_dot_iq2_q8_K<BlockIQ2_XS>(n, x, y);
}
float vec_dot_iq2_s_q8_K(int64_t n, const void* x, const void* y) {
  return vec_dot_iq2_q8_K<BlockIQ2_S>(n, x, y);
}

}  // namespace tessera::quant
