// The conversation files of `tessera chat`'s /save and /load: JSON in the shape of an
// OpenAI chat request's messages,
//   {"messages": [{"role": "system", "content": "..."},
//                 {"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]}
// so that a saved conversation can be read by other tools and sent to `tessera serve`.
#pragma once

#include <string>
#include <vector>

#include "tessera/chat.h"
#include "tessera/status.h"

namespace tessera::cli {

/// Writes `messages` to `path` (replacing it). Errors name the file.
Status save_conversation(const std::string& path, const std::vector<ChatMessage>& messages);

/// The messages of a file written by save_conversation (or by hand): an object whose
/// "messages" is an array of objects with a string "role" (system, user or assistant)
/// and a string "content". Errors name the file and the field; the order of the roles
/// is ChatSession::replace's to check.
Result<std::vector<ChatMessage>> load_conversation(const std::string& path);

}  // namespace tessera::cli
