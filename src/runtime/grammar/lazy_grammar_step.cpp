// The lazy grammar step: no constraint until the generated text holds a trigger, then the
// grammar from the trigger's first byte on.
//
// Until then it keeps only the end of the text (as long as the longest trigger, less one
// byte) and whether everything before that end was whitespace (for the start triggers).
// The token that completes a trigger was drawn unconstrained: its bytes from the trigger
// on are fed to the grammar at once, and an error is returned when the grammar refuses
// them (the sampler cannot take a token back).
#include <algorithm>

#include "runtime/grammar/grammar_step.h"
#include "tessera/grammar.h"

namespace tessera {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class LazyGrammarStep : public SamplerStep {
 public:
  LazyGrammarStep(std::unique_ptr<grammar::TextGrammarStep> inner,
                  std::vector<std::string> triggers, std::vector<std::string> start_triggers)
      : inner_(std::move(inner)),
        triggers_(std::move(triggers)),
        start_triggers_(std::move(start_triggers)) {
    std::erase(triggers_, std::string());
    std::erase(start_triggers_, std::string());
    for (const auto* list : {&triggers_, &start_triggers_}) {
      for (const std::string& t : *list) longest_ = std::max(longest_, t.size());
    }
  }

  std::string name() const override { return "lazy grammar"; }
  void apply(Candidates& c) override {
    if (engaged_) inner_->apply(c);
  }
  Status accept(TokenId token, bool from_prompt) override;
  void reset() override {
    inner_->reset();
    engaged_ = false;
    tail_.clear();
    all_space_before_tail_ = true;
  }
  bool done() const override { return engaged_ && inner_->done(); }

 private:
  /// Where the earliest trigger starts in tail_, or npos.
  size_t find_trigger() const;

  std::unique_ptr<grammar::TextGrammarStep> inner_;
  std::vector<std::string> triggers_;
  std::vector<std::string> start_triggers_;
  size_t longest_ = 0;
  bool engaged_ = false;
  std::string tail_;                   // the end of the text generated so far
  bool all_space_before_tail_ = true;  // the text before tail_ was whitespace only
};

size_t LazyGrammarStep::find_trigger() const {
  size_t best = std::string::npos;
  for (const std::string& t : triggers_) best = std::min(best, tail_.find(t));
  if (all_space_before_tail_) {
    const auto first = std::find_if_not(tail_.begin(), tail_.end(), is_space) - tail_.begin();
    const size_t at = static_cast<size_t>(first);
    for (const std::string& t : start_triggers_) {
      if (tail_.compare(at, t.size(), t) == 0) best = std::min(best, at);
    }
  }
  return best;
}

Status LazyGrammarStep::accept(TokenId token, bool from_prompt) {
  if (from_prompt) return Status::ok();
  if (engaged_) return inner_->accept(token, false);
  if (inner_->token_ends(token) || longest_ == 0) return Status::ok();
  tail_ += inner_->token_text(token);
  const size_t at = find_trigger();
  if (at != std::string::npos) {
    engaged_ = true;
    const Status s = inner_->accept_text(std::string_view(tail_).substr(at));
    tail_.clear();
    return s.with_context("lazy grammar: after the trigger");
  }
  if (tail_.size() >= longest_) {
    const size_t drop = tail_.size() - (longest_ - 1);
    if (!std::all_of(tail_.begin(), tail_.begin() + static_cast<std::ptrdiff_t>(drop), is_space))
      all_space_before_tail_ = false;
    tail_.erase(0, drop);
  }
  return Status::ok();
}

}  // namespace

std::unique_ptr<SamplerStep> make_lazy_grammar_step(std::shared_ptr<const Grammar> grammar,
                                                    const Tokenizer& tokenizer,
                                                    std::vector<std::string> triggers,
                                                    std::vector<std::string> start_triggers,
                                                    bool render_special) {
  return std::make_unique<LazyGrammarStep>(
      grammar::make_text_grammar_step(std::move(grammar), tokenizer, render_special),
      std::move(triggers), std::move(start_triggers));
}

}  // namespace tessera
