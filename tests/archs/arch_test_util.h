// The architectures' test files (../shared/archs): one case per model file and type.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace tessera::test {

struct ArchCase {
  std::string arch;   // file stem: "falcon", "llama3", ...
  std::string quant;  // "" (the F16/F32 file), "Q8_0" or "Q4_0"

  std::string stem() const { return quant.empty() ? arch : arch + "-" + quant; }
  std::string model() const { return stem() + ".gguf"; }
  std::string golden() const { return stem() + ".hello.json"; }
  /// The README's bounds: 1e-5 for F16/F32 files, 1e-3 for quantized ones.
  double max_nmse() const { return quant.empty() ? 1e-5 : 1e-3; }
};

/// How gtest prints a case: its file stem.
inline void PrintTo(const ArchCase& c, std::ostream* os) { *os << c.stem(); }

/// The architectures under test, each with its three files.
const std::vector<std::string>& arch_names();
/// Every (architecture, type) case.
std::vector<ArchCase> arch_cases();
/// A test name for a case: "falcon_Q8_0".
std::string arch_case_name(const ::testing::TestParamInfo<ArchCase>& info);

}  // namespace tessera::test
