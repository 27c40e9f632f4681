// Request bodies -> what the engine runs. One Job per HTTP request: one engine request
// per prompt (a /v1/completions list of prompts gives several), each with `n` choices.
// Every function throws a 400 ApiError naming the first bad field.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/chat_tools.h"
#include "server/json_fields.h"
#include "tessera/chat.h"
#include "tessera/serving.h"

namespace tessera::server {

struct ServerContext;

struct Job {
  std::vector<std::vector<TokenId>> prompts;  // one engine request each
  serving::GenerationRequest request;         // everything but the prompt
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool return_tokens = false;  // /completion: the generated ids in the final object's `tokens`
  bool timings_per_token = false;  // /completion streams: `timings` in every frame
  std::vector<std::string> response_fields;  // /completion: the final object's fields to keep (empty: all)
  std::vector<bool> prompt_truncated;  // per prompt: cut to fit the context (context_fit.h)
  int dropped_messages = 0;            // chat: the oldest messages left out to fit the context
  ChatExtras chat_extras;              // chat: tools and template variables for a Jinja template
  ReplyPlan reply;                     // chat: how replies are read (tool calls, reasoning)

  /// True when a prompt was cut or messages were left out.
  bool truncated() const;
};

/// Which API's field names and defaults apply.
enum class Dialect {
  Chat,        // POST /v1/chat/completions
  Completion,  // POST /v1/completions
  Llama,       // POST /completion
  Infill,      // POST /infill: /completion's fields and shape, a fill-in-the-middle prompt
};

/// The messages of a chat request (`messages`: roles system/developer/user/assistant/tool;
/// content a string, null, or an array of {type:"text", text} parts; an assistant
/// message may have only tool_calls).
std::vector<ChatMessage> decode_messages(const Fields& body);

/// The chat prompt text of `messages` under the server's template. Throws a 400
/// (param "messages") with the template's message when the template raises.
std::string render_chat(const ServerContext& ctx, std::span<const ChatMessage> messages, const ChatExtras& extras);

/// The whole request for `dialect`. `ordered`: the same body with its key order (chat:
/// what the template renders of messages and tools keeps the client's order); null: `body`.
Job decode_job(const json& body, Dialect dialect, const ServerContext& ctx,
               const nlohmann::ordered_json* ordered = nullptr);

/// A /v1/embeddings or /embeddings request: `input` (or llama.cpp's `content`): a string,
/// strings, token ids, or lists of token ids; `pooling` (default: the server's --pooling;
/// "none": every token's vector), `normalize`.
Job decode_embedding_job(const Fields& body, const ServerContext& ctx);

/// Sampling, stop strings, limits and grammar of a request (every dialect), into `r`.
/// sampling_decode.cpp.
void decode_generation_fields(const Fields& body, Dialect dialect, const ServerContext& ctx,
                              serving::GenerationRequest& r);

/// A list [{"id", "scale"}] named `param` (a request's `lora`, POST /lora-adapters'
/// body): one scale per adapter, those not listed 0. lora_endpoints.cpp.
std::vector<float> decode_lora_list(const json& list, const std::string& param, size_t n_adapters);
/// A request's `lora` field; absent: the engine's defaults. lora_endpoints.cpp.
std::optional<std::vector<float>> decode_lora_field(const Fields& body, const ServerContext& ctx);

/// A list of token ids (`param` names the field), each checked against the vocabulary.
std::vector<TokenId> decode_token_list(const json& v, const std::string& param, int32_t n_vocab);

}  // namespace tessera::server
