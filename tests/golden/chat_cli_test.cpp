// `tessera chat` driven through a pipe, as a script would use it (the interactive
// terminal is covered by scripts/chat_tmux_test.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "common/cli_run.h"
#include "common/test_util.h"
#include "tessera/chat.h"
#include "tessera/model.h"
#include "tessera/tokenizer.h"

namespace tessera {
namespace {

struct TurnLog {
  long long decoded;
  long long n_past;
};

/// The "chat: user turn: N new tokens decoded, n_past M of C" lines of `tessera -v chat`.
std::vector<TurnLog> turn_logs(const std::string& err) {
  static const std::regex re(R"(chat: user turn: (\d+) new tokens decoded, n_past (\d+) of \d+)");
  std::vector<TurnLog> out;
  for (auto it = std::sregex_iterator(err.begin(), err.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back({std::stoll((*it)[1]), std::stoll((*it)[2])});
  }
  return out;
}

size_t count_lines(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }

TEST(ChatCli, TwoTurnsOverAPipeReuseTheContext) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const test::CliOutput o = test::run_tessera("-v chat -m " + model + " -c 512 --temp 0 -n 8 -t 2",
                                              "Hello\nAgain\n/exit\n");
  ASSERT_EQ(o.status, 0) << o.err;
  // No template in the file: chatml, said once.
  EXPECT_NE(o.err.find("no chat template"), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find("no chat template"), o.err.rfind("no chat template"));
  // stdout holds the two replies only (no prompt markers when stdin is not a terminal).
  EXPECT_EQ(count_lines(o.out), 2u) << o.out;
  EXPECT_EQ(o.out.find("> "), std::string::npos);

  const std::vector<TurnLog> turns = turn_logs(o.err);
  ASSERT_EQ(turns.size(), 2u) << o.err;
  EXPECT_EQ(turns[0].n_past, turns[0].decoded);
  // Turn 2 decodes only its own tokens: those of the chatml delta for "Again".
  Result<std::unique_ptr<Model>> m = Model::load(model);
  ASSERT_TRUE(m.is_ok());
  const std::vector<ChatMessage> history = {{"user", "Hello"}, {"assistant", "x"}};
  const std::vector<ChatMessage> added = {{"user", "Again"}};
  const std::string delta = ChatTemplate().format_delta(history, added, true);
  EXPECT_EQ(turns[1].decoded, (long long)(*m)->tokenizer()->encode(delta, false, true).size());
  // Between the turns: the reply (at most 8 tokens) and the closing "<|im_end|>\n".
  const long long suffix = (long long)(*m)->tokenizer()->encode("<|im_end|>\n", false, true).size();
  const long long between = turns[1].n_past - turns[1].decoded - turns[0].n_past;
  EXPECT_GE(between, suffix);
  EXPECT_LE(between, suffix + 8);
}

TEST(ChatCli, GreedyChatIsReproducibleAndEndOfInputQuits) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const std::string args = "chat -m " + model + " -c 256 --temp 0 -n 6 --system 'Tell a story.'";
  const test::CliOutput a = test::run_tessera(args, "Once upon a time\n");  // no /exit: EOF quits
  const test::CliOutput b = test::run_tessera(args, "Once upon a time\n");
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(count_lines(a.out), 1u);
  EXPECT_EQ(a.out, b.out);
}

TEST(ChatCli, FullContextIsReportedAndTheChatGoesOn) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const std::string long_line(300, 'a');
  const test::CliOutput o =
      test::run_tessera("chat -m " + model + " -c 96 --temp 0 -n 4", long_line + "\nHi\n/exit\n");
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("context is full"), std::string::npos) << o.err;
  EXPECT_EQ(count_lines(o.out), 1u) << o.out;  // the second turn still got a reply
}

TEST(ChatCli, ReplyStopsWhenTheContextFills) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  // -n -1: the reply runs until the context of 64 tokens is full (or an end of turn).
  const test::CliOutput o =
      test::run_tessera("chat -m " + model + " -c 64 --temp 0 --chat-template vicuna", "Hi\n");
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(count_lines(o.out), 1u);
  EXPECT_NE(o.err.find("context is full (64 tokens)"), std::string::npos) << o.err;
}

TEST(ChatCli, TemplateFlagIsCheckedAndNamed) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const test::CliOutput bad =
      test::run_tessera("chat -m " + model + " --chat-template nope", "Hi\n");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("'nope' is unknown"), std::string::npos) << bad.err;
  const test::CliOutput ok = test::run_tessera(
      "chat -m " + model + " -c 128 --temp 0 -n 2 --chat-template llama3", "Hi\n");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.err.find("no chat template"), std::string::npos)
      << "an explicit template needs no warning";
}

}  // namespace
}  // namespace tessera
