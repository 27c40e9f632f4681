// The lazy grammar step: free until a trigger appears in the generated text (in one token,
// split across tokens, after other text in the same token, or at the start only), then the
// grammar from the trigger's first byte on.
#include <gtest/gtest.h>

#include <cmath>

#include "tessera/grammar.h"
#include "tessera/tokenizer.h"
#include "tokenizer/vocab.h"

namespace tessera {
namespace {

/// A vocabulary: control tokens (</s> ends generation; [TOOL_CALLS] is a control token
/// with text), then plain pieces.
std::unique_ptr<Tokenizer> vocab() {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "[TOOL_CALLS]"};
  std::vector<int32_t> types = {2, 3, 3, 3};
  for (const char* piece : {"Hi", "there", "<tool", "_call>", "<tool_call>", "{", "}", "a", "b",
                            "x<tool_call>", "<tool_call>{", "<tool_call>}", "\n", "call"}) {
    tokens.emplace_back(piece);
    types.push_back(1);
  }
  auto v = tok::Vocab::from_lists("llama", tokens, {}, types, {.bos = 1, .eos = 2, .unk = 0}, {});
  EXPECT_TRUE(v.is_ok()) << v.status().message();
  auto t = Tokenizer::from_vocab(std::move(v).value());
  EXPECT_TRUE(t.is_ok()) << t.status().message();
  return std::move(t).value();
}

std::shared_ptr<const Grammar> call_grammar(std::string_view text) {
  auto g = Grammar::parse(text);
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  return g ? *g : nullptr;
}

/// The tokens the step allows now.
std::vector<bool> allowed(SamplerStep& step, const Tokenizer& tok) {
  Candidates c =
      Candidates::from_logits(std::vector<float>(static_cast<size_t>(tok.n_vocab()), 0.0f));
  step.apply(c);
  std::vector<bool> out(static_cast<size_t>(tok.n_vocab()));
  for (const Candidate& t : c.items) out[static_cast<size_t>(t.id)] = !std::isinf(t.logit);
  return out;
}

size_t count(const std::vector<bool>& v) {
  return static_cast<size_t>(std::count(v.begin(), v.end(), true));
}

class GrammarLazyStep : public ::testing::Test {
 protected:
  TokenId id(std::string_view text) const { return tok_->vocab().find(text); }
  Status accept(std::string_view text) { return step_->accept(id(text), false); }
  std::unique_ptr<SamplerStep> make(std::vector<std::string> triggers,
                                    std::vector<std::string> start_triggers = {}) {
    return make_lazy_grammar_step(grammar_, *tok_, std::move(triggers), std::move(start_triggers));
  }

  std::unique_ptr<Tokenizer> tok_ = vocab();
  std::shared_ptr<const Grammar> grammar_ =
      call_grammar("root ::= \"<tool_call>\" \"{\" [ab]+ \"}\"");
  std::unique_ptr<SamplerStep> step_ = make({"<tool_call>"});
};

TEST_F(GrammarLazyStep, FreeUntilTheTriggerThenConstrained) {
  const size_t n = static_cast<size_t>(tok_->n_vocab());
  EXPECT_EQ(count(allowed(*step_, *tok_)), n);  // nothing constrained
  ASSERT_TRUE(accept("Hi").is_ok());
  ASSERT_TRUE(accept("}").is_ok());  // outside the grammar, but the grammar is not engaged
  EXPECT_EQ(count(allowed(*step_, *tok_)), n);
  ASSERT_TRUE(accept("<tool_call>").is_ok());
  const std::vector<bool> now = allowed(*step_, *tok_);
  EXPECT_TRUE(now[static_cast<size_t>(id("{"))]);
  EXPECT_FALSE(now[static_cast<size_t>(id("Hi"))]);
  EXPECT_FALSE(now[static_cast<size_t>(id("}"))]);
  EXPECT_FALSE(now[2]);  // </s>: the grammar cannot end here
  EXPECT_FALSE(accept("Hi").is_ok());
  ASSERT_TRUE(accept("{").is_ok());
  ASSERT_TRUE(accept("a").is_ok());
  EXPECT_FALSE(step_->done());
  ASSERT_TRUE(accept("}").is_ok());
  EXPECT_TRUE(step_->done());
  step_->reset();  // free again
  EXPECT_FALSE(step_->done());
  EXPECT_EQ(count(allowed(*step_, *tok_)), n);
}

TEST_F(GrammarLazyStep, TriggerSplitAcrossTokens) {
  ASSERT_TRUE(accept("Hi").is_ok());
  ASSERT_TRUE(accept("<tool").is_ok());
  EXPECT_EQ(count(allowed(*step_, *tok_)), static_cast<size_t>(tok_->n_vocab()));
  ASSERT_TRUE(accept("_call>").is_ok());  // completes "<tool_call>": fed to the grammar whole
  const std::vector<bool> now = allowed(*step_, *tok_);
  EXPECT_TRUE(now[static_cast<size_t>(id("{"))]);
  EXPECT_EQ(count(now), 1u);
}

TEST_F(GrammarLazyStep, TextBeforeTheTriggerInTheSameToken) {
  ASSERT_TRUE(accept("x<tool_call>").is_ok());  // "x" stays outside the grammar
  EXPECT_EQ(count(allowed(*step_, *tok_)), 1u);
  EXPECT_FALSE(accept("<tool").is_ok());  // engaged: "<tool" is not allowed
}

TEST_F(GrammarLazyStep, TextAfterTheTriggerInTheSameToken) {
  auto ok = make({"<tool_call>"});
  ASSERT_TRUE(ok->accept(id("<tool_call>{"), false).is_ok());  // "{" goes to the grammar too
  const std::vector<bool> now = allowed(*ok, *tok_);
  EXPECT_TRUE(now[static_cast<size_t>(id("a"))]);
  EXPECT_FALSE(now[static_cast<size_t>(id("{"))]);
  auto bad = make({"<tool_call>"});
  const Status s = bad->accept(id("<tool_call>}"), false);  // "}" right after the trigger
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("after the trigger"), std::string::npos) << s.message();
}

TEST_F(GrammarLazyStep, PromptTokensAndEndOfGenerationDoNotEngage) {
  ASSERT_TRUE(step_->accept(id("<tool_call>"), true).is_ok());  // from the prompt
  EXPECT_EQ(count(allowed(*step_, *tok_)), static_cast<size_t>(tok_->n_vocab()));
  EXPECT_TRUE(step_->accept(2, false).is_ok());  // </s> before any trigger
  EXPECT_FALSE(step_->done());
}

TEST_F(GrammarLazyStep, StartTriggersOnlyOpeningTheText) {
  grammar_ = call_grammar("root ::= \"call\" \"{\" [ab]+ \"}\"");
  auto at_start = make({}, {"call{"});
  ASSERT_TRUE(at_start->accept(id("\n"), false).is_ok());  // whitespace may come first
  ASSERT_TRUE(at_start->accept(id("call"), false).is_ok());
  ASSERT_TRUE(at_start->accept(id("{"), false).is_ok());
  EXPECT_EQ(count(allowed(*at_start, *tok_)), 2u);  // "a" or "b"
  auto later = make({}, {"call{"});                 // text came first, then whitespace: too late
  for (const char* t : {"Hi", "there", "\n", "\n", "\n", "\n", "call"})
    ASSERT_TRUE(later->accept(id(t), false).is_ok());
  ASSERT_TRUE(later->accept(id("{"), false).is_ok());
  EXPECT_EQ(count(allowed(*later, *tok_)), static_cast<size_t>(tok_->n_vocab()));
}

TEST_F(GrammarLazyStep, SpecialTokensAsTriggers) {
  grammar_ = call_grammar("root ::= \"[TOOL_CALLS]\" \"{\" [ab]+ \"}\"");
  auto plain = make({"[TOOL_CALLS]"});  // control tokens have no text: never engages
  ASSERT_TRUE(plain->accept(3, false).is_ok());
  EXPECT_EQ(count(allowed(*plain, *tok_)), static_cast<size_t>(tok_->n_vocab()));
  auto special = make_lazy_grammar_step(grammar_, *tok_, {"[TOOL_CALLS]"}, {}, true);
  ASSERT_TRUE(special->accept(3, false).is_ok());
  EXPECT_EQ(count(allowed(*special, *tok_)), 1u);  // "{"
  // A forced grammar step that renders special tokens allows the control token by its text.
  auto forced = make_grammar_step(grammar_, *tok_, true);
  EXPECT_TRUE(allowed(*forced, *tok_)[3]);
  EXPECT_FALSE(allowed(*make_grammar_step(grammar_, *tok_), *tok_)[3]);
}

}  // namespace
}  // namespace tessera
