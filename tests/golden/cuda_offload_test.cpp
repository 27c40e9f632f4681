// The shared LLaMA files on the GPU (-ngl): loaded with ModelParams::n_gpu_layers = 99
// (every layer and the output; the token embedding's rows are taken on the CPU) and with
// a partial offload (the last layer of mini-llama's 2, the last 3 of stories260K's 5: a
// cut at a layer boundary, the output on the CPU). The golden prompt is decoded in one
// batch (the flash attention kernel, cuBLAS) and in batches of 3 tokens (the decode
// kernel's multi-row tiles, the matrix-vector kernels), then 16 of the reference's greedy
// tokens are fed one at a time (decode steps). Every logit row is compared with the same
// file run on the CPU alone, the prompt's with the reference's logits (../shared/README.md),
// and for stories260K, whose logits are decisive, each row's argmax with the reference's
// greedy token up to its first near-tie.
//
// NMSE allowed:
//   against the CPU alone   1e-5 F32 / F16 files   the GPU's prompt GEMMs of F16 weights round
//                                                  activations to F16 (~1e-7 a matmul), the rest
//                                                  is F32 in another order
//                           1e-3 quantized files   the GPU's matrix-vector kernels quantize
//                                                  activations per 32 (F32 scale) and its prompt
//                                                  GEMMs keep them F16, where the CPU quantizes
//                                                  them to the partner type: activation rounding,
//                                                  the shared rule's allowance for it
//   against the reference   the shared rule: 1e-5 F32 / F16 files, 1e-3 quantized ones
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/cuda.h"
#include "common/runtime_test_util.h"
#include "common/test_util.h"
#include "model/model_impl.h"
#include "tessera/context.h"
#include "tessera/model.h"
#include "tessera/sampler.h"

namespace tessera {
namespace {

constexpr size_t kSteps = 16;  // decode steps after the prompt

struct OffloadCase {
  const char* golden;  // file under shared/golden
  int n_gpu_layers;
  double max_nmse;  // against the CPU and against the reference (the shared rule)
  bool check_greedy;
};

std::ostream& operator<<(std::ostream& os, const OffloadCase& c) {
  return os << c.golden << " -ngl " << c.n_gpu_layers;
}

// Steps of the reference's greedy sequence before its first top-1/top-2 gap under 0.02.
size_t comparable_steps(const nlohmann::json& golden) {
  const auto& steps = golden["top5_per_step"];
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i][0][1].get<double>() - steps[i][1][1].get<double>() < 0.02) return i;
  }
  return steps.size();
}

// The logits after the prompt (decoded in batches of `batch`), then after each of `forced`
// decoded alone: one row each.
std::vector<std::vector<float>> logit_rows(const Model& model, const std::vector<TokenId>& prompt,
                                           const std::vector<TokenId>& forced, int64_t batch) {
  ContextParams cp;
  cp.n_threads = 2;
  cp.n_batch = batch;
  cp.n_ctx = int64_t(prompt.size() + forced.size());
  Result<std::unique_ptr<Context>> ctx = Context::create(model, cp);
  EXPECT_TRUE(ctx.is_ok()) << ctx.status().message();
  std::vector<std::vector<float>> rows;
  if (!ctx) return rows;
  const Status st = (*ctx)->decode(prompt);
  EXPECT_TRUE(st.is_ok()) << st.message();
  rows.emplace_back((*ctx)->logits().begin(), (*ctx)->logits().end());
  for (TokenId t : forced) {
    const TokenId one[] = {t};
    const Status step = (*ctx)->decode(one);
    EXPECT_TRUE(step.is_ok()) << step.message();
    if (!step.is_ok()) break;
    rows.emplace_back((*ctx)->logits().begin(), (*ctx)->logits().end());
  }
  return rows;
}

class CudaOffload : public ::testing::TestWithParam<OffloadCase> {};

TEST_P(CudaOffload, MatchesTheCpuAndTheReference) {
  if (const std::string reason = cuda::unavailable_reason(); !reason.empty()) {
    GTEST_SKIP() << "no CUDA: " << reason;
  }
  const OffloadCase& c = GetParam();
  TESSERA_REQUIRE_SHARED(golden_path, std::string("golden/") + c.golden);
  std::ifstream in(golden_path);
  const nlohmann::json golden = nlohmann::json::parse(in);
  TESSERA_REQUIRE_SHARED(model_path, "models/" + golden["model"].get<std::string>());

  Result<std::unique_ptr<Model>> cpu = Model::load(model_path);
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().message();
  ModelParams mp;
  mp.n_gpu_layers = c.n_gpu_layers;
  Result<std::unique_ptr<Model>> gpu = Model::load(model_path, mp);
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().message();
  // The GPU's layers are the last n_gpu_layers, with their weights in device memory.
  const detail::ModelImpl& impl = (*gpu)->impl();
  const int64_t n_layer = (*gpu)->info().n_layer;
  ASSERT_TRUE(impl.device_weights && !impl.device_weights->buffers.empty());
  for (int64_t il = 0; il < n_layer; ++il) {
    EXPECT_EQ(impl.placement.gpu_of(impl.placement.layer[size_t(il)]) >= 0, il >= n_layer - c.n_gpu_layers)
        << "layer " << il;
  }
  EXPECT_EQ(impl.placement.gpu_of(impl.placement.output) >= 0, c.n_gpu_layers > n_layer);

  const auto prompt = golden["prompt_ids"].get<std::vector<TokenId>>();
  const auto ref_logits = golden["logits_last_prompt"].get<std::vector<float>>();
  const auto greedy = golden["greedy"].get<std::vector<TokenId>>();
  const std::vector<TokenId> forced(greedy.begin(), greedy.begin() + long(std::min(kSteps, greedy.size())));
  const size_t n_check = c.check_greedy ? std::min(comparable_steps(golden), forced.size() + 1) : 0;

  for (int64_t batch : {512, 3}) {
    SCOPED_TRACE("prompt in batches of " + std::to_string(batch));
    const std::vector<std::vector<float>> want = logit_rows(**cpu, prompt, forced, batch);
    const std::vector<std::vector<float>> got = logit_rows(**gpu, prompt, forced, batch);
    ASSERT_EQ(got.size(), forced.size() + 1);
    ASSERT_EQ(want.size(), got.size());
    const double vs_ref = test::nmse(got[0], ref_logits);
    EXPECT_LE(vs_ref, c.max_nmse) << "prompt logits against the reference";
    RecordProperty("nmse_ref_b" + std::to_string(batch), std::to_string(vs_ref));
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double e = test::nmse(got[i], want[i]);
      EXPECT_LE(e, c.max_nmse) << "logit row " << i << " (0: the prompt's) against the CPU";
      worst = std::max(worst, e);
    }
    RecordProperty("nmse_cpu_b" + std::to_string(batch), std::to_string(worst));
    for (size_t i = 0; i < n_check; ++i) {
      EXPECT_EQ(argmax(got[i]), greedy[i]) << "greedy step " << i << " of " << n_check;
    }
  }
}

std::vector<OffloadCase> offload_cases() {
  std::vector<OffloadCase> cases;
  const std::pair<const char*, double> files[] = {
      {"stories260K.once-upon.json", 1e-5},  {"stories260K.little-dog.json", 1e-5},
      {"mini-llama-f16.hello.json", 1e-5},   {"mini-llama-Q8_0.hello.json", 1e-3},
      {"mini-llama-Q4_0.hello.json", 1e-3},  {"mini-llama-Q4_1.hello.json", 1e-3},
      {"mini-llama-Q5_0.hello.json", 1e-3},  {"mini-llama-Q5_1.hello.json", 1e-3},
      {"mini-llama-Q2_K.hello.json", 1e-3},  {"mini-llama-Q3_K.hello.json", 1e-3},
      {"mini-llama-Q4_K.hello.json", 1e-3},  {"mini-llama-Q5_K.hello.json", 1e-3},
      {"mini-llama-Q6_K.hello.json", 1e-3},
  };
  for (const auto& [file, max_nmse] : files) {
    const bool stories = std::string(file).starts_with("stories");
    cases.push_back({file, 99, max_nmse, stories});
    cases.push_back({file, stories ? 3 : 1, max_nmse, stories});  // of 5 / of 2 layers
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Files, CudaOffload, ::testing::ValuesIn(offload_cases()), [](const auto& p) {
  std::string name = p.param.golden;
  name = name.substr(0, name.find(".json")) + "_ngl" + std::to_string(p.param.n_gpu_layers);
  for (char& ch : name) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
});

}  // namespace
}  // namespace tessera
