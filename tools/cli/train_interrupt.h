// What `train` and `finetune` share around a run: SIGINT/SIGTERM ask the run to stop
// (tessera/train.h: the step in progress finishes and the work is saved) instead of
// killing it, usage errors exit 2, and commands are printed for a shell to run again.
#pragma once

#include <atomic>
#include <string>

namespace tessera::cli {

/// Exit status of a run stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report).
inline constexpr int kInterruptedExit = 130;

/// Installs handlers of SIGINT and SIGTERM that set the returned flag. A second signal
/// while the work is saved says so on stderr and is otherwise ignored, so that the save
/// completes (files are written to a temporary name and renamed in any case).
const std::atomic<bool>& install_stop_handlers();

/// Prints "tessera: <message>" to stderr and returns 2, the exit status of usage errors
/// (a flag's value, a path that cannot be written).
int usage_error(const std::string& message);

/// `s` quoted for a POSIX shell when it needs to be.
std::string shell_quote(const std::string& s);

}  // namespace tessera::cli
