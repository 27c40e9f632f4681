// Reference _X16 kernels of the 4-bit non-linear formats (gemm_kernels.h): plain loops
// that state the IQ4_NL_X16 and IQ4_XS_X16 layouts of repack.h and the integer sums every
// level computes.
//
// IQ4_NL_X16: the weight of a nibble q is the unsigned byte kIq4nlValues[q] + 128 (1..241),
// so the contract's block sum bias + sum(u a), with bias = -128 sum(a) (the activation
// quantizer's zero point 128), is sum(kIq4nlValues[q] a).
// IQ4_XS_X16: per super-block sum_s (ls_s - 32) (sum over sub-block s of kIq4nlValues[q] a),
// the 6-bit scales read from the packed scale bytes.
#include <cmath>
#include <cstring>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/repack.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace tessera::cpu::reference {
namespace {

int32_t unsigned_value(int nibble) { return int32_t(quant::kIq4nlValues[nibble]) + 128; }

void gemm_iq4_nl(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols, float* dst,
                 size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const auto* scales = reinterpret_cast<const uint16_t*>(quants + nb * 256);
  for (int64_t c = 0; c < n_cols; ++c) {
    const auto* a = reinterpret_cast<const BlockQ8X*>(static_cast<const char*>(act) + c * act_stride);
    for (int r = 0; r < kGroupRows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        int32_t s = a[b].bias;
        for (int word = 0; word < 4; ++word) {
          for (int i = 0; i < 4; ++i) {
            const uint8_t byte = quants[b * 256 + word * 64 + r * 4 + i];
            s += unsigned_value(byte & 0x0F) * a[b].qs[word * 4 + i] + unsigned_value(byte >> 4) * a[b].qs[16 + word * 4 + i];
          }
        }
        acc = std::fma(float(s), f16_to_f32(scales[b * kGroupRows + r]) * a[b].d, acc);
      }
      dst[size_t(c) * dst_stride + size_t(r)] = acc;
    }
  }
}

// Scale of sub-block s (0..7) of row r, minus 32, from a super-block's metadata.
int32_t xs_scale(const uint8_t* meta, int r, int s) {
  const int32_t low = (meta[32 + r * 4 + s / 2] >> (4 * (s % 2))) & 0x0F;
  uint16_t h;
  std::memcpy(&h, meta + 96 + r * 2, 2);
  return (low | ((h >> (2 * s)) & 3) << 4) - 32;
}

void gemm_iq4_xs(const void* w, int64_t nb, const void* act, size_t act_stride, int64_t n_cols, float* dst,
                 size_t dst_stride) {
  const auto* quants = static_cast<const uint8_t*>(w);
  const uint8_t* meta = quants + nb * 2048;
  for (int64_t c = 0; c < n_cols; ++c) {
    const auto* a = reinterpret_cast<const BlockQ8KX*>(static_cast<const char*>(act) + c * act_stride);
    for (int r = 0; r < kGroupRows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* mb = meta + b * 128;
        int32_t isum = 0;
        for (int s = 0; s < 8; ++s) {
          int32_t dot = 0;
          for (int e = 0; e < 16; ++e) {  // bytes 16 s + e: elements e (low nibble), e + 16 (high)
            const int byte_index = 16 * s + e;
            const uint8_t byte = quants[b * 2048 + (byte_index / 4) * 64 + r * 4 + byte_index % 4];
            dot += quant::kIq4nlValues[byte & 0x0F] * a[b].qs[32 * s + e] +
                   quant::kIq4nlValues[byte >> 4] * a[b].qs[32 * s + 16 + e];
          }
          isum += xs_scale(mb, r, s) * dot;
        }
        uint16_t d;
        std::memcpy(&d, mb + r * 2, 2);
        acc = std::fma(float(isum), f16_to_f32(d) * a[b].d, acc);
      }
      dst[size_t(c) * dst_stride + size_t(r)] = acc;
    }
  }
}

}  // namespace

// The GemmX16Fn entries of the level's table (gemm_x16.cpp).
void gemm_iq4_nl_x16(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
                     int64_t n_cols, float* dst, size_t dst_stride) {
  each_group<gemm_iq4_nl, sizeof(quant::BlockIQ4_NL)>(w, n_groups, nb, act, act_stride, n_cols, dst, dst_stride);
}

void gemm_iq4_xs_x16(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
                     int64_t n_cols, float* dst, size_t dst_stride) {
  each_group<gemm_iq4_xs, sizeof(quant::BlockIQ4_XS)>(w, n_groups, nb, act, act_stride, n_cols, dst, dst_stride);
}

}  // namespace tessera::cpu::reference
