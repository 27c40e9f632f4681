// The chat template families and their renderers. The texts follow each family's
// published Jinja template, rendered for plain system/user/assistant messages, and agree
// with llama.cpp's built-in rendering (llama_chat_apply_template) of the same family.
#include <array>
#include <string>

#include "runtime/chat_template.h"

namespace tessera::chat {
namespace {

constexpr const char* kEos = "</s>";
// DeepSeek's full-width markers (U+FF5C, U+2581).
constexpr const char* kDeepSeekEos =
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
constexpr const char* kDeepSeekUser = "<\xEF\xBD\x9CUser\xEF\xBD\x9C>";
constexpr const char* kDeepSeekAssistant =
    "<\xEF\xBD\x9C"
    "Assistant\xEF\xBD\x9C>";

Family tagged(const char* name, const char* before, const char* after, const char* close,
              const char* end_marker, bool trim_content = false) {
  Family f{.name = name, .kind = Kind::Tagged, .end_marker = end_marker, .assistant_suffix = close};
  f.trim = trim_content;
  f.tag_before = before;
  f.tag_after = after;
  f.tag_close = close;
  return f;
}

// The template writes eos_token after each message: the model's EOS text.
Family zephyr() {
  Family f = tagged("zephyr", "<|", "|>\n", "\n", "");
  f.eos_close = true;
  return f;
}

Family affixed(const char* name, Affix system, Affix user, Affix assistant,
               const char* generation_prompt, const char* end_marker, bool trim_content = false) {
  Family f{.name = name,
           .kind = Kind::Affixed,
           .end_marker = end_marker,
           .assistant_suffix = assistant.suffix};
  f.trim = trim_content;
  f.system = system;
  f.user = user;
  f.assistant = assistant;
  f.generation_prompt = generation_prompt;
  return f;
}

Family llama2(const char* name, int variant) {
  return Family{.name = name,
                .kind = Kind::Llama2,
                .end_marker = kEos,
                .assistant_suffix = kEos,
                .variant = variant};
}

Family mistral(const char* name, int variant) {
  return Family{.name = name,
                .kind = Kind::Mistral,
                .end_marker = kEos,
                .assistant_suffix = kEos,
                .variant = variant};
}

const std::array<Family, 24>& table() {
  static const std::array<Family, 24> t = {
      tagged("chatml", "<|im_start|>", "\n", "<|im_end|>\n", "<|im_end|>"),
      llama2("llama2", 0),
      llama2("llama2-sys", kLlama2SysTags),
      llama2("llama2-sys-bos", kLlama2SysTags | kLlama2BosInside),
      llama2("llama2-sys-strip", kLlama2SysTags | kLlama2Strip),
      tagged("llama3", "<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>", "<|eot_id|>",
             true),
      tagged("llama4", "<|header_start|>", "<|header_end|>\n\n", "<|eot|>", "<|eot|>", true),
      mistral("mistral-v1", kMistralLeadSpace | kMistralTrailSpace),
      mistral("mistral-v3", kMistralTrailSpace | kMistralTrimReply),
      mistral("mistral-v3-tekken", 0),
      affixed("mistral-v7", {"[SYSTEM_PROMPT] ", "[/SYSTEM_PROMPT]"}, {"[INST] ", "[/INST]"},
              {" ", kEos}, "", kEos),
      affixed("mistral-v7-tekken", {"[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"}, {"[INST]", "[/INST]"},
              {"", kEos}, "", kEos),
      tagged("phi3", "<|", "|>\n", "<|end|>\n", "<|end|>"),
      tagged("phi4", "<|im_start|>", "<|im_sep|>", "<|im_end|>", "<|im_end|>"),
      zephyr(),
      Family{.name = "gemma",
             .kind = Kind::Gemma,
             .end_marker = "<end_of_turn>",
             .assistant_suffix = "<end_of_turn>\n"},
      affixed("vicuna", {"", "\n\n"}, {"USER: ", "\n"}, {"ASSISTANT: ", "</s>\n"},
              "ASSISTANT:", kEos),
      affixed("vicuna-orca", {"SYSTEM: ", "\n"}, {"USER: ", "\n"}, {"ASSISTANT: ", "</s>\n"},
              "ASSISTANT:", kEos),
      affixed("deepseek", {"", ""}, {"### Instruction:\n", "\n"},
              {"### Response:\n", "\n<|EOT|>\n"}, "### Response:\n", "<|EOT|>"),
      affixed("deepseek2", {"", "\n\n"}, {"User: ", "\n\n"}, {"Assistant: ", kDeepSeekEos},
              "Assistant:", kDeepSeekEos),
      affixed("deepseek3", {"", "\n\n"}, {kDeepSeekUser, ""}, {kDeepSeekAssistant, kDeepSeekEos},
              kDeepSeekAssistant, kDeepSeekEos),
      affixed("command-r", {"<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>", "<|END_OF_TURN_TOKEN|>"},
              {"<|START_OF_TURN_TOKEN|><|USER_TOKEN|>", "<|END_OF_TURN_TOKEN|>"},
              {"<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>"},
              "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>", true),
      tagged("granite", "<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>\n",
             "<|end_of_text|>"),
      affixed("openchat", {"", "<|end_of_turn|>"}, {"GPT4 Correct User: ", "<|end_of_turn|>"},
              {"GPT4 Correct Assistant: ", "<|end_of_turn|>"},
              "GPT4 Correct Assistant:", "<|end_of_turn|>"),
  };
  return t;
}

std::string body(const Family& f, const ChatMessage& m) {
  return f.trim ? trim(m.content) : m.content;
}

void render_tagged(const Family& f, std::string_view eos, std::span<const ChatMessage> messages,
                   bool add_gen, std::string& out) {
  for (const ChatMessage& m : messages) {
    out.append(f.tag_before).append(m.role).append(f.tag_after).append(body(f, m));
    if (f.eos_close) out.append(eos);
    out.append(f.tag_close);
  }
  if (add_gen) out.append(f.tag_before).append("assistant").append(f.tag_after);
}

void render_affixed(const Family& f, std::span<const ChatMessage> messages, bool add_gen,
                    std::string& out) {
  for (const ChatMessage& m : messages) {
    const Affix* a = m.role == "system"      ? &f.system
                     : m.role == "user"      ? &f.user
                     : m.role == "assistant" ? &f.assistant
                                             : nullptr;
    if (a) out.append(a->prefix).append(body(f, m)).append(a->suffix);
  }
  if (add_gen) out.append(f.generation_prompt);
}

// No generation prompt: the model answers right after " [/INST]".
void render_llama2(const Family& f, std::span<const ChatMessage> messages, std::string& out) {
  const bool sys_tags = (f.variant & kLlama2SysTags) != 0;
  const bool bos_inside = (f.variant & kLlama2BosInside) != 0;
  const bool strip = (f.variant & kLlama2Strip) != 0;
  out += "[INST] ";
  bool in_turn = true;  // the first "[INST] " is already written
  for (const ChatMessage& m : messages) {
    const std::string c = strip ? trim(m.content) : m.content;
    if (!in_turn) {
      out += bos_inside ? "<s>[INST] " : "[INST] ";
      in_turn = true;
    }
    if (m.role == "system") {
      out += sys_tags ? "<<SYS>>\n" + c + "\n<</SYS>>\n\n" : c + "\n";
    } else if (m.role == "user") {
      out += c + " [/INST]";
    } else {
      out += c + kEos;
      in_turn = false;
    }
  }
}

void render_mistral(const Family& f, std::span<const ChatMessage> messages, std::string& out) {
  const std::string lead = (f.variant & kMistralLeadSpace) ? " " : "";
  const std::string trail = (f.variant & kMistralTrailSpace) ? " " : "";
  const bool trim_reply = (f.variant & kMistralTrimReply) != 0;
  bool in_turn = false;
  for (const ChatMessage& m : messages) {
    if (!in_turn) {
      out += lead + "[INST]" + trail;
      in_turn = true;
    }
    if (m.role == "system") {
      out += m.content + "\n\n";
    } else if (m.role == "user") {
      out += m.content + lead + "[/INST]";
    } else {
      out += trail + (trim_reply ? trim(m.content) : m.content) + kEos;
      in_turn = false;
    }
  }
}

void render_gemma(std::span<const ChatMessage> messages, bool add_gen, std::string& out) {
  std::string system;  // no system role: it opens the next user turn
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      system += trim(m.content);
      continue;
    }
    const bool model = m.role == "assistant";
    out += "<start_of_turn>" + (model ? std::string("model") : m.role) + "\n";
    if (!system.empty() && !model) {
      out += system + "\n\n";
      system.clear();
    }
    out += trim(m.content) + "<end_of_turn>\n";
  }
  if (add_gen) out += "<start_of_turn>model\n";
}

}  // namespace

std::string trim(std::string_view s) {
  const auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  size_t b = 0;
  size_t e = s.size();
  while (b < e && space(s[b])) ++b;
  while (e > b && space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

std::span<const Family> families() { return table(); }

const Family* find_family(std::string_view name) {
  for (const Family& f : table()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

void render(const Family& family, std::string_view eos, std::span<const ChatMessage> messages,
            bool add_generation_prompt, std::string& out) {
  switch (family.kind) {
    case Kind::Tagged:
      return render_tagged(family, eos, messages, add_generation_prompt, out);
    case Kind::Affixed:
      return render_affixed(family, messages, add_generation_prompt, out);
    case Kind::Llama2:
      return render_llama2(family, messages, out);
    case Kind::Mistral:
      return render_mistral(family, messages, out);
    case Kind::Gemma:
      return render_gemma(messages, add_generation_prompt, out);
  }
}

}  // namespace tessera::chat
