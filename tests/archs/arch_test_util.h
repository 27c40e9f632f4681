// The architectures' test files: one case per model file and type, from ../shared/archs
// (the first set) and ../shared/archs2 (the second: mixture-of-experts, Gemma 2, ...).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace tessera::test {

struct ArchCase {
  std::string set;    // the folder of ../shared: "archs" or "archs2"
  std::string arch;   // file stem: "falcon", "llama3", "mixtral", ...
  std::string quant;  // "" (the F16/F32 file), "Q8_0" or "Q4_0"

  std::string stem() const { return quant.empty() ? arch : arch + "-" + quant; }
  std::string model() const { return stem() + ".gguf"; }
  std::string golden() const { return stem() + ".hello.json"; }
  /// Paths relative to ../shared.
  std::string model_path() const { return set + "/models/" + model(); }
  std::string golden_path() const { return set + "/golden/" + golden(); }
  /// This case's F16 file.
  ArchCase f16() const { return {set, arch, ""}; }
  /// The README's bounds: 1e-5 for F16/F32 files, 1e-3 for quantized ones.
  double max_nmse() const { return quant.empty() ? 1e-5 : 1e-3; }
  /// The context the reference made the goldens with: archs2/README.md gives n_ctx 1024
  /// (Phi-3 LongRoPE chooses its factors by it); the first set's goldens need only their
  /// prompt and steps. 0: as many cells as the golden's tokens.
  int64_t golden_n_ctx() const { return set == "archs2" ? 1024 : 0; }
};

/// How gtest prints a case: its file stem.
inline void PrintTo(const ArchCase& c, std::ostream* os) { *os << c.set << "/" << c.stem(); }

/// The F16 file of every decoder architecture under test.
std::vector<ArchCase> arch_f16_cases();
/// Every (architecture, type) case of the decoders.
std::vector<ArchCase> arch_cases();
/// The encoders (F16 files with embedding goldens: arch_embedding_test.cpp).
std::vector<ArchCase> arch_embedding_cases();
/// The golden files of ../shared/archs2 that no test reads yet, each with the reason (a
/// feature not built); EveryFileIsInTheTable fails on any other untested file.
const std::vector<std::string>& archs2_pending();
/// A test name for a case: "falcon_Q8_0".
std::string arch_case_name(const ::testing::TestParamInfo<ArchCase>& info);

}  // namespace tessera::test
