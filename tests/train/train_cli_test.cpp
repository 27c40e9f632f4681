// `tessera train` as a user runs it: progress lines, the CSV log, a model that `tessera
// run` and `inspect` read, and errors that name the flag.
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
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--type 'q4_0'"), std::string::npos) << r.err;
  r = run_tessera("train -f '" + txt + "' -o '" + txt + ".gguf'" + kTiny + " --steps 0");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--steps"), std::string::npos) << r.err;
  r = run_tessera("train -f '" + txt + "' -o '" + txt + ".gguf' --vocab-size 100 -t 1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("vocab_size must be"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tessera::test
