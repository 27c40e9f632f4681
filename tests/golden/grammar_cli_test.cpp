// `tessera run` with grammars and sampler flags on stories260K: JSON outputs parse,
// arithmetic outputs have the grammar's shape, generation stops when the grammar is
// complete, and bad grammars or flags give one error line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "common/cli_run.h"
#include "common/test_util.h"
#include "tessera/grammar.h"

namespace tessera {
namespace {

constexpr const char* kModel = "models/stories260K.gguf";
constexpr const char* kPrompt = "Once";

using Output = test::CliOutput;

std::string temp_path(const std::string& name) {
  static int calls = 0;
  return ::testing::TempDir() + "tessera_grammar_" + std::to_string(getpid()) + "_" +
         std::to_string(calls++) + "_" + name;
}

Output run_cli(const std::string& args) { return test::run_tessera(args); }

/// The generated text: stdout without the echoed prompt and the final newline.
std::string generated_text(const Output& o) {
  std::string text = o.out;
  EXPECT_EQ(text.rfind(kPrompt, 0), 0u) << text;
  text.erase(0, std::string(kPrompt).size());
  EXPECT_FALSE(text.empty());
  if (!text.empty()) text.pop_back();  // the newline `run` prints at the end
  return text;
}

/// The count in "generated N tokens" on stderr.
int generated_count(const Output& o) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(o.err, m, std::regex("generated ([0-9]+) tokens"))) << o.err;
  return m.empty() ? -1 : std::stoi(m[1]);
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(GrammarCli, JsonOutputsParse) {
  TESSERA_REQUIRE_SHARED(model, kModel);
  const auto json = Grammar::parse(Grammar::builtin("json"));
  ASSERT_TRUE(json.is_ok());
  constexpr int kLimit = 80;
  int complete = 0;
  for (int seed = 1; seed <= 8; ++seed) {
    const Output o =
        run_cli("run -m " + model + " -p " + kPrompt + " -n " + std::to_string(kLimit) +
                " --json --temp 1.0 -t 1 --seed " + std::to_string(seed));
    ASSERT_EQ(o.status, 0) << o.err;
    const std::string text = generated_text(o);
    GrammarMatcher m(json.value());
    EXPECT_TRUE(m.accept_text(text)) << "seed " << seed << ": not a JSON prefix: '" << text << "'";
    if (generated_count(o) < kLimit) {  // stopped by itself: a whole JSON text
      EXPECT_TRUE(m.can_end()) << "seed " << seed << ": '" << text << "'";
      EXPECT_TRUE(nlohmann::json::accept(text)) << "seed " << seed << ": '" << text << "'";
      ++complete;
    }
  }
  EXPECT_GT(complete, 0);  // the test sees whole values, not only prefixes
}

/// Checks an arithmetic output: its characters, the shape of numbers and operators once
/// parentheses and spaces are set aside, and balanced parentheses (when complete).
void expect_arithmetic(const std::string& text, bool complete) {
  EXPECT_TRUE(std::regex_match(text, std::regex(R"([-+*/(). 0-9]+)"))) << text;
  EXPECT_EQ(text.find("  "), std::string::npos) << text;
  std::string bare;
  int depth = 0;
  for (const char c : text) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    EXPECT_GE(depth, 0) << text;
    if (c != '(' && c != ')' && c != ' ') bare += c;
  }
  // Numbers joined by operators, each number after any unary minus signs. Cut by the
  // token limit, the text may end after an operator or inside a number.
  const std::string number = R"([0-9]{1,12}(\.[0-9]{1,12})?)";
  const std::string number_prefix = R"([0-9]{1,12}(\.[0-9]{0,12})?)";
  const std::string whole = "-*" + number + "([-+*/]-*" + number + ")*";
  const std::string prefix = "-*(" + number + "[-+*/]-*)*(" + number_prefix + ")?";
  EXPECT_TRUE(std::regex_match(bare, std::regex(complete ? whole : prefix)))
      << text << " -> " << bare;
  if (complete) {
    EXPECT_EQ(depth, 0) << text;
  }
}

TEST(GrammarCli, ArithmeticOutputsHaveTheGrammarsShape) {
  TESSERA_REQUIRE_SHARED(model, kModel);
  const std::string file =
      write_file("arithmetic.gbnf", std::string(Grammar::builtin("arithmetic")));
  constexpr int kLimit = 40;
  for (int seed = 1; seed <= 5; ++seed) {
    const Output o =
        run_cli("run -m " + model + " -p " + kPrompt + " -n " + std::to_string(kLimit) +
                " --grammar-file " + file + " --temp 1.0 -t 1 --seed " + std::to_string(seed));
    ASSERT_EQ(o.status, 0) << o.err;
    expect_arithmetic(generated_text(o), generated_count(o) < kLimit);
  }
  std::remove(file.c_str());
}

TEST(GrammarCli, StopsWhenTheGrammarIsComplete) {
  TESSERA_REQUIRE_SHARED(model, kModel);
  const Output o = run_cli("run -m " + model + " -p " + kPrompt +
                           " -n 50 -t 1 --grammar 'root ::= \"ab\" [0-9]'");
  ASSERT_EQ(o.status, 0) << o.err;
  const std::string text = generated_text(o);
  EXPECT_TRUE(std::regex_match(text, std::regex("ab[0-9]"))) << text;
  EXPECT_LE(generated_count(o), 3);
}

TEST(GrammarCli, BadGrammarGivesOneErrorLine) {
  TESSERA_REQUIRE_SHARED(model, kModel);
  const std::string file = write_file("bad.gbnf", "root ::= value\n\nvalue ::= \"x\" | numbr\n");
  const Output o = run_cli("run -m " + model + " -p a -n 4 --grammar-file " + file);
  std::remove(file.c_str());
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err, "tessera: " + file + ":3:17: undefined rule 'numbr'\n");

  const Output inline_text = run_cli("run -m " + model + " -p a -n 4 --grammar 'root ::= [0-9'");
  EXPECT_EQ(inline_text.status, 1);
  EXPECT_EQ(inline_text.err,
            "tessera: --grammar:1:10: unterminated character class (missing ']')\n");
}

TEST(GrammarCli, BadSamplerFlagsGiveOneErrorLine) {
  TESSERA_REQUIRE_SHARED(model, kModel);
  const std::string base = "run -m " + model + " -p a -n 2 ";
  for (const std::string& flags :
       {std::string("--logit-bias x"), std::string("--logit-bias 99999+1"),
        std::string("--mirostat 3"), std::string("--json --grammar 'root ::= \"a\"'"),
        std::string("--top-p 2"), std::string("--grammar-file /nonexistent.gbnf")}) {
    const Output o = run_cli(base + flags);
    EXPECT_NE(o.status, 0) << flags;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << flags << ": " << o.err;
    EXPECT_EQ(o.err.rfind("tessera: ", 0), 0u) << flags << ": " << o.err;
  }
  EXPECT_NE(run_cli(base + "--logit-bias 99999+1").err.find("token 99999"), std::string::npos);
}

std::vector<int> first_ids(const std::string& model, const std::string& flags) {
  const Output o = run_cli("run -m " + model + " -p 'Once upon a time' -n 8 -t 1 --ids " + flags);
  EXPECT_EQ(o.status, 0) << o.err;
  std::vector<int> ids;
  std::istringstream ss(o.out);
  for (int v; ss >> v;) ids.push_back(v);
  return ids;
}

TEST(GrammarCli, LogitBiasForbidsTheGreedyToken) {
  TESSERA_REQUIRE_SHARED(model, kModel);
  const std::vector<int> greedy = first_ids(model, "--temp 0");
  ASSERT_FALSE(greedy.empty());
  const std::vector<int> biased =
      first_ids(model, "--temp 0 --logit-bias " + std::to_string(greedy[0]) + "-inf");
  ASSERT_FALSE(biased.empty());
  EXPECT_EQ(std::count(biased.begin(), biased.end(), greedy[0]), 0);
}

TEST(GrammarCli, SeededSamplingRepeats) {
  TESSERA_REQUIRE_SHARED(model, kModel);
  const std::string all =
      "--temp 0.9 --top-k 30 --top-p 0.9 --min-p 0.02 --typical 0.95 --tfs 0.95 "
      "--repeat-penalty 1.1 --repeat-last-n 16 --frequency-penalty 0.1 --presence-penalty 0.1 ";
  for (const std::string& flags :
       {all, std::string("--mirostat 2 --mirostat-lr 0.2 --mirostat-ent 4 "),
        std::string("--mirostat 1 ")}) {
    const std::vector<int> a = first_ids(model, flags + "--seed 11");
    EXPECT_FALSE(a.empty()) << flags;
    EXPECT_EQ(first_ids(model, flags + "--seed 11"), a) << flags;
  }
}

}  // namespace
}  // namespace tessera
