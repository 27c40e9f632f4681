// Hyper-parameters of a model, read from the `<arch>.*` keys of a GGUF file.
#pragma once

#include <cstdint>
#include <string>

#include "core/op.h"
#include "tessera/gguf.h"
#include "tessera/status.h"

namespace tessera {

/// How a model's tokens know their positions (set by the architecture: Arch::configure).
enum class PositionKind : uint8_t {
  Rope,     // rotary embeddings of q and k: a cache shift rotates the stored keys
  Alibi,    // a per-head linear bias on distances (the mask): a shift only moves cells
  Learned,  // an absolute position embedding added to the input: no shift, and no
            // position at or past n_ctx_train
};

struct HParams {
  std::string arch;        // general.architecture
  int64_t n_vocab = 0;     // tokenizer.ggml.tokens length (or <arch>.vocab_size)
  int64_t n_ctx_train = 0; // <arch>.context_length
  int64_t n_embd = 0;      // <arch>.embedding_length
  int64_t n_layer = 0;     // <arch>.block_count
  int64_t n_ff = 0;        // <arch>.feed_forward_length
  int64_t n_head = 0;      // <arch>.attention.head_count
  int64_t n_head_kv = 0;   // <arch>.attention.head_count_kv (default n_head)
  int64_t head_dim = 0;    // <arch>.attention.key_length (default n_embd / n_head)
  int64_t n_rot = 0;       // <arch>.rope.dimension_count (default head_dim)
  float rms_eps = 1e-5f;   // <arch>.attention.layer_norm_rms_epsilon
  float norm_eps = 1e-5f;  // <arch>.attention.layer_norm_epsilon
  float rope_freq_base = 10000.0f;  // <arch>.rope.freq_base
  float rope_freq_scale = 1.0f;     // 1 / <arch>.rope.scaling.factor for linear scaling
  float alibi_max_bias = 0.0f;      // <arch>.attention.max_alibi_bias
  float clamp_kqv = 0.0f;           // <arch>.attention.clamp_kqv (0: none)
  int64_t n_swa = 0;                // <arch>.attention.sliding_window (0: none)
  bool parallel_residual = false;   // <arch>.use_parallel_residual
  bool causal = true;               // <arch>.attention.causal: false, every token of a
                                    // sequence attends to all its cells (encoders)
  int64_t pooling_type = -1;        // <arch>.pooling_type: 0 none, 1 mean, 2 cls, 3 last,
                                    // 4 rank; -1 absent
  int64_t n_token_types = 0;        // tokenizer.ggml.token_type_count (BERT's token_types rows)
  // Set by the architecture (Arch::configure), not read from keys of their own:
  PositionKind positions = PositionKind::Rope;
  RopeMode rope_mode = RopeMode::Normal;

  /// Whether attention adds ALiBi's per-head distance bias.
  bool alibi() const { return positions == PositionKind::Alibi && alibi_max_bias > 0; }
  int64_t n_embd_q() const { return head_dim * n_head; }
  int64_t n_embd_kv() const { return head_dim * n_head_kv; }
};

/// Reads and checks the hyper-parameters; errors name the key and the bad value.
Result<HParams> read_hparams(const gguf::File& file);

}  // namespace tessera
