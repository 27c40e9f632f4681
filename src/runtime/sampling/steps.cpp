// The sampler steps: thin SamplerStep wrappers around the functions of sampler.h, plus
// the two with state of their own (penalty history, random draw).
#include <deque>
#include <random>

#include "runtime/sampling/mirostat_step.h"
#include "tessera/sampler.h"

namespace tessera {
namespace {

/// A stateless step: a name and a function of the candidates.
template <typename Fn>
class FunctionStep : public SamplerStep {
 public:
  FunctionStep(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  void apply(Candidates& c) override { fn_(c); }

 private:
  std::string name_;
  Fn fn_;
};

template <typename Fn>
std::unique_ptr<SamplerStep> function_step(std::string name, Fn fn) {
  return std::make_unique<FunctionStep<Fn>>(std::move(name), std::move(fn));
}

class PenaltiesStep : public SamplerStep {
 public:
  PenaltiesStep(int32_t last_n, float repeat, float frequency, float presence)
      : last_n_(last_n), repeat_(repeat), frequency_(frequency), presence_(presence) {}
  std::string name() const override { return "penalties"; }
  void apply(Candidates& c) override {
    const std::vector<TokenId> recent(history_.begin(), history_.end());
    apply_penalties(c, recent, repeat_, frequency_, presence_);
  }
  Status accept(TokenId token, bool /*from_prompt*/) override {
    if (last_n_ == 0) return Status::ok();
    history_.push_back(token);
    if (last_n_ > 0 && history_.size() > static_cast<size_t>(last_n_)) history_.pop_front();
    return Status::ok();
  }
  void reset() override { history_.clear(); }

 private:
  int32_t last_n_;
  float repeat_, frequency_, presence_;
  std::deque<TokenId> history_;
};

class GreedyStep : public SamplerStep {
 public:
  std::string name() const override { return "greedy"; }
  void apply(Candidates& c) override { pick_greedy(c); }
  bool greedy() const override { return true; }
};

class DrawStep : public SamplerStep {
 public:
  explicit DrawStep(uint64_t seed) : seed_(seed), rng_(seed) {}
  std::string name() const override { return "draw"; }
  void apply(Candidates& c) override {
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;  // [0, 1), 53 bits
    pick_at(c, u);
  }
  void reset() override { rng_.seed(seed_); }
  bool draws() const override { return true; }

 private:
  uint64_t seed_;
  std::mt19937_64 rng_;
};

}  // namespace

std::unique_ptr<SamplerStep> make_logit_bias_step(std::vector<LogitBias> biases) {
  return function_step("logit-bias",
                       [b = std::move(biases)](Candidates& c) { apply_logit_bias(c, b); });
}

std::unique_ptr<SamplerStep> make_penalties_step(int32_t last_n, float repeat, float frequency,
                                                 float presence) {
  return std::make_unique<PenaltiesStep>(last_n, repeat, frequency, presence);
}

std::unique_ptr<SamplerStep> make_top_k_step(int32_t k, size_t min_keep) {
  return function_step("top-k", [=](Candidates& c) { top_k(c, k, min_keep); });
}

std::unique_ptr<SamplerStep> make_top_p_step(float p, size_t min_keep) {
  return function_step("top-p", [=](Candidates& c) { top_p(c, p, min_keep); });
}

std::unique_ptr<SamplerStep> make_min_p_step(float p, size_t min_keep) {
  return function_step("min-p", [=](Candidates& c) { min_p(c, p, min_keep); });
}

std::unique_ptr<SamplerStep> make_typical_step(float p, size_t min_keep) {
  return function_step("typical", [=](Candidates& c) { typical(c, p, min_keep); });
}

std::unique_ptr<SamplerStep> make_tail_free_step(float z, size_t min_keep) {
  return function_step("tail-free", [=](Candidates& c) { tail_free(c, z, min_keep); });
}

std::unique_ptr<SamplerStep> make_temperature_step(float t) {
  return function_step("temperature", [=](Candidates& c) { temperature(c, t); });
}

std::unique_ptr<SamplerStep> make_greedy_step() {
  return std::make_unique<GreedyStep>();
}

std::unique_ptr<SamplerStep> make_draw_step(uint64_t seed) {
  return std::make_unique<DrawStep>(seed);
}

std::unique_ptr<SamplerStep> make_mirostat_v1_step(float tau, float eta, int32_t m) {
  return std::make_unique<sampling::MirostatStep>(1, tau, eta, m);
}

std::unique_ptr<SamplerStep> make_mirostat_v2_step(float tau, float eta) {
  return std::make_unique<sampling::MirostatStep>(2, tau, eta, 100);
}

}  // namespace tessera
