// Kernels for the repacked _X16 weights (repack.h): an activation quantizer and one
// register-tiled GEMM per weight layout, one table per instruction-set level. The
// reference level (kernels/reference/gemm_x16.cpp) is the specification; AVX-512 VNNI
// lives in kernels/x86_avx512/gemm_x16.cpp and AVX2 (+FMA, F16C; vpmaddubsw/vpmaddwd in
// place of vpdpbusd) in kernels/x86_avx2/gemm_x16.cpp, so both levels repack the weights
// at load (see fast_gemm_available).
//
// Contract shared by every level: each output is
//   quantized: acc = 0; for each block b in order: acc = fma(float(bias_b + sum_i w_i q_i), dw_b * da_b, acc)
//   Q4_K:      acc = 0; per super-block b: acc = fma(float(sum_s sc_s dot_s), d_b * da_b, acc);
//              acc = fma(-float(sum_s m_s asum_s), dmin_b * da_b, acc)
//   Q6_K:      acc = 0; per super-block b: acc = fma(float(sum_s sc_s (dot_s - 32 asum_s)), d_b * da_b, acc)
//   IQ4_XS:    acc = 0; per super-block b: acc = fma(float(sum_s (ls_s - 32) dot_s), d_b * da_b, acc)
//              (dot_s over the signed values kIq4nlValues[q]; IQ4_NL is "quantized" above, w_i = value + 128)
//   F16:       acc[0] = acc[1] = 0; for each element e in order: acc[e % 2] = fma(float(w_e), x_e, acc[e % 2]);
//              result acc[0] + acc[1] (two chains, so one column is not bound by the fma latency)
//   BF16:      x rounded to bf16 (to nearest even); acc[0] = acc[1] = 0; for each element pair p in
//              order, with j = p % 2: acc[j] = ftz(fma(daz(w_2p+1), daz(x_2p+1), acc[j]));
//              acc[j] = ftz(fma(daz(w_2p), daz(x_2p), acc[j])); result acc[0] + acc[1]. That is
//              one AVX-512 BF16 vdpbf16ps per pair and chain (odd element first, each step
//              rounded, denormal inputs read as zero and denormal results flushed to zero:
//              daz / ftz), which the other levels reproduce with FMAs under MXCSR FTZ+DAZ.
// with the integer sums exact, so every level, every tile width and every thread count
// gives the same bits for the same inputs (one output never depends on its neighbours).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/vec.h"
#include "tessera/dtype.h"

namespace tessera::cpu {

/// Quantizes n floats (a multiple of 32) into BlockQ8X blocks whose bias is
/// -zero_point * sum(qs).
using QuantizeX16Fn = void (*)(const float* x, void* y, int64_t n, int32_t zero_point);
/// Quantizes n floats (a multiple of 256) into BlockQ8KX blocks.
using QuantizeKX16Fn = void (*)(const float* x, void* y, int64_t n);
/// n_groups consecutive groups of 16 interleaved weight rows (nb blocks or super-blocks
/// each; group g starts g * 16 * nb * (the type's block bytes) after w) times n_cols
/// activation rows of BlockQ8X / BlockQ8KX (row c at act + c * act_stride bytes): writes
/// dst[c * dst_stride + 16 * g + r] for r < 16. Several groups per call let decode read
/// more than one stream at a time (kernels/x86_avx2/gemm_x16.cpp, "Decode in pairs").
using GemmX16Fn = void (*)(const void* w, int64_t n_groups, int64_t nb, const void* act,
                           size_t act_stride, int64_t n_cols, float* dst, size_t dst_stride);

/// A GemmX16Fn made of a kernel that does one group per call (one(w, nb, act, act_stride,
/// n_cols, dst, dst_stride)); kBlockBytes: the type's bytes per block of one row.
template <auto one, size_t kBlockBytes>
void each_group(const void* w, int64_t n_groups, int64_t nb, const void* act, size_t act_stride,
                int64_t n_cols, float* dst, size_t dst_stride) {
  const size_t group_bytes = size_t(16 * nb) * kBlockBytes;
  for (int64_t g = 0; g < n_groups; ++g)
    one(static_cast<const char*>(w) + size_t(g) * group_bytes, nb, act, act_stride, n_cols, dst + 16 * g,
        dst_stride);
}

/// n_groups consecutive groups of 16 interleaved F16 rows of k elements (group g at
/// w + g * 32 * k bytes) times n_cols float rows (row c at x + c * x_stride floats): writes
/// dst[c * dst_stride + 16 * g + r] for r < 16. Several groups per call let the AVX-512
/// tile take two at a time.
using GemmF16X16Fn = void (*)(const void* w, int64_t n_groups, int64_t k, const float* x, size_t x_stride,
                              int64_t n_cols, float* dst, size_t dst_stride);

/// n_groups consecutive groups of 16 interleaved BF16 rows of k (even) elements (group g at
/// w + g * 32 * k bytes) times n_cols bf16 rows (row c at x + c * x_stride elements): writes
/// dst[c * dst_stride + 16 * g + r] for r < 16. Several groups per call let the AVX-512
/// tile take two at a time (kernels/x86_avx512/gemm_x16_bf16.cpp).
using GemmBF16X16Fn = void (*)(const void* w, int64_t n_groups, int64_t k, const uint16_t* x, size_t x_stride,
                               int64_t n_cols, float* dst, size_t dst_stride);

struct GemmKernels {
  Isa isa;
  QuantizeX16Fn quantize_q8x;
  GemmX16Fn gemm_q4_0_x16;
  GemmX16Fn gemm_q8_0_x16;
  GemmF16X16Fn gemm_f16_x16;
  QuantizeKX16Fn quantize_q8kx;
  GemmX16Fn gemm_q4_K_x16;
  GemmX16Fn gemm_q6_K_x16;
  GemmX16Fn gemm_iq4_nl_x16;  // BlockQ8X activations, zero point 128
  GemmX16Fn gemm_iq4_xs_x16;  // BlockQ8KX activations
  GemmBF16X16Fn gemm_bf16_x16;
};

/// The GEMM for a quantized _X16 type in table k.
GemmX16Fn gemm_x16(const GemmKernels& k, DType x16);

/// The kernels of the active vector level, or the reference ones where it has none.
const GemmKernels& gemm_kernels();
/// A level's table, or null where the CPU lacks it or the level has no such kernels. For
/// the AVX2 level on a CPU with AVX-VNNI that is the avx2_vnni table, unless
/// TESSERA_AVX_VNNI=0.
const GemmKernels* gemm_kernels_for(Isa isa);
/// The AVX2 level's table without AVX-VNNI (null where the CPU lacks AVX2) and with it
/// (null where it lacks AVX-VNNI), whatever TESSERA_AVX_VNNI says: for tests and benchmarks.
const GemmKernels* gemm_kernels_avx2(bool vnni);
/// True when the active level has fast _X16 kernels, i.e. repacking weights pays off.
bool fast_gemm_available();

namespace reference {
extern const GemmKernels kGemmKernels;
}
namespace avx2 {
extern const GemmKernels kGemmKernels;
}
namespace avx2_vnni {  // the AVX2 kernels with vpdpbusd (AVX-VNNI), same bits
extern const GemmKernels kGemmKernels;
}
namespace avx512 {
extern const GemmKernels kGemmKernels;
}

}  // namespace tessera::cpu
