// `tessera chat` driven through a pipe, as a script would use it: turns, commands, saved
// and loaded conversations, the built-in model's conversation (the interactive terminal
// is covered by scripts/chat_tmux_test.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
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
  const std::string delta = ChatTemplate().format_delta(history, added, true).value();
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

/// The byte sizes of the replies in the "chat: reply closed: N bytes" lines of `tessera -v chat`.
std::vector<long long> reply_sizes(const std::string& err) {
  static const std::regex re(R"(chat: reply closed: (\d+) bytes)");
  std::vector<long long> out;
  for (auto it = std::sregex_iterator(err.begin(), err.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back(std::stoll((*it)[1]));
  }
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The (role, content) pairs of a /save file.
std::vector<std::pair<std::string, std::string>> saved(const std::string& path) {
  const nlohmann::json doc = nlohmann::json::parse(slurp(path));
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& m : doc.at("messages")) out.emplace_back(m.at("role"), m.at("content"));
  return out;
}

#define REQUIRE_DEFAULT_MODEL() \
  if (Model::default_model_name().empty()) GTEST_SKIP() << "this build has no default model"

TEST(ChatCli, TheBuiltInModelConversesTurnAfterTurn) {
  REQUIRE_DEFAULT_MODEL();
  // It never writes chatml's <|im_end|>: each reply used to fill the 256-token context,
  // and every later turn was refused.
  const test::CliOutput o = test::run_tessera(
      "-v chat --temp 0 -t 2",
      "In the beginning\nWho made the heaven\nAnd the earth\nWhat of the sea\nTell of Moses\n"
      "And then\n");
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("no token for the end of a turn of the chatml template (<|im_end|>), so "
                       "a reply stops at a blank line or after 64 tokens"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(o.err.find("context is full"), std::string::npos) << "a turn was refused:\n" << o.err;
  const std::vector<long long> replies = reply_sizes(o.err);
  ASSERT_EQ(replies.size(), 6u) << o.err;
  for (const long long bytes : replies) EXPECT_GT(bytes, 0) << o.err;
  // Six turns of up to 64 tokens outgrow 256: the oldest turns made room, said in a note.
  EXPECT_GE(count(o.err, "(the context was full: the oldest turn was dropped)"), 1u) << o.err;
  EXPECT_EQ(turn_logs(o.err).size() + count(o.err, "evaluated again"), 6u) << o.err;
}

TEST(ChatCli, ExplicitReplyLengthReplacesTheDefault) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const test::CliOutput o = test::run_tessera("chat -m " + model + " -c 512 --temp 0 -n 5", "Hi\n");
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("stops at a blank line or after 5 tokens (-n changes it)"),
            std::string::npos)
      << o.err;
  const test::CliOutput d = test::run_tessera("chat -m " + model + " -c 512 --temp 0", "Hi\n");
  EXPECT_NE(d.err.find("after 128 tokens"), std::string::npos) << d.err;  // 512 / 4
  // A template whose end marker the model has ("</s>" in vicuna): no default, no note.
  const test::CliOutput v = test::run_tessera(
      "chat -m " + model + " -c 128 --temp 0 -n 4 --chat-template vicuna", "Hi\n");
  EXPECT_EQ(v.err.find("blank line"), std::string::npos) << v.err;
}

TEST(ChatCli, CommandsAreRunNotSent) {
  REQUIRE_DEFAULT_MODEL();
  const std::string file = test::write_temp_file("chat_saved", "");
  const test::CliOutput o = test::run_tessera(
      "-v chat --temp 0 -t 2 -n 4 --system 'Speak.'",
      "/help\n/nope\n//help\n/save\n/clear now\nHello\n/save " + file + "\n/bye\nNot sent\n");
  ASSERT_EQ(o.status, 0) << o.err;
  for (const char* listed : {"/help", "/clear", "/save FILE", "/load FILE", "/bye, /exit", "//"}) {
    EXPECT_NE(o.err.find(listed), std::string::npos) << listed << " is not in the help:\n" << o.err;
  }
  EXPECT_NE(o.err.find("unknown command '/nope' (/help lists the commands"), std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("/save needs a file name"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("/clear takes no argument"), std::string::npos) << o.err;
  // Two turns were sent: "//help" as "/help", and "Hello"; nothing after /bye.
  EXPECT_EQ(reply_sizes(o.err).size(), 2u) << o.err;
  const auto messages = saved(file);
  ASSERT_EQ(messages.size(), 5u) << slurp(file);
  EXPECT_EQ(messages[0], std::make_pair(std::string("system"), std::string("Speak.")));
  EXPECT_EQ(messages[1], std::make_pair(std::string("user"), std::string("/help")));
  EXPECT_EQ(messages[3], std::make_pair(std::string("user"), std::string("Hello")));
  EXPECT_EQ(messages[4].first, "assistant");
}

TEST(ChatCli, ExitAndClearCommands) {
  REQUIRE_DEFAULT_MODEL();
  const std::string file = test::write_temp_file("chat_saved", "");
  const test::CliOutput o =
      test::run_tessera("-v chat --temp 0 -t 2 -n 4 --system 'Speak.'",
                        "Hello\n/clear\nAgain\n/save " + file + "\n/exit\nNot sent\n");
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("(new conversation)"), std::string::npos) << o.err;
  EXPECT_EQ(reply_sizes(o.err).size(), 2u) << o.err;
  // /clear kept the system prompt and forgot "Hello".
  const auto messages = saved(file);
  ASSERT_EQ(messages.size(), 3u) << slurp(file);
  EXPECT_EQ(messages[0].second, "Speak.");
  EXPECT_EQ(messages[1].second, "Again");
}

TEST(ChatCli, SaveAndLoadRoundTrip) {
  REQUIRE_DEFAULT_MODEL();
  const std::string first = test::write_temp_file("chat_first", "");
  const std::string again = test::write_temp_file("chat_again", "");
  const std::string more = test::write_temp_file("chat_more", "");
  const test::CliOutput a = test::run_tessera("chat --temp 0 -t 2 -n 12 --system 'Speak.'",
                                              "In the beginning\nAnd then\n/save " + first + "\n");
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(saved(first).size(), 5u) << slurp(first);
  // Loaded and saved again: the same file. Loaded and continued: the same start.
  const test::CliOutput b =
      test::run_tessera("-v chat --temp 0 -t 2 -n 12", "/load " + first + "\n/save " + again +
                                                           "\nWhat next\n/save " + more + "\n");
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_NE(b.err.find("(5 messages loaded from " + first + ")"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("evaluated again"), std::string::npos) << b.err;
  EXPECT_EQ(slurp(again), slurp(first));
  const auto continued = saved(more);
  const auto loaded = saved(first);
  ASSERT_EQ(continued.size(), 7u) << slurp(more);
  EXPECT_TRUE(std::equal(loaded.begin(), loaded.end(), continued.begin()));
  EXPECT_EQ(continued[5].second, "What next");
  EXPECT_FALSE(continued[6].second.empty());
}

TEST(ChatCli, ABadConversationFileIsRefusedAndTheChatGoesOn) {
  REQUIRE_DEFAULT_MODEL();
  const std::string not_json = test::write_temp_file("chat_bad", "{\"messages\": [");
  const std::string no_list = test::write_temp_file("chat_bad", "{\"turns\": []}");
  const std::string bad_role =
      test::write_temp_file("chat_bad", R"({"messages": [{"role": "bot", "content": "x"}]})");
  const std::string bad_content =
      test::write_temp_file("chat_bad", R"({"messages": [{"role": "user", "content": 3}]})");
  const std::string bad_order = test::write_temp_file(
      "chat_bad",
      R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]})");
  const std::string missing = test::write_temp_file("chat_gone", "") + ".absent";
  const std::string unwritable = missing + "/sub/file.json";
  const std::string after = test::write_temp_file("chat_after", "");
  std::string input = "Hello\n";
  for (const std::string* f : {&not_json, &no_list, &bad_role, &bad_content, &bad_order, &missing})
    input += "/load " + *f + "\n";
  input += "/save " + unwritable + "\nAgain\n/save " + after + "\n";
  const test::CliOutput o = test::run_tessera("-v chat --temp 0 -t 2 -n 4", input);
  ASSERT_EQ(o.status, 0) << o.err;
  const std::pair<const std::string*, std::string> expected[] = {
      {&not_json, ": not JSON"},
      {&no_list, ": expected an object with a \"messages\" array"},
      {&bad_role, ": messages[0].role: 'bot' is not system, user or assistant"},
      {&bad_content, ": messages[0].content: expected a string"},
      {&bad_order, ": messages[1].role: 'user' where an assistant message belongs"},
      {&missing, ": cannot open the file"},
  };
  for (const auto& [file, message] : expected) {
    EXPECT_NE(o.err.find("tessera: " + *file + message), std::string::npos) << message << "\n"
                                                                            << o.err;
  }
  EXPECT_EQ(count(o.err, "; the conversation is unchanged"), 6u) << o.err;
  EXPECT_NE(o.err.find(unwritable + ": cannot open the file for writing"), std::string::npos)
      << o.err;
  // The conversation went on untouched: both turns are in it.
  EXPECT_EQ(reply_sizes(o.err).size(), 2u) << o.err;
  const auto messages = saved(after);
  ASSERT_EQ(messages.size(), 4u) << slurp(after);
  EXPECT_EQ(messages[0].second, "Hello");
  EXPECT_EQ(messages[2].second, "Again");
}

TEST(ChatCli, RunWithoutPromptOrTerminalIsAUsageError) {
  // On a terminal `run` without -p starts a chat (scripts/chat_tmux_test.sh); from a pipe
  // it takes what stdin holds as the prompt (RunLlamaFlags), and an empty one is a usage
  // error that says what is missing.
  const test::CliOutput o = test::run_tessera("run -n 4", "");
  EXPECT_EQ(o.status, 2) << "a usage error, not a runtime error";
  EXPECT_NE(o.err.find("--prompt (or -f FILE, or a prompt on stdin) is required"), std::string::npos) << o.err;
  EXPECT_EQ(o.out, "");
}

}  // namespace
}  // namespace tessera
