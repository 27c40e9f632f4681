// Chat: turning a conversation into the text a model was trained on (chat templates),
// and a session that keeps a conversation in a context turn after turn.
//
// How templates are chosen. GGUF files carry their template as Jinja text
// (`tokenizer.chat_template`, and named variants such as `tokenizer.chat_template.tool_use`).
// tessera renders that text with its Jinja engine (tessera/jinja.h), as Hugging Face
// transformers' apply_chat_template renders it: the model's own template is the default,
// with the model's BOS and EOS texts as `bos_token` / `eos_token`, the request's tools as
// `tools`, and extra variables (e.g. `enable_thinking`) as the caller gives them. A
// template that does not parse is an error at load; one that raises while rendering
// (raise_exception: a system role the model refuses, parallel calls a template cannot
// write) is an error of that render, with the template's own message.
//
// Built-in families remain, as named choices (`--chat-template NAME`) and for files
// without a template (then chatml, with a warning). A family renders with built-in code,
// as llama.cpp's llama_chat_apply_template does, with the same output for the same
// messages (except where noted below). The family is also recognised from a Jinja text by
// distinctive substrings ("<|im_start|>" -> chatml, "<|start_header_id|>" -> llama3, ...):
// it gives a Jinja template its end marker and assistant suffix (for templates of no
// family they are read off a probe render).
//
// Families (names as llama.cpp spells them): chatml, llama2, llama2-sys, llama2-sys-bos,
// llama2-sys-strip, llama3, llama4, mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7,
// mistral-v7-tekken, phi3, phi4, zephyr, gemma, vicuna, vicuna-orca, deepseek, deepseek2,
// deepseek3, command-r, granite, openchat. Where tessera follows the published templates
// rather than llama.cpp: zephyr ends messages with the model's EOS text (its Jinja writes
// eos_token; llama.cpp writes "<|endoftext|>") and is detected from templates that use
// eos_token (zephyr-7b-beta, TinyLlama-chat); granite's generation prompt has no
// trailing newline (some llama.cpp versions add one); a [SYSTEM_PROMPT] template without
// spaces after its tags is mistral-v7-tekken (llama.cpp detects only mistral-v7).
//
// BOS is not part of the rendered text: the tokenizer adds it when the vocabulary asks
// for it (encode(..., add_special=true)), on the first turn only. A Jinja template that
// writes bos_token itself has that leading text removed from its render when the
// vocabulary adds BOS (no double BOS).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/context.h"
#include "tessera/status.h"
#include "tessera/tokenizer.h"

namespace tessera {

class Model;

/// One message of a conversation. Roles: "system", "user", "assistant" (and "tool",
/// which only a Jinja template renders).
struct ChatMessage {
  std::string role;
  std::string content;
  /// The whole message as a JSON object, as an OpenAI client sent it (tool_calls,
  /// tool_call_id, name...): what a Jinja template is given instead of {role, content}.
  /// Empty: {role, content}.
  std::string json = {};
};

namespace chat {
struct Family;
struct JinjaChat;
}

/// What a Jinja template may be given beyond role/content messages (the server's OpenAI
/// requests): each a JSON text, empty when absent.
struct ChatExtras {
  std::string tools_json;     // the tools array: `tools`, and the tool_use template if any
  std::string kwargs_json;    // an object whose members become variables (enable_thinking...)
  std::string now;            // ISO-8601 time strftime_now() formats; empty: the current time
};

/// A chat template family: renders messages as the model's prompt text.
class ChatTemplate {
 public:
  /// chatml.
  ChatTemplate();

  /// The family a template's Jinja text belongs to (or a family name given as the text),
  /// or nullopt when none matches.
  static std::optional<ChatTemplate> detect(std::string_view jinja_text);
  /// The family called `name`; errors list the known names.
  static Result<ChatTemplate> from_name(std::string_view name);
  /// For a model: the family `name` when not empty; else the file's own Jinja template
  /// (`tokenizer.chat_template`, with `tokenizer.chat_template.tool_use` for requests
  /// with tools); else chatml, with a warning logged once. Errors: an unknown `name`, a
  /// template that does not parse (with its line and column).
  static Result<ChatTemplate> for_model(const Model& model, std::string_view name = {});
  /// A Jinja template text (e.g. --chat-template-file) for `model` (its BOS/EOS texts).
  static Result<ChatTemplate> from_jinja(std::string_view source, const Model* model = nullptr,
                                         std::string_view tool_use_source = {});
  /// Every family name, in a stable order.
  static std::vector<std::string> names();

  /// The family's name, e.g. "chatml"; for a Jinja template the family it resembles, or
  /// "jinja".
  std::string_view name() const;
  /// True for a Jinja template (the model's own or a file's).
  bool is_jinja() const { return jinja_ != nullptr; }
  /// The Jinja text (empty for a family).
  std::string_view source() const;

  /// The whole conversation as prompt text. `add_generation_prompt`: end with the text
  /// that opens the assistant's reply (for families that have one). Errors: what a Jinja
  /// template raises.
  Result<std::string> format(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
  /// format() with what a Jinja template may use beyond role/content (a family renders
  /// `messages` and ignores the extras).
  Result<std::string> format(std::span<const ChatMessage> messages, bool add_generation_prompt,
                             const ChatExtras& extras) const;

  /// Only the text that `added` contributes after `history`: what a context that already
  /// holds format(history, false) must decode next. For every family the rendering of
  /// earlier messages does not depend on later ones, so this is a suffix of
  /// format(history + added, add_generation_prompt). A Jinja template may render earlier
  /// messages differently once later ones follow (Qwen3 drops the reasoning of earlier
  /// replies): then this is an error, and the caller renders the whole conversation.
  Result<std::string> format_delta(std::span<const ChatMessage> history, std::span<const ChatMessage> added,
                                   bool add_generation_prompt) const;

  /// The text that ends an assistant message ("<|im_end|>", "<|eot_id|>", "</s>", ...):
  /// generation stops when the model writes it. Valid while this template lives.
  std::string_view end_marker() const;
  /// Everything the family puts after an assistant message's content (e.g. "<|im_end|>\n"
  /// for chatml): decoded after a reply so the context holds a closed turn.
  std::string assistant_suffix() const;

  /// Families whose template writes `eos_token` after every message (zephyr) use this
  /// text: the model's EOS token text when the template comes from for_model, else "</s>".
  void set_eos_text(std::string eos) { eos_ = std::move(eos); }
  const std::string& eos_text() const { return eos_; }

 private:
  explicit ChatTemplate(const chat::Family* family) : family_(family) {}
  const chat::Family* family_;  // for a Jinja template: the family it resembles, or null
  std::shared_ptr<const chat::JinjaChat> jinja_;
  std::string eos_ = "</s>";
};

/// What `tessera chat` and `serve` render with: the Jinja text of `jinja_file` when not
/// empty (--chat-template-file), else ChatTemplate::for_model(model, name). Errors: an
/// unreadable file, a template that does not parse, an unknown name.
Result<ChatTemplate> choose_chat_template(const Model& model, std::string_view name, const std::string& jinja_file);

/// Whether a model with this vocabulary can end its replies under `chat_template`: the
/// template's end marker ("<|im_end|>", "</s>", ...) is one token of the vocabulary, as it
/// is for the models the template was made for. A model trained on plain text (tessera's
/// built-in model, stories260K) has no such token under chatml and never ends a reply: its
/// replies run until a length limit or a stop text (ChatSession::set_stop_at_blank_line).
bool can_end_turn(const ChatTemplate& chat_template, const Tokenizer& tokenizer);

/// What one reply token produced.
struct ReplyStep {
  std::string text;   // text to show now (may be empty: held back or incomplete UTF-8)
  bool done = false;  // the reply ended (end-of-generation token or end marker)
};

/// A conversation kept in a Context: each turn decodes only its own new tokens, and the
/// KV cache holds the whole conversation (history is never evaluated twice).
///
/// Use: add_user_message(text); then, until a step is done or you stop, sample a token
/// from logits() and push() it; then end_reply(). Sampling stays with the caller.
class ChatSession {
 public:
  /// `context` and `tokenizer` must outlive the session; `context` should be empty. An
  /// empty `system_prompt` adds no system message.
  ChatSession(Context& context, const Tokenizer& tokenizer, ChatTemplate chat_template,
              std::string system_prompt = {});

  /// Adds a user message (with the system message before it on the first turn) and
  /// decodes the tokens of this turn only, up to the assistant's generation prompt.
  /// When the turn and the reply room (set_reply_room) do not fit after the conversation,
  /// or the last reply left the context full, the oldest turns are dropped (the system
  /// message stays) and what remains is decoded again, from an empty context:
  /// dropped_turns() says how many. Errors: the turn does not fit even alone (then
  /// nothing is decoded and the conversation is unchanged), or a reply is still open.
  Status add_user_message(std::string_view text);

  /// Replaces the conversation by `messages` and decodes it again: an optional system
  /// message first (it becomes the system prompt, which reset() keeps; without one there
  /// is none), then user and assistant messages in turn, ending with an assistant
  /// message (or no turn at all). Oldest turns are dropped when the conversation does not
  /// fit in the context (the next turn makes room for its reply as it needs); the last
  /// turn must fit. Errors
  /// name the message (`messages[3].role: ...`) and leave the conversation unchanged.
  Status replace(std::vector<ChatMessage> messages);

  /// Tokens kept free for a reply (and its closing suffix) when a turn is added; 0 by
  /// default. Past half of the context it counts as half.
  void set_reply_room(int64_t n_tokens) { reply_room_ = n_tokens; }
  /// Ends a reply at its first blank line ("\n\n") after some text, which is not shown
  /// or recorded (for models that never end a reply themselves, see can_end_turn).
  void set_stop_at_blank_line(bool on) { stop_at_blank_line_ = on; }
  /// Turns dropped from the start of the conversation by the last add_user_message or
  /// replace (0: none).
  int dropped_turns() const { return dropped_turns_; }

  /// Logits to sample the next reply token from.
  std::span<const float> logits() const;
  /// True when no further reply token fits in the context.
  bool context_full() const;

  /// Takes the sampled token. An end-of-generation token ends the reply (not decoded);
  /// any other token is decoded, and its text is returned, except text that may begin
  /// the template's end marker, which is held back until it is known not to be one.
  /// Writing the end marker ends the reply. Errors: no reply open, or the context is full.
  Result<ReplyStep> push(TokenId token);

  /// Closes the reply: decodes the template's assistant suffix (when it fits) so the
  /// next turn follows a closed turn, and records the reply in the history. Returns the
  /// text still held back (to show after the last step).
  Result<std::string> end_reply();

  /// Forgets the conversation (clears the context); the system prompt stays.
  void reset();

  /// The conversation so far (the system message included once it is decoded).
  const std::vector<ChatMessage>& messages() const { return messages_; }
  /// The system prompt (empty: none).
  const std::string& system_prompt() const { return system_prompt_; }
  const ChatTemplate& chat_template() const { return template_; }
  /// Tokens in the context.
  int64_t n_past() const;
  /// Tokens decoded by the last add_user_message.
  int64_t last_turn_tokens() const { return last_turn_tokens_; }

 private:
  /// Starts (open) or forgets the reply state.
  void open_reply(bool open);
  std::string take_safe_text();
  /// Where the reply's text in pending_ stops (a blank line after some text), or npos.
  size_t blank_line_stop() const;
  /// Tokens of format(messages, generation_prompt) from the start of a context.
  Result<std::vector<TokenId>> encode_all(std::span<const ChatMessage> messages,
                                  bool generation_prompt) const;
  /// Drops the oldest turns of `messages` (not its system message, nor its last turn)
  /// until its tokens fit with `room` tokens to spare; returns those tokens and sets
  /// dropped_turns_. Errors: even the last turn alone (called `what`) does not fit.
  Result<std::vector<TokenId>> fit(std::vector<ChatMessage>& messages, bool generation_prompt,
                                   int64_t room, const char* what);
  /// Clears the context and decodes `tokens`: the conversation `messages`, evaluated again.
  Status evaluate_again(std::vector<ChatMessage> messages, std::span<const TokenId> tokens);
  int64_t reply_room() const;

  Context* context_;
  const Tokenizer* tokenizer_;
  ChatTemplate template_;
  std::string system_prompt_;
  std::vector<ChatMessage> messages_;
  int64_t last_turn_tokens_ = 0;
  int64_t reply_room_ = 0;
  bool stop_at_blank_line_ = false;
  int dropped_turns_ = 0;

  // The open reply.
  bool replying_ = false;
  bool reply_done_ = false;  // an end-of-generation token or the end marker came
  bool marker_seen_ = false;
  bool blank_line_seen_ = false;  // the reply ended at a blank line
  bool unclosed_ = false;  // the last reply's suffix did not fit: the context is full
  std::string reply_;      // text of the reply so far (what the history will record)
  std::string pending_;    // decoded text not shown yet (could start the end marker)
  StreamDecoder stream_;
};

}  // namespace tessera
