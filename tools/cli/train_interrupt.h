// What `train` and `finetune` share around a run: SIGINT/SIGTERM ask the run to stop
// (tessera/train.h: the step in progress finishes and the work is saved) instead of
// killing it, usage errors exit 2, and commands are printed for a shell to run again.
#pragma once

#include <atomic>
#include <string>

#include "commands.h"

namespace tessera::cli {

/// Installs handlers of SIGINT and SIGTERM that set the returned flag. A second signal
/// while the work is saved says so on stderr and is otherwise ignored, so that the save
/// completes (files are written to a temporary name and renamed in any case).
const std::atomic<bool>& install_stop_handlers();

/// `s` quoted for a POSIX shell when it needs to be.
std::string shell_quote(const std::string& s);

}  // namespace tessera::cli
