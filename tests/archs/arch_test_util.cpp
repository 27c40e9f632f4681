#include "archs/arch_test_util.h"

namespace tessera::test {
namespace {

struct ArchSet {
  const char* set;
  std::vector<std::string> names;
};

const std::vector<ArchSet>& arch_sets() {
  static const std::vector<ArchSet> sets = {
      {"archs",
       {"falcon", "baichuan", "starcoder", "refact", "persimmon", "llama3", "gpt2", "gptneox", "mpt", "bloom",
        "qwen2", "phi3", "gemma"}},
      {"archs2", {"phi3lr", "gemma2", "granite", "command-r", "mixtral", "qwen2moe", "olmoe", "olmo2", "starcoder2",
                  "deepseek2"}},
  };
  return sets;
}

}  // namespace

std::vector<ArchCase> arch_f16_cases() {
  std::vector<ArchCase> cases;
  for (const ArchSet& s : arch_sets()) {
    for (const std::string& a : s.names) cases.push_back({s.set, a, ""});
  }
  return cases;
}

std::vector<ArchCase> arch_cases() {
  std::vector<ArchCase> cases;
  for (const ArchCase& c : arch_f16_cases()) {
    for (const char* q : {"", "Q8_0", "Q4_0"}) cases.push_back({c.set, c.arch, q});
  }
  return cases;
}

std::vector<ArchCase> arch_embedding_cases() { return {{"archs2", "bert", ""}, {"archs2", "nomic-bert", ""}}; }

const std::vector<std::string>& archs2_pending() {
  static const std::vector<std::string> pending = {};
  return pending;
}

std::string arch_case_name(const ::testing::TestParamInfo<ArchCase>& info) {
  std::string name = info.param.quant.empty() ? info.param.arch : info.param.arch + "_" + info.param.quant;
  for (char& ch : name) {
    if (ch == '-') ch = '_';  // gtest names: letters, digits, underscores
  }
  return name;
}

}  // namespace tessera::test
