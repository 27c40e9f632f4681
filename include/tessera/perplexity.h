// Perplexity of a model over a text, by the method of llama.cpp's llama-perplexity:
//
//  1. The whole text is tokenized once, with BOS when the vocabulary adds it.
//  2. It is cut into n_chunks = n_tokens / n_ctx chunks of n_ctx tokens (the rest is
//     dropped); `max_chunks` may take fewer.
//  3. Each chunk is evaluated from an empty context, in passes of n_batch tokens, with
//     its first token replaced by BOS when the vocabulary adds BOS.
//  4. Only the second half is scored, so every scored token has at least n_ctx/2 tokens
//     of context: for j = n_ctx/2 .. n_ctx-2, nll_j = -log softmax(logits_j)[token j+1]
//     (max-subtracted, exp in float, sums and logs in double).
//  5. PPL = exp(mean nll) over all scored tokens so far (printed after every chunk), and
//     the final uncertainty is PPL * sqrt((mean(nll^2) - mean(nll)^2) / (count - 1)).
//
// llama.cpp refuses texts shorter than 2 * n_ctx tokens; here one chunk (n_ctx tokens)
// is enough. The values are the same wherever both run.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "tessera/dtype.h"
#include "tessera/model.h"
#include "tessera/rope_scaling.h"
#include "tessera/status.h"

namespace tessera {

struct PerplexityParams {
  int64_t n_ctx = 512;      // tokens per chunk (and context size); at least 4
  int64_t n_batch = 512;    // tokens per forward pass
  int n_threads = 2;        // CPU threads
  int64_t max_chunks = -1;  // < 0: every whole chunk of the text
  DType type_k = DType::F16;  // the KV cache's types (ContextParams::type_k / type_v)
  DType type_v = DType::F16;
  RopeScalingParams rope;   // the context's RoPE scaling (tessera/rope_scaling.h)
};

/// Where the computation stands after a chunk.
struct PerplexityProgress {
  int64_t chunk = 0;       // 1-based index of the chunk just scored
  int64_t n_chunks = 0;    // chunks to score in all
  double running_ppl = 0;  // PPL over all tokens scored so far
  double seconds = 0;      // time this chunk took
};

struct PerplexityResult {
  int64_t n_tokens = 0;  // tokens of the whole text (BOS included)
  int64_t n_chunks = 0;  // chunks scored
  int64_t n_scored = 0;  // tokens scored: n_chunks * (n_ctx - n_ctx/2 - 1)
  double ppl = 0;        // final estimate
  double ppl_error = 0;  // its uncertainty, as llama.cpp prints after "+/-" (0 below 2 tokens)
  std::vector<double> running_ppl;  // PPL after each chunk
};

/// The perplexity of `model` over `text`. `on_chunk` (optional) is called after each
/// chunk. Errors: no tokenizer, a vocabulary that appends EOS, n_ctx below 4,
/// a text shorter than one chunk (the message says how many tokens are needed), and
/// context errors.
Result<PerplexityResult> perplexity(
    const Model& model, std::string_view text, const PerplexityParams& params,
    const std::function<void(const PerplexityProgress&)>& on_chunk = {});

/// -log softmax(logits)[token], computed as llama-perplexity does (max subtracted, expf
/// terms summed in double).
double token_nll(const float* logits, int64_t n_vocab, int32_t token);

}  // namespace tessera
