// Running the built `tessera` command from a test: arguments, optional stdin text, and
// both output streams captured.
#pragma once

#include <string>

namespace tessera::test {

struct CliOutput {
  int status = -1;  // exit status, -1 when it did not exit normally
  std::string out;  // stdout
  std::string err;  // stderr
};

/// Runs `tessera <args>` (args shell-quoted by the caller) with `input` on stdin.
CliOutput run_tessera(const std::string& args, const std::string& input = "");

/// Runs a shell command line (the caller quotes it) with `input` on stdin.
CliOutput run_shell(const std::string& command, const std::string& input = "");

/// Writes `text` to a fresh file under the test temp folder and returns its path.
std::string write_temp_file(const std::string& stem, const std::string& text);

}  // namespace tessera::test
