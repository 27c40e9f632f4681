#include "common/test_util.h"

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

namespace tessera::test {

std::string shared_dir() {
  if (const char* env = std::getenv("TESSERA_SHARED"); env && *env) return env;
  return TESSERA_SHARED_DEFAULT;
}

bool strict_data() {
  const char* env = std::getenv("TESSERA_STRICT_DATA");
  return env != nullptr && std::string(env) == "1";
}

namespace {
// Records a failure for absent reference data in strict mode (outside a test too, e.g. in
// SetUpTestSuite: gtest then fails the suite).
std::string absent(const std::filesystem::path& p) {
  if (strict_data()) ADD_FAILURE() << "reference data absent: " << p.string() << " (TESSERA_STRICT_DATA=1)";
  return std::string();
}
}  // namespace

std::string shared_file(const std::string& relative) {
  const std::filesystem::path p = std::filesystem::path(shared_dir()) / relative;
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) ? p.string() : absent(p);
}

std::string shared_folder(const std::string& relative) {
  const std::filesystem::path p = std::filesystem::path(shared_dir()) / relative;
  std::error_code ec;
  return std::filesystem::is_directory(p, ec) ? p.string() : absent(p);
}

std::string cli_path() {
  if (const char* env = std::getenv("TESSERA_CLI"); env && *env) return env;
  return TESSERA_CLI_PATH;
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  ::setenv(name, value, 1);
}

ScopedEnv::~ScopedEnv() {
  if (old_) {
    ::setenv(name_.c_str(), old_->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

}  // namespace tessera::test
