#include "train/adamw.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace tessera::train {

float learning_rate(const AdamWConfig& c, int64_t step) {
  if (c.warmup > 0 && step < c.warmup) return c.lr * float(step + 1) / float(c.warmup);
  const int64_t span = std::max<int64_t>(1, c.total_steps - c.warmup);
  const double t = std::clamp(double(step - c.warmup) / double(span), 0.0, 1.0);
  const double floor = double(c.lr) * double(c.min_lr_ratio);
  return float(floor + (double(c.lr) - floor) * 0.5 * (1.0 + std::cos(M_PI * t)));
}

double global_norm(const std::vector<std::vector<float>>& grads) {
  double sum = 0;
  for (const std::vector<float>& g : grads) {
    for (float x : g) sum += double(x) * double(x);
  }
  return std::sqrt(sum);
}

double adamw_step(const AdamWConfig& c, int64_t step, std::vector<std::vector<float>>& params,
                  const std::vector<std::vector<float>>& grads, const std::vector<bool>& decays,
                  std::vector<AdamWState>& state) {
  TESSERA_CHECK(params.size() == grads.size() && params.size() == decays.size() && params.size() == state.size());
  const double norm = global_norm(grads);
  const float clip = c.grad_clip > 0 && norm > c.grad_clip ? float(c.grad_clip / norm) : 1.0f;
  const float lr = learning_rate(c, step);
  const float bc1 = 1.0f - std::pow(c.beta1, float(step + 1));
  const float bc2 = 1.0f - std::pow(c.beta2, float(step + 1));
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<float>& p = params[i];
    const std::vector<float>& g = grads[i];
    AdamWState& s = state[i];
    if (s.m.empty()) s.m.assign(p.size(), 0.0f), s.v.assign(p.size(), 0.0f);
    TESSERA_CHECK(g.size() == p.size() && s.m.size() == p.size() && s.v.size() == p.size());
    const float wd = decays[i] ? c.weight_decay : 0.0f;
    for (size_t j = 0; j < p.size(); ++j) {
      const float gj = g[j] * clip;
      s.m[j] = c.beta1 * s.m[j] + (1.0f - c.beta1) * gj;
      s.v[j] = c.beta2 * s.v[j] + (1.0f - c.beta2) * gj * gj;
      const float mhat = s.m[j] / bc1;
      const float vhat = s.v[j] / bc2;
      p[j] -= lr * (mhat / (std::sqrt(vhat) + c.eps) + wd * p[j]);
    }
  }
  return norm;
}

}  // namespace tessera::train
