// The IQ3_XXS, IQ3_S, IQ1_S and IQ1_M x Q8_K dots of the x86 levels, defined in
// kernels/x86_avx2/quant_dot_iq3_iq1.cpp and kernels/x86_avx512/quant_dot_iq3_iq1.cpp
// (each compiled with its level's target flags) and named by that level's kQuantKernels
// table (quant_dot.cpp beside them). Only those tables may point at them: they run only
// on a CPU that passed the level's cpuid check.
#pragma once

#include <cstdint>

namespace tessera::cpu::avx2 {
float dot_iq3_xxs_q8_K(int64_t n, const void* x, const void* y);
float dot_iq3_s_q8_K(int64_t n, const void* x, const void* y);
float dot_iq1_s_q8_K(int64_t n, const void* x, const void* y);
float dot_iq1_m_q8_K(int64_t n, const void* x, const void* y);
}  // namespace tessera::cpu::avx2

namespace tessera::cpu::avx512 {
float dot_iq3_xxs_q8_K(int64_t n, const void* x, const void* y);
float dot_iq3_s_q8_K(int64_t n, const void* x, const void* y);
float dot_iq1_s_q8_K(int64_t n, const void* x, const void* y);
float dot_iq1_m_q8_K(int64_t n, const void* x, const void* y);
}  // namespace tessera::cpu::avx512
