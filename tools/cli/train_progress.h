// The progress lines of `train` and `finetune`: the phases, then one line per step on a
// terminal (rewritten in place) or every print_every steps otherwise, and every
// validation on a line of its own.
#pragma once

#include <cstdint>

#include "tessera/train.h"

namespace tessera::cli {

void print_train_progress(const char* tool, const TrainProgress& p, int64_t print_every, bool tty);

}  // namespace tessera::cli
