// ChatSession on a real model (stories260K, chatml): each turn decodes only its own
// tokens, the context then holds exactly the conversation, and replies end where they must.
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
  const std::vector<TokenId> turn1 = f.tok->encode(chatml.format(first, true), true, true);
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
      f.tok->encode(chatml.format_delta(history, added, true), false, true);
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

}  // namespace
}  // namespace tessera
