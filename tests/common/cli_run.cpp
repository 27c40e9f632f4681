#include "common/cli_run.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>

#include "common/test_util.h"

namespace tessera::test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::string write_temp_file(const std::string& stem, const std::string& text) {
  // ctest runs tests in parallel processes: names carry the pid and a counter.
  static int files = 0;
  const std::string path = ::testing::TempDir() + "tessera_" + stem + "." +
                           std::to_string(getpid()) + "." + std::to_string(files++);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

CliOutput run_tessera(const std::string& args, const std::string& input) {
  return run_shell(cli_path() + " " + args, input);
}

CliOutput run_shell(const std::string& command, const std::string& input) {
  const std::string in_file = write_temp_file("stdin", input);
  const std::string err_file = write_temp_file("stderr", "");
  const std::string cmd = command + " <" + in_file + " 2>" + err_file;
  CliOutput o;
  FILE* p = popen(cmd.c_str(), "r");
  if (p) {
    std::array<char, 4096> buf{};
    size_t n = 0;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.out.append(buf.data(), n);
    const int raw = pclose(p);
    o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  }
  o.err = slurp(err_file);
  std::remove(in_file.c_str());
  std::remove(err_file.c_str());
  return o;
}

}  // namespace tessera::test
