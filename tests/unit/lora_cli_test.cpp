// --lora on the tools and `tessera lora-merge`, as a user runs them, on a small random
// llama written by `tessera synth` (it has a vocabulary, so the tools take text):
// generation changes with an adapter and not at scale 0, the merged model generates what
// --lora does, perplexity and bench run with adapters, serve reports them, and a bad
// adapter is one `tessera: ...` line naming the file, with exit status 1.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cli_run.h"
#include "common/server_process.h"
#include "common/lora_test_util.h"

namespace tessera::test {
namespace {

constexpr int64_t kLayers = 2;

std::string q(const std::string& s) { return "'" + s + "'"; }

// The base model and a strong random adapter of all its projections, once per process.
struct Files {
  std::string base, strong, weak;
};

const Files& files() {
  static const Files f = [] {
    Files out;
    out.base = temp_gguf("lora_cli_base");
    const CliOutput s = run_tessera("synth -o " + q(out.base) + " --type f32 --n-layer " + std::to_string(kLayers) +
                                    " --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --n-vocab 400");
    EXPECT_EQ(s.status, 0) << s.err;
    Result<AdapterFile> a = adapter_for(out.base, llama_projections(kLayers), 4);
    EXPECT_TRUE(a.is_ok()) << a.status().message();
    if (!a) return out;
    a->stddev = 0.3f;  // b a is several times W: the greedy tokens change
    out.strong = temp_gguf("lora_cli_strong");
    EXPECT_TRUE(write_adapter(*a, out.strong).is_ok());
    a->stddev = 0.1f;
    a->seed = 2;
    a->alpha = 8;
    out.weak = temp_gguf("lora_cli_weak");
    EXPECT_TRUE(write_adapter(*a, out.weak).is_ok());
    return out;
  }();
  return f;
}

// Greedy token ids of a run of `model` with extra flags (the --lora ones).
std::string greedy(const std::string& model, const std::string& flags = "") {
  const CliOutput r = run_tessera("run -m " + q(model) + " " + flags + " -p 'once upon a time' -n 8 --temp 0 --ids -t 2");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  return r.out;
}

TEST(LoraCli, RunAppliesTheAdapterAndTheMergedModelMatchesIt) {
  const Files& f = files();
  const std::string base = greedy(f.base);
  const std::string adapted = greedy(f.base, "--lora " + q(f.strong));
  EXPECT_NE(adapted, base);
  EXPECT_EQ(greedy(f.base, "--lora " + q(f.strong + ":0")), base);

  const std::string merged = temp_gguf("lora_cli_merged");
  const CliOutput m = run_tessera("lora-merge -m " + q(f.base) + " --lora " + q(f.strong) + " -o " + q(merged));
  ASSERT_EQ(m.status, 0) << m.err;
  EXPECT_NE(m.err.find("wrote " + merged + ": 14 of "), std::string::npos) << m.err;
  EXPECT_EQ(greedy(merged), adapted);
}

TEST(LoraCli, TwoAdaptersWithScalesMergeToTheSameTokens) {
  const Files& f = files();
  const std::string flags = "--lora " + q(f.strong + ":0.5") + " --lora " + q(f.weak + ":-2");
  const std::string adapted = greedy(f.base, flags);
  const std::string merged = temp_gguf("lora_cli_merged2");
  const CliOutput m = run_tessera("lora-merge -m " + q(f.base) + " " + flags + " -o " + q(merged) + " --type f32 -t 1");
  ASSERT_EQ(m.status, 0) << m.err;
  EXPECT_NE(m.err.find("(28 updates)"), std::string::npos) << m.err;
  EXPECT_EQ(greedy(merged), adapted);
}

TEST(LoraCli, PerplexityAndBenchRunWithAdapters) {
  const Files& f = files();
  std::string text;
  for (int i = 0; i < 20; ++i) text += "once upon a time there was a little model that wanted to learn. ";
  const std::string txt = write_temp_file("lora_cli_text", text);
  const std::string ppl = "perplexity -f " + q(txt) + " -c 16 --chunks 2 -t 2 -m " + q(f.base);
  const CliOutput plain = run_tessera(ppl);
  const CliOutput adapted = run_tessera(ppl + " --lora " + q(f.weak));
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(adapted.status, 0) << adapted.err;
  EXPECT_NE(adapted.out.find("Final estimate: PPL = "), std::string::npos) << adapted.out;
  EXPECT_NE(adapted.out, plain.out);

  const CliOutput b = run_tessera("bench -m " + q(f.base) + " --lora " + q(f.weak + ":0.5") + " -p 8 -n 2 -r 1 -t 1 -o csv");
  ASSERT_EQ(b.status, 0) << b.err;
  const std::string name = f.weak.substr(f.weak.rfind('/') + 1);
  EXPECT_NE(b.out.find(" + lora " + name + ":0.5,"), std::string::npos) << b.out;
  std::remove(txt.c_str());
}

TEST(LoraCli, ServeReportsItsAdapters) {
  const Files& f = files();
  std::string error;
  auto server = ServerProcess::start({"-m", f.base, "--lora", f.weak + ":0.25", "-np", "1", "-t", "1"}, &error);
  ASSERT_TRUE(server) << error;
  httplib::Client client("127.0.0.1", server->port());
  const httplib::Result props = client.Get("/props");
  ASSERT_TRUE(props && props->status == 200);
  const nlohmann::json p = nlohmann::json::parse(props->body);
  ASSERT_EQ(p["lora_adapters"].size(), 1u) << props->body;
  EXPECT_EQ(p["lora_adapters"][0]["path"], f.weak);
  EXPECT_EQ(p["lora_adapters"][0]["scale"], 0.25);
  const httplib::Result models = client.Get("/v1/models");
  ASSERT_TRUE(models && models->status == 200);
  EXPECT_EQ(nlohmann::json::parse(models->body)["data"][0]["meta"]["lora_adapters"], p["lora_adapters"]);
  EXPECT_EQ(server->stop(), 0) << server->log();
}

// Every tool that loads a model: a bad adapter is one error line naming it, exit status 1.
TEST(LoraCli, BadAdaptersAreOneErrorLine) {
  const Files& f = files();
  const std::string txt = write_temp_file("lora_cli_err_text", "some text to score here");
  const std::vector<std::string> tools = {"run -p hello -n 2", "chat -n 2", "perplexity -f " + q(txt) + " -c 8",
                                          "bench -p 4 -n 2 -r 1", "serve --port 0 -np 1",
                                          "lora-merge -o " + q(f.base + ".merged.gguf")};
  struct Case {
    std::string value, want;
  };
  const std::vector<Case> cases = {{"/nonexistent/a.gguf", "/nonexistent/a.gguf"},
                                   {f.base, f.base + ": lora: general.type is not 'adapter'"},
                                   {f.strong + ":nan", "the scale must be a finite number"}};
  for (const std::string& tool : tools) {
    for (const Case& c : cases) {
      SCOPED_TRACE(tool + " --lora " + c.value);
      const CliOutput r = run_tessera(tool + " -t 1 -m " + q(f.base) + " --lora " + q(c.value));
      EXPECT_EQ(r.status, 1) << r.err;
      const size_t at = r.err.find("tessera: ");
      ASSERT_NE(at, std::string::npos) << r.err;
      EXPECT_NE(r.err.find(c.want, at), std::string::npos) << r.err;
    }
  }
  std::remove(txt.c_str());
}

TEST(LoraCli, MergeFlagsAndHelp) {
  const Files& f = files();
  CliOutput r = run_tessera("lora-merge -m " + q(f.base) + " --lora " + q(f.weak) + " -o " + q(f.base + ".q.gguf") +
                            " --type q4_0");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("tessera: lora-merge: --type 'q4_0' is not f32, f16 or bf16"), std::string::npos) << r.err;
  r = run_tessera("lora-merge -m " + q(f.base) + " -o " + q(f.base + ".none.gguf"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--lora"), std::string::npos) << r.err;
  r = run_tessera("lora-merge -m " + q(f.base) + " --lora " + q(f.weak) + " -o " + q(f.base));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("is the base model"), std::string::npos) << r.err;
  for (const char* tool : {"run", "chat", "serve", "perplexity", "bench", "lora-merge"}) {
    r = run_tessera(std::string(tool) + " --help");
    EXPECT_EQ(r.status, 0) << tool;
    EXPECT_NE(r.out.find("--lora"), std::string::npos) << tool << ": " << r.out;
  }
}

}  // namespace
}  // namespace tessera::test
