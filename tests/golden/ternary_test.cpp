// The ternary mini-llama files (shared/models/mini-llama-TQ1_0.gguf, -TQ2_0.gguf) hold the
// same trits and scales in two layouts, and the reference engine gives both bit-identical
// logits (shared/README.md): its dot products with Q8_K are exact integer sums. tessera
// must too, at every vector level, on a prompt in one batch and in small ones; and each
// file's logits after the prompt must meet the reference's golden (NMSE <= 1e-3, the rule
// for quantized files).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/cpu/vec.h"
#include "common/test_util.h"
#include "tessera/context.h"
#include "tessera/model.h"
#include "tessera/sampler.h"

namespace tessera {
namespace {

double nmse(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return num / den;
}

// Logits after the prompt and after each of `steps` greedy tokens, concatenated.
std::vector<float> run(const std::string& path, const std::vector<TokenId>& prompt, int64_t batch, int steps) {
  Result<std::unique_ptr<Model>> model = Model::load(path);
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  if (!model) return {};
  ContextParams cp;
  cp.n_threads = 2;
  cp.n_batch = batch;
  cp.n_ctx = int64_t(prompt.size()) + steps;
  Result<std::unique_ptr<Context>> ctx = Context::create(**model, cp);
  EXPECT_TRUE(ctx.is_ok()) << ctx.status().message();
  if (!ctx) return {};
  Context& c = **ctx;
  EXPECT_TRUE(c.decode(prompt).is_ok());
  std::vector<float> out(c.logits().begin(), c.logits().end());
  for (int i = 0; i < steps; ++i) {
    const TokenId next[] = {argmax(c.logits())};
    EXPECT_TRUE(c.decode(next).is_ok());
    out.insert(out.end(), c.logits().begin(), c.logits().end());
  }
  return out;
}

class TernaryFilesTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = cpu::active_isa(); }
  void TearDown() override { cpu::set_active_isa(saved_); }
  cpu::Isa saved_ = cpu::Isa::Reference;
};

TEST_F(TernaryFilesTest, BothLayoutsGiveBitIdenticalLogitsAtEveryLevel) {
  TESSERA_REQUIRE_SHARED(tq1, "models/mini-llama-TQ1_0.gguf");
  TESSERA_REQUIRE_SHARED(tq2, "models/mini-llama-TQ2_0.gguf");
  TESSERA_REQUIRE_SHARED(golden_path, "golden/mini-llama-TQ1_0.hello.json");
  std::ifstream in(golden_path);
  const nlohmann::json golden = nlohmann::json::parse(in);
  const auto prompt = golden["prompt_ids"].get<std::vector<TokenId>>();
  int levels = 0;
  for (cpu::Isa isa : {cpu::Isa::Reference, cpu::Isa::Avx2, cpu::Isa::Avx512}) {
    if (!cpu::set_active_isa(isa)) continue;
    ++levels;
    for (int64_t batch : {int64_t(512), int64_t(5)}) {
      SCOPED_TRACE(std::string(cpu::isa_name(isa)) + ", batch " + std::to_string(batch));
      const std::vector<float> a = run(tq1, prompt, batch, 8);
      const std::vector<float> b = run(tq2, prompt, batch, 8);
      ASSERT_FALSE(a.empty());
      ASSERT_EQ(a.size(), b.size());
      size_t differ = 0;
      for (size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
      EXPECT_EQ(differ, 0u) << differ << " of " << a.size() << " logits differ";
    }
  }
  EXPECT_GE(levels, 1);
}

TEST_F(TernaryFilesTest, GoldensAtEveryLevel) {
  for (const char* type : {"TQ1_0", "TQ2_0"}) {
    TESSERA_REQUIRE_SHARED(golden_path, std::string("golden/mini-llama-") + type + ".hello.json");
    std::ifstream in(golden_path);
    const nlohmann::json golden = nlohmann::json::parse(in);
    // The TQ goldens name their model as "models/NAME" (the older goldens: "NAME").
    std::string model = golden["model"].get<std::string>();
    if (model.starts_with("models/")) model = model.substr(7);
    TESSERA_REQUIRE_SHARED(model_path, "models/" + model);
    const auto prompt = golden["prompt_ids"].get<std::vector<TokenId>>();
    const auto ref = golden["logits_last_prompt"].get<std::vector<float>>();
    for (cpu::Isa isa : {cpu::Isa::Reference, cpu::Isa::Avx2, cpu::Isa::Avx512}) {
      if (!cpu::set_active_isa(isa)) continue;
      const std::vector<float> logits = run(model_path, prompt, 512, 0);
      ASSERT_EQ(logits.size(), ref.size()) << type;
      const double e = nmse(logits, ref);
      EXPECT_LE(e, 1e-3) << type << " at " << cpu::isa_name(isa);
      RecordProperty(std::string("nmse_") + type + "_" + std::string(cpu::isa_name(isa)), std::to_string(e));
    }
  }
}

}  // namespace
}  // namespace tessera
