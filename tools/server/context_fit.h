// Fitting a request to one sequence's context, as llama-server does rather than refusing
// it: a token limit past the context is clamped (the generation runs until the sequence
// is full and ends as "length"); a completion prompt too long for the context is cut
// (its first n_keep tokens, then its end); a chat whose history is too long loses its
// oldest turns. docs/server.md, "Prompts longer than the context".
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tessera/chat.h"
#include "tessera/tokenizer.h"

namespace tessera::server {

/// The token limit of a prompt of `n_prompt` tokens: at most the cells left after it
/// (-1, "until the sequence is full", stays -1).
int32_t fit_max_tokens(int32_t max_tokens, int64_t n_prompt, int64_t n_ctx);

/// A prompt that leaves no cell to generate (n_prompt >= n_ctx) is cut to n_ctx / 2
/// tokens, the other half left to the generation: its first `n_keep` tokens (-1: as many
/// as may be; at least the BOS when it starts with `bos`; at most n_ctx / 2 - 1), then
/// its last ones; the middle is dropped. Returns true when it was cut.
bool truncate_prompt(std::vector<TokenId>& prompt, int64_t n_ctx, int64_t n_keep, TokenId bos);

/// The room a chat's answer must have before its history is shortened: `max_tokens`
/// (-1: not given), at most a quarter of the context, at least 1.
int64_t answer_room(int32_t max_tokens, int64_t n_ctx);

/// Messages -> prompt tokens (the chat template, then the tokenizer).
using ChatRender = std::function<std::vector<TokenId>(std::span<const ChatMessage>)>;

struct ChatFit {
  std::vector<TokenId> prompt;
  int dropped_messages = 0;  // the oldest non-system messages left out
};

/// The prompt of `messages`. When it leaves less than `room` cells of the context, the
/// oldest messages that are neither system messages nor the last user message (or
/// after it) are left out, whole turns at a time (a message and the replies up to the
/// next user message): the fewest turns that leave `room`, else all of them. Throws a
/// 400 context_length_exceeded (param "messages") when what is left still does not fit.
ChatFit fit_chat(std::span<const ChatMessage> messages, int64_t n_ctx, int64_t room, const ChatRender& render);

}  // namespace tessera::server
