// The IQ2 x Q8_K dots of the x86 levels, defined in kernels/x86_*/quant_dot_iq2.cpp (each
// compiled with its level's flags) and named by that level's kQuantKernels table. Only the
// x86 kernel files include this.
#pragma once

#include <cstdint>

namespace tessera::cpu::avx2 {
float dot_iq2_xxs_q8_K(int64_t n, const void* vx, const void* vy);
float dot_iq2_xs_q8_K(int64_t n, const void* vx, const void* vy);
float dot_iq2_s_q8_K(int64_t n, const void* vx, const void* vy);
}  // namespace tessera::cpu::avx2

namespace tessera::cpu::avx512 {
float dot_iq2_xxs_q8_K(int64_t n, const void* vx, const void* vy);
float dot_iq2_xs_q8_K(int64_t n, const void* vx, const void* vy);
float dot_iq2_s_q8_K(int64_t n, const void* vx, const void* vy);
}  // namespace tessera::cpu::avx512
