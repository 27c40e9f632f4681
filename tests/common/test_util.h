// Helpers shared by the test suites: where ../shared is, and a skip for absent files.
#pragma once

#include <string>

namespace tessera::test {

/// The reference data folder: $TESSERA_SHARED, or ../shared beside the checkout.
std::string shared_dir();
/// Full path of a file under shared/, or "" when it is absent.
std::string shared_file(const std::string& relative);
/// Path of the built `tessera` command.
std::string cli_path();

}  // namespace tessera::test

/// Skips the current test with a message when a shared file is absent.
#define TESSERA_REQUIRE_SHARED(var, relative)                                         \
  const std::string var = ::tessera::test::shared_file(relative);                     \
  if (var.empty()) GTEST_SKIP() << "shared file absent: " << (relative)               \
                                << " (set TESSERA_SHARED to the reference data folder)"
