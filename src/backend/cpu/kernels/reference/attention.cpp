// Reference attention tile (attn_kernels.h): one row at a time, in plain loops.
#include <cmath>

#include "backend/cpu/attn_kernels.h"

namespace tessera::cpu::reference {
namespace {

void tile(const AttnTile& t) {
  float* s = t.scratch;  // n scores of the current row
  for (int r = 0; r < t.rows; ++r) {
    float max = -INFINITY;
    for (int64_t c = 0; c < t.n; ++c) {
      const float* k = t.k + size_t(c) * t.k_stride;
      float dot = 0.0f;
      for (int64_t d = 0; d < t.hd; ++d) dot += t.q[r][d] * k[d];
      if (t.softcap > 0.0f) dot = t.softcap * std::tanh(dot / t.softcap);
      s[c] = t.mask ? dot + t.mask[t.mask_off[r] + c] : dot;
      max = std::fmax(max, s[c]);
    }
    float* out = t.out[r];
    for (int64_t d = 0; d < t.vd; ++d) out[d] = 0.0f;
    if (max == -INFINITY) continue;
    float sum = 0.0f;
    for (int64_t c = 0; c < t.n; ++c) {
      const float p = std::exp(s[c] - max);
      sum += p;
      const float* v = t.v + size_t(c) * t.v_stride;
      for (int64_t d = 0; d < t.vd; ++d) out[d] += p * v[d];
    }
    for (int64_t d = 0; d < t.vd; ++d) out[d] /= sum;
  }
}

}  // namespace

const AttnKernels kAttnKernels = {.isa = Isa::Reference, .tile = tile};

}  // namespace tessera::cpu::reference
