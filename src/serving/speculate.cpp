// Speculative decoding in the engine: each slot has a drafter (a draft model's sequence,
// or n-gram lookup); a generating choice puts its pending token and its draft in the
// step's batch, and after the decode verify_choice keeps what the target agrees with
// (tessera/speculative.h), delivering those tokens one by one as sample_choice does.
#include <algorithm>

#include "core/check.h"
#include "serving/engine_impl.h"

namespace tessera::serving {

Status EngineImpl::start_speculation() {
  if (params_.draft_model) {
    const Tokenizer* draft_tok = params_.draft_model->tokenizer();
    if (!draft_tok) return Status::error("draft model: it has no usable tokenizer");
    TESSERA_RETURN_IF_ERROR(check_draft_vocab(tok_, *draft_tok));
    ContextParams cp;
    cp.n_ctx = params_.n_ctx_per_seq * params_.n_parallel;
    cp.n_batch = params_.batch_budget;
    cp.n_threads = params_.n_threads;
    cp.n_seq_max = params_.n_parallel;
    Result<std::unique_ptr<Context>> ctx = Context::create(*params_.draft_model, cp);
    if (!ctx) return ctx.status().with_context("draft model");
    draft_ctx_ = std::move(*ctx);
    for (SeqId s = 0; s < SeqId(params_.n_parallel); ++s) {
      // Greedy drafts: a request's own sampler settings never reach the draft.
      Result<std::unique_ptr<Drafter>> d =
          make_model_drafter(*draft_ctx_, s, params_.n_ctx_per_seq, params_.speculative, nullptr, 0);
      if (!d) return d.status();
      drafters_.push_back(std::move(*d));
    }
  } else if (params_.lookup) {
    for (int s = 0; s < params_.n_parallel; ++s) drafters_.push_back(make_lookup_drafter());
  }
  return Status::ok();
}

bool EngineImpl::speculates(const Running& r) const {
  return !drafters_.empty() && !r.req.embedding && !(r.req.post_sampling_probs && r.req.n_probs > 0);
}

void EngineImpl::add_with_draft(Batch& batch, Running& r, Choice& c) {
  // Room: what the choice may still generate (the step yields one token more than it
  // drafts), and the step's token budget.
  const int64_t room = std::min<int64_t>(r.max_generated - c.n_generated - 1,
                                         params_.batch_budget - batch.size() - 1);
  c.draft = Draft{};
  if (room > 0) {
    std::vector<TokenId> history = ctx_->seq_tokens(c.seq);
    history.push_back(c.pending);
    Result<Draft> d = make_draft(*drafters_[size_t(c.seq)], history, int(std::min<int64_t>(room, params_.speculative.n_max)),
                                 params_.speculative, tok_.n_vocab());
    // A failed draft (the draft model's decode) costs the speedup, not the request.
    if (d) c.draft = std::move(*d);
  }
  c.batch_index = add_draft_to_batch(batch, c.pending, c.next_pos, c.seq, c.draft);
}

void EngineImpl::verify_choice(Running& r, Choice& c) {
  const int64_t first = c.batch_index;
  c.batch_index = -1;
  std::vector<std::span<const float>> logits;
  for (size_t i = 0; i <= c.draft.tokens.size(); ++i) logits.push_back(ctx_->logits_at(first + int64_t(i)));
  const auto eog = [this](TokenId t) { return tok_.is_eog(t); };
  Result<Verdict> v = verify_draft(c.sampler, logits, c.draft, c.rng, eog);
  if (!v) return finish_choice(r, c, FinishReason::Error, v.status().message());
  const Pos pending_pos = c.next_pos;
  TESSERA_CHECK_MSG(drop_rejected(*ctx_, c.seq, pending_pos, *v).is_ok(), "speculative: dropping cells failed");
  ++spec_steps_;
  draft_tokens_ += int64_t(c.draft.tokens.size());
  draft_accepted_ += v->n_accepted;
  r.usage.draft_tokens += int64_t(c.draft.tokens.size());
  r.usage.draft_accepted += v->n_accepted;
  for (size_t i = 0; i < v->tokens.size(); ++i) {
    if (v->stopped && i + 1 == v->tokens.size()) return finish_choice(r, c, FinishReason::Stop);
    ++spec_tokens_;
    if (!deliver(r, c, v->tokens[i], logits[i], nullptr)) {
      // Ended before the verdict's last token (a stop string, a limit): the cells of the
      // tokens after this one go too, as plain decoding never computed them.
      if (i + 1 < v->tokens.size()) {
        TESSERA_CHECK_MSG(ctx_->seq_rm(c.seq, Pos(pending_pos + 1 + Pos(i)), -1).is_ok(), "speculative: trim");
      }
      return;
    }
  }
}

}  // namespace tessera::serving
