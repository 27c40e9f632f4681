// The chat template families: one table row per family, the renderers of each kind, and
// detection from Jinja text. The public face is tessera::ChatTemplate (tessera/chat.h).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tessera/chat.h"
#include "tessera/jinja.h"

namespace tessera::chat {

/// How a family lays messages out.
enum class Kind {
  Tagged,   // open(role) + content + close for any role; the generation prompt is open("assistant")
  Affixed,  // fixed prefix/suffix per role (system, user, assistant); other roles skipped
  Llama2,   // "[INST] ... [/INST]" turns, system folded into the first one
  Mistral,  // "[INST]" turns of the official mistral v1/v3 templates
  Gemma,    // "<start_of_turn>" turns, "model" for the assistant, system merged into the next user
            // turn
};

struct Affix {
  const char* prefix = "";
  const char* suffix = "";
};

/// Variant bits of the Llama2 kind.
inline constexpr int kLlama2SysTags = 1;    // system message inside <<SYS>> tags
inline constexpr int kLlama2BosInside = 2;  // "<s>" before every [INST] but the first
inline constexpr int kLlama2Strip = 4;      // contents trimmed
/// Variant bits of the Mistral kind.
inline constexpr int kMistralLeadSpace = 1;   // " [INST]", " [/INST]" (v1)
inline constexpr int kMistralTrailSpace = 2;  // "[INST] " and " " before replies (v1, v3)
inline constexpr int kMistralTrimReply = 4;   // assistant contents trimmed (v3)

/// One family. Fields not used by its kind stay empty.
struct Family {
  const char* name;
  Kind kind;
  const char* end_marker;        // text that ends an assistant message
  const char* assistant_suffix;  // everything after an assistant message's content
  bool trim = false;             // Tagged/Affixed: contents trimmed of surrounding whitespace
  bool eos_close = false;        // Tagged: messages end with the model's EOS text + tag_close;
                                 // end_marker and assistant_suffix then derive from it
  // Tagged
  const char* tag_before = "";  // open(role) = tag_before + role + tag_after
  const char* tag_after = "";
  const char* tag_close = "";
  // Affixed
  Affix system{};
  Affix user{};
  Affix assistant{};
  const char* generation_prompt = "";
  // Llama2 / Mistral
  int variant = 0;
};

/// Every family, in the order of ChatTemplate::names().
std::span<const Family> families();
/// The family called `name`, or nullptr.
const Family* find_family(std::string_view name);
/// The family whose distinctive substrings `jinja_text` contains, or nullptr.
const Family* detect_family(std::string_view jinja_text);

/// Appends the rendering of `messages` in `family` to `out`; `eos` is the EOS text of
/// families with eos_close.
void render(const Family& family, std::string_view eos, std::span<const ChatMessage> messages,
            bool add_generation_prompt, std::string& out);

/// A model's Jinja chat template, parsed, with what it renders with.
struct JinjaChat {
  jinja::Template main;
  std::optional<jinja::Template> tool_use;  // tokenizer.chat_template.tool_use
  std::string source;
  std::string bos;         // bos_token
  std::string eos;         // eos_token
  bool strip_bos = false;  // the vocabulary adds BOS: a leading bos_token is removed
  std::string end_marker;
  std::string assistant_suffix;
  // The template renders a call's arguments only when they are an object (it iterates
  // or indexes them): OpenAI's string arguments are parsed before rendering.
  bool object_arguments = false;
};

/// Renders a Jinja chat template (chat_template_jinja.cpp).
Result<std::string> render_jinja(const JinjaChat& chat, std::span<const ChatMessage> messages,
                                 bool add_generation_prompt, const ChatExtras& extras);
/// Parses `source` (and a tool_use variant) and finds the end marker and assistant
/// suffix: from the family it resembles, else from a probe render.
Result<std::shared_ptr<const JinjaChat>> make_jinja(std::string_view source, std::string_view tool_use_source,
                                                    std::string bos, std::string eos, bool strip_bos,
                                                    const Family* family);

/// `s` without leading and trailing ASCII whitespace.
std::string trim(std::string_view s);

}  // namespace tessera::chat
