// The `tessera` command as a user runs it: run vs logits agreement, and clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "common/cli_run.h"
#include "common/test_util.h"

namespace tessera {
namespace {

using Output = test::CliOutput;
Output run_cli(const std::string& args) { return test::run_tessera(args); }

std::vector<int> parse_ids(const std::string& line) {
  std::vector<int> ids;
  std::istringstream ss(line);
  int v = 0;
  while (ss >> v) ids.push_back(v);
  return ids;
}

TEST(Cli, RunGreedyEqualsLogitsGreedy) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const Output run = run_cli("run -m " + model + " -p 'Once upon a time' -n 64 --temp 0 --ids -t 2");
  ASSERT_EQ(run.status, 0) << run.err;
  const Output logits = run_cli("logits -m " + model + " -p 'Once upon a time' -n 64 -t 1");
  ASSERT_EQ(logits.status, 0) << logits.err;
  const auto json = nlohmann::json::parse(logits.out);
  const auto greedy = json["greedy"].get<std::vector<int>>();
  const std::vector<int> ran = parse_ids(run.out);
  ASSERT_FALSE(ran.empty());
  // run stops early at an end-of-text token; up to there both must agree.
  ASSERT_LE(ran.size(), greedy.size());
  EXPECT_EQ(ran, std::vector<int>(greedy.begin(), greedy.begin() + std::ptrdiff_t(ran.size())));
}

// A context of 48 holds the 17-token prompt and 31 generated tokens; generation goes on
// past it by context shifts (the first tokens up to the prompt kept), or stops there with
// --no-context-shift. With the shift, the tokens before the first shift equal those of a
// run with a context large enough.
TEST(Cli, RunShiftsTheContextWhenItFills) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const std::string base = "run -m " + model + " -p 'Once upon a time' --temp 0 --ids -t 1 --ignore-eos ";
  const Output big = run_cli(base + "-n 120 -c 256");
  ASSERT_EQ(big.status, 0) << big.err;
  const Output shifted = run_cli(base + "-n 120 -c 48 --keep -1");
  ASSERT_EQ(shifted.status, 0) << shifted.err;
  const std::vector<int> a = parse_ids(big.out), b = parse_ids(shifted.out);
  ASSERT_EQ(b.size(), 120u) << shifted.err;
  ASSERT_EQ(a.size(), 120u);
  EXPECT_EQ(std::vector<int>(a.begin(), a.begin() + 31), std::vector<int>(b.begin(), b.begin() + 31));
  const Output stopped = run_cli(base + "-n 120 -c 48 --no-context-shift");
  ASSERT_EQ(stopped.status, 0) << stopped.err;
  EXPECT_EQ(parse_ids(stopped.out).size(), 32u);  // 31 decoded + the one sampled from the last logits
  EXPECT_NE(stopped.err.find("full"), std::string::npos) << stopped.err;
}

TEST(Cli, LogitsMatchesGoldenSchema) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const Output o = run_cli("logits -m " + model + " --prompt-ids 1,482,82 -n 3");
  ASSERT_EQ(o.status, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["model"], "stories260K.gguf");
  EXPECT_EQ(j["n_vocab"], 512);
  EXPECT_EQ(j["prompt_ids"], (std::vector<int>{1, 482, 82}));
  EXPECT_EQ(j["logits_last_prompt"].size(), 512u);
  EXPECT_EQ(j["greedy"].size(), 3u);
  ASSERT_EQ(j["top5_per_step"].size(), 3u);
  EXPECT_EQ(j["top5_per_step"][0].size(), 5u);
  EXPECT_EQ(j["top5_per_step"][0][0][0], j["greedy"][0]);
}

TEST(Cli, BadInputGivesOneClearErrorLine) {
  struct Case {
    std::string args;
    std::string expect;  // a word the message must contain
  };
  const std::string missing = ::testing::TempDir() + "does-not-exist.gguf";
  const std::string not_gguf = ::testing::TempDir() + "not-a-model.gguf";
  FILE* f = std::fopen(not_gguf.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("this is not a gguf file at all, just text", f);
  std::fclose(f);
  const Case cases[] = {
      {"run -m " + missing + " -p hi", "does-not-exist"},
      {"run -m " + not_gguf + " -p hi", "magic"},
      {"inspect " + not_gguf, "magic"},
      {"logits -m " + not_gguf + " --prompt-ids 1", "magic"},
      {"run -m " + not_gguf + " -p hi --no-such-flag", "no-such-flag"},
      {"logits -m /nonexistent.gguf --prompt-ids 1 -n 1", "--model"},  // without -m: the built-in model
      {"run -m " + not_gguf + " -p hi -t 0", "threads"},
      {"frobnicate", "frobnicate"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const Output o = run_cli(c.args);
    EXPECT_NE(o.status, 0);
    EXPECT_NE(o.err.find(c.expect), std::string::npos) << o.err;
    EXPECT_LE(std::count(o.err.begin(), o.err.end(), '\n'), 2) << o.err;
  }
}

TEST(Cli, BadTokenIdsAreRefused) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const Output o = run_cli("logits -m " + model + " --prompt-ids 1,99999 -n 1");
  EXPECT_NE(o.status, 0);
  EXPECT_NE(o.err.find("99999"), std::string::npos) << o.err;
}

TEST(Cli, BenchReportsBothTests) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const Output o = run_cli("bench -m " + model + " -p 16 -n 4 -r 2 -t 2 -o json --memory");
  ASSERT_EQ(o.status, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["test"], "pp16");
  EXPECT_EQ(j["results"][1]["test"], "tg4");
  for (const auto& r : j["results"]) {
    EXPECT_EQ(r["samples"].size(), 2u);
    EXPECT_GT(r["tokens_per_second"].get<double>(), 0.0);
  }
  EXPECT_GT(j["peak_rss_mib"].get<double>(), 0.0);
}

TEST(Cli, BenchPairsGenerationWithBandwidthProbes) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const Output o = run_cli("bench -m " + model + " -p 8 -n 4 -r 2 -t 2 -o json --bandwidth");
  ASSERT_EQ(o.status, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_FALSE(j["results"][0].contains("roofline_ratio"));  // pp is not paired
  const auto& tg = j["results"][1];
  const double bytes = tg["decode_bytes"].get<double>();
  EXPECT_GT(bytes, 0.0);
  EXPECT_LT(bytes, tg["size_bytes"].get<double>());  // the token embedding is read one row a token
  ASSERT_EQ(tg["bandwidth_gbs"].size(), 2u);
  ASSERT_EQ(tg["roofline_ratio_samples"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const double gbs = tg["bandwidth_gbs"][i].get<double>();
    EXPECT_GT(gbs, 0.1);
    EXPECT_NEAR(tg["roofline_ratio_samples"][i].get<double>(),
                tg["samples"][i].get<double>() * bytes / (gbs * 1e9), 1e-9);
  }
  // The probe's buffer would count in the peak RSS: the two flags are refused together.
  const Output both = run_cli("bench -m " + model + " -p 8 -n 4 -r 1 --bandwidth --memory");
  EXPECT_NE(both.status, 0);
  EXPECT_NE(both.err.find("--memory"), std::string::npos) << both.err;
}

TEST(Cli, BenchDepthPrefillsTheContext) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const Output o = run_cli("bench -m " + model + " -p 8 -n 4 -d 40 -r 1 -t 2 -o json");
  ASSERT_EQ(o.status, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["test"], "pp8 @ d40");
  EXPECT_EQ(j["results"][1]["test"], "tg4 @ d40");
  EXPECT_EQ(j["results"][1]["n_depth"], 40);
  // A context too small for depth + test is refused, naming the cells needed.
  const Output small = run_cli("bench -m " + model + " -p 8 -n 4 -d 40 -c 44 -r 1");
  EXPECT_NE(small.status, 0);
  EXPECT_NE(small.err.find("48 cells"), std::string::npos) << small.err;
}

TEST(Cli, SynthModelRuns) {
  const std::string path = ::testing::TempDir() + "tessera_synth_test.gguf";
  const Output s = run_cli("synth -o " + path + " --n-layer 1 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 96 --n-vocab 400");
  ASSERT_EQ(s.status, 0) << s.err;
  const Output r = run_cli("run -m " + path + " -p 'the little dog' -n 8 --temp 0 -t 2");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("the little dog", 0), 0u) << r.out;
  // A quantized synthetic model goes through the quantizer's recipe.
  const Output q = run_cli("synth -o " + path + " --type q8_0 --n-layer 1 --n-embd 64 --n-head 4 --n-ff 96 --n-vocab 400");
  ASSERT_EQ(q.status, 0) << q.err;
  const Output i = run_cli("inspect " + path);
  EXPECT_NE(i.out.find("q8_0"), std::string::npos) << i.out;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tessera
