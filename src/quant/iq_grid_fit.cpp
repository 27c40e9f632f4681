// The shared IQ2/IQ3 sub-block search (iq_grid_fit.h). The float operations follow the
// reference quantizer's order, so that the blocks come out identical to its files.
#include "quant/iq_grid_fit.h"

#include <algorithm>

#include "quant/strict_fp.h"  // last: applies to everything below

namespace tessera::quant::detail {
namespace {

constexpr int kMaxSub = 32;  // largest sub-block
constexpr int kMaxGroups = kMaxSub / 4;

// Weighted sums of the fit of xval by (2 L + 1).
void fit_sums(int n, const float* xval, const float* weight, const int8_t* L, float* sumqx,
              float* sumq2) {
  float qx = 0, q2 = 0;
  for (int i = 0; i < n; ++i) {
    const float w = weight[i];
    const float q = float(2 * L[i] + 1);
    qx += w * xval[i] * q;
    q2 += w * q * q;
  }
  *sumqx = qx;
  *sumq2 = q2;
}

}  // namespace

float fit_grid(const GridFit& fit, const float* xval, const float* weight, const float* waux,
               float reference, float start_scale, uint16_t* index) {
  const IqGrid& grid = iq_grid(fit.grid);
  const int dims = grid.dims();
  const int groups = fit.n / dims;
  float value[8];  // what a level stands for in the search
  for (int l = 0; l < 8; ++l) value[l] = float(2 * l + 1);

  // Rounds group g at inverse scale id into Lg, moving it to its best neighbour when that
  // is not a grid point; returns whether it was one.
  const auto round_group = [&](int g, float id, float scale, int8_t* Lg) {
    const float* xg = xval + g * dims;
    for (int i = 0; i < dims; ++i) {
      Lg[i] = int8_t(std::clamp(nearest_int(0.5f * (id * xg[i] - 1)), 0, fit.max_level));
    }
    const int key = grid.key(Lg);
    if (grid.index_of(key) >= 0) return true;
    grid.best_neighbour(key, xg, waux + g * dims, scale, value, Lg);
    return false;
  };

  int8_t L[kMaxSub] = {};
  int8_t trial[kMaxSub];
  bool on_grid[kMaxGroups] = {};  // of L; none until a trial is kept
  bool trial_on_grid[kMaxGroups];
  float scale = start_scale;
  float best = 0;
  const float center = float(2 * fit.max_level + 1);
  for (int t = fit.first_trial; t <= fit.last_trial; ++t) {
    const float id = (center + float(t) * fit.trial_step) / reference;
    const float trial_scale = 1 / id;
    for (int g = 0; g < groups; ++g) {
      trial_on_grid[g] = round_group(g, id, trial_scale, trial + g * dims);
    }
    float sumqx, sumq2;
    fit_sums(fit.n, xval, weight, trial, &sumqx, &sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      scale = sumqx / sumq2;
      best = scale * sumqx;
      std::copy(trial, trial + fit.n, L);
      std::copy(trial_on_grid, trial_on_grid + groups, on_grid);
    }
  }

  const bool any_off = !std::all_of(on_grid, on_grid + groups, [](bool b) { return b; });
  if (scale > 0 && (fit.refit == Refit::kAll || any_off)) {
    const float id = 1 / scale;
    for (int g = 0; g < groups; ++g) {
      if (fit.refit == Refit::kOffGrid && on_grid[g]) continue;
      round_group(g, id, scale, L + g * dims);
    }
    float sumqx, sumq2;
    fit_sums(fit.n, xval, weight, L, &sumqx, &sumq2);
    if (sumq2 > 0) scale = sumqx / sumq2;
  }

  for (int g = 0; g < groups; ++g) {
    const int key = grid.key(L + g * dims);
    int j = grid.index_of(key);
    // Off the grid only when no trial was kept and no refit ran (a degenerate
    // sub-block): its nearest point, so that what is stored is always a grid point.
    if (j < 0) {
      j = grid.best_neighbour(key, xval + g * dims, waux + g * dims, scale, value, L + g * dims);
    }
    index[g] = uint16_t(j);
  }
  return scale;
}

uint8_t split_signs(const float* x, float* xval) {
  uint8_t s = 0;
  for (int i = 0; i < 8; ++i) {
    if (x[i] >= 0) {
      xval[i] = x[i];
    } else {
      xval[i] = -x[i];
      s |= uint8_t(1 << i);
    }
  }
  return s;
}

uint8_t split_signs_even(const float* x, const float* w, float* xval) {
  uint8_t s = split_signs(x, xval);
  if (__builtin_popcount(s) % 2 != 0) {
    int imin = 0;
    float min = w[0] * x[0] * x[0];
    for (int i = 1; i < 8; ++i) {
      const float a = w[i] * x[i] * x[i];
      if (a < min) {
        min = a;
        imin = i;
      }
    }
    xval[imin] = -xval[imin];
    s ^= uint8_t(1 << imin);
  }
  return s & 127;
}

float sum_squares(const float* x, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i) s += x[i] * x[i];
  return s;
}

}  // namespace tessera::quant::detail
