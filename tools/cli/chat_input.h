// The lines of `tessera chat`: from a terminal with line editing and history (libedit),
// or plainly from a pipe; either way a Ctrl-C interrupts the wait for a line.
#pragma once

#include <memory>
#include <string>

namespace tessera::cli {

/// Counts Ctrl-C presses from now on (SIGINT, without SA_RESTART so that it interrupts a
/// read waiting at the prompt).
void install_sigint_counter();
/// Ctrl-C presses counted so far.
int sigint_count();

enum class Input { Line, End, Interrupted };

/// Where the chat's lines come from.
class LineInput {
 public:
  virtual ~LineInput() = default;
  /// The next line (without its newline); Interrupted when a Ctrl-C after the first
  /// `seen` ones came first; End at the end of the input (Ctrl-D on a terminal).
  virtual Input next(std::string& line, int seen) = 0;
  /// Adds a line to the history that Up and Down walk through (on a terminal).
  virtual void remember(const std::string& line) = 0;
};

/// On a terminal: libedit (emacs keys, ~/.editrc, history), the prompt "> " and the
/// line being edited on stderr (on stdout when only stdout is the terminal). Otherwise:
/// stdin's lines as they come.
std::unique_ptr<LineInput> open_line_input(bool terminal);

}  // namespace tessera::cli
