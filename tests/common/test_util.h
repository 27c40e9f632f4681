// Helpers shared by the test suites: where ../shared is, and a skip for absent files.
#pragma once

#include <optional>
#include <string>

namespace tessera::test {

/// The reference data folder: $TESSERA_SHARED, or ../shared beside the checkout.
std::string shared_dir();
/// Full path of a file under shared/, or "" when it is absent.
std::string shared_file(const std::string& relative);
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

/// Skips the current test with a message when a shared file is absent.
#define TESSERA_REQUIRE_SHARED(var, relative)                                         \
  const std::string var = ::tessera::test::shared_file(relative);                     \
  if (var.empty()) GTEST_SKIP() << "shared file absent: " << (relative)               \
                                << " (set TESSERA_SHARED to the reference data folder)"
