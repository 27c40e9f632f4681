// Chat templates: the exact text of every family for one conversation, the new-turn delta,
// trimming, end markers, and detection from real templates (tokenizer_config.json texts of
// published models, as they appear in GGUF files).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tessera/chat.h"

namespace tessera {
namespace {

const std::vector<ChatMessage> kHistory = {
    {"system", "You are a helpful assistant"},
    {"user", "Hello"},
    {"assistant", "Hi there"},
};
const std::vector<ChatMessage> kNewTurn = {{"user", "Who are you"}};

std::vector<ChatMessage> whole_conversation() {
  std::vector<ChatMessage> all = kHistory;
  all.insert(all.end(), kNewTurn.begin(), kNewTurn.end());
  return all;
}

ChatTemplate family(const std::string& name) {
  Result<ChatTemplate> t = ChatTemplate::from_name(name);
  EXPECT_TRUE(t.is_ok()) << name;
  return t.is_ok() ? *t : ChatTemplate();
}

// What each family's published template renders for kHistory + kNewTurn with
// add_generation_prompt (the same as llama.cpp's built-in rendering of the family).
const std::map<std::string, std::string>& expected_texts() {
  static const std::map<std::string, std::string> m = {
      {"chatml",
       "<|im_start|>system\nYou are a helpful "
       "assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
       "<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"
       "<|im_start|>assistant\n"},
      {"llama2",
       "[INST] You are a helpful assistant\nHello [/INST]Hi there</s>[INST] Who are you [/INST]"},
      {"llama2-sys",
       "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>"
       "[INST] Who are you [/INST]"},
      {"llama2-sys-bos",
       "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>"
       "<s>[INST] Who are you [/INST]"},
      {"llama2-sys-strip",
       "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>"
       "[INST] Who are you [/INST]"},
      {"llama3",
       "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>"
       "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
       "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
       "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
       "<|start_header_id|>assistant<|end_header_id|>\n\n"},
      {"llama4",
       "<|header_start|>system<|header_end|>\n\nYou are a helpful assistant<|eot|>"
       "<|header_start|>user<|header_end|>\n\nHello<|eot|>"
       "<|header_start|>assistant<|header_end|>\n\nHi there<|eot|>"
       "<|header_start|>user<|header_end|>\n\nWho are you<|eot|>"
       "<|header_start|>assistant<|header_end|>\n\n"},
      {"mistral-v1",
       " [INST] You are a helpful assistant\n\nHello [/INST] Hi there</s> [INST] Who are you "
       "[/INST]"},
      {"mistral-v3",
       "[INST] You are a helpful assistant\n\nHello[/INST] Hi there</s>[INST] Who are you[/INST]"},
      {"mistral-v3-tekken",
       "[INST]You are a helpful assistant\n\nHello[/INST]Hi there</s>[INST]Who are you[/INST]"},
      {"mistral-v7",
       "[SYSTEM_PROMPT] You are a helpful assistant[/SYSTEM_PROMPT][INST] Hello[/INST] Hi there</s>"
       "[INST] Who are you[/INST]"},
      {"mistral-v7-tekken",
       "[SYSTEM_PROMPT]You are a helpful assistant[/SYSTEM_PROMPT][INST]Hello[/INST]Hi there</s>"
       "[INST]Who are you[/INST]"},
      {"phi3",
       "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi "
       "there<|end|>\n"
       "<|user|>\nWho are you<|end|>\n<|assistant|>\n"},
      {"phi4",
       "<|im_start|>system<|im_sep|>You are a helpful "
       "assistant<|im_end|><|im_start|>user<|im_sep|>Hello<|im_end|>"
       "<|im_start|>assistant<|im_sep|>Hi there<|im_end|><|im_start|>user<|im_sep|>Who are "
       "you<|im_end|>"
       "<|im_start|>assistant<|im_sep|>"},
      {"zephyr",  // eos_token = "</s>" (zephyr-7b-beta, TinyLlama-chat)
       "<|system|>\nYou are a helpful assistant</s>\n<|user|>\nHello</s>\n<|assistant|>\nHi "
       "there</s>\n"
       "<|user|>\nWho are you</s>\n<|assistant|>\n"},
      {"gemma",
       "<start_of_turn>user\nYou are a helpful "
       "assistant\n\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n"
       "<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n"},
      {"vicuna",
       "You are a helpful assistant\n\nUSER: Hello\nASSISTANT: Hi there</s>\nUSER: Who are "
       "you\nASSISTANT:"},
      {"vicuna-orca",
       "SYSTEM: You are a helpful assistant\nUSER: Hello\nASSISTANT: Hi there</s>\nUSER: Who are "
       "you\nASSISTANT:"},
      {"deepseek",
       "You are a helpful assistant### Instruction:\nHello\n### Response:\nHi there\n<|EOT|>\n"
       "### Instruction:\nWho are you\n### Response:\n"},
      {"deepseek2",
       "You are a helpful assistant\n\nUser: Hello\n\nAssistant: Hi there<｜end▁of▁sentence｜>"
       "User: Who are you\n\nAssistant:"},
      {"deepseek3",
       "You are a helpful assistant\n\n<｜User｜>Hello<｜Assistant｜>Hi there<｜end▁of▁sentence｜>"
       "<｜User｜>Who are you<｜Assistant｜>"},
      {"command-r",
       "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>You are a helpful assistant<|END_OF_TURN_TOKEN|>"
       "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hello<|END_OF_TURN_TOKEN|>"
       "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hi there<|END_OF_TURN_TOKEN|>"
       "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Who are you<|END_OF_TURN_TOKEN|>"
       "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"},
      {"granite",
       "<|start_of_role|>system<|end_of_role|>You are a helpful assistant<|end_of_text|>\n"
       "<|start_of_role|>user<|end_of_role|>Hello<|end_of_text|>\n"
       "<|start_of_role|>assistant<|end_of_role|>Hi there<|end_of_text|>\n"
       "<|start_of_role|>user<|end_of_role|>Who are you<|end_of_text|>\n"
       "<|start_of_role|>assistant<|end_of_role|>"},
      {"openchat",
       "You are a helpful assistant<|end_of_turn|>GPT4 Correct User: Hello<|end_of_turn|>"
       "GPT4 Correct Assistant: Hi there<|end_of_turn|>GPT4 Correct User: Who are "
       "you<|end_of_turn|>"
       "GPT4 Correct Assistant:"},
  };
  return m;
}

TEST(ChatTemplate, EveryFamilyHasAnExpectedText) {
  for (const std::string& name : ChatTemplate::names()) {
    EXPECT_EQ(expected_texts().count(name), 1u) << name;
  }
  EXPECT_EQ(expected_texts().size(), ChatTemplate::names().size());
}

TEST(ChatTemplate, FormatsTheConversationOfEachFamily) {
  for (const auto& [name, expected] : expected_texts()) {
    EXPECT_EQ(family(name).format(whole_conversation(), true).value(), expected) << name;
  }
}

TEST(ChatTemplate, DeltaIsTheNewTurnOnly) {
  for (const auto& [name, expected] : expected_texts()) {
    const ChatTemplate t = family(name);
    const std::string past = t.format(kHistory, false).value();
    ASSERT_EQ(expected.compare(0, past.size(), past), 0) << name;
    EXPECT_EQ(t.format_delta(kHistory, kNewTurn, true).value(), expected.substr(past.size())) << name;
  }
  // Written out for a few families.
  EXPECT_EQ(family("chatml").format_delta(kHistory, kNewTurn, true).value(),
            "<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(family("llama2-sys").format_delta(kHistory, kNewTurn, true).value(),
            "[INST] Who are you [/INST]");
  EXPECT_EQ(family("mistral-v1").format_delta(kHistory, kNewTurn, true).value(),
            " [INST] Who are you [/INST]");
  EXPECT_EQ(family("gemma").format_delta(kHistory, kNewTurn, true).value(),
            "<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n");
  // An empty history: the delta is the whole rendering (BOS is the tokenizer's business).
  EXPECT_EQ(family("llama3").format_delta({}, kHistory, false).value(),
            family("llama3").format(kHistory, false).value());
}

TEST(ChatTemplate, AddGenerationPromptOnlyAppends) {
  for (const std::string& name : ChatTemplate::names()) {
    const ChatTemplate t = family(name);
    const std::string without = t.format(whole_conversation(), false).value();
    const std::string with = t.format(whole_conversation(), true).value();
    EXPECT_EQ(with.compare(0, without.size(), without), 0) << name;
  }
  EXPECT_EQ(family("chatml").format(kNewTurn, false).value(), "<|im_start|>user\nWho are you<|im_end|>\n");
}

TEST(ChatTemplate, AssistantSuffixFollowsEveryReply) {
  const std::vector<ChatMessage> conv = {{"user", "Hello"}, {"assistant", "Reply"}};
  for (const std::string& name : ChatTemplate::names()) {
    const ChatTemplate t = family(name);
    const std::string text = t.format(conv, false).value();
    const std::string tail = "Reply" + t.assistant_suffix();
    ASSERT_GE(text.size(), tail.size()) << name;
    EXPECT_EQ(text.substr(text.size() - tail.size()), tail) << name;
    EXPECT_FALSE(t.end_marker().empty()) << name;
    EXPECT_NE(t.assistant_suffix().find(t.end_marker()), std::string::npos) << name;
  }
  EXPECT_EQ(family("chatml").assistant_suffix(), "<|im_end|>\n");
  EXPECT_EQ(family("llama3").end_marker(), "<|eot_id|>");
  EXPECT_EQ(family("deepseek").assistant_suffix(), "\n<|EOT|>\n");
}

TEST(ChatTemplate, TrimsContentWhereTheTemplateDoes) {
  const std::vector<std::string> trimming = {"llama2-sys-strip", "llama3", "llama4",
                                             "mistral-v3",       "gemma",  "command-r"};
  const std::vector<ChatMessage> conv = {{"user", "Who are you"},
                                         {"assistant", "   I am an assistant   "}};
  for (const std::string& name : ChatTemplate::names()) {
    const std::string text = family(name).format(conv, false).value();
    const bool trims = std::find(trimming.begin(), trimming.end(), name) != trimming.end();
    EXPECT_EQ(text.find("   I am an assistant   ") == std::string::npos, trims) << name;
    EXPECT_NE(text.find("I am an assistant"), std::string::npos) << name;
  }
}

TEST(ChatTemplate, ZephyrEndsMessagesWithTheModelsEos) {
  ChatTemplate t = family("zephyr");
  t.set_eos_text("<|endoftext|>");  // stablelm-zephyr; llama.cpp's zephyr output
  EXPECT_EQ(t.format(kNewTurn, true).value(), "<|user|>\nWho are you<|endoftext|>\n<|assistant|>\n");
  EXPECT_EQ(t.end_marker(), "<|endoftext|>");
  EXPECT_EQ(t.assistant_suffix(), "<|endoftext|>\n");
}

TEST(ChatTemplate, GemmaKeepsASystemMessageForTheFirstUserTurn) {
  const ChatTemplate t = family("gemma");
  const std::vector<ChatMessage> sys = {{"system", " Be brief. "}};
  EXPECT_EQ(t.format(sys, false).value(), "");
  EXPECT_EQ(t.format_delta(sys, kNewTurn, true).value(),
            "<start_of_turn>user\nBe brief.\n\nWho are you<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatTemplate, UnknownNamesAreErrorsListingTheKnownOnes) {
  Result<ChatTemplate> t = ChatTemplate::from_name("llama-9");
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find("'llama-9'"), std::string::npos);
  EXPECT_NE(t.status().message().find("chatml"), std::string::npos);
  EXPECT_EQ(ChatTemplate().name(), "chatml");
}

}  // namespace
}  // namespace tessera
