// The server's limits on a request, as policy (the library's own limits on files,
// grammars and schemas are in include/tessera/limits.h; docs/robustness.md lists both).
// A request past one gets a 400 (413 for the body) naming the field and the limit; the
// server goes on serving everyone else.
#pragma once

#include <cstddef>

namespace tessera::server::limits {

/// Bytes of a request body (--max-body changes it): a chat of 8 MiB is ~2 M tokens,
/// beyond any context; cpp-httplib refuses a longer body before reading it.
inline constexpr size_t kDefaultMaxBodyBytes = size_t{8} << 20;
/// Arrays and objects nested in a body, checked on the text before it is parsed (the JSON
/// parser recurses per level): real requests nest 4 or 5 levels.
inline constexpr int kMaxJsonDepth = 64;
/// Prompts of one /v1/completions request (each becomes an engine request).
inline constexpr size_t kMaxPrompts = 64;
/// Inputs of one /v1/embeddings request.
inline constexpr size_t kMaxEmbeddingInputs = 256;
/// Choices per prompt (`n`).
inline constexpr int kMaxChoices = 128;
/// Stop strings (`stop`): OpenAI allows 4.
inline constexpr size_t kMaxStops = 16;
/// Entries of `logit_bias`: OpenAI allows 300.
inline constexpr size_t kMaxLogitBias = 1024;
// Tokens: a prompt must fit in one sequence's context (the engine refuses it otherwise)
// and generation stops at the end of that context whatever max_tokens says.

}  // namespace tessera::server::limits
