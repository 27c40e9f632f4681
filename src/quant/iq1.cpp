// IQ1_S and IQ1_M, read side: dequantization and the dot product with Q8_K (layouts in
// blocks.h, grid in iq_tables.h). Both store groups of 8 weights as an 11-bit index into
// a grid of ternary points g (-1, 0, +1), shifted by +-kIq1Delta, so a weight is
// x = d * (2 s + 1) * (g + delta) with a 3-bit scale s per 32 (IQ1_S) or 16 (IQ1_M)
// weights. The dot keeps the reference engine's two integer sums per block,
//   sum_g = sum (2 s + 1) (g . q)   and   sum_d = sum (2 s + 1) sign(delta) sum(q),
// and combines them once as d * d_y * (sum_g + kIq1Delta * sum_d) in float. IQ1_S's delta
// sign is per 32 weights, so its sum(q) comes from the Q8_K bsums; IQ1_M's is per 8.
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

// Coordinate j (0..7) of an IQ1 grid entry: int8 -1, 0 or +1.
inline int grid_value(uint64_t entry, int j) { return int(int8_t((entry >> (8 * j)) & 0xff)); }

int dot8(uint64_t entry, const int8_t* q) {
  int sum = 0;
  for (int j = 0; j < 8; ++j) sum += grid_value(entry, j) * q[j];
  return sum;
}

int sum8(const int8_t* q) {
  int sum = 0;
  for (int j = 0; j < 8; ++j) sum += q[j];
  return sum;
}

// IQ1_S: grid entry of group l (0..3) of sub-block ib.
inline uint64_t s_entry(const BlockIQ1_S& b, int ib, int l) {
  return kIq1sGrid[b.qs[4 * ib + l] | (((b.qh[ib] >> (3 * l)) & 7) << 8)];
}

// IQ1_S: (2 s + 1) and the sign of the delta (+-1) of sub-block ib.
inline int s_scale(const BlockIQ1_S& b, int ib) { return 2 * ((b.qh[ib] >> 12) & 7) + 1; }
inline int s_delta_sign(const BlockIQ1_S& b, int ib) { return b.qh[ib] & 0x8000 ? -1 : 1; }

// IQ1_M: the four little-endian 16-bit words of the scales.
inline uint16_t m_word(const BlockIQ1_M& b, int k) {
  uint16_t w;
  std::memcpy(&w, b.scales + 2 * k, 2);
  return w;
}

// IQ1_M: the fp16 super-scale, its four nibbles at the tops of the four words.
inline float m_super_scale(const BlockIQ1_M& b) {
  const uint16_t h = uint16_t((m_word(b, 0) >> 12) | ((m_word(b, 1) >> 8) & 0x00f0) |
                              ((m_word(b, 2) >> 4) & 0x0f00) | (m_word(b, 3) & 0xf000));
  return f16_to_f32(h);
}

// IQ1_M: (2 s + 1) of the 16 weights h (0..15) of the block.
inline int m_scale(const BlockIQ1_M& b, int h) {
  return 2 * ((m_word(b, h / 4) >> (3 * (h % 4))) & 7) + 1;
}

// IQ1_M: group g (0..31) of 8 weights: its qh nibble holds 3 index bits and the delta sign.
inline int m_nibble(const BlockIQ1_M& b, int g) { return (b.qh[g / 2] >> (4 * (g % 2))) & 0xf; }
inline uint64_t m_entry(const BlockIQ1_M& b, int g) {
  return kIq1sGrid[b.qs[g] | ((m_nibble(b, g) & 7) << 8)];
}
inline int m_delta_sign(const BlockIQ1_M& b, int g) { return m_nibble(b, g) & 8 ? -1 : 1; }

}  // namespace

// ---- IQ1_S ----------------------------------------------------------------------------

void dequantize_iq1_s(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockIQ1_S*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(in[i].d);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const float dl = d * float(s_scale(in[i], ib));
      const float delta = float(s_delta_sign(in[i], ib)) * kIq1Delta;
      for (int l = 0; l < 4; ++l, y += 8) {
        const uint64_t entry = s_entry(in[i], ib, l);
        for (int j = 0; j < 8; ++j) y[j] = dl * (float(grid_value(entry, j)) + delta);
      }
    }
  }
}

float vec_dot_iq1_s_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockIQ1_S*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const int8_t* q = b[i].qs;
    int sum_g = 0;
    int sum_d = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      int lsum = 0;
      for (int l = 0; l < 4; ++l) lsum += dot8(s_entry(a[i], ib, l), q + 32 * ib + 8 * l);
      const int ls = s_scale(a[i], ib);
      sum_g += ls * lsum;
      sum_d += ls * s_delta_sign(a[i], ib) * (b[i].bsums[2 * ib] + b[i].bsums[2 * ib + 1]);
    }
    sum += f16_to_f32(a[i].d) * b[i].d * (float(sum_g) + kIq1Delta * float(sum_d));
  }
  return sum;
}

// ---- IQ1_M ----------------------------------------------------------------------------

void dequantize_iq1_m(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockIQ1_M*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = m_super_scale(in[i]);
    for (int g = 0; g < QK_K / 8; ++g, y += 8) {
      const float dl = d * float(m_scale(in[i], g / 2));
      const float delta = float(m_delta_sign(in[i], g)) * kIq1Delta;
      const uint64_t entry = m_entry(in[i], g);
      for (int j = 0; j < 8; ++j) y[j] = dl * (float(grid_value(entry, j)) + delta);
    }
  }
}

float vec_dot_iq1_m_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockIQ1_M*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const int8_t* q = b[i].qs;
    int sum_g = 0;
    int sum_d = 0;
    for (int h = 0; h < QK_K / 16; ++h) {  // 16 weights of one scale: groups 2h, 2h + 1
      int lsum = 0;
      int dsum = 0;
      for (int g = 2 * h; g < 2 * h + 2; ++g) {
        lsum += dot8(m_entry(a[i], g), q + 8 * g);
        dsum += m_delta_sign(a[i], g) * sum8(q + 8 * g);
      }
      const int ls = m_scale(a[i], h);
      sum_g += ls * lsum;
      sum_d += ls * dsum;
    }
    sum += m_super_scale(a[i]) * b[i].d * (float(sum_g) + kIq1Delta * float(sum_d));
  }
  return sum;
}

}  // namespace tessera::quant
