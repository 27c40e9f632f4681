// Scale searches of the k-quant reference quantizer (see k_search.h). Every expression
// keeps the reference's operand order: the quantizer is only bit-compatible with files
// of the ecosystem if the float roundings happen in the same places.
#include "quant/k_search.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "quant/quant.h"
#include "quant/strict_fp.h"  // last: applies to everything below

namespace tessera::quant::detail {
namespace {

float weighted_error(float diff, bool use_mad) { return use_mad ? std::fabs(diff) : diff * diff; }

// Weighted error of x ~= scale * L + min.
float fit_error(int n, const float* x, const float* weights, const uint8_t* L, float scale,
                float min, bool use_mad) {
  float err = 0;
  for (int i = 0; i < n; ++i) {
    const float diff = scale * L[i] + min - x[i];
    err += weights[i] * weighted_error(diff, use_mad);
  }
  return err;
}

struct Moments {
  float sum_w = 0;
  float sum_x = 0;
  float min = 0;
  float max = 0;
};

Moments moments(int n, const float* x, const float* weights) {
  Moments m;
  m.min = x[0];
  m.max = x[0];
  m.sum_w = weights[0];
  m.sum_x = m.sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < m.min) m.min = x[i];
    if (x[i] > m.max) m.max = x[i];
    const float w = weights[i];
    m.sum_w += w;
    m.sum_x += w * x[i];
  }
  return m;
}

}  // namespace

int64_t block_count(int64_t n, int qk) {
  TESSERA_CHECK_MSG(n % qk == 0, "row length is not a multiple of the block size");
  return n / qk;
}

float search_scale_min(int n, const float* x, const float* weights, const ScaleMinSearch& opt,
                       uint8_t* L, uint8_t* laux, float* min_out) {
  const Moments mo = moments(n, x, weights);
  const int nmax = opt.nmax;
  float min = std::min(mo.min, 0.0f);
  if (mo.max == min) {
    std::fill(L, L + n, uint8_t(0));
    *min_out = -min;
    return 0.0f;
  }
  float iscale = float(nmax) / (mo.max - min);
  float scale = 1 / iscale;
  for (int i = 0; i < n; ++i)
    L[i] = uint8_t(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
  float best = fit_error(n, x, weights, L, scale, min, opt.use_mad);
  if (opt.nstep < 1) {
    *min_out = -min;
    return scale;
  }
  for (int is = 0; is <= opt.nstep; ++is) {
    iscale = (opt.rmin + opt.rdelta * float(is) + float(nmax)) / (mo.max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      laux[i] = uint8_t(l);
      const float w = weights[i];
      sum_l += w * float(l);
      sum_l2 += w * float(l) * float(l);
      sum_xl += w * float(l) * x[i];
    }
    const float D = mo.sum_w * sum_l2 - sum_l * sum_l;
    if (!(D > 0)) continue;
    float this_scale = (mo.sum_w * sum_xl - mo.sum_x * sum_l) / D;
    float this_min = (sum_l2 * mo.sum_x - sum_l * sum_xl) / D;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    const float err = fit_error(n, x, weights, laux, this_scale, this_min, opt.use_mad);
    if (err < best) {
      std::copy(laux, laux + n, L);
      best = err;
      scale = this_scale;
      min = this_min;
    }
  }
  *min_out = -min;
  return scale;
}

namespace {

// The value of largest magnitude (the first one on ties) and that magnitude.
struct SignedMax {
  float max = 0;
  float amax = 0;
};
SignedMax signed_max(int n, const float* x) {
  SignedMax r;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > r.amax) {
      r.amax = ax;
      r.max = x[i];
    }
  }
  return r;
}

// Weighted sums of x*l and l*l for the quants l = clamp(round(iscale * x)); the weights
// are w, or x^2 when w is null.
struct Sums {
  float lx = 0;
  float l2 = 0;
};
Sums sym_sums(int n, int nmax, const float* x, const float* w, float iscale, int8_t* L) {
  Sums s;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    if (L) L[i] = int8_t(l + nmax);
    const float wi = w ? w[i] : x[i] * x[i];
    s.lx += wi * x[i] * float(l);
    s.l2 += wi * float(l) * float(l);
  }
  return s;
}

}  // namespace

float search_scale_sym(int n, int nmax, const float* x, int8_t* L, const float* w) {
  const SignedMax sm = signed_max(n, x);
  if (sm.amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t(0));
    return 0.0f;
  }
  const Sums first = sym_sums(n, nmax, x, w, float(-nmax) / sm.max, L);
  float scale = first.l2 != 0 ? first.lx / first.l2 : 0.0f;
  float best = scale * first.lx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float iscale = -(float(nmax) + 0.1f * float(is)) / sm.max;
    const Sums s = sym_sums(n, nmax, x, w, iscale, nullptr);
    if (s.l2 > 0 && s.lx * s.lx > best * s.l2) {
      sym_sums(n, nmax, x, w, iscale, L);
      scale = s.lx / s.l2;
      best = scale * s.lx;
    }
  }
  return scale;
}

namespace {

// One pass of the Q3_K refinement: moves each quant to the value that is best for the
// current fit of the others, keeping the move if the fit improves. Returns the moves.
int refine_q3(int n, int nmax, const float* x, int8_t* L, Sums& s) {
  int changed = 0;
  for (int i = 0; i < n; ++i) {
    const float w = x[i] * x[i];
    float slx = s.lx - w * x[i] * float(L[i]);
    if (!(slx > 0)) continue;
    float sl2 = s.l2 - w * float(L[i]) * float(L[i]);
    const int new_l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
    if (new_l == L[i]) continue;
    slx += w * x[i] * float(new_l);
    sl2 += w * float(new_l) * float(new_l);
    if (sl2 > 0 && slx * slx * s.l2 > s.lx * s.lx * sl2) {
      L[i] = int8_t(new_l);
      s.lx = slx;
      s.l2 = sl2;
      ++changed;
    }
  }
  return changed;
}

}  // namespace

float search_scale_q3(int n, int nmax, const float* x, int8_t* L) {
  const SignedMax sm = signed_max(n, x);
  if (sm.amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t(0));
    return 0.0f;
  }
  const float iscale = float(-nmax) / sm.max;
  Sums s = sym_sums(n, nmax, x, nullptr, iscale, L);
  for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] - nmax);  // signed during refinement
  for (int pass = 0; pass < 5; ++pass) {
    if (refine_q3(n, nmax, x, L, s) == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
  return s.l2 > 0 ? s.lx / s.l2 : 0.0f;
}

namespace {

// Weighted squared error of x ~= scale * min(nmax, round(iscale * x)).
float pos_error(int n, int nmax, const float* x, const float* w, float iscale, float scale) {
  float err = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, nearest_int(iscale * x[i]));
    const float diff = x[i] - scale * float(l);
    err += w[i] * diff * diff;
  }
  return err;
}

// One pass of the refinement of search_scale_pos: moves each quant to the value that is
// best for the current fit of the others, keeping the move if the fit improves.
int refine_pos(int n, int nmax, const float* x, const float* w, uint8_t* L, Sums& s) {
  int changed = 0;
  for (int i = 0; i < n; ++i) {
    float slx = s.lx - w[i] * x[i] * float(L[i]);
    float sl2 = s.l2 - w[i] * float(L[i]) * float(L[i]);
    if (!(slx > 0 && sl2 > 0)) continue;
    const int new_l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
    if (new_l == L[i]) continue;
    slx += w[i] * x[i] * float(new_l);
    sl2 += w[i] * float(new_l) * float(new_l);
    if (slx * slx * s.l2 > s.lx * s.lx * sl2) {
      L[i] = uint8_t(new_l);
      s.lx = slx;
      s.l2 = sl2;
      ++changed;
    }
  }
  return changed;
}

}  // namespace

float search_scale_pos(int n, int nmax, const float* x, const float* w, uint8_t* L) {
  float max = 0;
  for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (max == 0) {
    std::fill(L, L + n, uint8_t(0));
    return 0.0f;
  }
  // The first trial is the plain nmax / max, which never needs the clamp.
  float iscale = float(nmax) / max;
  float best = 0;
  {
    const float scale = 1 / iscale;
    for (int i = 0; i < n; ++i) {
      const float diff = x[i] - scale * float(nearest_int(iscale * x[i]));
      best += w[i] * diff * diff;
    }
  }
  for (int is = -4; is <= 4; ++is) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * float(is) + float(nmax)) / max;
    const float err = pos_error(n, nmax, x, w, iscale_is, 1 / iscale_is);
    if (err < best) {
      best = err;
      iscale = iscale_is;
    }
  }
  Sums s;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, nearest_int(iscale * x[i]));
    L[i] = uint8_t(l);
    s.lx += w[i] * x[i] * float(l);
    s.l2 += w[i] * float(l) * float(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    if (refine_pos(n, nmax, x, w, L, s) == 0) break;
  }
  // (Zero weights on every non-zero quant leave no fit: 0 rather than the reference's NaN.)
  return s.l2 > 0 ? s.lx / s.l2 : 0.0f;
}

void get_scale_min_k4(int j, const uint8_t* scales, int* sc, int* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = (scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4);
    *m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

void set_scale_min_k4(int j, int sc, int m, uint8_t* scales) {
  if (j < 4) {
    scales[j] = uint8_t(sc);
    scales[j + 4] = uint8_t(m);
  } else {
    scales[j + 4] = uint8_t((sc & 0x0f) | ((m & 0x0f) << 4));
    scales[j - 4] = uint8_t(scales[j - 4] | ((sc >> 4) << 6));
    scales[j] = uint8_t(scales[j] | ((m >> 4) << 6));
  }
}

int get_scale_q3(int j, const uint8_t* scales) {
  const int low = j < 8 ? scales[j] & 0x0f : scales[j - 8] >> 4;
  const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return low | (high << 4);
}

void set_scale_q3(int j, int sc, uint8_t* scales) {
  if (j < 8) {
    scales[j] = uint8_t(scales[j] | (sc & 0x0f));
  } else {
    scales[j - 8] = uint8_t(scales[j - 8] | ((sc & 0x0f) << 4));
  }
  scales[8 + j % 4] = uint8_t(scales[8 + j % 4] | ((sc >> 4) << (2 * (j / 4))));
}

}  // namespace tessera::quant::detail
