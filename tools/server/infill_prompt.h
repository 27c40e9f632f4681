// llama-server's /infill prompt: the fill-in-the-middle tokens of the model's vocabulary
// around the code before and after the cursor, with extra files as context, cut to fit
// the batch and the context as llama-server's format_infill cuts them.
#pragma once

#include <cstdint>
#include <vector>

#include "server/json_fields.h"
#include "tessera/tokenizer.h"

namespace tessera::server {

/// What an /infill prompt is fitted to (llama-server takes the same from its --batch-size,
/// --n-predict and a slot's context).
struct InfillBudget {
  int64_t n_batch = 512;   // the server's tokens per step (-b)
  int64_t n_ctx = 0;       // cells of one sequence
  int32_t n_predict = -1;  // the server's -n (-1 when not given)
};

struct InfillPrompt {
  std::vector<TokenId> tokens;
  bool truncated = false;  // some of the prefix, typed text, suffix or extra files was left
                           // out (not the repository line alone, which is the layout's)
};

/// The prompt of an /infill body, laid out as llama-server's format_infill does:
///   [FIM_REP "myproject\n"]                         (when the vocabulary has a repo token)
///   per `input_extra` chunk {filename = "tmp", text}: FIM_SEP filename "\n" text
///                                                   (no FIM_SEP: "\n\n--- snippet ---\n\n" text)
///   [FIM_SEP "filename\n"]                          (when it has a file separator)
///   [BOS] FIM_PRE input_prefix prompt FIM_SUF input_suffix FIM_MID
/// Every text is tokenized on its own, without special tokens. Cut as format_infill cuts:
/// the prefix to its last 3/4 of a batch, the suffix to its first quarter of a batch less
/// the typed `prompt` and 2, the extra context (everything before [BOS]) to its last
/// n_ctx - n_batch - 2 n_predict tokens. When that still leaves no cell to generate, the
/// prompt is cut to half the context, as a completion prompt is, but by parts: the extra
/// context first (from its start), then the start of the prefix and typed text and the
/// end of the suffix, 3:1. Throws a 400 when the vocabulary lacks the prefix, suffix or
/// middle token, one naming the field that is not a string (`input_extra[i].text`, ...),
/// and a 400 context_length_exceeded when the context cannot hold even the FIM tokens.
InfillPrompt infill_prompt(const Fields& body, const Tokenizer& tok, const InfillBudget& budget);

}  // namespace tessera::server
