// The search the IQ2 and IQ3 quantizers share (the reference quantizer's, llama.cpp
// quantize_row_iq2_*/iq3_*): a sub-block of 16 or 32 magnitudes is written as grid
// points times one scale, value = scale * (2 level + 1); the signs are stored apart.
#pragma once

#include <cstdint>

#include "quant/iq_grid_search.h"
#include "quant/quant.h"

namespace tessera::quant::detail {

/// Which groups are fitted again at the best trial scale.
enum class Refit {
  kAll,           // every group, always (IQ2_XXS)
  kOffGrid,       // the groups off the grid at that scale (IQ2_XS, IQ2_S, IQ3_XXS)
  kAllIfOffGrid,  // every group, if any was off the grid (IQ3_S)
};

/// A format's choices for fit_grid.
struct GridFit {
  IqGridKind grid;
  int n;            // values in the sub-block: 16 or 32
  int max_level;    // highest level: 2 (IQ2) or 7 (IQ3)
  int first_trial;  // trial t runs first_trial..last_trial
  int last_trial;
  float trial_step;
  Refit refit;
};

/// Fits xval (n magnitudes; the sign-parity formats may leave one negative per 8) onto the
/// grid. Trial t rounds every group of the grid's dims values to levels at the inverse
/// scale (2 max_level + 1 + t trial_step) / reference, takes the best neighbour (weights
/// waux) of a combination that is not a grid point, and keeps the trial whose
/// least-squares scale explains the most of sum weight * xval^2; the groups are then fitted
/// again at that scale (per `refit`) and the scale recomputed. start_scale is kept where no
/// trial gives a positive fit (degenerate sub-blocks). Writes each group's grid index;
/// returns the scale.
float fit_grid(const GridFit& fit, const float* xval, const float* weight, const float* waux,
               float reference, float start_scale, uint16_t* index);

/// Splits 8 values into magnitudes (xval) and sign bits (bit i set: x[i] < 0).
uint8_t split_signs(const float* x, float* xval);

/// As split_signs for the formats that store 7 sign bits and imply the eighth from an even
/// count of negatives: when the count is odd, the value with the smallest w x^2 keeps the
/// wrong sign (its xval is negated and its bit flipped, so the fit sees what is stored).
/// Returns the 7 stored bits.
uint8_t split_signs_even(const float* x, const float* w, float* xval);

/// The 4-bit (or max_level-bit) code of a sub-block scale against the super-block scale
/// d = 1 / id, where a code l stands for d (2 l + 1).
inline int scale_code(float id, float scale, int max_code) {
  const int l = nearest_int(0.5f * (id * scale - 1));
  return l < 0 ? 0 : l > max_code ? max_code : l;
}

/// Sum of squares of the QK_K values of a super-block, in order.
float sum_squares(const float* x, int n);

}  // namespace tessera::quant::detail
