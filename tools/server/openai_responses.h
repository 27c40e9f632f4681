// OpenAI's response shapes: chat.completion, text_completion, their streaming chunks,
// usage and log-probabilities (chat: logprobs.content[]; completions: the legacy
// {tokens, token_logprobs, top_logprobs, text_offset}).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/chat_tools.h"
#include "server/generation.h"
#include "server/sse.h"

namespace tessera::server {

/// What every response and chunk of one request repeats.
struct ResponseMeta {
  std::string id;  // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;
  std::string model;
  std::string fingerprint;  // system_fingerprint: build_fingerprint()
  // tessera's fields beside OpenAI's (clients ignore them): `truncated`, a prompt was cut
  // or messages left out to fit the context; chat only (>= 0): `dropped_messages`.
  bool truncated = false;
  int dropped_messages = -1;
};

nlohmann::json usage_json(const serving::Usage& u);
/// {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]} per token.
nlohmann::json chat_logprobs_json(const std::vector<TokenInfo>& tokens, const Tokenizer& tok);
/// {tokens, token_logprobs, top_logprobs: [{piece: logprob}], text_offset}.
nlohmann::json legacy_logprobs_json(const std::vector<TokenInfo>& tokens, const Tokenizer& tok);
/// The UTF-8 bytes of a token's text, as numbers.
nlohmann::json bytes_json(const std::string& piece);

/// `plan`: how each choice's text is read (content, reasoning_content, tool_calls).
nlohmann::json chat_response(const ResponseMeta& meta, const JobOutput& out, bool logprobs, bool timed_out,
                             const Tokenizer& tok, const ReplyPlan& plan = {});
nlohmann::json completion_response(const ResponseMeta& meta, const JobOutput& out, bool logprobs,
                                   bool timed_out, const Tokenizer& tok);

/// Streaming formatters (chat.completion.chunk, text_completion chunks).
std::shared_ptr<SseFormatter> chat_stream_formatter(ResponseMeta meta, bool logprobs, bool include_usage,
                                                    const Tokenizer& tok, const ReplyPlan& plan = {});
std::shared_ptr<SseFormatter> completion_stream_formatter(ResponseMeta meta, bool logprobs, bool include_usage,
                                                          const Tokenizer& tok);

}  // namespace tessera::server
