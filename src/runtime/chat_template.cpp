// ChatTemplate: choosing a family (by name, from a template's Jinja text, or for a model)
// and rendering conversations with it.
#include "runtime/chat_template.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "core/check.h"
#include "tessera/gguf.h"
#include "tessera/log.h"
#include "tessera/model.h"
#include "tessera/tokenizer.h"

namespace tessera {
namespace chat {
namespace {

const Family* detect_mistral_or_llama2(std::string_view t) {
  const auto has = [t](std::string_view s) { return t.find(s) != std::string_view::npos; };
  if (has("[SYSTEM_PROMPT]")) {
    // v7 writes "[SYSTEM_PROMPT] " and "[INST] " with a space; v7-tekken without.
    return find_family(has("[SYSTEM_PROMPT] ") || has("[INST] ") ? "mistral-v7"
                                                                 : "mistral-v7-tekken");
  }
  // The official v1 template adds the system message as "' [INST] ' + system_message";
  // v3 and v3-tekken list tools in "[AVAILABLE_TOOLS]".
  if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
    if (has(" [INST]")) return find_family("mistral-v1");
    if (has("\"[INST]\"")) return find_family("mistral-v3-tekken");
    return find_family("mistral-v3");
  }
  if (has("content.strip()")) return find_family("llama2-sys-strip");
  if (has("bos_token + '[INST]")) return find_family("llama2-sys-bos");
  if (has("<<SYS>>")) return find_family("llama2-sys");
  return find_family("llama2");
}

}  // namespace

const Family* detect_family(std::string_view t) {
  if (const Family* named = find_family(t)) return named;
  const auto has = [t](std::string_view s) { return t.find(s) != std::string_view::npos; };
  const char* name = nullptr;
  if (has("<|im_start|>")) {
    name = has("<|im_sep|>") ? "phi4" : "chatml";
  } else if (t.starts_with("mistral") || has("[INST]")) {
    return detect_mistral_or_llama2(t);
  } else if (has("<|assistant|>") && has("<|end|>")) {
    name = "phi3";
  } else if (has("<|user|>") && has("<|assistant|>") &&
             (has("<|endoftext|>") || has("eos_token"))) {
    name = "zephyr";
  } else if (has("<start_of_turn>")) {
    name = "gemma";
  } else if (has("GPT4 Correct ")) {
    name = "openchat";
  } else if (has("USER: ") && has("ASSISTANT: ")) {
    name = has("SYSTEM: ") ? "vicuna-orca" : "vicuna";
  } else if (has("### Instruction:") && has("<|EOT|>")) {
    name = "deepseek";
  } else if (has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")) {
    name = "command-r";
  } else if (has("<|start_header_id|>") && has("<|end_header_id|>")) {
    name = "llama3";
  } else if (has("'Assistant: ' + message['content'] + eos_token")) {
    name = "deepseek2";
  } else if (has("<\xEF\xBD\x9C"
                 "Assistant\xEF\xBD\x9C>") &&
             has("<\xEF\xBD\x9CUser\xEF\xBD\x9C>")) {
    name = "deepseek3";
  } else if (has("<|start_of_role|>")) {
    name = "granite";
  } else if (has("<|header_start|>") && has("<|header_end|>")) {
    name = "llama4";
  }
  return name ? find_family(name) : nullptr;
}

}  // namespace chat

ChatTemplate::ChatTemplate() : family_(chat::find_family("chatml")) {}

std::optional<ChatTemplate> ChatTemplate::detect(std::string_view jinja_text) {
  const chat::Family* f = chat::detect_family(jinja_text);
  if (!f) return std::nullopt;
  return ChatTemplate(f);
}

Result<ChatTemplate> ChatTemplate::from_name(std::string_view name) {
  if (const chat::Family* f = chat::find_family(name)) return ChatTemplate(f);
  std::string known;
  for (const std::string& n : names()) known += (known.empty() ? "" : ", ") + n;
  return Status::error("chat template '" + std::string(name) + "' is unknown (known: " + known +
                       ")");
}

namespace {

// The model's BOS and EOS texts, and whether its vocabulary adds BOS.
struct SpecialTexts {
  std::string bos, eos;
  bool adds_bos = false;
};
SpecialTexts special_texts(const Model* model) {
  SpecialTexts t;
  const Tokenizer* tok = model ? model->tokenizer() : nullptr;
  if (!tok) return t;
  if (tok->bos() >= 0) t.bos = tok->token_text(tok->bos());
  if (tok->eos() >= 0) t.eos = tok->token_text(tok->eos());
  t.adds_bos = tok->add_bos_token() && tok->bos() >= 0;
  return t;
}

const std::string* metadata_string(const Model& model, const char* key) {
  const gguf::Value* v = model.file().find(key);
  return v ? v->as_string() : nullptr;
}

}  // namespace

Result<ChatTemplate> ChatTemplate::from_jinja(std::string_view source, const Model* model,
                                              std::string_view tool_use_source) {
  const SpecialTexts t = special_texts(model);
  const chat::Family* family = chat::detect_family(source);
  Result<std::shared_ptr<const chat::JinjaChat>> parsed =
      chat::make_jinja(source, tool_use_source, t.bos, t.eos.empty() ? "</s>" : t.eos, t.adds_bos, family);
  if (!parsed) return parsed.status();
  ChatTemplate out(family);
  out.jinja_ = *parsed;
  if (!t.eos.empty()) out.eos_ = t.eos;
  return out;
}

Result<ChatTemplate> ChatTemplate::for_model(const Model& model, std::string_view name) {
  const std::string* text = metadata_string(model, "tokenizer.chat_template");
  if (name.empty() && text) {
    const std::string* tool_use = metadata_string(model, "tokenizer.chat_template.tool_use");
    Result<ChatTemplate> t = from_jinja(*text, &model, tool_use ? *tool_use : std::string_view());
    if (!t) {
      return Status::error(model.info().path + ": " + t.status().message() +
                           " (choose a built-in template with --chat-template NAME, or give one with "
                           "--chat-template-file)");
    }
    return t;
  }
  Result<ChatTemplate> chosen = ChatTemplate();
  if (!name.empty()) {
    chosen = from_name(name);
  } else {
    log(LogLevel::Warn, "%s: the file has no chat template (tokenizer.chat_template); using chatml "
        "(choose another with --chat-template)", model.info().path.c_str());
  }
  if (chosen && model.tokenizer() && model.tokenizer()->eos() >= 0) {
    chosen->set_eos_text(model.tokenizer()->token_text(model.tokenizer()->eos()));
  }
  return chosen;
}

Result<ChatTemplate> choose_chat_template(const Model& model, std::string_view name, const std::string& jinja_file) {
  if (jinja_file.empty()) return ChatTemplate::for_model(model, name);
  std::ifstream f(jinja_file, std::ios::binary);
  if (!f) return Status::error("cannot read the chat template file '" + jinja_file + "'");
  std::stringstream text;
  text << f.rdbuf();
  Result<ChatTemplate> t = ChatTemplate::from_jinja(text.str(), &model);
  if (!t) return Status::error(jinja_file + ": " + t.status().message());
  return t;
}

std::vector<std::string> ChatTemplate::names() {
  std::vector<std::string> out;
  for (const chat::Family& f : chat::families()) out.emplace_back(f.name);
  return out;
}

std::string_view ChatTemplate::name() const { return family_ ? std::string_view(family_->name) : "jinja"; }

std::string_view ChatTemplate::source() const { return jinja_ ? std::string_view(jinja_->source) : ""; }

std::string_view ChatTemplate::end_marker() const {
  if (jinja_) return jinja_->end_marker;
  return family_->eos_close ? std::string_view(eos_) : family_->end_marker;
}

std::string ChatTemplate::assistant_suffix() const {
  if (jinja_) return jinja_->assistant_suffix;
  return family_->eos_close ? eos_ + family_->tag_close : family_->assistant_suffix;
}

Result<std::string> ChatTemplate::format(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  return format(messages, add_generation_prompt, ChatExtras{});
}

Result<std::string> ChatTemplate::format(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                         const ChatExtras& extras) const {
  if (jinja_) return chat::render_jinja(*jinja_, messages, add_generation_prompt, extras);
  std::string out;
  chat::render(*family_, eos_, messages, add_generation_prompt, out);
  return out;
}

Result<std::string> ChatTemplate::format_delta(std::span<const ChatMessage> history,
                                               std::span<const ChatMessage> added,
                                               bool add_generation_prompt) const {
  std::vector<ChatMessage> all(history.begin(), history.end());
  all.insert(all.end(), added.begin(), added.end());
  Result<std::string> full = format(all, add_generation_prompt);
  if (!full || history.empty()) return full;
  Result<std::string> past = format(history, false);
  if (!past) return past.status();
  if (full->compare(0, past->size(), *past) != 0) {
    TESSERA_CHECK_MSG(jinja_ != nullptr, "a chat family rendered earlier messages differently");
    return Status::error("chat template: earlier messages render differently once later ones follow");
  }
  return full->substr(past->size());
}

}  // namespace tessera
