// Speculative decoding: a cheap drafter proposes the next few tokens, the target model
// evaluates them all in one batch (logits for every drafted position), and a rule keeps
// the drafted tokens the target would have produced. Two drafters: a smaller model with
// the target's vocabulary (llama.cpp's -md), and n-gram lookup over the sequence's own
// tokens (prompt and output so far; llama.cpp's lookup decoding with its context cache).
//
// The rule (Leviathan et al. 2023; Chen et al. 2023): with p the target's distribution at
// a position (what its sampler chain would draw from) and q the draft's, drafted token x
// is accepted with probability min(1, p(x) / q(x)); on rejection the token is drawn from
// normalise(max(0, p - q)) and the rest of the draft is dropped; when every drafted token
// is accepted one more is drawn from p at the position after them. Each token produced
// then has exactly the target's distribution. A deterministic draft (lookup, or a draft
// model that picks greedily) has q one-hot: x is accepted with probability p(x), else the
// token comes from p without x. At temperature 0, p is one-hot too: the output is token
// for token that of plain decoding (up to the rounding by which a batch's logits may
// differ from one token's; see runtime_batch_test).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "tessera/context.h"
#include "tessera/sampler.h"
#include "tessera/status.h"
#include "tessera/tokenizer.h"

namespace tessera {

/// llama.cpp's speculative settings, with its defaults.
struct SpeculativeParams {
  int n_max = 16;        // --draft-max: most tokens drafted per step
  int n_min = 0;         // --draft-min: a shorter draft is dropped (a plain step instead)
  float p_min = 0.75f;   // --draft-p-min: a draft model stops after a token whose greedy
                         // probability (softmax over its 10 most likely) is below this
};

/// The n-gram sizes lookup drafting matches (llama.cpp's LLAMA_NGRAM_MIN / MAX): the
/// longest n-gram ending the sequence that was seen before with a clear continuation.
constexpr int kLookupNgramMin = 1;
constexpr int kLookupNgramMax = 4;

/// Mixed into a sampler seed to seed the draws of speculative decoding, which must not
/// repeat the sampler's own random stream.
constexpr uint64_t kSpeculativeSeedMix = 0x9e3779b97f4a7c15ull;

/// Tokens proposed to follow a sequence.
struct Draft {
  std::vector<TokenId> tokens;
  /// For a sampled draft: the distribution q each token was drawn from (its candidates
  /// with p > 0). Empty for a deterministic draft (q one-hot on the token).
  std::vector<std::vector<Candidate>> q;
};

/// Proposes tokens. Not thread-safe; one per sequence.
class Drafter {
 public:
  virtual ~Drafter() = default;
  /// Drafts at most `n_max` tokens to follow `history`: the sequence's tokens, ending with
  /// the one the target evaluates next. Errors: the draft model's decode failed.
  virtual Status draft(std::span<const TokenId> history, int n_max, Draft& out) = 0;
};

/// A drafter that runs a draft model in sequence `seq` of `draft_ctx` (which must outlive
/// it), keeping at most `max_cells` cells there: each call reuses the cells of the
/// longest common prefix with `history` and decodes the rest, then drafts token by token,
/// stopping after a token the model is less sure of than params.p_min. `sampling`: null
/// for greedy drafts (a greedy target); else the draft draws each token from the
/// distribution of a chain with these parameters (penalties and mirostat left out, as
/// they need a history of their own), with `seed`.
Result<std::unique_ptr<Drafter>> make_model_drafter(Context& draft_ctx, SeqId seq, int64_t max_cells,
                                                    const SpeculativeParams& params,
                                                    const SamplerParams* sampling, uint64_t seed);

/// A drafter by n-gram lookup over the sequence's own tokens: for each drafted token, the
/// most frequent continuation of the longest n-gram (kLookupNgramMax down to
/// kLookupNgramMin tokens) ending the sequence plus the draft so far, when it was seen
/// often and clearly enough (llama.cpp's thresholds for its context cache: for n = 1..4
/// at least 2, 2, 1, 1 occurrences and a share of 66, 50, 50, 50 %).
std::unique_ptr<Drafter> make_lookup_drafter();

/// Refuses a draft model whose vocabulary differs from the target's, as llama.cpp does:
/// another tokenizer model, other BOS/EOS ids or add-BOS/EOS flags, sizes more than 128
/// apart, or a token text (from id 5 on) that differs. The message names the difference.
Status check_draft_vocab(const Tokenizer& target, const Tokenizer& draft);

/// The rule for one drafted token `x` (see the top of this file): `p` is the target's
/// distribution (dense, n_vocab), `q` the draft's (sparse; empty: one-hot on x). `u` in
/// [0, 1) decides acceptance (accepted when u * q(x) < p(x)), `v` in [0, 1) draws from
/// the residual on rejection. Sets `accepted` and returns the token produced.
TokenId speculative_pick(std::span<const float> p, std::span<const Candidate> q, TokenId x, double u, double v,
                         bool& accepted);

/// What verify_draft produced.
struct Verdict {
  std::vector<TokenId> tokens;  // the drafted tokens accepted, then the target's own token
                                // (unless it stopped on an accepted one)
  int n_accepted = 0;           // drafted tokens accepted
  bool stopped = false;         // it ended on a token for which `ends` was true
};

/// Verifies `draft` with the target's logits: logits[i] (i = 0 .. draft size) are those
/// after the pending token and drafted tokens 0 .. i-1. Position by position, p is the
/// distribution of `chain` (SamplerChain::distribution) and each token produced is
/// accepted by it (history, grammar, mirostat) before the next position, except a token
/// for which `ends` is true (an end of generation: it ends the verdict, not accepted, as
/// `tessera run` treats one); it also ends once the chain is done. `rng` draws u and v.
Result<Verdict> verify_draft(SamplerChain& chain, std::span<const std::span<const float>> logits,
                             const Draft& draft, std::mt19937_64& rng,
                             const std::function<bool(TokenId)>& ends);

/// Counts for a summary: steps that verified a draft, tokens drafted and accepted.
struct SpeculativeStats {
  int64_t n_steps = 0;   // target passes of speculative_step (with or without a draft)
  int64_t n_drafted = 0;
  int64_t n_accepted = 0;
  double acceptance() const { return n_drafted > 0 ? double(n_accepted) / double(n_drafted) : 0.0; }
};

/// The draft for a sequence: `drafter`'s tokens for `history`, at most `n_max`, cut
/// before the first id outside the target's `n_vocab` (a draft vocabulary may be a little
/// larger), and none when fewer than params.n_min remain.
Result<Draft> make_draft(Drafter& drafter, std::span<const TokenId> history, int n_max,
                         const SpeculativeParams& params, int64_t n_vocab);

/// Adds `pending` (at `pos`) and the drafted tokens after it to `batch` for sequence
/// `seq`, every one an output; returns the batch index of `pending`.
int64_t add_draft_to_batch(Batch& batch, TokenId pending, Pos pos, SeqId seq, const Draft& draft);

/// After verify_draft: the target's cells hold `pending` and every drafted token; keeps
/// those plain decoding would hold (pending and the accepted tokens before the verdict's
/// last one, which is not decoded yet) and removes the rest from `seq`.
Status drop_rejected(Context& ctx, SeqId seq, Pos pending_pos, const Verdict& verdict);

/// One whole step for sequence `seq` of `ctx`, whose next position takes `pending` (the
/// token sampled last, not decoded yet): drafts at most `max_draft` tokens (none without a
/// drafter), decodes pending and draft in one batch, verifies them with `chain` (see
/// verify_draft) and drops the rejected cells. Counts into `stats`.
Result<Verdict> speculative_step(Context& ctx, SeqId seq, TokenId pending, Drafter* drafter,
                                 const SpeculativeParams& params, int max_draft, SamplerChain& chain,
                                 std::mt19937_64& rng, const std::function<bool(TokenId)>& ends,
                                 SpeculativeStats& stats);

}  // namespace tessera
