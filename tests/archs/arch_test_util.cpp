#include "archs/arch_test_util.h"

namespace tessera::test {

const std::vector<std::string>& arch_names() {
  static const std::vector<std::string> names = {
      "falcon", "baichuan", "starcoder", "refact", "persimmon", "llama3", "gpt2",
      "gptneox", "mpt", "bloom", "qwen2", "phi3", "gemma"};
  return names;
}

std::vector<ArchCase> arch_cases() {
  std::vector<ArchCase> cases;
  for (const std::string& a : arch_names()) {
    for (const char* q : {"", "Q8_0", "Q4_0"}) cases.push_back({a, q});
  }
  return cases;
}

std::string arch_case_name(const ::testing::TestParamInfo<ArchCase>& info) {
  return info.param.quant.empty() ? info.param.arch : info.param.arch + "_" + info.param.quant;
}

}  // namespace tessera::test
