// The RoPE scaling flags (--rope-scaling, --rope-scale, --rope-freq-base, --rope-freq-scale,
// --yarn-*): every command that makes a context takes them, bad values are usage errors
// naming the flag, and set as the goldens of tests/golden/rope/ were made they give the
// reference's logits through `tessera logits` and its greedy tokens through `tessera serve`.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cli_run.h"
#include "common/runtime_test_util.h"
#include "common/test_util.h"
#include "golden/server_api.h"

namespace tessera {
namespace {

using test::nmse;

using nlohmann::json;
using test::CliOutput;
using test::run_tessera;

const char* const kFlags[] = {"--rope-scaling",  "--rope-scale",       "--rope-freq-base",
                              "--rope-freq-scale", "--yarn-orig-ctx",  "--yarn-ext-factor",
                              "--yarn-attn-factor", "--yarn-beta-fast", "--yarn-beta-slow"};

json read_golden(const std::string& name) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/tests/golden/rope/" + name);
  EXPECT_TRUE(in.good()) << name;
  return json::parse(in, nullptr, false);
}

/// The RoPE flags that set a golden's "context" (rope_freq_base -> --rope-freq-base 40000),
/// without its cache types.
std::vector<std::string> rope_flags_of(const json& golden) {
  std::vector<std::string> out;
  for (const auto& [key, value] : golden["context"].items()) {
    if (key.rfind("type_", 0) == 0) continue;
    std::string flag = "--" + key;
    for (char& c : flag) c = c == '_' ? '-' : c;
    out.push_back(flag);
    out.push_back(value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out;
}

/// All of a golden's context as `tessera logits` flags: the RoPE flags, and --kv-f32 for
/// the F32 cache the goldens were made with.
std::string flags_of(const json& golden) {
  std::string out = golden["context"].value("type_k", "f16") == "f32" ? " --kv-f32" : "";
  for (const std::string& arg : rope_flags_of(golden)) out += " " + arg;
  return out;
}

std::string ids_of(const json& golden) {
  std::string out;
  for (const json& id : golden["prompt_ids"]) {
    if (!out.empty()) out += ',';  // apart: `"," + id.dump()` trips GCC 12's -Wstringop-overflow (false positive)
    out += id.dump();
  }
  return out;
}

/// `tessera logits` on the golden's model and prompt with `flags`, `n` greedy steps.
json cli_logits_json(const json& golden, const std::string& flags, int n = 1) {
  const std::string model = test::shared_file("models/" + golden["model"].get<std::string>());
  const CliOutput o = run_tessera("logits -m " + model + " --prompt-ids " + ids_of(golden) + " -t 2 -n " +
                                  std::to_string(n) + flags);
  EXPECT_EQ(o.status, 0) << flags << ": " << o.err;
  return json::parse(o.out, nullptr, false);
}

/// The logits after the prompt of cli_logits_json.
std::vector<float> cli_logits(const json& golden, const std::string& flags) {
  const json j = cli_logits_json(golden, flags);
  if (j.is_discarded()) return {};
  return j["logits_last_prompt"].get<std::vector<float>>();
}

TEST(RopeFlags, EveryCommandThatMakesAContextTakesThem) {
  for (const std::string cmd : {"run", "chat", "serve", "perplexity", "embed", "bench", "logits", "parallel", "imatrix"}) {
    const CliOutput o = run_tessera(cmd + " --help");
    ASSERT_EQ(o.status, 0) << cmd;
    for (const char* flag : kFlags) EXPECT_NE(o.out.find(flag), std::string::npos) << cmd << " " << flag;
  }
}

TEST(RopeFlags, BadValuesAreUsageErrorsNamingTheFlag) {
  const std::string bad[] = {"--rope-scaling longrope",  "--rope-scaling ''",      "--rope-scale 0",
                             "--rope-scale -2",           "--rope-scale 1e-40",     "--rope-freq-base nan",
                             "--rope-freq-base abc",      "--rope-freq-scale inf",  "--rope-freq-scale 0",
                             "--yarn-orig-ctx -1",        "--yarn-orig-ctx 1.5",    "--yarn-orig-ctx 4294967296",
                             "--yarn-ext-factor nan",     "--yarn-attn-factor 0",   "--yarn-attn-factor -1",
                             "--yarn-beta-fast 0",        "--yarn-beta-slow -1",    "--yarn-beta-slow x"};
  for (const std::string& flag : bad) {
    const CliOutput o = run_tessera("logits --prompt-ids 1,2 -n 1 " + flag);
    EXPECT_EQ(o.status, 2) << flag << ": " << o.err;
    EXPECT_NE(o.err.find(flag.substr(0, flag.find(' '))), std::string::npos) << o.err;
  }
  // Both spellings of the frequency scale at once: one of them would be lost.
  const CliOutput both = run_tessera("logits --prompt-ids 1,2 -n 1 --rope-scale 2 --rope-freq-scale 0.5");
  EXPECT_EQ(both.status, 2) << both.err;
  EXPECT_NE(both.err.find("--rope-freq-scale"), std::string::npos) << both.err;
  // Every command checks them before it loads anything.
  const std::string text = test::write_temp_file("rope_flags.txt", "In the beginning");
  for (const std::string& cmd : std::vector<std::string>{"run -p hi", "chat", "serve --port 0", "perplexity -f " + text,
                                                         "embed -p hi", "bench", "parallel", "imatrix -f " + text}) {
    const CliOutput o = run_tessera(cmd + " --yarn-beta-fast -3");
    EXPECT_EQ(o.status, 2) << cmd << ": " << o.err;
    EXPECT_NE(o.err.find("--yarn-beta-fast"), std::string::npos) << cmd << ": " << o.err;
  }
}

// The flags as each golden's context says, through `tessera logits`: the reference's
// logits; without them, other ones (the flags change what the model computes).
TEST(RopeFlags, LogitsWithTheFlagsAreTheReferences) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  for (const std::string name : {"stories260K.none-base.json", "stories260K.linear.json", "stories260K.yarn.json"}) {
    SCOPED_TRACE(name);
    const json golden = read_golden(name);
    ASSERT_FALSE(golden.is_discarded());
    const auto ref = golden["logits_last_prompt"].get<std::vector<float>>();
    const std::vector<float> with = cli_logits(golden, flags_of(golden));
    ASSERT_EQ(with.size(), ref.size());
    EXPECT_LE(nmse(with, ref), 1e-5) << flags_of(golden);
    const std::vector<float> without = cli_logits(golden, " --kv-f32");
    ASSERT_EQ(without.size(), ref.size());
    EXPECT_GT(nmse(without, ref), 1e-3) << "the flags changed nothing";
  }
}

TEST(RopeFlags, RopeScaleIsTheInverseOfTheFreqScale) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const json golden = read_golden("stories260K.linear.json");
  const std::vector<float> scale = cli_logits(golden, " --rope-scaling linear --rope-scale 4");
  const std::vector<float> freq_scale = cli_logits(golden, " --rope-scaling linear --rope-freq-scale 0.25");
  ASSERT_FALSE(scale.empty());
  EXPECT_EQ(scale, freq_scale);
  // With the default F16 cache: near the golden's (F32 cache) logits, far from the unscaled ones.
  EXPECT_LE(nmse(scale, golden["logits_last_prompt"].get<std::vector<float>>()), 1e-3);
}

// The server's context takes them too: at temperature 0 it generates what `tessera logits`
// does with the same flags (whose logits are the reference's, above), which is not what
// it does without them.
TEST(RopeFlags, TheServerAppliesThem) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const json golden = read_golden("stories260K.yarn.json");
  std::string flags;
  for (const std::string& arg : rope_flags_of(golden)) flags += " " + arg;
  const auto with = cli_logits_json(golden, flags, 12)["greedy"].get<std::vector<int>>();
  const auto without = cli_logits_json(golden, "", 12)["greedy"].get<std::vector<int>>();
  ASSERT_NE(with, without) << "a golden whose flags do not change the greedy tokens";
  std::vector<std::string> args = {"-np", "1", "-c", "512"};
  for (const std::string& arg : rope_flags_of(golden)) args.push_back(arg);
  auto server = test::start_server(args);
  ASSERT_TRUE(server);
  test::Api api(server->port(), "");
  const test::Reply r = api.post("/completion", json{{"prompt", golden["prompt_ids"]},
                                                     {"n_predict", with.size()},
                                                     {"temperature", 0},
                                                     {"return_tokens", true}});
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["tokens"].get<std::vector<int>>(), with) << r.text;
  EXPECT_EQ(server->stop(), 0) << server->log();
}

}  // namespace
}  // namespace tessera
