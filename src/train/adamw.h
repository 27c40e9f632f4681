// AdamW (Loshchilov & Hutter): Adam's moments with decoupled weight decay, global-norm
// gradient clipping, and the learning-rate schedule of most LLM recipes (linear warmup,
// then a cosine decay to a floor).
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::train {

struct AdamWConfig {
  float lr = 1e-3f;            // peak learning rate
  float min_lr_ratio = 0.1f;   // the cosine ends at lr * min_lr_ratio
  int64_t warmup = 100;        // steps of linear warmup from 0
  int64_t total_steps = 1000;  // where the cosine ends
  float beta1 = 0.9f;
  float beta2 = 0.95f;         // 0.95 rather than 0.999: steadier for small-batch LM training
  float eps = 1e-8f;
  float weight_decay = 0.1f;   // applied to the parameters flagged as decaying (matrices)
  float grad_clip = 1.0f;      // maximum global gradient norm; 0: no clipping
};

/// The learning rate of step `step` (0-based).
float learning_rate(const AdamWConfig& c, int64_t step);

/// One parameter's optimizer state.
struct AdamWState {
  std::vector<float> m;  // first moment
  std::vector<float> v;  // second moment
};

/// The global L2 norm of all gradients (accumulated in double, in order).
double global_norm(const std::vector<std::vector<float>>& grads);

/// One AdamW step at `step` (0-based; the bias corrections use step + 1) over every
/// parameter: grads are scaled by min(1, grad_clip / norm) first. `decays[i]` says whether
/// parameter i gets weight decay. Returns the gradient norm before clipping.
double adamw_step(const AdamWConfig& c, int64_t step, std::vector<std::vector<float>>& params,
                  const std::vector<std::vector<float>>& grads, const std::vector<bool>& decays,
                  std::vector<AdamWState>& state);

}  // namespace tessera::train
