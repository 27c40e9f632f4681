// A context: the state of the conversations with a model (its KV cache, shared by up
// to n_seq_max sequences) and the machinery that evaluates tokens.
//
// Two ways to decode:
//  - decode(tokens): one conversation (sequence 0), tokens appended after n_past();
//  - decode(batch): any tokens of any sequences at explicit positions, with per-token
//    outputs (tessera/batch.h) — many sequences share each forward pass.
// Sequence operations edit the cache between decodes: seq_rm, seq_cp (shares cells, no
// copy), seq_keep, seq_add (moves positions; the cached keys are re-rotated), and
// context_shift (keeps a prefix, drops half of the rest, shifts the remainder back).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/batch.h"
#include "tessera/dtype.h"
#include "tessera/model.h"
#include "tessera/rope_scaling.h"
#include "tessera/status.h"

namespace tessera {

class ContextImpl;

/// The input of one product of a model weight with activations, as a forward pass
/// computed it (ContextParams::matmul_observer): what `tessera imatrix` measures.
struct MatmulInput {
  std::string_view weight;          // the weight's tensor name in the model file
  int64_t n_in = 0;                 // elements per row (the weight's row length)
  int64_t n_rows = 0;               // rows that went through the weight in this pass
  const float* rows = nullptr;      // [n_rows][n_in]
  int64_t n_expert = 0;             // a stack of experts (mixture of experts): how many;
                                    // 0 for a plain matrix
  const int32_t* expert = nullptr;  // with n_expert: the expert each row went to
};
/// Called with each input and the user data of ContextParams (a plain function and a
/// pointer, as the reference's evaluation callback, so that the parameters stay plain
/// data).
using MatmulObserver = void (*)(const MatmulInput& input, void* user_data);

struct ContextParams {
  int64_t n_ctx = 0;        // cache cells (all sequences together); 0 = the training context, at most 4096
  int64_t n_batch = 512;    // tokens evaluated per forward pass (larger batches are split)
  int64_t n_ubatch = 0;     // smaller forward passes than n_batch when set; 0: n_batch, or with a
                            // model split across MPI ranks n_batch / 16 (at least 32), so that
                            // the ranks work on different parts of a prompt at once
  int n_threads = 2;        // CPU threads
  // The KV cache's types, keys and values apart (the reference's -ctk / -ctv):
  // kv_cache_types(). F16 as the reference engine by default. A block-quantized type
  // stores each cell's row quantized (on write) and needs head sizes that are multiples
  // of its block (32); attention reads it a head's cells at a time.
  DType type_k = DType::F16;
  DType type_v = DType::F16;
  bool all_logits = false;  // decode(tokens): keep the logits of every token, not only the last
  int n_seq_max = 1;        // sequence ids 0 .. n_seq_max-1 (at most 64); each has a home
                            // region (see n_seq_regions; a full one spills over)
  bool embeddings = false;  // also keep the final hidden state (after the output norm) of output tokens;
                            // required for an encoder (ModelInfo::encoder: its last layer's output)
  int n_seq_regions = 0;    // sequences 0 .. n_seq_regions-1 have home regions (n_ctx / n_seq_regions
                            // cells each); higher ids take any free cell (a server's cached
                            // prefixes, which never receive new tokens). 0: n_seq_max
  /// Set: called after each forward pass, once for every product of a model weight (a
  /// tensor of the file, not a view of one) with F32 activations, in graph order. A
  /// projection that tessera fused at load (q/k/v, gate/up) is reported once per part,
  /// under each part's name, with the same rows. The inputs are kept in memory until the
  /// pass ends (more memory per pass). Not with a model split across MPI ranks.
  MatmulObserver matmul_observer = nullptr;
  void* matmul_observer_data = nullptr;  // passed to matmul_observer
  RopeScalingParams rope;   // RoPE scaling over the model file's (tessera/rope_scaling.h);
                            // the defaults keep the file's
};

/// The types a KV cache can hold (ContextParams::type_k / type_v), the reference
/// engine's set: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl.
std::span<const DType> kv_cache_types();

/// What save_seq_state / load_seq_state moved.
struct SeqStateInfo {
  int64_t n_tokens = 0;  // cells of the sequence
  int64_t n_bytes = 0;   // size of the file
};

class Context {
 public:
  /// A context for `model`, which must outlive it.
  static Result<std::unique_ptr<Context>> create(const Model& model, const ContextParams& params);
  ~Context();

  /// Evaluates `tokens` at the next positions of sequence 0 (n_past(), n_past()+1, ...),
  /// in forward passes of n_batch. Errors: an id outside the vocabulary, or a full context.
  Status decode(std::span<const TokenId> tokens);
  /// Evaluates a batch (split into forward passes of n_batch; an encoder's must fit one
  /// pass, as its attention is not causal). Errors, before anything is
  /// evaluated: an empty batch, a token id outside the vocabulary, a negative position,
  /// a sequence id outside [0, n_seq_max), a position not after the last one of its
  /// sequence (in the cache or earlier in the batch), or too few free cells.
  Status decode(const Batch& batch);

  /// Logits [n_vocab] of the last output token of the last decode.
  std::span<const float> logits() const;
  /// Logits of token i of the last decode (its batch index; for decode(tokens), the
  /// i-th token, which has logits with all_logits, else only the last one has).
  std::span<const float> logits_at(int64_t i) const;
  /// With ContextParams::embeddings: the final hidden state [n_embd] of token i of the
  /// last decode (an output token, as for logits_at).
  std::span<const float> embeddings_at(int64_t i) const;

  /// Positions decoded in sequence 0 (its last position + 1; 0 when empty).
  int64_t n_past() const;
  int64_t n_ctx() const;
  int64_t n_vocab() const;
  int64_t n_embd() const;
  int n_seq_max() const;
  /// Cache cells in use (by any sequence).
  int64_t n_cells_used() const;
  /// Bytes the KV cache holds (all cells, keys and values, every layer of this process).
  int64_t kv_cache_bytes() const;
  /// Forgets everything decoded so far, in every sequence.
  void clear();

  // Sequence operations. Positions are ranges [p0, p1): p0 < 0 means 0, p1 < 0 means
  // "to the end". `seq` = -1 means every sequence where noted. Errors: ids out of range.
  /// Removes positions [p0, p1) from `seq` (-1: from every sequence).
  Status seq_rm(SeqId seq, Pos p0, Pos p1);
  /// Makes positions [p0, p1) of `src` part of `dst` too; the cells are shared, not copied.
  Status seq_cp(SeqId src, SeqId dst, Pos p0, Pos p1);
  /// Makes positions [p0, p1) of `src` part of `dst` in cells of `dst`'s own (its home
  /// region first, as its decoded tokens), copying their keys and values. seq_cp is free
  /// but leaves `dst` attending over cells wherever `src`'s are; a copy keeps a
  /// sequence's cells together (a server copies a cached prefix into the home region of
  /// the slot that reuses it). Errors: ids out of range, src == dst, too few free cells
  /// (nothing changes).
  Status seq_copy(SeqId src, SeqId dst, Pos p0, Pos p1);
  /// Free cells in the home region of `seq` (ContextParams::n_seq_regions; 0 for an id
  /// without a home region).
  int64_t seq_home_free(SeqId seq) const;
  /// Removes every sequence but `seq`.
  Status seq_keep(SeqId seq);
  /// Adds `delta` to positions [p0, p1) of `seq` (-1: every sequence); positions that
  /// become negative are removed. The cached keys are rotated to their new positions
  /// before the next decode. Error (nothing changed) when a moved cell is shared with
  /// a sequence not being moved.
  Status seq_add(SeqId seq, Pos p0, Pos p1, Pos delta);
  /// Last (first) position of `seq`, -1 when it is empty.
  Pos seq_pos_max(SeqId seq) const;
  Pos seq_pos_min(SeqId seq) const;
  /// The tokens of `seq`, in position order (the token history of that sequence).
  std::vector<TokenId> seq_tokens(SeqId seq) const;

  /// Context shift for long generations: keeps the first n_keep positions of `seq`
  /// (which must hold positions 0 .. L-1), removes the next (L - n_keep) / 2 and moves
  /// the rest back by that many, so that decoding can go on at position L - removed.
  /// Returns the number of positions removed. Errors: n_keep outside [0, L - 1), or
  /// shifted cells shared with another sequence.
  Result<int64_t> context_shift(SeqId seq, int64_t n_keep);

  /// The user scales of the model's LoRA adapters, in ModelInfo::adapters order (empty
  /// without adapters); at first the scales given at load (ModelInfo::adapter_scales).
  std::span<const float> adapter_scales() const;
  /// Sets the adapters' user scales for the decodes that follow: an adapter's update is
  /// then scale * alpha / r * b (a x), exactly as if the model had been loaded with that
  /// scale; at scale 0 it is left out (the base model's logits). What is already in the
  /// cache stays as it was computed. Errors (nothing changes): not one scale per adapter,
  /// a scale that is not finite.
  Status set_adapter_scales(std::span<const float> scales);

  /// Writes the context's state to `path`: the cache cells (positions, sequences,
  /// tokens, keys and values), the outputs of the last decode, and `user_data` (an
  /// opaque blob, e.g. a sampler's RNG state). Pending shifts are applied first. Refused
  /// for an encoder, which has no logits (ModelInfo::encoder; save_seq_state works).
  Status save_state(const std::string& path, std::span<const uint8_t> user_data = {});
  /// Replaces this context's state by the one saved in `path` and returns its user data.
  /// The file must come from a model of the same shape, with the same cache type, and
  /// fit this context's n_ctx / n_seq_max / embeddings setting. A bad file (magic,
  /// version, truncation, mismatch) is refused with a message and leaves the context
  /// as it was, except after a read error in the cache data, which clears it.
  Result<std::vector<uint8_t>> load_state(const std::string& path);

  /// Writes one sequence's cells (positions, tokens, keys and values) to `path`, with
  /// the model's shape and the cache type, through a temporary file renamed over `path`
  /// (never a partial file under that name). An empty sequence gives a file of 0 tokens.
  Result<SeqStateInfo> save_seq_state(SeqId seq, const std::string& path);
  /// Puts the cells a save_seq_state file holds into free cells of `dst` (which must be
  /// empty), at their saved positions. Refused with a message, nothing changed, when the
  /// file is bad or truncated, comes from a model of another shape or another cache type,
  /// or too few cells are free.
  Result<SeqStateInfo> load_seq_state(const std::string& path, SeqId dst);

 private:
  explicit Context(std::unique_ptr<ContextImpl> impl);
  /// With a model split across MPI ranks: sends a command to the other ranks.
  void tell_ranks(const std::vector<uint8_t>& command) const;
  std::unique_ptr<ContextImpl> impl_;
};

}  // namespace tessera
