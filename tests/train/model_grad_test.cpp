// The gradient of a whole LLaMA's loss (the architecture's own forward graph, attending
// over the batch, and the backward graph of it) against finite differences of the same
// float graph: the end-to-end check that the rules compose. The op-level checks in
// double are in tests/ops (grad mode); here float noise bounds the tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "common/test_util.h"
#include "tokenizer/train_vocab.h"
#include "core/rng.h"
#include "tessera/model.h"
#include "train/arch_check.h"
#include "train/arch_lora.h"
#include "train/lora_model.h"
#include "train/train_graph.h"

namespace tessera::train {
namespace {

std::unique_ptr<TrainModel> tiny_model(Backend& backend, int64_t n_head_kv) {
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
  s.n_layer = 2;
  s.n_head = 4;
  s.n_head_kv = n_head_kv;
  s.n_ff = 24;
  s.n_ctx = 8;
  s.tied_output = n_head_kv == 4;  // both layouts of the output
  Result<std::unique_ptr<TrainModel>> m = create_model(s, keys, "grad-test", 3, backend);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  return m ? std::move(*m) : nullptr;
}

double loss_of(TrainGraph& tg, Backend& backend) {
  EXPECT_TRUE(backend.compute(tg.graph).is_ok());
  float l = 0;
  backend.get_tensor(tg.loss, &l, 0, sizeof(float));
  return l;
}

// h: large enough that the float loss's rounding (~3e-7) is small against h * |g|, small
// enough that the central difference's h^2 term is; checked on the largest gradients.
constexpr float kStep = 1e-2f;
constexpr double kRel = 3e-2;
constexpr double kAbs = 3e-4;

// Checks the gradient of every parameter of m whose name starts with `prefix` (its 3
// largest elements) against central differences of the loss over one micro-batch of 2
// windows of 8 tokens (or, where experts are routed, the loss being piecewise smooth, the
// one-sided difference away from a flip of the routing).
void check_against_finite_differences(TrainModel& m, Backend& backend, float step = kStep,
                                      const std::string& prefix = "") {
  // The gradients come from one run of the training graph; the perturbed losses from an
  // evaluation graph of the same forward ops (no backward: a third of the work), with its
  // own buffer, so the gradients read stay those of the unperturbed parameters.
  Result<std::unique_ptr<TrainGraph>> tg = build_train_graph(m, 2, 8, true, backend);
  ASSERT_TRUE(tg.is_ok()) << tg.status().message();
  Result<std::unique_ptr<TrainGraph>> eval = build_train_graph(m, 2, 8, false, backend);
  ASSERT_TRUE(eval.is_ok()) << eval.status().message();
  std::vector<int32_t> tokens(16), targets(16);
  for (size_t i = 0; i < 16; ++i) {
    tokens[i] = int32_t(3 + (i * 37) % 280);
    targets[i] = i % 5 == 4 ? -1 : int32_t(3 + (i * 53 + 11) % 280);  // some positions not scored
  }
  set_micro_batch(**tg, backend, tokens.data(), targets.data(), 1.0f);
  set_micro_batch(**eval, backend, tokens.data(), targets.data());
  const bool routed = m.h.n_expert > 0;
  const double train_loss = loss_of(**tg, backend);
  const double base_loss = loss_of(**eval, backend);
  EXPECT_NEAR(base_loss, train_loss, 1e-6 * std::fabs(train_loss));
  for (size_t i = 0; i < m.params.size(); ++i) {
    Tensor* p = m.params[i];
    if (!p->name.starts_with(prefix)) continue;
    SCOPED_TRACE(p->name);
    ASSERT_NE((*tg)->grads.grads[i], nullptr);
    std::vector<float> g(size_t(p->nelements()));
    backend.get_tensor((*tg)->grads.grads[i], g.data(), 0, g.size() * sizeof(float));
    std::vector<size_t> order(g.size());
    for (size_t j = 0; j < order.size(); ++j) order[j] = j;
    const size_t n = std::min<size_t>(3, order.size());
    std::partial_sort(order.begin(), order.begin() + n, order.end(),
                      [&](size_t a, size_t b) { return std::fabs(g[a]) > std::fabs(g[b]); });
    std::vector<float> w = read_param(backend, p);
    for (size_t k = 0; k < n; ++k) {
      const size_t j = order[k];
      const float orig = w[j];
      w[j] = orig + step;
      write_param(backend, p, w);
      const double up = loss_of(**eval, backend);
      w[j] = orig - step;
      write_param(backend, p, w);
      const double down = loss_of(**eval, backend);
      w[j] = orig;
      write_param(backend, p, w);
      const double fd = (up - down) / (2.0 * double(step));
      auto near = [&](double d) { return std::fabs(g[j] - d) <= kAbs + kRel * std::fabs(d); };
      if (routed && !near(fd)) {
        // A top-k choice that flips within the step makes the loss jump on that side: the
        // gradient is the smooth piece's, which the one-sided difference on the other side
        // measures.
        const double forward = (up - base_loss) / double(step);
        const double backward = (base_loss - down) / double(step);
        EXPECT_TRUE(near(forward) || near(backward))
            << "element " << j << ": " << g[j] << " against " << fd << " (one-sided " << forward << ", " << backward << ")";
      } else {
        EXPECT_NEAR(g[j], fd, kAbs + kRel * std::fabs(fd)) << "element " << j;
      }
    }
  }
}

class ModelGrad : public ::testing::TestWithParam<int64_t> {};

TEST_P(ModelGrad, EveryParameterAgainstFiniteDifferences) {
  CpuBackend backend(2);
  std::unique_ptr<TrainModel> m = tiny_model(backend, GetParam());
  ASSERT_NE(m, nullptr);
  check_against_finite_differences(*m, backend);
}

// A LoRA's a and b over a frozen F16 base (written and loaded as a model file), with b
// random so that a's gradient is not zero.
TEST_P(ModelGrad, LoraParametersAgainstFiniteDifferences) {
  CpuBackend backend(2);
  std::unique_ptr<TrainModel> full = tiny_model(backend, GetParam());
  ASSERT_NE(full, nullptr);
  const std::string path = ::testing::TempDir() + "lora_grad_base_" + std::to_string(GetParam()) + ".gguf";
  ASSERT_TRUE(model_writer(*full, backend, DType::F16).write(path).is_ok());
  ModelParams mp;
  mp.repack = false;
  Result<std::unique_ptr<Model>> base = Model::load(path, mp);
  ASSERT_TRUE(base.is_ok()) << base.status().message();
  Result<std::unique_ptr<TrainModel>> lora = create_lora(**base, {2, 4.0f, {"q", "k", "v", "o", "gate", "up", "down"}}, 5, backend);
  ASSERT_TRUE(lora.is_ok()) << lora.status().message();
  Rng rng(9);
  for (Tensor* p : (*lora)->params) {
    if (!p->name.ends_with(".lora_b")) continue;
    std::vector<float> v(size_t(p->nelements()));
    for (float& x : v) x = 0.1f * rng.normal();
    write_param(backend, p, v);
  }
  // A smaller step: a's effect goes through b and the scale alpha / r = 2, so the loss
  // curves faster along a than along a base weight.
  check_against_finite_differences(**lora, backend, 2e-3f);
}

INSTANTIATE_TEST_SUITE_P(HeadLayouts, ModelGrad, ::testing::Values(int64_t(4), int64_t(2)));

// A LoRA on every projection of each reference architecture's model (shared/archs, F16
// weights), through the architecture's own graph builder: its ops' rules compose. The
// first layer's a and b are checked (the path from them covers every op of the graph).
class ArchLoraGrad : public ::testing::TestWithParam<const char*> {};

TEST_P(ArchLoraGrad, LoraParametersAgainstFiniteDifferences) {
  const std::string set_and_name = GetParam();  // "archs2/gemma2": ../shared/archs2/models/gemma2.gguf
  const size_t slash = set_and_name.find('/');
  TESSERA_REQUIRE_SHARED(path, set_and_name.substr(0, slash) + "/models/" + set_and_name.substr(slash + 1) + ".gguf");
  CpuBackend backend(2);
  ArchLora m;
  ASSERT_NO_FATAL_FAILURE(load_arch_lora(path, backend, m));
  const Status differentiable = check_differentiable(*m.lora, "finetune");
  ASSERT_TRUE(differentiable.is_ok()) << differentiable.message();
  Rng rng(9);
  for (Tensor* p : m.lora->params) {
    if (!p->name.ends_with(".lora_b")) continue;
    std::vector<float> v(size_t(p->nelements()));
    for (float& x : v) x = 0.1f * rng.normal();
    write_param(backend, p, v);
  }
  check_against_finite_differences(*m.lora, backend, 2e-3f, "blk.0.");
}

INSTANTIATE_TEST_SUITE_P(ReferenceModels, ArchLoraGrad,
                         // One of each op path: biases and NeoX RoPE (qwen2), GeGLU and a scale
                         // (gemma), LayerNorm, fused q/k/v and a parallel block (falcon), ALiBi and
                         // an embedding norm (bloom), squared ReLU and q/k norms (persimmon), fused
                         // gate/up (phi3), learned positions (starcoder). The others: arch_check_test.
                         // Of archs2: experts routed by softmax (mixtral, olmoe) and by softmax with
                         // gated shared experts (qwen2moe), soft-capping and post-norms (gemma2),
                         // LongRoPE factors (phi3lr), granite's multipliers, whole-vector q/k
                         // norms and post-norms (olmo2), LayerNorm with biases (starcoder2).
                         ::testing::Values("archs/qwen2", "archs/gemma", "archs/falcon", "archs/bloom",
                                           "archs/persimmon", "archs/phi3", "archs/starcoder", "archs2/mixtral",
                                           "archs2/qwen2moe", "archs2/olmoe", "archs2/gemma2", "archs2/phi3lr",
                                           "archs2/starcoder2", "archs2/granite", "archs2/olmo2",
                                           "archs2/deepseek2"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param).substr(std::string(i.param).find('/') + 1);
                         });

}  // namespace
}  // namespace tessera::train
