// Reference _X16 kernels (gemm_kernels.h): plain loops that state the layout of
// repack.h and the accumulation order every level follows.
#include <cfloat>
#include <cmath>
#include <cstring>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/repack.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace tessera::cpu::reference {
namespace {

void quantize_q8x(const float* x, void* y, int64_t n, int32_t zero_point) {
  quantize_row_q8x(quant::quantize_q8_0, x, static_cast<BlockQ8X*>(y), n, zero_point);
}

// Weight byte of row r, word w, byte i of block b.
inline uint8_t weight_byte(const uint8_t* quants, int64_t b, int block_bytes, int w, int r, int i) {
  return quants[b * block_bytes + w * 64 + r * 4 + i];
}

// Integer sum of block b for row r against one activation block.
int32_t block_sum_q4_0(const uint8_t* quants, int64_t b, int r, const BlockQ8X& a) {
  int32_t s = a.bias;
  for (int w = 0; w < 4; ++w) {
    for (int i = 0; i < 4; ++i) {
      const uint8_t byte = weight_byte(quants, b, 256, w, r, i);
      s += (byte & 0x0F) * a.qs[w * 4 + i] + (byte >> 4) * a.qs[16 + w * 4 + i];
    }
  }
  return s;
}

int32_t block_sum_q8_0(const uint8_t* quants, int64_t b, int r, const BlockQ8X& a) {
  int32_t s = a.bias;
  for (int w = 0; w < 8; ++w) {
    for (int i = 0; i < 4; ++i) s += weight_byte(quants, b, 512, w, r, i) * a.qs[w * 4 + i];
  }
  return s;
}

template <int kBlockBytes, int32_t (*BlockSum)(const uint8_t*, int64_t, int, const BlockQ8X&)>
void gemm(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols,
          float* dst, size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const auto* scales = reinterpret_cast<const uint16_t*>(quants + nb * kBlockBytes);
  for (int64_t c = 0; c < n_cols; ++c) {
    const auto* a = reinterpret_cast<const BlockQ8X*>(static_cast<const char*>(act) + c * act_stride);
    for (int r = 0; r < kGroupRows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const float scale = f16_to_f32(scales[b * kGroupRows + r]) * a[b].d;
        acc = std::fma(float(BlockSum(quants, b, r, a[b])), scale, acc);
      }
      dst[size_t(c) * dst_stride + size_t(r)] = acc;
    }
  }
}

void quantize_q8kx(const float* x, void* y, int64_t n) {
  quantize_row_q8kx(quant::quantize_q8_K, x, static_cast<BlockQ8KX*>(y), n);
}

// Scale and min of sub-block j of row r from the packed bytes (the Q4_K rule).
void scale_min_q4_K(const uint8_t* words, int r, int j, int32_t* sc, int32_t* m) {
  auto byte = [&](int i) { return int32_t(words[(i / 4) * 64 + r * 4 + i % 4]); };
  if (j < 4) {
    *sc = byte(j) & 63;
    *m = byte(j + 4) & 63;
  } else {
    *sc = (byte(j + 4) & 15) | ((byte(j - 4) >> 6) << 4);
    *m = (byte(j + 4) >> 4) | ((byte(j) >> 6) << 4);
  }
}

void gemm_q4_K(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols,
               float* dst, size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const uint8_t* meta = quants + nb * 2048;
  for (int64_t c = 0; c < n_cols; ++c) {
    const auto* a = reinterpret_cast<const BlockQ8KX*>(static_cast<const char*>(act) + c * act_stride);
    for (int r = 0; r < kGroupRows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const auto* d = reinterpret_cast<const uint16_t*>(meta + b * 256);
        int32_t isum = 0, imin = 0;
        for (int j = 0; j < 8; ++j) {
          int32_t sc, m;
          scale_min_q4_K(meta + b * 256 + 64, r, j, &sc, &m);
          int32_t dot = 0, asum = 0;
          for (int e = 0; e < 32; ++e) {
            const int i = j / 2, word = e / 4;
            const uint8_t byte = quants[b * 2048 + i * 512 + word * 64 + r * 4 + e % 4];
            const int32_t q = j % 2 == 0 ? byte & 0x0F : byte >> 4;
            dot += q * a[b].qs[32 * j + e];
            asum += a[b].qs[32 * j + e];
          }
          isum += sc * dot;
          imin += m * asum;
        }
        acc = std::fma(float(isum), f16_to_f32(d[r]) * a[b].d, acc);
        acc = std::fma(-float(imin), f16_to_f32(d[kGroupRows + r]) * a[b].d, acc);
      }
      dst[size_t(c) * dst_stride + size_t(r)] = acc;
    }
  }
}

// Quant (0..63) of element e of row r in a Q6_K_X16 super-block.
int32_t q6_K_quant(const uint8_t* sb, int r, int e) {
  const int h = e / 128, k = (e % 128) / 32, l = e % 32;
  const int ql_byte = 64 * h + 32 * (k & 1) + l;
  const int qh_byte = 32 * h + l;
  const uint8_t ql = sb[(ql_byte / 4) * 64 + r * 4 + ql_byte % 4];
  const uint8_t qh = sb[2048 + (qh_byte / 4) * 64 + r * 4 + qh_byte % 4];
  return ((k < 2 ? ql & 0x0F : ql >> 4)) | (((qh >> (2 * k)) & 3) << 4);
}

void gemm_q6_K(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols,
               float* dst, size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const uint8_t* meta = quants + nb * 3072;
  for (int64_t c = 0; c < n_cols; ++c) {
    const auto* a = reinterpret_cast<const BlockQ8KX*>(static_cast<const char*>(act) + c * act_stride);
    for (int r = 0; r < kGroupRows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        int32_t isum = 0;
        for (int s = 0; s < 16; ++s) {
          const int32_t sc = int8_t(meta[b * 288 + s * 16 + r]);
          int32_t dot = 0;
          for (int e = 16 * s; e < 16 * s + 16; ++e) dot += (q6_K_quant(quants + b * 3072, r, e) - 32) * a[b].qs[e];
          isum += sc * dot;
        }
        uint16_t d;
        std::memcpy(&d, meta + b * 288 + 256 + r * 2, 2);
        acc = std::fma(float(isum), f16_to_f32(d) * a[b].d, acc);
      }
      dst[size_t(c) * dst_stride + size_t(r)] = acc;
    }
  }
}

void gemm_f16_group(const uint16_t* h, int64_t k, const float* x, size_t x_stride, int64_t n_cols, float* dst,
                    size_t dst_stride) {
  for (int64_t c = 0; c < n_cols; ++c) {
    const float* xc = x + size_t(c) * x_stride;
    for (int r = 0; r < kGroupRows; ++r) {
      float acc[2] = {0.0f, 0.0f};
      for (int64_t e = 0; e < k; ++e) {
        acc[e % 2] = std::fma(f16_to_f32(h[e * kGroupRows + r]), xc[e], acc[e % 2]);
      }
      dst[size_t(c) * dst_stride + size_t(r)] = acc[0] + acc[1];
    }
  }
}

// A GemmF16X16Fn / GemmBF16X16Fn made of a kernel for one group of 16-bit weights.
template <typename X, void (*one)(const uint16_t*, int64_t, const X*, size_t, int64_t, float*, size_t)>
void each_half_group(const void* w, int64_t n_groups, int64_t k, const X* x, size_t x_stride, int64_t n_cols,
                     float* dst, size_t dst_stride) {
  for (int64_t g = 0; g < n_groups; ++g) {
    one(static_cast<const uint16_t*>(w) + g * kGroupRows * k, k, x, x_stride, n_cols, dst + g * kGroupRows, dst_stride);
  }
}

// vdpbf16ps's handling of denormals: read as zero (inputs), flushed to zero (results),
// keeping the sign.
inline float flush(float v) { return std::fabs(v) < FLT_MIN ? std::copysign(0.0f, v) : v; }

void gemm_bf16_group(const uint16_t* h, int64_t k, const uint16_t* x, size_t x_stride, int64_t n_cols,
                     float* dst, size_t dst_stride) {
  for (int64_t c = 0; c < n_cols; ++c) {
    const uint16_t* xc = x + size_t(c) * x_stride;
    for (int r = 0; r < kGroupRows; ++r) {
      float acc[2] = {0.0f, 0.0f};
      for (int64_t p = 0; p < k / 2; ++p) {
        const uint16_t* pair = h + (p * kGroupRows + r) * 2;
        float& a = acc[p % 2];
        for (int i : {1, 0}) {
          a = flush(std::fma(flush(bf16_to_f32(pair[i])), flush(bf16_to_f32(xc[2 * p + i])), a));
        }
      }
      dst[size_t(c) * dst_stride + size_t(r)] = acc[0] + acc[1];
    }
  }
}

}  // namespace

// The 4-bit non-linear formats (gemm_x16_iq4.cpp).
void gemm_iq4_nl_x16(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
                     int64_t n_cols, float* dst, size_t dst_stride);
void gemm_iq4_xs_x16(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
                     int64_t n_cols, float* dst, size_t dst_stride);

const GemmKernels kGemmKernels = {
    .isa = Isa::Reference,
    .quantize_q8x = quantize_q8x,
    .gemm_q4_0_x16 = each_group<gemm<256, block_sum_q4_0>, sizeof(quant::BlockQ4_0)>,
    .gemm_q8_0_x16 = each_group<gemm<512, block_sum_q8_0>, sizeof(quant::BlockQ8_0)>,
    .gemm_f16_x16 = each_half_group<float, gemm_f16_group>,
    .quantize_q8kx = quantize_q8kx,
    .gemm_q4_K_x16 = each_group<gemm_q4_K, sizeof(quant::BlockQ4_K)>,
    .gemm_q6_K_x16 = each_group<gemm_q6_K, sizeof(quant::BlockQ6_K)>,
    .gemm_iq4_nl_x16 = gemm_iq4_nl_x16,
    .gemm_iq4_xs_x16 = gemm_iq4_xs_x16,
    .gemm_bf16_x16 = each_half_group<uint16_t, gemm_bf16_group>,
};

}  // namespace tessera::cpu::reference
