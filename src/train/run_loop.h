// The loop shared by `train` and `finetune`: steps from the trainer's current one to the
// last, with progress, validation, the CSV log and checkpoints, stopping early (with a
// checkpoint) when asked to.
#pragma once

#include <functional>
#include <string>

#include "tessera/train.h"
#include "train/checkpoint.h"

namespace tessera::train {

struct LoopOptions {
  std::string log_path;         // CSV of the steps; empty: none
  bool fresh_log = true;        // a new log (header first), else continued: its rows after
                                // the trainer's step are dropped, then appended to
  std::string checkpoint_path;  // empty: no checkpoints
  int64_t checkpoint_every = 0; // and at the last step
  double checkpoint_minutes = 0;  // > 0: also when this long has passed since the last one
  int64_t stop_at = 0;          // > 0: the last step, before the schedule's end
  const std::atomic<bool>* stop = nullptr;  // true: stop after the step in progress
  RunExtras extras;             // validation, and what checkpoints keep of the run
};

/// The run's configuration from the options of `train` or `finetune` (which name these
/// fields alike), with the window n_ctx.
template <typename Options>
RunConfig run_config(const Options& o, int64_t n_ctx) {
  RunConfig c;
  c.batch = o.batch;
  c.accum = o.accum;
  c.n_ctx = n_ctx;
  c.steps = o.steps;
  c.eval_windows = o.eval_windows;
  c.seed = o.seed;
  c.adam.lr = o.lr;
  c.adam.min_lr_ratio = o.min_lr_ratio;
  c.adam.warmup = o.warmup;
  c.adam.total_steps = o.steps;
  c.adam.weight_decay = o.weight_decay;
  c.adam.grad_clip = o.grad_clip;
  return c;
}

/// Runs the steps; true when *o.stop ended it early (after a checkpoint of the last
/// step done, when the loop has a checkpoint path and ran a step).
Result<bool> run_loop(Trainer& t, const LoopOptions& o, Backend& backend, TrainProgress p,
                      const std::function<void(const TrainProgress&)>& progress);

}  // namespace tessera::train
