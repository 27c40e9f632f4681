// The training loop's state and its steps: sampling windows, forward + backward over
// the micro-batches of a step, AdamW, validation. Internal; tessera/train.h drives it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"
#include "train/adamw.h"
#include "train/train_graph.h"

namespace tessera::train {

struct RunConfig {
  int64_t batch = 8;
  int64_t accum = 1;
  int64_t n_ctx = 256;
  int64_t steps = 1000;
  AdamWConfig adam;
  int64_t eval_windows = 32;
  uint64_t seed = 1;
};

/// The held-out split of a token stream: the last `val_fraction` (at least one window's
/// worth when there is room) is for validation.
struct TokenSplit {
  std::vector<int32_t> train;
  std::vector<int32_t> val;
};
TokenSplit split_tokens(const std::vector<int32_t>& tokens, double val_fraction, int64_t n_ctx);

/// The whole training text; errors name the file (absent, unreadable, empty).
Result<std::string> read_training_text(const std::string& path);

class Trainer {
 public:
  /// Over `m` (whose parameters it updates), with `bos` starting every window.
  Trainer(TrainModel& m, const RunConfig& c, Backend& backend, TokenSplit data, int32_t bos);

  /// Builds the training and validation graphs.
  Status init();

  struct StepResult {
    double loss = 0;
    double grad_norm = 0;
    float lr = 0;
  };
  /// One optimizer step (accum micro-batches); advances step().
  Result<StepResult> run_step();
  /// The mean loss over the validation windows (negative when there are none).
  Result<double> evaluate();

  int64_t step() const { return step_; }
  int64_t tokens_per_step() const { return c_.batch * c_.accum * c_.n_ctx; }
  const RunConfig& config() const { return c_; }
  TrainModel& model() { return m_; }

  // The state a checkpoint keeps.
  Rng& rng() { return rng_; }
  std::vector<AdamWState>& optimizer() { return opt_; }
  void set_step(int64_t s) { step_ = s; }

 private:
  void sample_window(int32_t* tokens, int32_t* targets);
  void add_gradients(bool first);

  TrainModel& m_;
  RunConfig c_;
  Backend& backend_;
  TokenSplit data_;
  int32_t bos_;
  Rng rng_;
  int64_t step_ = 0;
  std::unique_ptr<TrainGraph> train_;
  std::unique_ptr<TrainGraph> eval_;
  std::vector<std::vector<float>> params_;  // master copies, updated by AdamW
  std::vector<std::vector<float>> grads_;   // the step's gradient, summed over micro-batches
  std::vector<bool> decays_;
  std::vector<AdamWState> opt_;
};

}  // namespace tessera::train
