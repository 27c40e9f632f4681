// Quantized dot products and activation quantizers, one table of function pointers per
// instruction-set level, chosen with the vector level (vec.h: cpuid, TESSERA_CPU_ISA).
// The reference level points at src/quant, which is the specification; the AVX2 and
// AVX-512 levels live in kernels/x86_*/quant_dot.cpp, compiled with per-file target flags.
//
// Contract shared by every level:
//  - The partner quantizers (Q8_0, Q8_1, Q8_K) write blocks bit-identical to the
//    reference quantizers of src/quant.
//  - A dot computes the reference's integer sums exactly; only the order of the float
//    accumulation differs, so results agree with the reference to within a few ulps of
//    the sum of |block contributions|.
//  - Partner blocks come from the partner quantizers: their quants lie in [-127, 127]
//    and their Q8_K bsums are the sums of their quants. Weight blocks may hold any bits.
//  - The row conversions (to_float_*) give the reference dequantizers' bits.
//  - n is a multiple of the block size (32, or QK_K = 256 for the k-quants), may be 0.
#pragma once

#include <cstdint>

#include "backend/cpu/vec.h"
#include "tessera/dtype.h"

namespace tessera::cpu {

/// Quantizes n floats into blocks of an activation partner type.
using QuantizeRowFn = void (*)(const float* x, void* y, int64_t n);
/// Dot product of n elements: x a row of the weight type, y a row of its partner type.
using QuantDotFn = float (*)(int64_t n, const void* x, const void* y);
/// n elements of a row of blocks as floats.
using ToFloatRowFn = void (*)(const void* x, float* y, int64_t n);

struct QuantKernels {
  Isa isa;

  // Activation partners.
  QuantizeRowFn quantize_q8_0;
  QuantizeRowFn quantize_q8_1;
  QuantizeRowFn quantize_q8_K;

  // Weight type x partner type.
  QuantDotFn dot_q4_0_q8_0;
  QuantDotFn dot_q4_1_q8_1;
  QuantDotFn dot_q5_0_q8_0;
  QuantDotFn dot_q5_1_q8_1;
  QuantDotFn dot_q8_0_q8_0;
  QuantDotFn dot_q2_K_q8_K;
  QuantDotFn dot_q3_K_q8_K;
  QuantDotFn dot_q4_K_q8_K;
  QuantDotFn dot_q5_K_q8_K;
  QuantDotFn dot_q6_K_q8_K;
  QuantDotFn dot_iq2_xxs_q8_K;
  QuantDotFn dot_iq2_xs_q8_K;
  QuantDotFn dot_iq2_s_q8_K;
  QuantDotFn dot_iq3_xxs_q8_K;
  QuantDotFn dot_iq3_s_q8_K;
  QuantDotFn dot_iq1_s_q8_K;
  QuantDotFn dot_iq1_m_q8_K;
  QuantDotFn dot_iq4_nl_q8_0;
  QuantDotFn dot_iq4_xs_q8_K;
  QuantDotFn dot_tq1_0_q8_K;
  QuantDotFn dot_tq2_0_q8_K;

  // Rows to float of the formats a KV cache may hold (attention converts the cells it
  // reads with them), bit for bit what src/quant's dequantizers give.
  ToFloatRowFn to_float_q4_0;
  ToFloatRowFn to_float_q4_1;
  ToFloatRowFn to_float_q5_0;
  ToFloatRowFn to_float_q5_1;
  ToFloatRowFn to_float_q8_0;
  ToFloatRowFn to_float_iq4_nl;
};

/// How rows of one weight type are multiplied: activations are quantized to `partner`
/// with `quantize`, then each output is one `dot`.
struct QuantMatmul {
  DType partner = DType::F32;
  QuantizeRowFn quantize = nullptr;
  QuantDotFn dot = nullptr;
  explicit operator bool() const { return dot != nullptr; }
};

/// The kernels for weight type t in table k; empty for types without a quantized dot.
QuantMatmul quant_matmul(const QuantKernels& k, DType t);

/// Table k's row conversion for type t, or null for a type it has none for.
ToFloatRowFn quant_to_float(const QuantKernels& k, DType t);

/// The quantized kernels of the active vector level (see vec_kernels()).
const QuantKernels& quant_kernels();
/// A level's quantized kernels, or null where the CPU lacks it.
const QuantKernels* quant_kernels_for(Isa isa);

// The per-level tables. Only quant_dispatch.cpp may hand out the x86 ones (after cpuid).
namespace reference {
extern const QuantKernels kQuantKernels;
}
namespace avx2 {
extern const QuantKernels kQuantKernels;
}
namespace avx512 {
extern const QuantKernels kQuantKernels;
}

}  // namespace tessera::cpu
