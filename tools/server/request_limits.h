// The server's limits on a request, as policy (the library's own limits on files,
// grammars and schemas are in include/tessera/limits.h; docs/robustness.md lists both).
// A request past one gets a 400 (413 for the body) naming the field and the limit; the
// server goes on serving everyone else.
#pragma once

#include <cstddef>

namespace tessera::server::limits {

/// Bytes of a request body (--max-body changes it): a chat of 8 MiB is ~2 M tokens,
/// beyond any context; the transport refuses a longer body before reading past the limit.
inline constexpr size_t kDefaultMaxBodyBytes = size_t{8} << 20;
/// Connections open at once (--max-connections): each costs a socket and a small buffer,
/// no thread; the server raises its descriptor limit to fit (docs/server.md).
inline constexpr int kDefaultMaxConnections = 4096;
/// Connections open at once from one client address (--max-connections-per-client). A
/// reverse proxy in front puts every client on one address: raise it or set 0 there.
inline constexpr int kDefaultMaxConnectionsPerClient = 512;
/// Seconds a connection may wait for a request's first byte (a new one, or between
/// keep-alive requests) before it is closed (--idle-timeout).
inline constexpr double kDefaultIdleTimeoutS = 30;
/// Seconds from a request's first byte to the end of its headers, however slowly they
/// come; then 408 (--header-timeout).
inline constexpr double kDefaultHeaderTimeoutS = 10;
/// Seconds from the end of the headers to the end of the body; then 408 (--body-timeout).
inline constexpr double kDefaultBodyTimeoutS = 60;
/// Bytes of a request line and its headers (then 431), and header fields (then 431).
inline constexpr size_t kMaxHeaderBytes = size_t{64} << 10;
inline constexpr size_t kMaxHeaderFields = 128;
/// Seconds one write to a client may take (a client that stops reading a stream is
/// dropped and its request cancelled).
inline constexpr double kWriteTimeoutS = 30;
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
