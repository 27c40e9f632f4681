// Drafting with a smaller model of the same vocabulary, in a context of its own.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "tessera/speculative.h"

namespace tessera {
namespace {

/// The draft model's confidence in its most likely token: its probability among the 10
/// most likely (llama.cpp's draft sampler is top-k 10, and p_min compares with that).
float greedy_confidence(std::span<const float> logits) {
  Candidates c = Candidates::from_logits(logits);
  top_k(c, 10);
  softmax(c);
  return c.items.empty() ? 0.0f : c.items[0].p;
}

class ModelDrafter : public Drafter {
 public:
  ModelDrafter(Context& ctx, SeqId seq, int64_t max_cells, const SpeculativeParams& params,
               std::optional<SamplerChain> chain, uint64_t seed)
      : ctx_(ctx), seq_(seq), max_cells_(max_cells), params_(params), chain_(std::move(chain)), rng_(seed) {}

  Status draft(std::span<const TokenId> history, int n_max, Draft& out) override {
    out = Draft{};
    if (history.empty()) return Status::ok();
    // Room for the history and the drafted tokens fed back (all but the last).
    n_max = int(std::min<int64_t>(n_max, max_cells_ - int64_t(history.size()) + 1));
    if (n_max <= 0) return Status::ok();
    TESSERA_RETURN_IF_ERROR(catch_up(history));
    for (int i = 0; i < n_max; ++i) {
      const std::span<const float> logits = ctx_.logits();
      TokenId token = argmax(logits);
      if (chain_) {
        Candidates c;
        TESSERA_RETURN_IF_ERROR(chain_->distribution(logits, c));
        pick_at(c, double(rng_() >> 11) * 0x1.0p-53);
        token = c.items[size_t(c.selected)].id;
        std::vector<Candidate> q;
        for (const Candidate& t : c.items) {
          if (t.p > 0.0f) q.push_back(t);
        }
        out.q.push_back(std::move(q));
      }
      out.tokens.push_back(token);
      if (i + 1 == n_max || greedy_confidence(logits) < params_.p_min) break;
      Batch one;
      one.add(token, Pos(history.size() + size_t(i)), seq_, true);
      TESSERA_RETURN_IF_ERROR(ctx_.decode(one));
    }
    return Status::ok();
  }

 private:
  /// Makes the draft sequence hold `history`, reusing its longest common prefix, with the
  /// logits after the last token (which is therefore always decoded again).
  Status catch_up(std::span<const TokenId> history) {
    const std::vector<TokenId> cached = ctx_.seq_tokens(seq_);
    size_t common = 0;
    while (common < cached.size() && common + 1 < history.size() && cached[common] == history[common]) ++common;
    if (common < cached.size()) TESSERA_RETURN_IF_ERROR(ctx_.seq_rm(seq_, Pos(common), -1));
    Batch batch;
    batch.add_sequence(history.subspan(common), Pos(common), seq_);
    return ctx_.decode(batch);
  }

  Context& ctx_;
  SeqId seq_;
  int64_t max_cells_;
  SpeculativeParams params_;
  std::optional<SamplerChain> chain_;  // null: greedy drafts
  std::mt19937_64 rng_;
};

}  // namespace

Result<std::unique_ptr<Drafter>> make_model_drafter(Context& draft_ctx, SeqId seq, int64_t max_cells,
                                                    const SpeculativeParams& params,
                                                    const SamplerParams* sampling, uint64_t seed) {
  if (seq < 0 || seq >= draft_ctx.n_seq_max()) {
    return Status::error("speculative: draft sequence " + std::to_string(seq) + " outside the draft context's " +
                         std::to_string(draft_ctx.n_seq_max()));
  }
  std::optional<SamplerChain> chain;
  if (sampling && sampling->temperature > 0.0f) {
    SamplerParams q = *sampling;
    q.repeat_penalty = 1.0f;
    q.frequency_penalty = 0.0f;
    q.presence_penalty = 0.0f;
    q.mirostat = 0;
    Result<SamplerChain> made = SamplerChain::create(q, int32_t(draft_ctx.n_vocab()));
    if (!made) return made.status();
    chain = std::move(*made);
  }
  return std::unique_ptr<Drafter>(
      std::make_unique<ModelDrafter>(draft_ctx, seq, max_cells, params, std::move(chain), seed));
}

Status check_draft_vocab(const Tokenizer& target, const Tokenizer& draft) {
  const auto refuse = [](const std::string& why) {
    return Status::error("draft model: its vocabulary does not match the target's (" + why +
                         "), so its tokens cannot be verified");
  };
  if (target.model_name() != draft.model_name()) {
    return refuse("tokenizer '" + std::string(draft.model_name()) + "', the target's '" +
                  std::string(target.model_name()) + "'");
  }
  if (target.bos() != draft.bos() || target.eos() != draft.eos() ||
      target.add_bos_token() != draft.add_bos_token() || target.add_eos_token() != draft.add_eos_token()) {
    return refuse("BOS " + std::to_string(draft.bos()) + ", EOS " + std::to_string(draft.eos()) +
                  ", the target's " + std::to_string(target.bos()) + ", " + std::to_string(target.eos()) +
                  ", or other add-BOS/EOS flags");
  }
  const int32_t nt = target.n_vocab(), nd = draft.n_vocab();
  if (std::abs(nt - nd) > 128) {
    return refuse(std::to_string(nd) + " tokens, the target's " + std::to_string(nt) + ": more than 128 apart");
  }
  for (TokenId id = 5; id < std::min(nt, nd); ++id) {
    if (target.token_text(id) != draft.token_text(id)) {
      return refuse("token " + std::to_string(id) + " is '" + draft.token_text(id) + "', the target's '" +
                    target.token_text(id) + "'");
    }
  }
  return Status::ok();
}

}  // namespace tessera
