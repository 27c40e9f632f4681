// Training checkpoints as GGUF files: the model (its keys and F32 weights, so that
// `tessera inspect` reads one), AdamW's moments as tensors optimizer.m.<name> and
// optimizer.v.<name>, and under training.* the step, the random generator's state and the
// run's configuration. Written to a temporary file and renamed, so that an interrupted
// write never destroys the previous checkpoint.
#pragma once

#include <string>

#include "tessera/gguf.h"
#include "train/trainer.h"

namespace tessera::train {

/// Keys of the run that are not the trainer's (written and read back verbatim).
struct RunExtras {
  int64_t eval_every = 0;
  double val_fraction = 0;
  uint64_t text_hash = 0;  // train::text_hash of the training text; 0: unknown (older files)
  std::string text_path;   // the -f it was trained on, for messages
};

Status write_checkpoint(const std::string& path, Trainer& t, Backend& backend, const RunExtras& extras);

/// The run configuration and extras a checkpoint was written with.
Result<RunConfig> read_run_config(const gguf::File& f, RunExtras* extras);

/// Restores the trainer's step, generator and optimizer state (after Trainer::init, over
/// the model loaded from the same file).
Status restore_checkpoint(const gguf::File& f, Trainer& t);

}  // namespace tessera::train
