// Importance-weighted quantizers of the 32-element formats Q4_0, Q4_1, Q5_0, Q5_1 (the
// reference quantizer's algorithm when it is given an importance matrix). Each element's
// squared error counts with weight importance[i] * sqrt(sigma2 + x[i]^2), where sigma2 is
// the mean square of the whole row: the importance says which columns matter, the second
// factor keeps large weights accurate. Then
//  - Q4_0 / Q5_0: the symmetric search of k_search.h (nmax 8 / 16, 19 trial scales, each
//    refitted by weighted least squares);
//  - Q4_1 / Q5_1: the scale-and-min search (nmax 15 / 31, 37 trials from nmax - 0.9 in
//    steps of 0.05, squared errors).
// Q8_0 has no weighted search (the reference ignores the importance for it).
#include <cmath>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/k_pack.h"
#include "quant/k_search.h"
#include "quant/quant.h"
#include "quant/strict_fp.h"  // last: applies to everything below

namespace tessera::quant {
namespace {

using detail::block_count;

constexpr int kQK = 32;

float row_sigma2(const float* x, int64_t n) {
  float sum_x2 = 0;
  for (int64_t j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
  return sum_x2 / float(n);
}

void block_weights(const float* xb, const float* qw, float sigma2, float* w) {
  for (int j = 0; j < kQK; ++j) w[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
}

// The symmetric formats: d and the quants (0..2 nmax - 1) of each block.
template <typename Block, int kNmax, typename Pack>
void quantize_sym(const float* x, void* y, int64_t n, const float* importance, Pack pack) {
  auto* out = static_cast<Block*>(y);
  const float sigma2 = row_sigma2(x, n);
  const int64_t nb = block_count(n, kQK);
  for (int64_t ib = 0; ib < nb; ++ib) {
    float w[kQK];
    int8_t L[kQK];
    block_weights(x + kQK * ib, importance + kQK * ib, sigma2, w);
    out[ib].d = f32_to_f16(detail::search_scale_sym(kQK, kNmax, x + kQK * ib, L, w));
    pack(L, out[ib]);
  }
}

// The formats with a minimum: d, m and the quants (0..nmax) of each block.
template <typename Block, int kNmax, typename Pack>
void quantize_min(const float* x, void* y, int64_t n, const float* importance, Pack pack) {
  auto* out = static_cast<Block*>(y);
  const float sigma2 = row_sigma2(x, n);
  const int64_t nb = block_count(n, kQK);
  const detail::ScaleMinSearch opt{kNmax, -0.9f, 0.05f, 36, false};
  for (int64_t ib = 0; ib < nb; ++ib) {
    float w[kQK];
    uint8_t L[kQK];
    uint8_t laux[kQK];
    float min = 0;
    block_weights(x + kQK * ib, importance + kQK * ib, sigma2, w);
    const float d = detail::search_scale_min(kQK, x + kQK * ib, w, opt, L, laux, &min);
    out[ib].d = f32_to_f16(d);
    out[ib].m = f32_to_f16(-min);
    pack(L, out[ib]);
  }
}

}  // namespace

void quantize_q4_0_weighted(const float* x, void* y, int64_t n, const float* importance) {
  quantize_sym<BlockQ4_0, 8>(x, y, n, importance,
                             [](const int8_t* L, BlockQ4_0& b) { detail::pack4(L, b.qs); });
}

void quantize_q5_0_weighted(const float* x, void* y, int64_t n, const float* importance) {
  quantize_sym<BlockQ5_0, 16>(x, y, n, importance,
                              [](const int8_t* L, BlockQ5_0& b) { detail::pack5(L, b.qs, b.qh); });
}

void quantize_q4_1_weighted(const float* x, void* y, int64_t n, const float* importance) {
  quantize_min<BlockQ4_1, 15>(x, y, n, importance,
                              [](const uint8_t* L, BlockQ4_1& b) { detail::pack4(L, b.qs); });
}

void quantize_q5_1_weighted(const float* x, void* y, int64_t n, const float* importance) {
  quantize_min<BlockQ5_1, 31>(x, y, n, importance,
                              [](const uint8_t* L, BlockQ5_1& b) { detail::pack5(L, b.qs, b.qh); });
}

}  // namespace tessera::quant
