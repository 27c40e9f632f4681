// `tessera train` as a user runs it: progress lines, the CSV log, a model that `tessera
// run` and `inspect` read, and errors that name the flag or path, found before any work.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/cli_run.h"

namespace tessera::test {
namespace {

std::string text() {
  std::string s;
  for (int i = 0; i < 120; ++i) s += "in the beginning was the word, and the word was with god.\n";
  return s;
}

const std::string kTiny = " --vocab-size 300 --n-embd 32 --n-layer 1 --n-head 4 --n-ff 64 --ctx 16 --batch 2 -t 1";

TEST(TrainCli, TrainsWritesALogAndAModelTheOtherToolsRead) {
  const std::string txt = write_temp_file("train_cli_text", text());
  const std::string model = txt + ".gguf";
  const std::string log = txt + ".csv";
  CliOutput r = run_tessera("train -f '" + txt + "' -o '" + model + "'" + kTiny +
                            " --steps 6 --eval-every 3 --print-every 2 --log '" + log + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("learning a vocabulary of 300 tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("step 6/6  loss "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  val "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wrote " + model), std::string::npos) << r.err;
  std::ifstream in(log);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str().rfind("step,loss,val_loss,lr,grad_norm,tokens_per_s\n1,", 0), 0u) << s.str();
  EXPECT_NE(s.str().find("\n6,"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(model + ".ckpt"));

  r = run_tessera("inspect '" + model + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("llama"), std::string::npos) << r.out;
  r = run_tessera("run -m '" + model + "' -p 'in the' -n 4 --temp 0");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("in the", 0), 0u) << r.out;
}

TEST(TrainCli, BadFlagsNameTheProblem) {
  const std::string txt = write_temp_file("train_cli_bad", text());
  CliOutput r = run_tessera("train -f '" + txt + "' -o '" + txt + ".gguf'" + kTiny + " --type q4_0");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--type 'q4_0'"), std::string::npos) << r.err;
  r = run_tessera("train -f '" + txt + "' -o '" + txt + ".gguf'" + kTiny + " --steps 0");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--steps"), std::string::npos) << r.err;
  r = run_tessera("train -f '" + txt + "' -o '" + txt + ".gguf' --vocab-size 100 -t 1");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("vocab_size must be"), std::string::npos) << r.err;
}

// Each of these used to be found only after the vocabulary was learned (and, for -o,
// after every step had run): now before any work, so no "learning a vocabulary" line.
TEST(TrainCli, OutputPathsAndShapesAreCheckedBeforeAnyWork) {
  const std::string txt = write_temp_file("train_cli_early", text());
  const struct {
    std::string flags, message;
  } cases[] = {
      {" -o /nonexistent-dir/m.gguf" + kTiny, "-o '/nonexistent-dir/m.gguf': the directory '/nonexistent-dir' does not exist"},
      {" -o '" + ::testing::TempDir() + "'" + kTiny, "is a directory"},
      {" -o '" + txt + ".gguf' --log /nonexistent-dir/log.csv" + kTiny, "--log '/nonexistent-dir/log.csv'"},
      {" -o '" + txt + ".gguf' --checkpoint /nonexistent-dir/c" + kTiny, "--checkpoint '/nonexistent-dir/c'"},
      {" -o '" + txt + ".gguf' --vocab-size 300 --n-embd 30 --n-head 4 -t 1",
       "n_embd must be a multiple of n_head with an even head size (--n-embd 30, --n-head 4)"},
      {" -o '" + txt + ".gguf' --vocab-size 300 --n-embd 32 --n-head 4 --n-head-kv 3 -t 1",
       "n_head must be a multiple of n_head_kv"},
      {" -o '" + txt + ".gguf'" + kTiny + " --checkpoint-minutes -1", "--checkpoint-minutes"},
  };
  for (const auto& c : cases) {
    const CliOutput r = run_tessera("train -f '" + txt + "'" + c.flags);
    EXPECT_EQ(r.status, 2) << c.flags << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.flags << "\n" << r.err;
    EXPECT_EQ(r.err.find("learning a vocabulary"), std::string::npos) << c.flags << "\n" << r.err;
  }
}

TEST(TrainCli, CtxSizeIsTheSameFlagAsCtx) {
  const std::string txt = write_temp_file("train_cli_ctx", text());
  const std::string base = " --vocab-size 300 --n-embd 32 --n-layer 1 --n-head 4 --n-ff 64 --batch 2 -t 1 --steps 2";
  for (const char* flag : {"--ctx-size 16", "--ctx 16", "-c 16"}) {
    const std::string model = txt + "." + std::to_string(std::string(flag).size()) + ".gguf";
    CliOutput r = run_tessera("train -f '" + txt + "' -o '" + model + "'" + base + " " + flag);
    ASSERT_EQ(r.status, 0) << flag << "\n" << r.err;
    r = run_tessera("inspect '" + model + "'");
    const size_t at = r.out.find("llama.context_length");
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    EXPECT_EQ(line.substr(line.size() - 3), " 16") << line;
  }
  const CliOutput r = run_tessera("train --help");
  EXPECT_NE(r.out.find("--ctx-size"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tessera::test
