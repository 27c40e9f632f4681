// The gradient of a whole LLaMA's loss (the architecture's own forward graph, attending
// over the batch, and the backward graph of it) against finite differences of the same
// float graph: the end-to-end check that the rules compose. The op-level checks in
// double are in tests/ops (grad mode); here float noise bounds the tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "tokenizer/train_vocab.h"
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

class ModelGrad : public ::testing::TestWithParam<int64_t> {};

TEST_P(ModelGrad, EveryParameterAgainstFiniteDifferences) {
  CpuBackend backend(2);
  std::unique_ptr<TrainModel> m = tiny_model(backend, GetParam());
  ASSERT_NE(m, nullptr);
  Result<std::unique_ptr<TrainGraph>> tg = build_train_graph(*m, 2, 8, true, backend);
  ASSERT_TRUE(tg.is_ok()) << tg.status().message();
  std::vector<int32_t> tokens(16), targets(16);
  for (size_t i = 0; i < 16; ++i) {
    tokens[i] = int32_t(3 + (i * 37) % 280);
    targets[i] = i % 5 == 4 ? -1 : int32_t(3 + (i * 53 + 11) % 280);  // some positions not scored
  }
  set_micro_batch(**tg, backend, tokens.data(), targets.data(), 1.0f);
  loss_of(**tg, backend);
  for (size_t i = 0; i < m->params.size(); ++i) {
    Tensor* p = m->params[i];
    SCOPED_TRACE(p->name);
    ASSERT_NE((*tg)->grads.grads[i], nullptr);
    std::vector<float> g(size_t(p->nelements()));
    backend.get_tensor((*tg)->grads.grads[i], g.data(), 0, g.size() * sizeof(float));
    std::vector<size_t> order(g.size());
    for (size_t j = 0; j < order.size(); ++j) order[j] = j;
    std::partial_sort(order.begin(), order.begin() + std::min<size_t>(3, order.size()), order.end(),
                      [&](size_t a, size_t b) { return std::fabs(g[a]) > std::fabs(g[b]); });
    std::vector<float> w = read_param(backend, p);
    for (size_t k = 0; k < std::min<size_t>(3, order.size()); ++k) {
      const size_t j = order[k];
      const float orig = w[j];
      w[j] = orig + kStep;
      write_param(backend, p, w);
      const double up = loss_of(**tg, backend);
      w[j] = orig - kStep;
      write_param(backend, p, w);
      const double down = loss_of(**tg, backend);
      w[j] = orig;
      write_param(backend, p, w);
      const double fd = (up - down) / (2.0 * double(kStep));
      EXPECT_NEAR(g[j], fd, kAbs + kRel * std::fabs(fd)) << "element " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(HeadLayouts, ModelGrad, ::testing::Values(int64_t(4), int64_t(2)));

}  // namespace
}  // namespace tessera::train
