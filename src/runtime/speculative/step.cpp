// One speculative step of one sequence: draft, decode the pending token with the draft in
// one batch, verify, and drop the cells of what was rejected.
#include <algorithm>

#include "tessera/speculative.h"

namespace tessera {

Result<Draft> make_draft(Drafter& drafter, std::span<const TokenId> history, int n_max,
                         const SpeculativeParams& params, int64_t n_vocab) {
  Draft draft;
  if (n_max <= 0 || n_max < params.n_min || history.empty()) return draft;  // too little room to be worth it
  TESSERA_RETURN_IF_ERROR(drafter.draft(history, n_max, draft));
  size_t keep = std::min(draft.tokens.size(), size_t(n_max));
  for (size_t i = 0; i < keep; ++i) {
    if (draft.tokens[i] < 0 || draft.tokens[i] >= n_vocab) keep = i;
  }
  if (int(keep) < std::max(params.n_min, 1)) keep = 0;
  draft.tokens.resize(keep);
  if (!draft.q.empty()) draft.q.resize(keep);
  return draft;
}

int64_t add_draft_to_batch(Batch& batch, TokenId pending, Pos pos, SeqId seq, const Draft& draft) {
  const int64_t first = batch.size();
  batch.add(pending, pos, seq, true);
  for (size_t i = 0; i < draft.tokens.size(); ++i) batch.add(draft.tokens[i], Pos(pos + 1 + Pos(i)), seq, true);
  return first;
}

Status drop_rejected(Context& ctx, SeqId seq, Pos pending_pos, const Verdict& verdict) {
  return ctx.seq_rm(seq, Pos(pending_pos + Pos(verdict.tokens.size())), -1);
}

Result<Verdict> speculative_step(Context& ctx, SeqId seq, TokenId pending, Drafter* drafter,
                                 const SpeculativeParams& params, int max_draft, SamplerChain& chain,
                                 std::mt19937_64& rng, const std::function<bool(TokenId)>& ends,
                                 SpeculativeStats& stats) {
  const Pos pos = ctx.seq_pos_max(seq) + 1;
  Draft draft;
  if (drafter && max_draft > 0) {
    std::vector<TokenId> history = ctx.seq_tokens(seq);
    history.push_back(pending);
    Result<Draft> made = make_draft(*drafter, history, std::min(max_draft, params.n_max), params, ctx.n_vocab());
    if (!made) return made.status();
    draft = std::move(*made);
  }
  Batch batch;
  add_draft_to_batch(batch, pending, pos, seq, draft);
  TESSERA_RETURN_IF_ERROR(ctx.decode(batch));
  std::vector<std::span<const float>> logits;
  for (int64_t i = 0; i < batch.size(); ++i) logits.push_back(ctx.logits_at(i));
  Result<Verdict> verdict = verify_draft(chain, logits, draft, rng, ends);
  if (!verdict) return verdict.status();
  TESSERA_RETURN_IF_ERROR(drop_rejected(ctx, seq, pos, *verdict));
  ++stats.n_steps;
  stats.n_drafted += int64_t(draft.tokens.size());
  stats.n_accepted += verdict->n_accepted;
  return verdict;
}

}  // namespace tessera
