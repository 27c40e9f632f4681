// Random-weight models of any architecture tessera builds: every tensor the architecture
// requires, at a chosen shape, so that tools and tests can run an architecture without
// real weights. The tensor list and shapes are the architecture's own (the loader's), so
// a written model always loads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tessera/dtype.h"
#include "tessera/gguf.h"
#include "tessera/status.h"

namespace tessera {

struct SynthParams {
  std::string arch = "llama";  // general.architecture: one of architecture_names()
  std::string name;            // general.name; empty: "tessera-synth-<arch>"
  int64_t n_embd = 256;
  int64_t n_layer = 4;
  int64_t n_head = 8;
  int64_t n_head_kv = 4;
  int64_t n_ff = 768;
  int64_t n_ctx = 2048;     // <arch>.context_length (and the rows of learned positions)
  int64_t n_vocab = 1024;   // written as <arch>.vocab_size when `vocab` is null
  /// Experts of a mixture-of-experts feed-forward (the architecture must have one: llama
  /// files may, Qwen2-MoE/OLMoE always do); 0: dense, or 4 with 2 used where every file
  /// of the architecture has experts.
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  /// A reranker: pooling_type rank and a classification head (cls, cls.output); the
  /// architecture must have one (bert).
  bool rank_head = false;
  DType type = DType::F16;  // of the matrices: F32, F16 or BF16; 1-D tensors are F32
  uint64_t seed = 42;
  /// Writes the tokenizer.* keys (their token count is the model's n_vocab); null: no
  /// tokenizer, only token ids can be used.
  std::function<Status(gguf::Writer&)> vocab;
  /// Called as the layers' tensors are generated (layers_done of n_layer); optional.
  std::function<void(int64_t layers_done, int64_t n_layer)> progress;
};

/// Writes a GGUF model of architecture p.arch to `path`: general.* keys, the <arch>.* shape
/// keys (context_length, embedding_length, block_count, feed_forward_length,
/// attention.head_count(_kv), both norm epsilons 1e-5; rope.dimension_count = head size
/// and rope.freq_base 1e4 where the architecture rotates; attention.max_alibi_bias 8
/// where it uses ALiBi and takes the bias from that key), the vocabulary, and every
/// tensor the architecture requires plus output.weight where it lists one (an untied
/// output; the other optional tensors are left out): 1-D weights (norms) 1, biases and matrices
/// N(0, 0.02). Deterministic for a seed. Errors: an unknown architecture (listing the
/// known ones), a shape the architecture refuses (its loader's message), the OS error.
Status write_random_model(const SynthParams& p, const std::string& path);

}  // namespace tessera
