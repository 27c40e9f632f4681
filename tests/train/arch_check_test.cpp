// train::check_differentiable: the walk of an architecture's forward graph before any
// training, which refuses an op without a gradient rule by the op's and the
// architecture's names.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "common/test_util.h"
#include "core/ops.h"
#include "tokenizer/train_vocab.h"
#include "tessera/model.h"
#include "train/arch_check.h"
#include "train/arch_lora.h"
#include "train/lora_model.h"

namespace tessera::train {
namespace {

std::unique_ptr<TrainModel> tiny_llama(Backend& backend) {
  std::string text;
  for (int i = 0; i < 50; ++i) text += "one two three four five six seven eight nine ten. ";
  VocabTrainParams vp;
  vp.vocab_size = 290;
  Result<TrainedVocab> v = train_vocab(text, vp);
  EXPECT_TRUE(v.is_ok()) << v.status().message();
  gguf::Writer keys;
  EXPECT_TRUE(write_vocab(keys, *v).is_ok());
  ModelShape s;
  s.n_embd = 16;
  s.n_layer = 1;
  s.n_head = 2;
  s.n_head_kv = 2;
  s.n_ff = 24;
  s.n_ctx = 8;
  Result<std::unique_ptr<TrainModel>> m = create_model(s, keys, "arch-check", 3, backend);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  return m ? std::move(*m) : nullptr;
}

// LLaMA's graph with its logits clamped: clamp has no gradient rule.
Tensor* clamped_build(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in) {
  return ops::clamp(g, find_arch("llama")->build(g, h, w, in), -30.0f, 30.0f);
}

TEST(ArchCheck, PassesLlamaAndNamesTheOpAndTheArchitectureOtherwise) {
  CpuBackend backend(1);
  std::unique_ptr<TrainModel> m = tiny_llama(backend);
  ASSERT_NE(m, nullptr);
  const Status ok = check_differentiable(*m, "train");
  EXPECT_TRUE(ok.is_ok()) << ok.message();
  const Arch clamped{"clamped", m->arch->variant, m->arch->weights, clamped_build};
  m->arch = &clamped;
  const Status s = check_differentiable(*m, "finetune");
  EXPECT_EQ(s.message(), "finetune: architecture 'clamped' uses op clamp, which has no gradient rule yet");
}

// Every registered decoder architecture's reference model (shared/archs/models,
// shared/archs2/models) passes the walk with a LoRA on all its projections: the list
// docs/training.md gives.
class ArchCheckReference : public ::testing::TestWithParam<const char*> {};

TEST_P(ArchCheckReference, ALoraOnEveryProjectionIsDifferentiable) {
  const std::string set_and_name = GetParam();  // "archs2/olmoe": ../shared/archs2/models/olmoe.gguf
  const size_t slash = set_and_name.find('/');
  TESSERA_REQUIRE_SHARED(path, set_and_name.substr(0, slash) + "/models/" + set_and_name.substr(slash + 1) + ".gguf");
  CpuBackend backend(1);
  ArchLora m;
  ASSERT_NO_FATAL_FAILURE(load_arch_lora(path, backend, m));
  const Status s = check_differentiable(*m.lora, "finetune");
  EXPECT_TRUE(s.is_ok()) << s.message();
}

INSTANTIATE_TEST_SUITE_P(ReferenceModels, ArchCheckReference,
                         ::testing::Values("archs/llama3", "archs/falcon", "archs/baichuan", "archs/starcoder",
                                           "archs/refact", "archs/persimmon", "archs/gpt2", "archs/gptneox", "archs/mpt",
                                           "archs/bloom", "archs/qwen2", "archs/phi3", "archs/gemma", "archs2/mixtral",
                                           "archs2/qwen2moe", "archs2/olmoe", "archs2/gemma2", "archs2/phi3lr",
                                           "archs2/starcoder2", "archs2/command-r", "archs2/granite", "archs2/olmo2"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string name = std::string(i.param).substr(std::string(i.param).find('/') + 1);
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace tessera::train
