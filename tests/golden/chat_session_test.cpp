// ChatSession on a real model (stories260K, chatml): each turn decodes only its own
// tokens, the context then holds exactly the conversation, replies end where they must,
// and a conversation that outgrows the context keeps going without its oldest turns.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "common/test_util.h"
#include "tessera/chat.h"
#include "tessera/context.h"
#include "tessera/model.h"
#include "tessera/sampler.h"
#include "tessera/tokenizer.h"

namespace tessera {
namespace {

struct Fixture {
  std::unique_ptr<Model> model;
  std::unique_ptr<Context> ctx;
  const Tokenizer* tok = nullptr;
};

Fixture open(const std::string& path, int64_t n_ctx) {
  Fixture f;
  Result<std::unique_ptr<Model>> m = Model::load(path);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  if (!m) return f;
  f.model = std::move(*m);
  f.tok = f.model->tokenizer();
  ContextParams cp;
  cp.n_ctx = n_ctx;
  cp.n_threads = 2;
  Result<std::unique_ptr<Context>> c = Context::create(*f.model, cp);
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  if (c) f.ctx = std::move(*c);
  return f;
}

/// Greedy reply of at most `max` tokens; returns the tokens decoded for it.
std::vector<TokenId> greedy_reply(ChatSession& s, int max) {
  std::vector<TokenId> decoded;
  for (int i = 0; i < max; ++i) {
    const TokenId t = argmax(s.logits());
    Result<ReplyStep> step = s.push(t);
    EXPECT_TRUE(step.is_ok()) << step.status().message();
    if (!step || step->done) break;
    decoded.push_back(t);
  }
  return decoded;
}

TEST(ChatSession, EachTurnDecodesOnlyItsNewTokens) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  Fixture f = open(path, 512);
  ASSERT_TRUE(f.ctx && f.tok);
  const ChatTemplate chatml;
  ChatSession s(*f.ctx, *f.tok, chatml, "Be brief.");

  // Turn 1: system + user, BOS first.
  ASSERT_TRUE(s.add_user_message("Hello").is_ok());
  const std::vector<ChatMessage> first = {{"system", "Be brief."}, {"user", "Hello"}};
  const std::vector<TokenId> turn1 = f.tok->encode(chatml.format(first, true).value(), true, true);
  EXPECT_EQ(turn1.front(), f.tok->bos());
  EXPECT_EQ(s.n_past(), int64_t(turn1.size()));
  EXPECT_EQ(s.last_turn_tokens(), int64_t(turn1.size()));

  const std::vector<TokenId> reply = greedy_reply(s, 6);
  Result<std::string> rest = s.end_reply();
  ASSERT_TRUE(rest.is_ok()) << rest.status().message();
  const std::vector<TokenId> suffix = f.tok->encode(chatml.assistant_suffix(), false, true);
  EXPECT_EQ(s.n_past(), int64_t(turn1.size() + reply.size() + suffix.size()));
  ASSERT_EQ(s.messages().size(), 3u);
  EXPECT_EQ(s.messages()[2].role, "assistant");

  // Turn 2: exactly the tokens of the new turn, far fewer than the whole conversation.
  const int64_t before = s.n_past();
  const std::vector<ChatMessage> history = s.messages();
  ASSERT_TRUE(s.add_user_message("Again").is_ok());
  const std::vector<ChatMessage> added = {{"user", "Again"}};
  const std::vector<TokenId> turn2 =
      f.tok->encode(chatml.format_delta(history, added, true).value(), false, true);
  EXPECT_EQ(s.n_past() - before, int64_t(turn2.size()));
  EXPECT_EQ(s.last_turn_tokens(), int64_t(turn2.size()));
  EXPECT_LT(s.last_turn_tokens(), s.n_past() / 2);

  // The context now holds the conversation: a fresh context fed the same tokens in one
  // go gives the same logits.
  std::vector<TokenId> all = turn1;
  for (const auto* part : {&reply, &suffix, &turn2})
    all.insert(all.end(), part->begin(), part->end());
  ContextParams cp;
  cp.n_ctx = 512;
  Result<std::unique_ptr<Context>> fresh = Context::create(*f.model, cp);
  ASSERT_TRUE(fresh.is_ok());
  ASSERT_TRUE((*fresh)->decode(all).is_ok());
  const std::span<const float> a = s.logits();
  const std::span<const float> b = (*fresh)->logits();
  ASSERT_EQ(a.size(), b.size());
  float max_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
  EXPECT_LT(max_diff, 1e-3f);
}

TEST(ChatSession, EndOfGenerationTokenEndsTheReplyUndecoded) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  Fixture f = open(path, 256);
  ASSERT_TRUE(f.ctx && f.tok);
  ChatSession s(*f.ctx, *f.tok, ChatTemplate());
  ASSERT_TRUE(s.add_user_message("Hi").is_ok());
  const int64_t n = s.n_past();
  Result<ReplyStep> step = s.push(f.tok->eos());
  ASSERT_TRUE(step.is_ok());
  EXPECT_TRUE(step->done);
  EXPECT_EQ(s.n_past(), n);
  EXPECT_FALSE(s.push(f.tok->eos()).is_ok());  // the reply is over
  ASSERT_TRUE(s.end_reply().is_ok());
  EXPECT_EQ(s.messages().back().content, "");
}

TEST(ChatSession, EndMarkerWrittenAsTextEndsTheReplyAndIsNotShown) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  Fixture f = open(path, 256);
  ASSERT_TRUE(f.ctx && f.tok);
  ChatSession s(*f.ctx, *f.tok, ChatTemplate());
  ASSERT_TRUE(s.add_user_message("Hi").is_ok());
  // stories260K has no <|im_end|> token: the marker arrives as several text pieces.
  const std::vector<TokenId> ids = f.tok->encode("Yes<|im_end|>", false);
  ASSERT_GT(ids.size(), 3u);
  std::string shown;
  bool done = false;
  size_t pushed = 0;
  for (; pushed < ids.size() && !done; ++pushed) {
    Result<ReplyStep> step = s.push(ids[pushed]);
    ASSERT_TRUE(step.is_ok());
    shown += step->text;
    done = step->done;
    if (!done) {
      EXPECT_EQ(shown.find('<'), std::string::npos) << "a marker prefix was shown";
    }
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(pushed, ids.size());
  EXPECT_EQ(shown, " Yes");
  Result<std::string> rest = s.end_reply();
  ASSERT_TRUE(rest.is_ok());
  EXPECT_EQ(*rest, "");
  EXPECT_EQ(s.messages().back().content, " Yes");
  // Only the "\n" that follows the marker in the chatml suffix was added.
  EXPECT_EQ(s.n_past(), s.last_turn_tokens() + int64_t(ids.size()) +
                            int64_t(f.tok->encode("\n", false, true).size()));
}

TEST(ChatSession, ATurnThatDoesNotFitLeavesTheConversationUnchanged) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  Fixture f = open(path, 64);
  ASSERT_TRUE(f.ctx && f.tok);
  ChatSession s(*f.ctx, *f.tok, ChatTemplate());
  const Status st = s.add_user_message(std::string(200, 'a'));
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("context is full"), std::string::npos) << st.message();
  EXPECT_EQ(s.n_past(), 0);
  EXPECT_TRUE(s.messages().empty());
  EXPECT_TRUE(s.add_user_message("Hi").is_ok());
  s.reset();
  EXPECT_EQ(s.n_past(), 0);
  EXPECT_TRUE(s.messages().empty());
}

/// Pushes the tokens of `text` as a reply; returns what was shown, and whether the reply ended.
std::pair<std::string, bool> push_text(ChatSession& s, const Tokenizer& tok,
                                       const std::string& text) {
  std::string shown;
  for (const TokenId t : tok.encode(text, false)) {
    Result<ReplyStep> step = s.push(t);
    EXPECT_TRUE(step.is_ok()) << step.status().message();
    if (!step) break;
    shown += step->text;
    if (step->done) return {shown, true};
  }
  return {shown, false};
}

/// Tokens of the conversation from the start of a context, as a fresh evaluation has them.
size_t conversation_tokens(const ChatSession& s, const Tokenizer& tok, bool generation_prompt) {
  return tok.encode(s.chat_template().format(s.messages(), generation_prompt).value(), true, true).size();
}

TEST(ChatSession, WhenATurnDoesNotFitTheOldestTurnsAreDropped) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  Fixture f = open(path, 256);
  ASSERT_TRUE(f.ctx && f.tok);
  ChatSession s(*f.ctx, *f.tok, ChatTemplate(), "Be brief.");
  s.set_reply_room(16);
  int turn = 0;
  for (; turn < 10; ++turn) {
    const Status st = s.add_user_message("Tell me about turn " + std::to_string(turn));
    ASSERT_TRUE(st.is_ok()) << "turn " << turn << ": " << st.message();
    EXPECT_LE(s.n_past() + 16, f.ctx->n_ctx()) << "no room left for the reply";
    if (s.dropped_turns() > 0) break;
    greedy_reply(s, 12);
    ASSERT_TRUE(s.end_reply().is_ok());
  }
  ASSERT_LT(turn, 10) << "ten turns fitted in 256 tokens";
  ASSERT_GE(turn, 2);
  // The system message stays; the conversation now starts at a later turn, ends with the
  // new user message, and the context holds exactly its tokens.
  const std::vector<ChatMessage>& m = s.messages();
  ASSERT_GE(m.size(), 2u);
  EXPECT_EQ(m.front().role, "system");
  EXPECT_EQ(m.front().content, "Be brief.");
  EXPECT_EQ(m[1].role, "user");
  EXPECT_NE(m[1].content, "Tell me about turn 0");
  EXPECT_EQ(m.back().content, "Tell me about turn " + std::to_string(turn));
  EXPECT_EQ(size_t(s.n_past()), conversation_tokens(s, *f.tok, true));
  EXPECT_EQ(s.last_turn_tokens(), s.n_past());
  // And so on: the conversation goes on, always with room for the reply.
  for (int more = 0; more < 5; ++more) {
    greedy_reply(s, 12);
    ASSERT_TRUE(s.end_reply().is_ok());
    ASSERT_TRUE(s.add_user_message("And then?").is_ok());
    EXPECT_LE(s.n_past() + 16, f.ctx->n_ctx());
  }
}

TEST(ChatSession, AReplyThatFillsTheContextIsFollowedByTheNextTurn) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  Fixture f = open(path, 64);
  ASSERT_TRUE(f.ctx && f.tok);
  ChatSession s(*f.ctx, *f.tok, ChatTemplate());
  ASSERT_TRUE(s.add_user_message("Hello").is_ok());
  while (!s.context_full()) {
    Result<ReplyStep> step = s.push(argmax(s.logits()));
    ASSERT_TRUE(step.is_ok()) << step.status().message();
    if (step->done) break;
  }
  ASSERT_TRUE(s.context_full());
  ASSERT_TRUE(s.end_reply().is_ok());  // no room for "<|im_end|>\n"
  const Status st = s.add_user_message("And then?");
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(s.dropped_turns(), 1);
  ASSERT_EQ(s.messages().size(), 1u);
  EXPECT_EQ(s.messages()[0].content, "And then?");
  EXPECT_EQ(size_t(s.n_past()), conversation_tokens(s, *f.tok, true));
}

TEST(ChatSession, ABlankLineEndsTheReplyWhenAsked) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  Fixture f = open(path, 256);
  ASSERT_TRUE(f.ctx && f.tok);
  ChatSession s(*f.ctx, *f.tok, ChatTemplate());
  s.set_stop_at_blank_line(true);
  ASSERT_TRUE(s.add_user_message("Hi").is_ok());
  // Blank lines before any text do not end it; the first one after text does, unshown.
  const auto [shown, done] = push_text(s, *f.tok, "\n\nYes.\nNo.\n\nMore");
  EXPECT_TRUE(done);
  EXPECT_EQ(shown.find("More"), std::string::npos);
  EXPECT_EQ(shown.substr(shown.size() - 8), "Yes.\nNo.") << shown;
  const int64_t n = s.n_past();
  Result<std::string> rest = s.end_reply();
  ASSERT_TRUE(rest.is_ok());
  EXPECT_EQ(*rest, "");
  EXPECT_EQ(s.messages().back().content, shown);
  // The whole suffix closes the turn (the model wrote no end marker).
  EXPECT_EQ(s.n_past(), n + int64_t(f.tok->encode("<|im_end|>\n", false, true).size()));

  // Off (the default), a blank line is text like any other.
  ChatSession plain(*f.ctx, *f.tok, ChatTemplate());
  f.ctx->clear();
  ASSERT_TRUE(plain.add_user_message("Hi").is_ok());
  const auto [all, ended] = push_text(plain, *f.tok, "Yes.\n\nMore");
  EXPECT_FALSE(ended);
  ASSERT_TRUE(plain.end_reply().is_ok());
  EXPECT_NE(plain.messages().back().content.find("\n\nMore"), std::string::npos);
}

TEST(ChatSession, ReplaceEvaluatesAConversationAndChecksItsOrder) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  Fixture f = open(path, 256);
  ASSERT_TRUE(f.ctx && f.tok);
  ChatSession s(*f.ctx, *f.tok, ChatTemplate(), "Old system.");
  ASSERT_TRUE(s.add_user_message("Before").is_ok());
  greedy_reply(s, 3);
  ASSERT_TRUE(s.end_reply().is_ok());
  const std::vector<ChatMessage> before = s.messages();
  const int64_t n_before = s.n_past();

  using M = std::vector<ChatMessage>;
  const std::pair<M, std::string> bad[] = {
      {{{"user", "a"}, {"user", "b"}}, "messages[1].role"},
      {{{"assistant", "a"}}, "messages[0].role"},
      {{{"user", "a"}, {"assistant", "b"}, {"system", "c"}}, "messages[2].role"},
      {{{"system", "s"}, {"user", "a"}}, "messages[1]: the conversation ends with a user"},
  };
  for (const auto& [messages, error] : bad) {
    const Status st = s.replace(messages);
    ASSERT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find(error), std::string::npos) << st.message();
    EXPECT_EQ(s.n_past(), n_before);
    ASSERT_EQ(s.messages().size(), before.size());
    EXPECT_EQ(s.system_prompt(), "Old system.");
  }

  const M loaded = {{"system", "New system."},
                    {"user", "Hello"},
                    {"assistant", "Hi there."},
                    {"user", "Again"},
                    {"assistant", "Yes."}};
  ASSERT_TRUE(s.replace(loaded).is_ok());
  EXPECT_EQ(s.dropped_turns(), 0);
  EXPECT_EQ(s.system_prompt(), "New system.");
  ASSERT_EQ(s.messages().size(), loaded.size());
  for (size_t i = 0; i < loaded.size(); ++i) EXPECT_EQ(s.messages()[i].content, loaded[i].content);
  EXPECT_EQ(size_t(s.n_past()), conversation_tokens(s, *f.tok, false));
  // The next turn adds only its own tokens to the loaded conversation.
  const int64_t n_loaded = s.n_past();
  ASSERT_TRUE(s.add_user_message("More").is_ok());
  const std::vector<ChatMessage> more = {{"user", "More"}};
  EXPECT_EQ(
      s.last_turn_tokens(),
      int64_t(f.tok->encode(ChatTemplate().format_delta(loaded, more, true).value(), false, true).size()));
  EXPECT_EQ(s.n_past(), n_loaded + s.last_turn_tokens());
  ASSERT_TRUE(s.end_reply().is_ok());

  // No system message: none from then on, /clear included.
  ASSERT_TRUE(s.replace({{"user", "a"}, {"assistant", "b"}}).is_ok());
  EXPECT_EQ(s.system_prompt(), "");
  s.reset();
  ASSERT_TRUE(s.add_user_message("x").is_ok());
  EXPECT_EQ(s.messages().size(), 1u);
}

TEST(ChatSession, CanEndTurnWhenTheEndMarkerIsOneToken) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  Fixture f = open(path, 64);
  ASSERT_TRUE(f.tok);
  // stories260K knows "</s>" (vicuna's end) but not "<|im_end|>" (chatml's).
  EXPECT_FALSE(can_end_turn(ChatTemplate(), *f.tok));
  Result<ChatTemplate> vicuna = ChatTemplate::from_name("vicuna");
  ASSERT_TRUE(vicuna.is_ok());
  EXPECT_TRUE(can_end_turn(*vicuna, *f.tok));
}

}  // namespace
}  // namespace tessera
