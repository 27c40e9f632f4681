// llama-server's /infill prompt: the fill-in-the-middle tokens of the model's vocabulary
// around the code before and after the cursor, with extra files as context.
#pragma once

#include <vector>

#include "server/json_fields.h"
#include "tessera/tokenizer.h"

namespace tessera::server {

/// The prompt of an /infill body, laid out as llama-server's format_infill does:
///   [FIM_REP "myproject\n"]                         (when the vocabulary has a repo token)
///   per `input_extra` chunk {filename = "tmp", text}: FIM_SEP filename "\n" text
///                                                   (no FIM_SEP: "\n\n--- snippet ---\n\n" text)
///   [FIM_SEP "filename\n"]                          (when it has a file separator)
///   [BOS] FIM_PRE input_prefix prompt FIM_SUF input_suffix FIM_MID
/// Every text is tokenized on its own, without special tokens. Unlike llama-server, nothing
/// is cut to fit a batch: a prompt too long for a sequence is refused as any other is.
/// Throws a 400 when the vocabulary lacks the prefix, suffix or middle token, and one
/// naming the field that is not a string (`input_extra[i].text`, ...).
std::vector<TokenId> infill_prompt(const Fields& body, const Tokenizer& tok);

}  // namespace tessera::server
