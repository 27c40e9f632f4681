// The checks of `train` and `finetune` that run before any work (tessera/train.h:
// check_train_options, check_finetune_options), and what they share with the runs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/gguf.h"
#include "tessera/status.h"

namespace tessera::train {

/// That `path` (given as `flag`) can be written: its directory exists, it is not a
/// directory, and a file can be created beside it (path + ".tmp", removed again).
Status check_writable(const std::string& path, const std::string& flag);

/// The hash of a training text that checkpoints keep (FNV-1a, 64 bits).
uint64_t text_hash(std::string_view text);

/// Writes `w` to path + ".tmp" and renames it over `path`: a reader (or an interrupted
/// write) sees the old file or the new one, never a partial one.
Status write_atomically(const gguf::Writer& w, const std::string& path);

}  // namespace tessera::train
