// finetune_model over other architectures than LLaMA, each through its own graph builder
// (the reference models of shared/archs/models): 50 steps lower the loss on a small text,
// and the adapter written loads (as `tessera run --lora` loads it) and changes the
// logits; an architecture with an op that has no gradient rule is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/cli_run.h"
#include "common/test_util.h"
#include "tessera/context.h"
#include "tessera/model.h"
#include "tessera/tokenizer.h"
#include "tessera/train.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("tessera_ftarch_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

FinetuneOptions options(const std::string& base, const fs::path& dir) {
  std::string text;
  for (int i = 0; i < 120; ++i) text += i % 2 ? "the cat ran to the park.\n" : "a dog sat on a mat.\n";
  std::ofstream(dir / "text.txt") << text;
  FinetuneOptions o;
  o.base_path = base;
  o.text_path = (dir / "text.txt").string();
  o.output_path = (dir / "adapter.gguf").string();
  o.n_ctx = 32;
  o.steps = 50;
  o.batch = 4;
  o.lr = 1e-2f;
  o.warmup = 5;
  o.eval_every = 0;
  o.n_threads = 2;
  return o;
}

// The logits after `prompt`, with the adapter at `adapter` or without.
std::vector<float> logits(const std::string& base, const std::string& adapter, const std::string& prompt) {
  ModelParams mp;
  if (!adapter.empty()) mp.adapters.push_back({adapter, 1.0f});
  Result<std::unique_ptr<Model>> m = Model::load(base, mp);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  if (!m) return {};
  ContextParams cp;
  cp.n_ctx = 32;
  Result<std::unique_ptr<Context>> c = Context::create(**m, cp);
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  if (!c) return {};
  EXPECT_TRUE((*c)->decode((*m)->tokenizer()->encode(prompt, true)).is_ok());
  const std::span<const float> l = (*c)->logits();
  return {l.begin(), l.end()};
}

class FinetuneArch : public ::testing::TestWithParam<const char*> {};

TEST_P(FinetuneArch, LowersTheLossAndTheAdapterChangesTheLogits) {
  const std::string set_and_name = GetParam();  // "archs/qwen2": ../shared/archs/models/qwen2.gguf
  const std::string name = set_and_name.substr(set_and_name.find('/') + 1);
  TESSERA_REQUIRE_SHARED(base, set_and_name.substr(0, set_and_name.find('/')) + "/models/" + name + ".gguf");
  const fs::path dir = temp_dir(name);
  const FinetuneOptions o = options(base, dir);
  std::map<int64_t, double> loss;
  const Status s = finetune_model(o, [&](const TrainProgress& p) {
    if (p.phase == TrainProgress::Phase::Training) loss[p.step] = p.loss;
  });
  ASSERT_TRUE(s.is_ok()) << s.message();
  ASSERT_EQ(loss.size(), 50u);
  double first = 0, last = 0;
  for (int64_t step = 1; step <= 5; ++step) first += loss.at(step) / 5;
  for (int64_t step = 46; step <= 50; ++step) last += loss.at(step) / 5;
  EXPECT_LT(last, 0.85 * first) << name << ": " << first << " -> " << last;

  const std::vector<float> without = logits(base, "", "the cat");
  const std::vector<float> with = logits(base, o.output_path, "the cat");
  ASSERT_EQ(with.size(), without.size());
  ASSERT_FALSE(with.empty());
  double diff = 0;
  for (size_t i = 0; i < with.size(); ++i) diff = std::max(diff, double(std::fabs(with[i] - without[i])));
  EXPECT_GT(diff, 1e-2) << name << ": the adapter does not change the logits";
  const CliOutput run = run_tessera("run -m '" + base + "' --lora '" + o.output_path + "' -p 'the cat' -n 4 --temp 0");
  EXPECT_EQ(run.status, 0) << run.err;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(ReferenceModels, FinetuneArch,
                         ::testing::Values("archs/qwen2", "archs/gemma", "archs/falcon", "archs2/command-r",
                                           "archs2/mixtral", "archs2/qwen2moe", "archs2/olmoe", "archs2/gemma2",
                                           "archs2/phi3lr", "archs2/starcoder2", "archs2/granite", "archs2/olmo2"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string name = std::string(i.param).substr(std::string(i.param).find('/') + 1);
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

// Falcon has a fused q/k/v projection and no gate: "all" adapts what it has, a named
// target it lacks is an error that lists what it has.
TEST(FinetuneArchTargets, ATargetTheArchitectureLacksIsNamed) {
  TESSERA_REQUIRE_SHARED(base, "archs/models/falcon.gguf");
  const fs::path dir = temp_dir("targets");
  FinetuneOptions o = options(base, dir);
  o.targets = "q,o";
  const Status s = finetune_model(o, {});
  EXPECT_NE(s.message().find("architecture 'falcon' has no 'q' projection (its projections: qkv, o, up, down)"),
            std::string::npos)
      << s.message();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera::test
