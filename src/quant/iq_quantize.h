// The quantizers of the grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
// IQ1_M): the reference quantizer's searches (llama.cpp ggml-quants.c), blocks
// identical to its files. The *_weighted functions take an importance per element (see
// quant.h); the plain ones use the reference's own weighting without an importance
// matrix where it has one (IQ3_XXS, IQ3_S, IQ2_S, IQ1_M) and an importance of 1 for every
// element where the reference refuses to run without one (IQ2_XXS, IQ2_XS, IQ1_S).
// n is a multiple of QK_K.
#pragma once

#include <cstdint>

namespace tessera::quant {

// iq_quantize_iq2.cpp
void quantize_iq2_xxs(const float* x, void* y, int64_t n);
void quantize_iq2_xxs_weighted(const float* x, void* y, int64_t n, const float* importance);
void quantize_iq2_xs(const float* x, void* y, int64_t n);
void quantize_iq2_xs_weighted(const float* x, void* y, int64_t n, const float* importance);
void quantize_iq2_s(const float* x, void* y, int64_t n);
void quantize_iq2_s_weighted(const float* x, void* y, int64_t n, const float* importance);

// iq_quantize_iq3.cpp
void quantize_iq3_xxs(const float* x, void* y, int64_t n);
void quantize_iq3_xxs_weighted(const float* x, void* y, int64_t n, const float* importance);
void quantize_iq3_s(const float* x, void* y, int64_t n);
void quantize_iq3_s_weighted(const float* x, void* y, int64_t n, const float* importance);

// iq_quantize_iq1.cpp
void quantize_iq1_s(const float* x, void* y, int64_t n);
void quantize_iq1_s_weighted(const float* x, void* y, int64_t n, const float* importance);
void quantize_iq1_m(const float* x, void* y, int64_t n);
void quantize_iq1_m_weighted(const float* x, void* y, int64_t n, const float* importance);

}  // namespace tessera::quant
