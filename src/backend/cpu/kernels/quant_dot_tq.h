// The ternary (TQ1_0, TQ2_0) dot products of the x86 levels, each in its own file
// (kernels/x86_avx2/quant_dot_tq.cpp, kernels/x86_avx512/quant_dot_tq.cpp) compiled with
// that level's target flags; only the level's kQuantKernels table points at them. They
// are ordinary (not inline) functions, so no copy of one level's code can stand in for
// the other's at link time.
#pragma once

#include <cstdint>

namespace tessera::cpu::avx2 {
float dot_tq1_0_q8_K(int64_t n, const void* x, const void* y);
float dot_tq2_0_q8_K(int64_t n, const void* x, const void* y);
}  // namespace tessera::cpu::avx2

namespace tessera::cpu::avx512 {
float dot_tq1_0_q8_K(int64_t n, const void* x, const void* y);
float dot_tq2_0_q8_K(int64_t n, const void* x, const void* y);
}  // namespace tessera::cpu::avx512
