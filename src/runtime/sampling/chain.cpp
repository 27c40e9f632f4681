// SamplerChain: the steps in order, and the usual chain built from SamplerParams.
#include <cmath>
#include <string>

#include "tessera/sampler.h"

namespace tessera {
namespace {

Status check_params(const SamplerParams& p, int32_t n_vocab) {
  const auto bad = [](const std::string& what) { return Status::error("sampler: " + what); };
  if (p.mirostat < 0 || p.mirostat > 2) {
    return bad("mirostat must be 0 (off), 1 or 2, not " + std::to_string(p.mirostat));
  }
  if (!(p.repeat_penalty > 0.0f)) {
    return bad("the repeat penalty must be positive (1 = off), not " +
               std::to_string(p.repeat_penalty));
  }
  if (p.repeat_last_n < -1) {
    return bad("repeat-last-n must be -1 (all), 0 (off) or a count, not " +
               std::to_string(p.repeat_last_n));
  }
  if (!(p.mirostat_tau >= 0.0f) || !(p.mirostat_eta >= 0.0f)) {
    return bad("mirostat tau and eta must not be negative");
  }
  for (const LogitBias& b : p.logit_bias) {
    if (b.token < 0 || b.token >= n_vocab) {
      return bad("logit bias for token " + std::to_string(b.token) +
                 ", outside the vocabulary of " + std::to_string(n_vocab) + " tokens");
    }
    if (std::isnan(b.bias))
      return bad("logit bias for token " + std::to_string(b.token) + " is NaN");
  }
  return Status::ok();
}

}  // namespace

Result<SamplerChain> SamplerChain::create(const SamplerParams& p, int32_t n_vocab,
                                          std::unique_ptr<SamplerStep> grammar) {
  TESSERA_RETURN_IF_ERROR(check_params(p, n_vocab));
  SamplerChain chain;
  if (!p.logit_bias.empty()) chain.add(make_logit_bias_step(p.logit_bias));
  const bool penalised =
      p.repeat_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f;
  if (penalised && p.repeat_last_n != 0) {
    chain.add(make_penalties_step(p.repeat_last_n, p.repeat_penalty, p.frequency_penalty,
                                  p.presence_penalty));
  }
  if (grammar) chain.add(std::move(grammar));
  if (p.temperature <= 0.0f) {
    chain.add(make_greedy_step());
    return chain;
  }
  if (p.mirostat != 0) {
    if (p.temperature != 1.0f) chain.add(make_temperature_step(p.temperature));
    chain.add(p.mirostat == 1 ? make_mirostat_v1_step(p.mirostat_tau, p.mirostat_eta)
                              : make_mirostat_v2_step(p.mirostat_tau, p.mirostat_eta));
    chain.add(make_draw_step(p.seed));
    return chain;
  }
  if (p.top_k > 0) chain.add(make_top_k_step(p.top_k, p.min_keep));
  if (p.tfs_z < 1.0f) chain.add(make_tail_free_step(p.tfs_z, p.min_keep));
  if (p.typical_p < 1.0f) chain.add(make_typical_step(p.typical_p, p.min_keep));
  if (p.top_p < 1.0f) chain.add(make_top_p_step(p.top_p, p.min_keep));
  if (p.min_p > 0.0f) chain.add(make_min_p_step(p.min_p, p.min_keep));
  if (p.temperature != 1.0f) chain.add(make_temperature_step(p.temperature));
  chain.add(make_draw_step(p.seed));
  return chain;
}

void SamplerChain::add(std::unique_ptr<SamplerStep> step) { steps_.push_back(std::move(step)); }

void SamplerChain::apply(Candidates& c) {
  for (const auto& step : steps_) step->apply(c);
}

Status SamplerChain::pick(Candidates& c) {
  apply(c);
  if (c.selected < 0 || c.selected >= static_cast<int64_t>(c.items.size())) {
    bool any_allowed = false;
    for (const Candidate& t : c.items)
      any_allowed = any_allowed || !(std::isinf(t.logit) && t.logit < 0);
    if (!any_allowed) {
      return Status::error(
          "sampler: every token is forbidden here (by the grammar or a -inf logit bias)");
    }
    return Status::error(
        "sampler: no step chose a token (a chain must end with greedy, draw or mirostat + draw)");
  }
  const Candidate& chosen = c.items[static_cast<size_t>(c.selected)];
  if (std::isinf(chosen.logit) && chosen.logit < 0) {
    return Status::error(
        "sampler: every token is forbidden here (by the grammar or a -inf logit bias)");
  }
  return Status::ok();
}

Result<TokenId> SamplerChain::sample(std::span<const float> logits) {
  Candidates c = Candidates::from_logits(logits);
  TESSERA_RETURN_IF_ERROR(pick(c));
  return c.items[static_cast<size_t>(c.selected)].id;
}

Result<TokenId> SamplerChain::sample(std::span<const float> logits, size_t n_top,
                                     PickedFrom& from) {
  Candidates c = Candidates::from_logits(logits);
  TESSERA_RETURN_IF_ERROR(pick(c));
  const Candidate chosen = c.items[static_cast<size_t>(c.selected)];
  from = PickedFrom{};
  if (!steps_.empty() && steps_.back()->greedy()) {
    from.p_chosen = 1.0f;
    if (n_top > 0) from.top.push_back({chosen.id, chosen.logit, 1.0f});
    return chosen.id;
  }
  softmax(c);  // sorted by logit, so by probability; a draw has computed the same already
  for (const Candidate& t : c.items) {
    if (t.id == chosen.id) from.p_chosen = t.p;
    if (from.top.size() < n_top && t.p > 0.0f) from.top.push_back(t);
  }
  return chosen.id;
}

Status SamplerChain::distribution(std::span<const float> logits, Candidates& c) {
  if (steps_.empty() || !(steps_.back()->greedy() || steps_.back()->draws())) {
    return Status::error("sampler: a distribution needs a chain that ends with a greedy pick or a draw");
  }
  c = Candidates::from_logits(logits);
  for (size_t i = 0; i + 1 < steps_.size(); ++i) steps_[i]->apply(c);
  // No sort (softmax() sorts, which costs more than the rest at every drafted position):
  // the greedy pick's own choice, or exp(logit - max) / sum in the candidates' order.
  pick_greedy(c);
  const float max_logit = c.selected >= 0 ? c.items[size_t(c.selected)].logit : -INFINITY;
  if (std::isinf(max_logit) && max_logit < 0) {
    return Status::error("sampler: every token is forbidden here (by the grammar or a -inf logit bias)");
  }
  if (steps_.back()->greedy()) {
    for (Candidate& t : c.items) t.p = 0.0f;
    c.items[size_t(c.selected)].p = 1.0f;
    return Status::ok();
  }
  double sum = 0.0;
  for (Candidate& t : c.items) {
    t.p = std::exp(t.logit - max_logit);
    sum += t.p;
  }
  for (Candidate& t : c.items) t.p = float(t.p / sum);
  c.selected = -1;
  return Status::ok();
}

Status SamplerChain::accept(TokenId token) {
  for (const auto& step : steps_) TESSERA_RETURN_IF_ERROR(step->accept(token, false));
  return Status::ok();
}

void SamplerChain::accept_prompt(std::span<const TokenId> tokens) {
  for (TokenId t : tokens) {
    for (const auto& step : steps_) {
      // Prompt tokens only feed history; no step can refuse them.
      (void)step->accept(t, true);
    }
  }
}

void SamplerChain::reset() {
  for (const auto& step : steps_) step->reset();
}

bool SamplerChain::done() const {
  for (const auto& step : steps_) {
    if (step->done()) return true;
  }
  return false;
}

std::vector<std::string> SamplerChain::names() const {
  std::vector<std::string> out;
  for (const auto& step : steps_) out.push_back(step->name());
  return out;
}

}  // namespace tessera
