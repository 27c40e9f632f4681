// The loop shared by `train` and `finetune`: steps from the trainer's current one to the
// last, with progress, validation, the CSV log and checkpoints.
#pragma once

#include <functional>
#include <string>

#include "tessera/train.h"
#include "train/checkpoint.h"

namespace tessera::train {

struct LoopOptions {
  std::string log_path;         // CSV of the steps; empty: none
  bool fresh_log = true;        // a new log (header first), else appended to (a resumed run)
  std::string checkpoint_path;  // empty: no checkpoints
  int64_t checkpoint_every = 0; // and at the last step
  int64_t stop_at = 0;          // > 0: the last step, before the schedule's end
};

Status run_loop(Trainer& t, const LoopOptions& o, const RunExtras& extras, Backend& backend, TrainProgress p,
                const std::function<void(const TrainProgress&)>& progress);

}  // namespace tessera::train
