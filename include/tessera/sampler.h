// Choosing the next token from logits: a chain of small steps over the candidate tokens
// (logit bias, repetition penalties, grammar, truncations, temperature, mirostat) that
// ends in a greedy pick or a seeded random draw. Each step has llama.cpp's semantics.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.h"

namespace tessera {

using TokenId = int32_t;

/// One candidate for the next token: its id, its logit and (after softmax) probability.
struct Candidate {
  TokenId id = 0;
  float logit = 0.0f;
  float p = 0.0f;
};

/// The candidates a sampler step works on. Steps remove items, change logits, reorder,
/// and the final step (greedy, draw) sets `selected`. A logit of -inf means "not allowed".
struct Candidates {
  std::vector<Candidate> items;
  bool sorted = false;    // items are in decreasing logit order
  int64_t selected = -1;  // index into items of the chosen token; -1 before the pick
  int32_t n_vocab = 0;    // size of the logit vector the candidates came from

  /// One candidate per logit, in id order (unsorted, p = 0).
  static Candidates from_logits(std::span<const float> logits);
};

/// A token id and the value added to its logit (-inf forbids the token).
struct LogitBias {
  TokenId token = 0;
  float bias = 0.0f;
};

// ---- The steps as functions (each is also a SamplerStep, see below) ---------------

/// Index of the largest logit (the lowest index among equals).
TokenId argmax(std::span<const float> logits);
/// Sorts the candidates by decreasing logit (stable: equal logits keep their order).
void sort_by_logit(Candidates& c);
/// Sorts, then sets p = exp(logit - max) / sum. All -inf gives p = 0 everywhere.
void softmax(Candidates& c);
/// Adds each bias to its token's logit.
void apply_logit_bias(Candidates& c, std::span<const LogitBias> biases);
/// Penalises tokens that occur in `recent` (llama.cpp): with count n > 0 a positive logit
/// is divided by `repeat`, a negative one multiplied by it, then n * frequency + presence
/// is subtracted.
void apply_penalties(Candidates& c, std::span<const TokenId> recent, float repeat, float frequency,
                     float presence);
/// Keeps the max(k, min_keep) largest logits, sorted; k <= 0 keeps everything.
void top_k(Candidates& c, int32_t k, size_t min_keep = 1);
/// Nucleus: keeps the smallest prefix (by probability) whose mass reaches p (at least
/// min_keep items); p >= 1 keeps everything.
void top_p(Candidates& c, float p, size_t min_keep = 1);
/// Keeps the tokens whose probability is at least p times the largest one (at least
/// min_keep, in logit order); p <= 0 keeps everything.
void min_p(Candidates& c, float p, size_t min_keep = 1);
/// Locally typical sampling: orders by |-log p - entropy| and keeps the shortest prefix
/// whose mass exceeds p (at least min_keep); p >= 1 keeps everything. Leaves c unsorted.
void typical(Candidates& c, float p, size_t min_keep = 1);
/// Tail-free sampling: cuts where the cumulated normalised |second difference| of the
/// sorted probabilities exceeds z (llama.cpp's indexing); z >= 1 keeps everything.
void tail_free(Candidates& c, float z, size_t min_keep = 1);
/// Divides every logit by t; t <= 0 leaves only the largest logit finite.
void temperature(Candidates& c, float t);
/// Selects the candidate with the largest logit (the first among equals).
void pick_greedy(Candidates& c);
/// Selects by inverse CDF: the first item whose cumulative probability (after softmax)
/// exceeds u * total, u in [0, 1). Selects nothing when every probability is 0.
void pick_at(Candidates& c, double u);
/// Mirostat v1's top-k size: estimates the Zipf exponent s from the m most likely
/// candidates (c must be softmaxed and sorted) and returns
/// max(1, int(((s - 1) * 2^mu / (1 - n_vocab^(1 - s)))^(1 / s))).
int32_t mirostat_v1_k(const Candidates& c, float mu, int32_t m, int32_t n_vocab);
/// Mirostat v2's truncation: softmax, keep the candidates whose surprise -log2 p is at
/// most mu (at least the first), softmax again.
void mirostat_v2_truncate(Candidates& c, float mu);
/// The mirostat learning step: mu - eta * (-log2(p_selected) - tau).
float mirostat_update(float mu, float tau, float eta, float p_selected);
/// Parses "ID+BIAS" or "ID-BIAS" (BIAS a number or "inf"), e.g. "15043+1.5", "2-inf".
Result<LogitBias> parse_logit_bias(std::string_view text);

// ---- Steps and chains --------------------------------------------------------------

/// One composable step of a sampler chain.
class SamplerStep {
 public:
  virtual ~SamplerStep() = default;
  /// Short name ("top-k", "grammar", ...), used to describe a chain.
  virtual std::string name() const = 0;
  /// Filters or reshapes the candidates; final steps set c.selected.
  virtual void apply(Candidates& c) = 0;
  /// Tells the step that `token` was chosen (`from_prompt`: it is a prompt token, which
  /// only history-keeping steps record). Errors: a token the step cannot accept (grammar).
  virtual Status accept(TokenId token, bool from_prompt) { return Status::ok(); }
  /// Back to the state after construction (history, RNG, grammar, mirostat mu).
  virtual void reset() {}
  /// True when nothing may follow (a grammar that is complete).
  virtual bool done() const { return false; }
  /// True for a final step that takes the largest logit (greedy): the distribution it
  /// picks from has all its mass on that token.
  virtual bool greedy() const { return false; }
  /// True for a final step that draws from the softmax of the candidates it is given.
  virtual bool draws() const { return false; }
};

/// The distribution a chain picked its token from (llama-server's "post-sampling
/// probabilities"): the candidates its steps left, softmaxed after temperature.
struct PickedFrom {
  float p_chosen = 0.0f;       // the chosen token's probability
  std::vector<Candidate> top;  // the most likely candidates, most likely first; none of p = 0
};

/// What a chain built by SamplerChain::create does. Neutral values switch a step off.
struct SamplerParams {
  float temperature = 0.8f;     // <= 0: greedy (after penalties and grammar)
  int32_t top_k = 40;           // <= 0: all tokens
  float top_p = 0.95f;          // >= 1: off
  float min_p = 0.05f;          // <= 0: off
  float typical_p = 1.0f;       // >= 1: off
  float tfs_z = 1.0f;           // >= 1: off
  float repeat_penalty = 1.0f;  // 1: off
  int32_t repeat_last_n = 64;   // tokens of history the penalties see; 0: off; -1: all
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int32_t mirostat = 0;       // 0: off; 1 or 2: mirostat v1 / v2 replaces the truncations
  float mirostat_tau = 5.0f;  // target surprise (bits)
  float mirostat_eta = 0.1f;  // learning rate
  std::vector<LogitBias> logit_bias;
  size_t min_keep = 1;  // the truncations keep at least this many tokens
  uint64_t seed = 0;    // seed of the random draw (and of nothing else)
};

/// Steps applied in order to fresh candidates, then the chosen token fed back to all.
class SamplerChain {
 public:
  SamplerChain() = default;
  SamplerChain(SamplerChain&&) noexcept = default;
  SamplerChain& operator=(SamplerChain&&) noexcept = default;

  /// The usual chain for `params` over a vocabulary of `n_vocab`: logit bias → penalties
  /// → grammar (if given) → top-k → tail-free → typical → top-p → min-p → temperature →
  /// draw; with mirostat: logit bias → penalties → grammar → temperature → mirostat →
  /// draw; with temperature <= 0: logit bias → penalties → grammar → greedy. Steps whose
  /// parameters are neutral are left out. Errors: mirostat not 0/1/2, a bias token out of
  /// range or a NaN bias, repeat_penalty <= 0, repeat_last_n < -1, a negative mirostat
  /// tau or eta.
  static Result<SamplerChain> create(const SamplerParams& params, int32_t n_vocab,
                                     std::unique_ptr<SamplerStep> grammar = nullptr);

  /// Appends a step.
  void add(std::unique_ptr<SamplerStep> step);
  /// Runs every step on candidates made from `logits` and returns the chosen token.
  /// Does not accept it: call accept(). Errors: no step chose a token, or every token
  /// was forbidden (all -inf, e.g. by a grammar).
  Result<TokenId> sample(std::span<const float> logits);
  /// As sample(), and also the distribution the token was picked from, with at most
  /// `n_top` of its most likely candidates. A greedy pick (temperature <= 0) has all the
  /// mass on the chosen token, as llama.cpp's temperature 0 leaves only the largest
  /// logit. Costs a softmax over the candidates left (which a draw has done already).
  Result<TokenId> sample(std::span<const float> logits, size_t n_top, PickedFrom& from);
  /// The distribution sample() would pick from, without picking (speculative decoding):
  /// every step but the last runs on candidates made from `logits`; `c` holds what they
  /// left with p set, the softmax for a final draw, all the mass on the largest logit
  /// (the first among equals) for a final greedy pick. Stateful steps see the same history
  /// as sample() would. Errors: the last step is neither a draw nor greedy; every token
  /// forbidden.
  Status distribution(std::span<const float> logits, Candidates& c);
  /// Runs every step on `c` (for callers that build their own candidates).
  void apply(Candidates& c);
  /// Feeds the chosen token to every step (history, grammar state, mirostat).
  Status accept(TokenId token);
  /// Records prompt tokens in the history of the penalties (not in the grammar).
  void accept_prompt(std::span<const TokenId> tokens);
  /// Resets every step.
  void reset();
  /// True when a step says nothing may follow (e.g. the grammar is complete).
  bool done() const;
  /// The steps' names, in order.
  std::vector<std::string> names() const;

 private:
  /// Runs every step on `c` and checks that an allowed token was chosen.
  Status pick(Candidates& c);

  std::vector<std::unique_ptr<SamplerStep>> steps_;
};

// Factories of the individual steps (what SamplerChain::create assembles).
std::unique_ptr<SamplerStep> make_logit_bias_step(std::vector<LogitBias> biases);
/// History of the last `last_n` accepted tokens (-1: unbounded) feeding apply_penalties.
std::unique_ptr<SamplerStep> make_penalties_step(int32_t last_n, float repeat, float frequency,
                                                 float presence);
std::unique_ptr<SamplerStep> make_top_k_step(int32_t k, size_t min_keep = 1);
std::unique_ptr<SamplerStep> make_top_p_step(float p, size_t min_keep = 1);
std::unique_ptr<SamplerStep> make_min_p_step(float p, size_t min_keep = 1);
std::unique_ptr<SamplerStep> make_typical_step(float p, size_t min_keep = 1);
std::unique_ptr<SamplerStep> make_tail_free_step(float z, size_t min_keep = 1);
std::unique_ptr<SamplerStep> make_temperature_step(float t);
std::unique_ptr<SamplerStep> make_greedy_step();
/// The seeded random draw (std::mt19937_64; u = top 53 bits / 2^53; see pick_at).
std::unique_ptr<SamplerStep> make_draw_step(uint64_t seed);
/// Mirostat v1 (m = 100 candidates for the estimate) and v2: mu starts at 2 * tau and
/// is updated by accept() from the chosen token's probability after the truncation.
std::unique_ptr<SamplerStep> make_mirostat_v1_step(float tau, float eta, int32_t m = 100);
std::unique_ptr<SamplerStep> make_mirostat_v2_step(float tau, float eta);

}  // namespace tessera
