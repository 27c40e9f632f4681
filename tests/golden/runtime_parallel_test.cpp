// `tessera parallel`: continuous batching gives every request what it gets alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/test_util.h"
#include "common/runtime_test_util.h"

namespace tessera {
namespace {

using test::run_cli;

nlohmann::json run_json(const std::string& args) {
  const test::CliOutput o = run_cli(args + " --json");
  EXPECT_EQ(o.status, 0) << o.err;
  return o.status == 0 ? nlohmann::json::parse(o.out) : nlohmann::json();
}

TEST(RuntimeParallel, ContinuousBatchingMatchesOneClient) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  // 3 clients serve 5 requests (slots are reused); greedy, so each request's tokens
  // must be those of the same prompt served alone.
  const auto many = run_json("parallel -m " + model + " --clients 3 --requests 5 -n 12 -t 1");
  const auto one = run_json("parallel -m " + model + " --clients 1 --requests 5 -n 12 -t 1");
  ASSERT_EQ(many["requests"].size(), 5u);
  ASSERT_EQ(one["requests"].size(), 5u);
  EXPECT_EQ(many["clients"], 3);
  std::vector<int> clients_used;
  for (size_t i = 0; i < 5; ++i) {
    const auto& r = many["requests"][i];
    EXPECT_EQ(r["prompt"], one["requests"][i]["prompt"]);
    EXPECT_EQ(r["tokens"], one["requests"][i]["tokens"]) << "request " << i;
    EXPECT_GT(r["tokens"].size(), 0u);
    EXPECT_LE(r["tokens"].size(), 12u);
    clients_used.push_back(r["client"].get<int>());
  }
  EXPECT_EQ(*std::max_element(clients_used.begin(), clients_used.end()), 2);
  // Steps: the batched run needs fewer forward passes than the one-client run.
  EXPECT_LT(many["steps"].get<int>(), one["steps"].get<int>());
  EXPECT_EQ(many["generated_tokens"], one["generated_tokens"]);
  EXPECT_GT(many["generated_per_second"].get<double>(), 0.0);
}

// The text of a request is what its tokens add after the prompt, leading space included
// ("said unto", not "saidunto"): the same as `run` prints after the same prompt.
TEST(RuntimeParallel, TextKeepsTheFirstTokensLeadingSpace) {
  // The model tessera trained (models/README.md), whose words come with their spaces.
  const std::string model = std::string(TESSERA_SOURCE_DIR) + "/models/tessera-kjv-6m-q8_0.gguf";
  const std::string file = test::write_temp_file("parallel_prompt.txt", "And God said\n");
  const auto j = run_json("parallel -m " + model + " -f " + file + " --clients 1 --requests 1 -n 12 --temp 0 -t 1");
  ASSERT_EQ(j["requests"].size(), 1u);
  const std::string text = j["requests"][0]["text"];
  const test::CliOutput run = run_cli("run -m " + model + " -p 'And God said' -n 12 --temp 0 -t 1");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "And God said" + text + "\n") << "parallel's text: '" << text << "'";
  EXPECT_EQ(text.substr(0, 1), " ") << text;
}

TEST(RuntimeParallel, LongGenerationShiftsTheContext) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  // 64 cells for 2 clients: 32 per request, so 40 generated tokens need shifts.
  const auto j = run_json("parallel -m " + model + " --clients 2 -n 40 --ctx-size 64 -t 1");
  ASSERT_EQ(j["requests"].size(), 2u);
  for (const auto& r : j["requests"]) {
    EXPECT_EQ(r["tokens"].size(), 40u);  // no end-of-text token in these 40
    EXPECT_GE(r["context_shifts"].get<int>(), 2);
  }
}

TEST(RuntimeParallel, PromptFileAndTextOutput) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const std::string file = ::testing::TempDir() + "tessera_parallel_prompts.txt";
  FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("first prompt\n\nsecond prompt\r\n", f);
  std::fclose(f);
  const test::CliOutput o = run_cli("parallel -m " + model + " -f " + file + " --clients 2 --requests 3 -n 4 -t 1");
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("prompt: first prompt\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("prompt: second prompt\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("request 2 (client"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("2 clients, 3 requests"), std::string::npos) << o.out;
  std::remove(file.c_str());
}

TEST(RuntimeParallel, BadFlagsGiveOneErrorLine) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const std::string empty = ::testing::TempDir() + "tessera_parallel_empty.txt";
  std::fclose(std::fopen(empty.c_str(), "w"));
  for (const std::string& args : std::vector<std::string>{
           "parallel -m " + model + " --clients 0", "parallel -m " + model + " --clients 65",
        "parallel -m " + model + " -n 0", "parallel -m /nonexistent.gguf --clients 2", "parallel -m " + model + " -f " + empty,
        "parallel -m " + model + " --ctx-size 8"}) {
    const test::CliOutput o = run_cli(args);
    EXPECT_NE(o.status, 0) << args;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << args << ": " << o.err;
  }
  std::remove(empty.c_str());
}

}  // namespace
}  // namespace tessera
