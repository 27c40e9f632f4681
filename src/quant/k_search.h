// Helpers shared by the k-quant reference quantizers: the per-sub-block scale searches
// of the reference quantizer (whose float operations are kept in its order, so that the
// resulting blocks are bit-identical) and the packing of 6-bit scales.
#pragma once

#include <cstdint>

namespace tessera::quant::detail {

/// Smallest |x| for which a group is treated as non-zero.
inline constexpr float kGroupMaxEps = 1e-15f;

/// Number of blocks of qk elements in n (n must be a multiple of qk).
int64_t block_count(int64_t n, int qk);

/// Options of the asymmetric search (scale and minimum).
struct ScaleMinSearch {
  int nmax;      // quants are 0..nmax
  float rmin;    // first trial: (nmax + rmin) / (max - min)
  float rdelta;  // trial step
  int nstep;     // trials rmin, rmin + rdelta, ..., rmin + nstep * rdelta
  bool use_mad;  // weigh absolute errors (true) or squared errors (false)
};

/// Finds scale and min so that x[i] ~= scale * L[i] - min with L[i] in 0..nmax,
/// minimizing the weighted error over a few trial scales, each refined by weighted
/// least squares. Returns the scale and writes the (non-negative) min to *min_out.
/// L and laux hold n entries.
float search_scale_min(int n, const float* x, const float* weights, const ScaleMinSearch& opt,
                       uint8_t* L, uint8_t* laux, float* min_out);

/// Symmetric search (Q6_K, and the weighted Q3_K/Q4_0/Q5_0): x[i] ~= scale * (L[i] - nmax),
/// L[i] in 0..2*nmax-1, weights `w` (x[i]^2 when null), trial scales (nmax + 0.1 k) / max
/// for k in -9..9, each refitted by weighted least squares. Returns the scale.
float search_scale_sym(int n, int nmax, const float* x, int8_t* L, const float* w = nullptr);

/// Search for non-negative values (the sub-block scales and mins of the weighted Q2_K,
/// Q4_K, Q5_K): x[i] ~= scale * L[i], L[i] in 0..nmax, weights w; trial scales
/// (nmax + 0.1 k) / max for k in -4..4, then up to 5 passes that move single quants while
/// the weighted fit improves. Returns the scale (0 when every x is 0).
float search_scale_pos(int n, int nmax, const float* x, const float* w, uint8_t* L);

/// Symmetric search (Q3_K): starts from nmax / max and moves single quants while that
/// lowers the x^2-weighted error (up to 5 passes). L[i] in 0..2*nmax-1 (offset nmax).
float search_scale_q3(int n, int nmax, const float* x, int8_t* L);

/// 6-bit scale and min of sub-block j (0..7) in the 12-byte Q4_K/Q5_K scales.
void get_scale_min_k4(int j, const uint8_t* scales, int* sc, int* m);
/// Stores 6-bit sc and m of sub-block j; scales must start zeroed.
void set_scale_min_k4(int j, int sc, int m, uint8_t* scales);

/// 6-bit scale j (0..15) of Q3_K, without its offset of 32.
int get_scale_q3(int j, const uint8_t* scales);
/// Stores 6-bit scale j of Q3_K; scales must start zeroed.
void set_scale_q3(int j, int sc, uint8_t* scales);

}  // namespace tessera::quant::detail
