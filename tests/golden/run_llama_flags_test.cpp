// llama-cli's and llama-quantize's habits in `tessera run` and `tessera quantize` (issue
// 31, finding 3; README, "llama.cpp's flags"): -f and a piped prompt, -s and a random
// seed that is printed, -e, -r, -i / -cnv, --no-display-prompt, -n -1 / -2, -ub, -fa,
// --no-mmap, and quantize's positional thread count.
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "common/cli_run.h"
#include "common/test_util.h"

namespace tessera {
namespace {

using test::CliOutput;
using test::run_tessera;

const std::string kGreedy = " --temp 0 -t 1 -n 12";

TEST(RunLlamaFlags, PromptFromAFileOrStdinIsThePromptOfP) {
  const CliOutput p = run_tessera("run -p 'And God said'" + kGreedy);
  ASSERT_EQ(p.status, 0) << p.err;
  const std::string file = test::write_temp_file("prompt.txt", "And God said\n");  // the last newline is dropped
  const CliOutput f = run_tessera("run -f " + file + kGreedy);
  EXPECT_EQ(f.status, 0) << f.err;
  EXPECT_EQ(f.out, p.out);
  const CliOutput in = run_tessera("run" + kGreedy, "And God said");
  EXPECT_EQ(in.status, 0) << in.err;
  EXPECT_EQ(in.out, p.out);
  const CliOutput both = run_tessera("run -p x -f " + file + kGreedy);
  EXPECT_EQ(both.status, 2) << both.err;
}

// The default seed is random and printed; -s repeats a run; -s -1 is random too.
TEST(RunLlamaFlags, ARandomSeedIsPrintedAndSRepeatsTheRun) {
  const std::string args = "run -p 'And God said' -n 24 -t 1 --temp 1.5";
  const CliOutput a = run_tessera(args);
  ASSERT_EQ(a.status, 0) << a.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(a.err, m, std::regex("tessera: seed ([0-9]+) \\(-s ([0-9]+) repeats this run\\)")))
      << a.err;
  const CliOutput again = run_tessera(args + " -s " + m[1].str());
  EXPECT_EQ(again.out, a.out);
  EXPECT_EQ(again.err.find("tessera: seed"), std::string::npos) << "a given seed is not printed";
  // Two random runs differ (24 tokens at temperature 1.5: equal by chance is negligible).
  const CliOutput b = run_tessera(args + " --seed -1");
  const CliOutput c = run_tessera(args + " --seed -1");
  EXPECT_TRUE(b.out != c.out || b.err != c.err) << b.out;
  // Greedy runs draw nothing: no seed line.
  EXPECT_EQ(run_tessera("run -p hi" + kGreedy).err.find("tessera: seed"), std::string::npos);
}

TEST(RunLlamaFlags, EscapesReverseGreedyNoDisplayPrompt) {
  const CliOutput raw = run_tessera("run -p 'And\\nGod' -n 1 --temp 0 -t 1");
  EXPECT_EQ(raw.out.rfind("And\\nGod", 0), 0u) << raw.out;
  const CliOutput escaped = run_tessera("run -e -p 'And\\nGod' -n 1 --temp 0 -t 1");
  EXPECT_EQ(escaped.out.rfind("And\nGod", 0), 0u) << escaped.out;
  // --no-display-prompt: the generated text alone.
  const CliOutput full = run_tessera("run -p 'And God said'" + kGreedy);
  const CliOutput bare = run_tessera("run --no-display-prompt -p 'And God said'" + kGreedy);
  EXPECT_EQ("And God said" + bare.out, full.out);
  // -r: the output stops once the text came, which is printed.
  const std::string generated = bare.out.substr(0, bare.out.size() - 1);  // without run's last newline
  ASSERT_GT(generated.size(), 8u) << generated;
  const std::string stop = generated.substr(3, 4);
  const CliOutput r = run_tessera("run --no-display-prompt -p 'And God said' -r '" + stop + "'" + kGreedy);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_LT(r.out.size(), bare.out.size()) << r.out;
  EXPECT_NE(r.out.find(stop), std::string::npos) << r.out;
  EXPECT_EQ(bare.out.rfind(r.out.substr(0, r.out.size() - 1), 0), 0u) << "a prefix of the full output";
}

TEST(RunLlamaFlags, NegativeNGeneratesUntilTheContextIsFull) {
  // The built-in model does not end its text: -n -2 stops at the full context (64 cells).
  const CliOutput two = run_tessera("run -p 'And God said' -n -2 -c 64 --temp 0 -t 1 --ids");
  ASSERT_EQ(two.status, 0) << two.err;
  // 4 prompt tokens and 60 generated fill the 64 cells; the 61st is sampled from the last.
  EXPECT_NE(two.err.find("generated 61 tokens"), std::string::npos) << two.err;
  // -n -1 with --no-context-shift stops there too (with the shift it would go on).
  const CliOutput one = run_tessera("run -p 'And God said' -n -1 -c 64 --no-context-shift --temp 0 -t 1 --ids");
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_NE(one.err.find("context of 64 tokens full"), std::string::npos) << one.err;
}

TEST(RunLlamaFlags, UbatchFlashAttnAndNoMmapChangeNothingOfTheOutput) {
  const CliOutput base = run_tessera("run -p 'And God said unto Moses'" + kGreedy);
  ASSERT_EQ(base.status, 0) << base.err;
  const std::string model = std::string(TESSERA_SOURCE_DIR) + "/models/tessera-kjv-6m-q8_0.gguf";
  for (const std::string& flags : std::vector<std::string>{" -ub 2", " -fa", " -fa on", " --flash-attn auto",
                                                           " -m " + model + " --no-mmap"}) {
    const CliOutput o = run_tessera("run -p 'And God said unto Moses'" + kGreedy + flags);
    EXPECT_EQ(o.status, 0) << flags << ": " << o.err;
    EXPECT_EQ(o.out, base.out) << flags;
  }
  EXPECT_EQ(run_tessera("run -p hi -fa maybe" + kGreedy).status, 2);
}

// -i / -cnv start a chat (a conversation over the lines of stdin), -p its system message;
// -cnv is not -c nv.
TEST(RunLlamaFlags, ConversationFlagsStartAChat) {
  for (const std::string flag : {"-cnv", "-i", "--conversation"}) {
    const CliOutput o = run_tessera("run " + flag + " -p 'You are kind.' -n 8 --temp 0 -t 1", "Hello\n/bye\n");
    EXPECT_EQ(o.status, 0) << flag << ": " << o.err;
    EXPECT_NE(o.err.find("a chat starts"), std::string::npos) << o.err;
    EXPECT_FALSE(o.out.empty()) << flag;
  }
  EXPECT_EQ(run_tessera("chat -cnv -n 4 --temp 0 -t 1", "/bye\n").status, 0);
}

TEST(RunLlamaFlags, QuantizeTakesTheThreadCountAsItsFourthArgument) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const std::string out = ::testing::TempDir() + "tessera_q4_threads.gguf";
  const CliOutput q = run_tessera("quantize " + model + " " + out + " q8_0 2");
  EXPECT_EQ(q.status, 0) << q.err;
  EXPECT_NE(q.err.find("on 2 threads"), std::string::npos) << q.err;
  EXPECT_EQ(run_tessera("quantize " + model + " " + out + " q8_0 2 -t 3").status, 2);
  std::remove(out.c_str());
}

}  // namespace
}  // namespace tessera
