// Vector primitives used by the CPU op kernels, one table of function pointers per
// instruction-set level. The reference level (kernels/reference/vec.cpp) is the
// specification; the AVX2 and AVX-512 levels (kernels/x86_*/vec.cpp) are compiled with
// per-file target flags and are only reachable through vec_kernels_for(), which checks
// cpuid first.
//
// Contract shared by every level:
//  - Conversions are exact and give the same bits as core/fp16.h (NaNs stay NaNs).
//  - dot_f32_x4, dot_f16_f32 and dot_bf16_f32 give, bit for bit, what dot_f32 gives on
//    the same (converted) operands, so a kernel may pick any of them without changing
//    results.
//  - Elementwise outputs may alias their inputs exactly (y == x), never partially.
//  - n may be 0.
#pragma once

#include <cstdint>
#include <string_view>

namespace tessera::cpu {

enum class Isa { Reference, Avx2, Avx512 };

struct VecKernels {
  Isa isa;

  // Dot products.
  float (*dot_f32)(const float* a, const float* b, int64_t n);
  /// out[j] = dot_f32(a, b[j], n) for j < 4.
  void (*dot_f32_x4)(const float* a, const float* const* b, int64_t n, float* out);
  /// dot_f32 of a (IEEE half) converted to float, and b.
  float (*dot_f16_f32)(const uint16_t* a, const float* b, int64_t n);
  /// dot_f32 of a (bfloat16) converted to float, and b.
  float (*dot_bf16_f32)(const uint16_t* a, const float* b, int64_t n);

  // Row conversions (round to nearest even).
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);
  void (*bf16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*f32_to_bf16)(const float* x, uint16_t* y, int64_t n);

  // Reductions.
  float (*sum_f32)(const float* x, int64_t n);
  float (*sumsq_f32)(const float* x, int64_t n);
  /// Largest element; -inf for n == 0.
  float (*max_f32)(const float* x, int64_t n);

  // Elementwise.
  void (*add_f32)(float* y, const float* a, const float* b, int64_t n);  // y = a + b
  void (*mul_f32)(float* y, const float* a, const float* b, int64_t n);  // y = a * b
  void (*scale_f32)(float* y, const float* x, float s, int64_t n);       // y = x * s
  void (*add_scalar_f32)(float* y, const float* x, float c, int64_t n);  // y = x + c
  /// y = exp(x - m); returns the sum of y.
  float (*exp_sum_f32)(float* y, const float* x, float m, int64_t n);
  /// y = x / (1 + exp(-x)).
  void (*silu_f32)(float* y, const float* x, int64_t n);
  /// y = 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), computed as x / (1 + exp(-2u)).
  void (*gelu_f32)(float* y, const float* x, int64_t n);
};

/// The kernels of the active level: the best one the CPU supports, chosen once at first
/// use, unless TESSERA_CPU_ISA=reference|avx2|avx512 asks for a (supported) level.
const VecKernels& vec_kernels();
Isa active_isa();

/// Whether this CPU can run a level's kernels.
bool isa_supported(Isa isa);
/// A level's kernels, or null where the CPU lacks it.
const VecKernels* vec_kernels_for(Isa isa);
std::string_view isa_name(Isa isa);

/// Tests and benchmarks only: switches the active level (false if unsupported). Must not
/// be called while a graph is being computed.
bool set_active_isa(Isa isa);

// The per-level tables. Only dispatch.cpp may hand out the x86 ones (after cpuid).
namespace reference {
extern const VecKernels kKernels;
}
namespace avx2 {
extern const VecKernels kKernels;
}
namespace avx512 {
extern const VecKernels kKernels;
}

}  // namespace tessera::cpu
