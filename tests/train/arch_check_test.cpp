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

// Every registered architecture's reference model (shared/archs/models) passes the walk
// with a LoRA on all its projections: the list docs/training.md gives.
class ArchCheckReference : public ::testing::TestWithParam<const char*> {};

TEST_P(ArchCheckReference, ALoraOnEveryProjectionIsDifferentiable) {
  TESSERA_REQUIRE_SHARED(path, std::string("archs/models/") + GetParam() + ".gguf");
  CpuBackend backend(1);
  ArchLora m;
  ASSERT_NO_FATAL_FAILURE(load_arch_lora(path, backend, m));
  const Status s = check_differentiable(*m.lora, "finetune");
  EXPECT_TRUE(s.is_ok()) << s.message();
}

INSTANTIATE_TEST_SUITE_P(ReferenceModels, ArchCheckReference,
                         ::testing::Values("llama3", "falcon", "baichuan", "starcoder", "refact", "persimmon", "gpt2",
                                           "gptneox", "mpt", "bloom", "qwen2", "phi3", "gemma"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

}  // namespace
}  // namespace tessera::train
