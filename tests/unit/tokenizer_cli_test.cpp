// `tessera tokenize` on vocabulary-only GGUF files: the three output forms, text from a
// file, BOS and special-token flags, and errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/cli_run.h"
#include "common/test_util.h"

namespace tessera {
namespace {

using CliRun = test::CliOutput;
CliRun run_cli(const std::string& args) { return test::run_tessera("tokenize " + args); }

TEST(TokenizeCommand, IdsPiecesAndDefault) {
  TESSERA_REQUIRE_SHARED(path, "vocab/ggml-vocab-gpt-2.gguf");
  CliRun r = run_cli("-m " + path + " -p 'Hello world' --ids");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "15496 995\n");
  r = run_cli("-m " + path + " -p 'Hello world' --pieces");
  EXPECT_EQ(r.out, "15496 'Hello'\n995 ' world'\n");
  r = run_cli("-m " + path + " -p \"it's\" ");
  EXPECT_EQ(r.out, "270 'it', 338 '\\'s'\n");
  // A character split across byte tokens shows its bytes escaped.
  r = run_cli("-m " + path + " -p \"$(printf '\\360\\237\\246\\231')\" --pieces");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("\\xF0\\x9F"), std::string::npos) << r.out;
}

TEST(TokenizeCommand, SpecialTokensAndBos) {
  TESSERA_REQUIRE_SHARED(path, "vocab/ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(run_cli("-m " + path + " -p 'Hello world' --ids").out, "1 15043 3186\n");
  EXPECT_EQ(run_cli("-m " + path + " -p 'Hello world' --ids --no-bos").out, "15043 3186\n");
  EXPECT_EQ(run_cli("-m " + path + " -p '<s>Hello' --ids --no-bos --parse-special").out,
            "1 15043\n");
}

TEST(TokenizeCommand, TextFromAFile) {
  TESSERA_REQUIRE_SHARED(path, "vocab/ggml-vocab-starcoder.gguf");
  const auto file = std::filesystem::temp_directory_path() /
                    ("tessera_tokenize_" + std::to_string(::getpid()) + ".txt");
  std::ofstream(file, std::ios::binary) << "def f(x):\n    return 12";
  const CliRun from_file = run_cli("-m " + path + " -f " + file.string() + " --ids");
  const CliRun inline_text =
      run_cli("-m " + path + " -p \"$(printf 'def f(x):\\n    return 12')\" --ids");
  std::filesystem::remove(file);
  EXPECT_EQ(from_file.status, 0);
  EXPECT_FALSE(from_file.out.empty());
  EXPECT_EQ(from_file.out, inline_text.out);
}

// --jsonl: one JSON string a line in, one array of ids a line out, each the ids the text
// gets alone; a line that is not a JSON string is refused by its number.
TEST(TokenizeCommand, JsonLinesAreTokenizedOneByOne) {
  TESSERA_REQUIRE_SHARED(path, "vocab/ggml-vocab-gpt-2.gguf");
  const std::string file = test::write_temp_file("texts.jsonl", "\"Hello world\"\n\n\"it's\\nfine\"\n\"\"\n");
  const CliRun r = run_cli("-m " + path + " -f " + file + " --jsonl");
  ASSERT_EQ(r.status, 0) << r.err;
  const CliRun second = run_cli("-m " + path + " -p \"$(printf \"it's\\nfine\")\" --ids");
  std::string ids = second.out.substr(0, second.out.size() - 1);
  for (char& c : ids) c = c == ' ' ? ',' : c;
  EXPECT_EQ(r.out, "[15496,995]\n[" + ids + "]\n[]\n");
  EXPECT_NE(r.err.find("3 texts"), std::string::npos) << r.err;
  const std::string bad = test::write_temp_file("bad.jsonl", "\"ok\"\n[1]\n");
  const CliRun refused = run_cli("-m " + path + " -f " + bad + " --jsonl");
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.err.find("line 2"), std::string::npos) << refused.err;
}

TEST(TokenizeCommand, Errors) {
  TESSERA_REQUIRE_SHARED(path, "vocab/ggml-vocab-gpt-2.gguf");
  EXPECT_NE(run_cli("-m " + path).status, 0);                       // no text
  EXPECT_NE(run_cli("-m " + path + " -p a -f " + path).status, 0);  // both
  EXPECT_NE(run_cli("-m " + path + " -p a --ids --pieces").status, 0);
  EXPECT_NE(run_cli("-m /nonexistent.gguf -p a").status, 0);
}

}  // namespace
}  // namespace tessera
