// Whether the backward pass can train a model of some architecture: its forward graph,
// walked before any work, must have a gradient rule for every op on the path from the
// parameters being trained to the loss.
#pragma once

#include <string>

#include "tessera/status.h"
#include "train/train_model.h"

namespace tessera::train {

/// Builds the forward graph of a two-token batch with m's architecture's own builder
/// (computing nothing) and refuses the first op on the path from m.params to the loss
/// that has no gradient rule: "<command>: architecture 'bloom' uses op norm, which has no
/// gradient rule yet".
Status check_differentiable(const TrainModel& m, const std::string& command);

}  // namespace tessera::train
