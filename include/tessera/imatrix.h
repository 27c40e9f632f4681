// Importance matrices, as llama.cpp's llama-imatrix computes them: the mean square of
// every input column of each weight matrix over a calibration text, which the quantizer's
// weighted searches use (`tessera quantize --imatrix`) to spend accuracy where the
// activations are large.
//
//  1. The text is tokenized once (BOS when the vocabulary adds it) and cut into chunks of
//     n_ctx tokens (at least 2 chunks' worth is required, as the reference does); each
//     chunk is evaluated from an empty context, its first token replaced by BOS when the
//     vocabulary adds BOS, in forward passes of n_batch tokens.
//  2. Every forward pass adds x^2 of each input row of each weight matrix to that
//     matrix's per-column sums: the matrices of the layers ("blk.*"), and output.weight
//     with process_output; products with fewer than 16 rows are left out (the reference
//     skips small batches). An expert stack (mixture of experts) gets n_expert * n_in
//     sums, each row counted for the expert the router sent it to. Each pass that reached
//     a matrix is one "call" of it.
//  3. The file (quant/imatrix_file.h, the reference's format) stores per matrix
//     (sum / rows) * calls; matrices with columns that no row reached (experts never
//     chosen) are left out, as the reference leaves them out. `chunks` is the largest
//     call count, the dataset is the calibration file's name.
//  4. The perplexity of the second half of each chunk is measured on the way, as
//     tessera/perplexity.h describes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/dtype.h"
#include "tessera/model.h"
#include "tessera/rope_scaling.h"
#include "tessera/status.h"

namespace tessera {

struct ImatrixParams {
  int64_t n_ctx = 512;          // tokens per chunk; at least 4
  int64_t n_batch = 512;        // tokens per forward pass (capped at n_ctx)
  int n_threads = 2;            // CPU threads
  int64_t max_chunks = -1;      // < 0: every whole chunk of the text
  bool process_output = false;  // also collect output.weight
  bool compute_ppl = true;      // measure the perplexity on the way
  std::string dataset;          // the calibration text's name, stored in the file
  DType type_k = DType::F16;    // the KV cache's types (ContextParams::type_k / type_v)
  DType type_v = DType::F16;
  RopeScalingParams rope;       // the context's RoPE scaling (tessera/rope_scaling.h)
};

/// Where the computation stands after a chunk.
struct ImatrixProgress {
  int64_t chunk = 0;       // 1-based index of the chunk just evaluated
  int64_t n_chunks = 0;    // chunks in all
  double running_ppl = 0;  // PPL over the tokens scored so far (0 without compute_ppl)
  double seconds = 0;      // time this chunk took
};

struct ImatrixResult {
  int64_t n_tokens = 0;  // tokens of the whole text
  int64_t n_chunks = 0;  // chunks evaluated
  double ppl = 0;        // final estimate (0 without compute_ppl)
  double ppl_error = 0;  // its uncertainty, as the reference prints after "+/-"
  int64_t n_entries = 0;             // matrices written
  int32_t n_calls = 0;               // the file's chunk count: the most calls of a matrix
  std::vector<std::string> skipped;  // matrices left out, each with the reason
};

/// Computes the importance matrix of `model` over `text` and writes it to `out_path`.
/// `on_chunk` (optional) is called after each chunk. Errors: no tokenizer, a vocabulary
/// that appends EOS, n_ctx below 4, a text shorter than two chunks (the message says how
/// many tokens it has and needs), a non-finite activation (naming the matrix), no matrix
/// collected, context errors, and a failed write.
Result<ImatrixResult> compute_imatrix(const Model& model, std::string_view text, const ImatrixParams& params,
                                      const std::string& out_path,
                                      const std::function<void(const ImatrixProgress&)>& on_chunk = {});

}  // namespace tessera
