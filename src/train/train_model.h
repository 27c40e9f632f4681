// A model being trained: its keys (general.*, <arch>.*, tokenizer.*), its hyper-parameters
// and F32 parameters in one backend buffer, laid out as the architecture's weight list
// says, so that the architecture's own graph builder runs it and the file it writes is an
// ordinary GGUF model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/arch.h"
#include "tessera/gguf.h"
#include "tessera/tokenizer.h"

namespace tessera::train {

/// The shape of a new LLaMA.
struct ModelShape {
  int64_t n_embd = 256;
  int64_t n_layer = 6;
  int64_t n_head = 8;
  int64_t n_head_kv = 8;
  int64_t n_ff = 768;
  int64_t n_ctx = 256;
  bool tied_output = true;  // the output projection is the token embedding (no output.weight)
};

struct TrainModel {
  gguf::Writer keys;  // every key the model file carries; no tensors
  HParams h;
  const Arch* arch = nullptr;
  TensorArena arena;
  ModelWeights w;
  std::vector<Tensor*> params;  // what trains, named as written: every weight in the
                                // architecture's list order, or a LoRA's a and b tensors
  std::unique_ptr<Buffer> buffer;
  std::unique_ptr<Tokenizer> tokenizer;  // null for a LoRA (the base's tokenizer is used)

  int64_t n_params() const;
  /// Whether weight decay applies: matrices, not norms.
  static bool decays(const Tensor* p) { return p->ne[1] > 1; }
};

/// A LLaMA of `shape` with the vocabulary whose tokenizer.* keys `vocab_keys` holds,
/// initialised from `seed`: matrices N(0, 0.02), the projections into the residual stream
/// (attn_output, ffn_down) N(0, 0.02 / sqrt(2 n_layer)) as GPT-2 does, norms 1.
Result<std::unique_ptr<TrainModel>> create_model(const ModelShape& shape, const gguf::Writer& vocab_keys,
                                                 const std::string& name, uint64_t seed, Backend& backend);

/// The model in `file` (a model or a checkpoint): its keys except those starting with
/// `skip_prefix` (e.g. "training."), its weights converted to F32 (files of F32, F16 or
/// BF16 weights; tensors named `skip_prefix`... are ignored too).
Result<std::unique_ptr<TrainModel>> load_model(const gguf::File& file, const std::string& skip_prefix,
                                               Backend& backend);

/// Allocates one buffer of `backend` for m.params and places them in it.
Status place_params(TrainModel& m, Backend& backend);

/// A parameter's values.
std::vector<float> read_param(Backend& backend, const Tensor* p);
void write_param(Backend& backend, Tensor* p, const std::vector<float>& values);

/// The model's keys and parameters (as `type`: F32, F16 or BF16 for matrices; 1-D weights
/// stay F32) in a writer, which holds copies of the data; the caller may add more
/// (a checkpoint's optimizer state) and write it.
gguf::Writer model_writer(const TrainModel& m, Backend& backend, DType type);

}  // namespace tessera::train
