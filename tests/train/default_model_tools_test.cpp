// Every tool that reads a model takes the built-in one when -m is left out, as run, chat
// and serve do: perplexity, embed, tokenize, logits, parallel, finetune and lora-merge
// (whose merged model is a real GGUF file). Each names the built-in model in its --help,
// and where it prints a model name, prints the built-in one's. Skipped when the build has
// no default model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/cli_run.h"
#include "tessera/model.h"

namespace tessera::test {
namespace {

#define TESSERA_REQUIRE_DEFAULT_MODEL() \
  if (Model::default_model_name().empty()) GTEST_SKIP() << "this build has no default model"

std::string verse_text(int copies) {
  std::string s;
  for (int i = 0; i < copies; ++i) s += "And God said, Let there be light: and there was light.\n";
  return s;
}

TEST(DefaultModelTools, EveryModelToolSaysInItsHelpThatMIsTheBuiltInModel) {
  TESSERA_REQUIRE_DEFAULT_MODEL();
  for (const char* tool :
       {"perplexity", "embed", "tokenize", "logits", "parallel", "finetune", "lora-merge"}) {
    const CliOutput r = run_tessera(std::string(tool) + " --help");
    ASSERT_EQ(r.status, 0) << tool;
    EXPECT_NE(r.out.find("built-in " + Model::default_model_name()), std::string::npos)
        << tool << "\n"
        << r.out;
  }
}

TEST(DefaultModelTools, PerplexityTokenizeAndEmbedWithoutM) {
  TESSERA_REQUIRE_DEFAULT_MODEL();
  const std::string txt = write_temp_file("default_tools_ppl", verse_text(20));
  CliOutput r = run_tessera("perplexity -f '" + txt + "' -c 64 -t 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Final estimate: PPL = "), std::string::npos) << r.out << r.err;

  r = run_tessera("tokenize -p 'And God said'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("' God'"), std::string::npos) << r.out;

  r = run_tessera("embed -p 'And God said' -t 2");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"], Model::default_model_name());
  EXPECT_EQ(j["n_embd"], 256);
}

TEST(DefaultModelTools, LogitsAndParallelWithoutMNameTheBuiltInModel) {
  TESSERA_REQUIRE_DEFAULT_MODEL();
  CliOutput r = run_tessera("logits -p 'And God said' -t 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["model"], Model::default_model_name());
  r = run_tessera("parallel -n 4 --clients 2 --json -t 2");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"], Model::default_model_name());
  EXPECT_EQ(j["generated_tokens"], 8);
}

double final_ppl(const CliOutput& r) {
  const size_t at = r.out.find("Final estimate: PPL = ");
  return at == std::string::npos ? -1 : std::stod(r.out.substr(at + 22));
}

// The workflow of a user with only the binary: fine-tune the built-in model, merge the
// adapter into it, and run the merged file as any model. The base is Q8_0, so the merged
// weights are F16 and run through other kernels than the base's with the adapter beside
// it (docs/lora.md): the perplexities agree closely (greedy tokens may differ at
// near-ties, so they are not compared here; tests/unit/lora_cli_test.cpp compares them on
// F32 bases, where they agree).
TEST(DefaultModelTools, FinetuneAndLoraMergeWithoutM) {
  TESSERA_REQUIRE_DEFAULT_MODEL();
  const std::string txt = write_temp_file("default_tools_ft", verse_text(60));
  const std::string adapter = txt + ".lora.gguf", merged = txt + ".merged.gguf";
  CliOutput r = run_tessera("finetune -f '" + txt + "' -o '" + adapter +
                            "' --steps 8 -c 32 --batch 2 --lr 3e-3 --warmup 2 -t 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("base: the built-in " + Model::default_model_name()), std::string::npos)
      << r.err;
  r = run_tessera("lora-merge --lora '" + adapter + "' -o '" + merged + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("tensors merged"), std::string::npos) << r.err;
  r = run_tessera("inspect '" + merged + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("+ lora"), std::string::npos) << r.out;
  r = run_tessera("run -m '" + merged + "' -p 'And God said' -n 4 --temp 0 -t 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("And God said", 0), 0u) << r.out;

  const std::string ppl = " perplexity -f '" + txt + "' -c 64 -t 2";
  const double base = final_ppl(run_tessera(ppl));
  const double with_adapter = final_ppl(run_tessera(ppl + " --lora '" + adapter + "'"));
  const double with_merged = final_ppl(run_tessera(ppl + " -m '" + merged + "'"));
  ASSERT_GT(base, 0);
  ASSERT_GT(with_adapter, 0);
  EXPECT_LT(with_adapter, base * 0.9) << "the adapter should have learned the text";
  EXPECT_LT(std::abs(with_merged - with_adapter), 1e-3 * with_adapter)
      << with_merged << " vs " << with_adapter;
}

}  // namespace
}  // namespace tessera::test
