// Helpers shared by the test suites: where ../shared is, and a skip for absent files.
//
// Absent reference data skips a test (a checkout without ../shared still builds and tests
// what it can), except with TESSERA_STRICT_DATA=1 (.ci/run sets it: CI always has the
// data): then asking for an absent file or folder is a failure that names it, so a run
// without the data cannot be green.
#pragma once

#include <optional>
#include <string>

namespace tessera::test {

/// The reference data folder: $TESSERA_SHARED, or ../shared beside the checkout.
std::string shared_dir();
/// TESSERA_STRICT_DATA=1: absent reference data fails the test instead of skipping it.
bool strict_data();
/// Full path of a file under shared/, or "" when it is absent (in strict mode, a failure
/// naming the file is recorded too).
std::string shared_file(const std::string& relative);
/// Full path of a folder under shared/, or "" when it is absent (strict mode: a failure).
std::string shared_folder(const std::string& relative);
/// Path of the `tessera` command the tests run: $TESSERA_CLI (to run the tests against
/// another build, e.g. an older one), else the one built beside the tests.
std::string cli_path();

/// Sets an environment variable for the life of the object, then restores its previous
/// value (or its absence).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace tessera::test

/// Skips the current test with a message when a shared file is absent (fails it in strict
/// mode: shared_file has recorded the failure).
#define TESSERA_REQUIRE_SHARED(var, relative)                                         \
  const std::string var = ::tessera::test::shared_file(relative);                     \
  if (var.empty()) GTEST_SKIP() << "shared file absent: " << (relative)               \
                                << " (set TESSERA_SHARED to the reference data folder)"
